"""A repeated call is answered from the first answer and writes nothing."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from todoweb.calls.jsonio import compact_json
from todoweb.models import Revision

WRITE = {"todos": [{"content": "a", "status": "in_progress", "activeForm": "doing a"}]}
OTHER = {"todos": [{"content": "b", "status": "pending", "activeForm": "doing b"}]}


def test_it_replays_a_repeated_tool_call_id(api):
    first = api.call("s1", "TodoWrite", WRITE, call_id="toolu_1")
    again = api.call("s1", "TodoWrite", WRITE, call_id="toolu_1")
    assert again.status_code == 200
    assert again["Idempotent-Replayed"] == "true"
    assert "Idempotent-Replayed" not in first
    assert again.json() == first.json()
    assert Revision.objects.count() == 1


def test_it_replays_by_idempotency_key_header(api):
    headers = {"Idempotency-Key": "k-1"}
    first = api.call("s1", "TodoWrite", WRITE, headers=headers)
    api.call("s1", "TodoWrite", OTHER)
    again = api.call("s1", "TodoWrite", WRITE, headers=headers)
    assert again["Idempotent-Replayed"] == "true"
    assert again.json()["data"]["revision"] == first.json()["data"]["revision"] == 1
    assert Revision.objects.count() == 2


def test_it_refuses_a_key_reused_with_another_body(api):
    api.call("s1", "TodoWrite", WRITE, call_id="toolu_1")
    r = api.call("s1", "TodoWrite", OTHER, call_id="toolu_1")
    assert r.status_code == 422
    assert r.json()["error"]["code"] == "idempotency_conflict"
    assert r.json()["reply"]["is_error"] is True
    assert Revision.objects.count() == 1


def test_it_scopes_keys_to_their_session(api):
    api.call("s1", "TodoWrite", WRITE, call_id="toolu_1")
    r = api.call("s2", "TodoWrite", OTHER, call_id="toolu_1")
    assert r.status_code == 200
    assert "Idempotent-Replayed" not in r


def test_it_replays_across_envelopes_with_the_same_call(api):
    import json

    first = api.tool("s1", {"type": "tool_use", "id": "x1", "name": "TodoWrite", "input": WRITE})
    again = api.tool(
        "s1", {"id": "x1", "type": "function", "function": {"name": "TodoWrite", "arguments": json.dumps(WRITE)}}
    )
    assert again["Idempotent-Replayed"] == "true"
    assert again.json()["data"] == first.json()["data"]
    # The first answer, with the reply in the form of the repeat.
    assert again.json()["reply"] == {"role": "tool", "tool_call_id": "x1", "content": first.json()["output"]}


def test_it_does_not_remember_failed_calls(api):
    bad = api.call("s1", "TodoWrite", {"todos": [{"content": ""}]}, call_id="toolu_1")
    assert bad.status_code == 422
    good = api.call("s1", "TodoWrite", {"todos": [{"content": ""}]}, call_id="toolu_1")
    assert good.status_code == 422
    assert "Idempotent-Replayed" not in good


def test_it_refuses_an_idempotency_key_reused_for_another_call_id(api):
    headers = {"Idempotency-Key": "kk"}
    api.call("s1", "TodoWrite", WRITE, call_id="toolu_A", headers=headers)
    r = api.call("s1", "TodoWrite", WRITE, call_id="toolu_B", headers=headers)
    assert r.status_code == 422
    assert r.json()["error"]["code"] == "idempotency_conflict"
    assert r.json()["reply"]["tool_use_id"] == "toolu_B"


# Any JSON value a call may carry, with what orjson writes otherwise than json (floats,
# integers beyond 64 bits, lone surrogates, control characters) mixed in.
JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False)
    | st.text(alphabet=st.characters(codec=None, exclude_categories=())),
    lambda children: st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=5), children, max_size=5),
    max_leaves=25,
)


@given(JSON_VALUES)
def test_a_calls_fingerprint_is_of_the_json_modules_text_whatever_it_holds(value):
    # Stored fingerprints were made from this text: a repeat must find the same one.
    assert compact_json(value) == json.dumps(value, ensure_ascii=False, separators=(",", ":"))
