"""Routing: the tool name picks the dialect; where dialects share a name the input's
fields decide; `?dialect=` (or the plain form's `dialect`) forces one (SPEC §3)."""

from __future__ import annotations

import pytest

from tests.conftest import assert_refused

GEMINI = {"todos": [{"description": "a", "status": "pending"}]}
WEKNORA = {"task": "t", "steps": [{"id": "1", "description": "a", "status": "pending"}]}


def test_the_tool_name_picks_the_dialect(api):
    assert api.call("s1", "write_todos", GEMINI).json()["dialect"] == "gemini"


@pytest.mark.parametrize("how", ["query", "field"])
def test_a_forced_dialect_takes_the_call(api, how):
    if how == "query":
        r = api.call("s1", "todo_write", WEKNORA, query="?dialect=weknora")
    else:
        r = api.tool("s1", {"tool": "todo_write", "dialect": "weknora", "input": WEKNORA})
    assert r.status_code == 200, r.content
    assert r.json()["dialect"] == "weknora"


def test_a_forced_dialect_must_exist_and_have_the_tool(api):
    body = assert_refused(api.call("s1", "todo_write", WEKNORA, query="?dialect=nope"))
    assert body["error"]["message"].startswith("Unknown dialect 'nope'. Known: ")
    body = assert_refused(api.call("s1", "todo_write", WEKNORA, query="?dialect=claude"))
    assert body["error"]["message"] == "Dialect 'claude' has no tool 'todo_write'. It has: TodoWrite, TodoRead"
    assert api.revision("s1") is None


def test_the_plain_form_dialect_must_be_a_string(api):
    assert_refused(api.tool("s1", {"tool": "todo_write", "dialect": 7, "input": WEKNORA}))


def test_a_forced_dialect_is_part_of_the_idempotency_fingerprint(api):
    headers = {"Idempotency-Key": "k1"}
    assert api.call("s1", "todo_write", WEKNORA, headers=headers).status_code == 200
    r = api.call("s1", "todo_write", WEKNORA, query="?dialect=weknora", headers=headers)
    assert_refused(r, status=422, code="idempotency_conflict")


def test_tool_definitions_list_each_name_once_by_default(api):
    names = [tool["name"] for tool in api.get("/api/v1/tools").json()["tools"]]
    assert len(names) == len(set(names))
    assert {"TodoWrite", "SetTodoList", "todo_write", "update_plan", "write_todos"} <= set(names)


def test_a_dialect_named_twice_is_listed_once(api):
    tools = api.get("/api/v1/tools?dialects=gemini,gemini").json()["tools"]
    assert [tool["name"] for tool in tools] == ["write_todos"]
