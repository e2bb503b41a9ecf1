"""Any body, any query, any endpoint: never a 5xx, always the error shape, and a
refused write changes nothing. The bodies are raw text, so they reach what a JSON
encoder never writes: numbers that overflow a double, NaN, nesting past any limit,
lone surrogates, NUL, invalid UTF-8, bodies past the size limit."""

from __future__ import annotations

import json
import string
from urllib.parse import urlencode

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from todoweb import dialects
from todoweb.models import Revision, Session

KEY = "fuzz"
# Text no JSON encoder writes, spliced into generated JSON where "@@n@@" stands.
RAW_TOKENS = [
    "1e400",
    "-1E+999",
    "123456789012345678901234567890e300",
    "NaN",
    "-Infinity",
    '"\\ud800"',
    '"\\udfff\\ud800"',
    '"\\u0000"',
    '"\\u202e\\u2066evil"',
    '"\\uffff\\ufffe"',
    "99999999999999999999999999",
    "-0.0e-999",
    "[" * 70 + "]" * 70,
    "[" * 2000 + "]" * 2000,
    '"' + "x" * 300_000 + '"',
]
TEXT = st.text(alphabet=st.characters(codec="utf-8"), max_size=20) | st.sampled_from(
    ["pending", "in_progress", "completed", "done", "<script>alert(1)</script>", "中文", "🚀", "\u202e", ""]
)
SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | TEXT
RAW = st.sampled_from(range(len(RAW_TOKENS))).map(lambda n: f"@@{n}@@")
FIELDS = ["todos", "items", "steps", "plan", "content", "status", "activeForm", "title", "description", "text", "id"]
VALUES = st.recursive(
    SCALARS | RAW,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.sampled_from(FIELDS) | TEXT, children, max_size=4)
    ),
    max_leaves=20,
)


def splice(value) -> str:
    text = json.dumps(value, ensure_ascii=False)
    for n, token in enumerate(RAW_TOKENS):
        text = text.replace(f'"@@{n}@@"', token)
    return text


def envelopes(args_text: str, tool: str) -> list[str]:
    """The four tool-call forms around the same input text."""
    return [
        f'{{"type": "tool_use", "id": "toolu_f", "name": {json.dumps(tool)}, "input": {args_text}}}',
        json.dumps({"id": "call_f", "type": "function", "function": {"name": tool, "arguments": args_text}}),
        json.dumps({"type": "function_call", "call_id": "call_f", "name": tool, "arguments": args_text}),
        f'{{"tool": {json.dumps(tool)}, "id": "plain_f", "input": {args_text}}}',
    ]


TOOLS = st.sampled_from(sorted(dialects.tool_names()))
BODIES = (
    st.tuples(VALUES.map(splice), TOOLS, st.integers(0, 3)).map(lambda t: envelopes(t[0], t[1])[t[2]])
    | VALUES.map(splice)
    | st.binary(max_size=64).map(lambda b: b.decode("latin-1"))
    | st.sampled_from(['{"tool": "TodoWrite", "input": {"todos": []}}\xff', "", "[]", "{}", "null"])
)
QUERY_VALUES = st.text(alphabet=string.printable, max_size=12) | st.sampled_from(
    ["-1", "0", "1e9", "99999999999999999999", "%00", "%ff%fe", "\u202e", "NaN"]
)


def endpoints(query: str) -> list[tuple[str, str]]:
    return [
        ("post", f"/api/v1/sessions/{KEY}/tool?{query}"),
        ("post", f"/api/v1/hooks/claude-code?{query}"),
        ("post", f"/api/v1/sessions/{KEY}/rounds"),
        ("patch", f"/api/v1/sessions/{KEY}"),
        ("post", f"/api/v1/sessions/{KEY}/share"),
        ("delete", f"/api/v1/sessions/{KEY}/share"),
        ("get", f"/api/v1/sessions?{query}"),
        ("get", f"/api/v1/sessions/{KEY}/revisions?{query}"),
        ("get", f"/api/v1/sessions/{KEY}/resume"),
        ("get", f"/api/v1/tools?{query}"),
    ]


def assert_consistent() -> None:
    """No partial write: the session's revision is its number of revisions."""
    session = Session.objects.filter(key=KEY).first()
    if session is not None:
        assert session.revision == Revision.objects.filter(session=session).count()


@settings(
    max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(
    body=BODIES,
    which=st.integers(0, 9),
    query=st.lists(
        st.tuples(
            st.sampled_from(["reply", "state", "q", "limit", "cursor", "after", "format", "dialects"]), QUERY_VALUES
        ),
        max_size=3,
    ),
    if_match=st.none() | QUERY_VALUES,
)
def test_it_never_answers_5xx_nor_writes_part_of_a_refused_call(api, body, which, query, if_match):
    method, path = endpoints(urlencode(query))[which]
    before = Revision.objects.count()
    headers = {"If-Match": if_match, "If-None-Match": if_match} if if_match is not None else {}
    headers = {k: v.encode("latin-1", "replace").decode("latin-1") for k, v in headers.items()}
    headers = api.headers | headers
    if method in ("get", "delete"):
        response = getattr(api.client, method)(path, headers=headers)
    else:
        data = body.encode("utf-8", "surrogatepass")
        response = getattr(api.client, method)(path, data=data, content_type="application/json", headers=headers)
    assert response.status_code < 500, (method, path, response.content[:500])
    if response.status_code >= 400:
        answer = response.json()
        assert answer["ok"] is False and answer["error"]["code"] and answer["error"]["message"]
        assert Revision.objects.count() == before
    assert Revision.objects.count() - before in (0, 1)
    assert_consistent()
