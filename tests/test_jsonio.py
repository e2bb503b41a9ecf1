"""Request bodies are read by orjson when it gives what the full parse gives, and by the
full parse otherwise: either way, the same value or the same error."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from todoweb.calls import jsonio
from todoweb.calls.jsonio import MAX_DEPTH, MAX_LIST_ITEMS, NOT_PLAIN, JsonError, UnacceptableJson

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=6) | st.dictionaries(st.text(max_size=8), inner, max_size=6),
    max_leaves=40,
)


def full_parse(text: bytes):
    """What `parse` gives without its orjson path: the value, or the error's type and words."""
    try:
        value = jsonio.load(jsonio.decode(text, what="The body"), what="The body")
        jsonio.check(value, text=text.decode("utf-8", "replace"), what="The body")
    except (JsonError, UnacceptableJson) as error:
        return type(error), str(error)
    return value


def parsed(text: bytes):
    try:
        return jsonio.parse(text, what="The body")
    except (JsonError, UnacceptableJson) as error:
        return type(error), str(error)


@given(values)
def test_any_json_value_reads_as_the_full_parse_reads_it(value):
    text = json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass")
    assert parsed(text) == full_parse(text)


@pytest.mark.parametrize(
    "text",
    [
        b'{"big": 123456789012345678901234567890}',  # beyond 64 bits: an int, not a float
        b'{"a": "x\\u0000y"}',  # NUL
        b'"\\ud800"',  # a lone surrogate
        b"[NaN]",
        b"[1e400]",
        b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1),
        b"[" * MAX_DEPTH + b"]" * MAX_DEPTH,
        ("[" + ",".join(["1"] * (MAX_LIST_ITEMS + 1)) + "]").encode(),
        ("[" + ",".join(["1"] * MAX_LIST_ITEMS) + "]").encode(),
        ('{"text": "' + "a," * 2000 + '", "list": [[[1]]]}').encode(),
        b"\xef\xbb\xbf{}",
        b"{} x",
        b"\xff",
    ],
)
def test_what_the_full_parse_refuses_or_keeps_apart_reads_the_same(text):
    assert parsed(text) == full_parse(text)


def test_the_usual_body_takes_the_fast_path_and_the_others_do_not():
    todos = [{"content": f"Step {n}", "status": "pending", "activeForm": f"Doing {n}"} for n in range(10)]
    usual = json.dumps({"type": "tool_use", "id": "toolu_1", "name": "TodoWrite", "input": {"todos": todos}}).encode()
    assert jsonio.parse_plain(usual) == json.loads(usual)
    assert jsonio.parse_plain(b'{"n": 12345678901234567890}') is NOT_PLAIN
    assert jsonio.parse_plain(b'{"a": "\\u0000"}') is NOT_PLAIN
    assert jsonio.parse_plain(b"[" * 70 + b"]" * 70) is NOT_PLAIN
