"""POST /api/v1/sessions/{key}/tool: envelopes in, replies out, TodoWrite/TodoRead."""

from __future__ import annotations

import json

import pytest

TODOS = [
    {"content": "Write the parser", "status": "completed", "activeForm": "Writing the parser"},
    {"content": "Test the parser", "status": "in_progress", "activeForm": "Testing the parser"},
    {"content": "Ship it", "status": "pending", "activeForm": "Shipping it"},
]
ARGS = json.dumps({"todos": TODOS})

ENVELOPES = {
    "anthropic": (
        {"type": "tool_use", "id": "toolu_1", "name": "TodoWrite", "input": {"todos": TODOS}},
        lambda c: {"type": "tool_result", "tool_use_id": "toolu_1", "content": c, "is_error": False},
    ),
    "chat": (
        {"id": "call_1", "type": "function", "function": {"name": "TodoWrite", "arguments": ARGS}},
        lambda c: {"role": "tool", "tool_call_id": "call_1", "content": c},
    ),
    "responses": (
        {"type": "function_call", "call_id": "call_1", "name": "TodoWrite", "arguments": ARGS},
        lambda c: {"type": "function_call_output", "call_id": "call_1", "output": c},
    ),
    "langchain": (
        {"type": "tool_call", "id": "call_1", "name": "TodoWrite", "args": {"todos": TODOS}},
        lambda c: {"type": "tool", "tool_call_id": "call_1", "name": "TodoWrite", "content": c, "status": "success"},
    ),
    "plain": (
        {"tool": "TodoWrite", "id": "c1", "input": {"todos": TODOS}},
        lambda c: {"tool_use_id": "c1", "content": c, "is_error": False},
    ),
}


@pytest.mark.parametrize("form", ENVELOPES)
def test_it_answers_each_envelope_in_its_own_format(api, form):
    body, expected_reply = ENVELOPES[form]
    r = api.tool("s1", body)
    assert r.status_code == 200, r.content
    answer = r.json()
    assert answer["ok"] is True
    assert answer["tool"] == "TodoWrite"
    assert answer["dialect"] == "claude"
    assert answer["reply"] == expected_reply(answer["output"])
    assert [t["status"] for t in answer["data"]["todos"]] == ["completed", "in_progress", "pending"]


def test_it_restates_the_plan_as_a_checklist_by_default(api):
    output = api.call("s1", "TodoWrite", {"todos": TODOS}).json()["output"]
    assert output.splitlines()[:4] == [
        "Todo list updated: 1/3 completed (revision 1).",
        "[x] Write the parser",
        "[>] Test the parser (Testing the parser)",
        "[ ] Ship it",
    ]
    assert "finish every step before summarising" in output


def test_it_answers_todowrite_natively(api):
    r = api.call("s1", "TodoWrite", {"todos": TODOS}, query="?reply=native")
    assert r.json()["output"] == '{"success":true,"count":3}'


def test_it_uses_the_projects_reply_style(api, project):
    project.reply_style = "native"
    project.save()
    assert api.call("s1", "TodoWrite", {"todos": []}).json()["output"] == '{"success":true,"count":0}'
    checklist = api.call("s1", "TodoWrite", {"todos": []}, query="?reply=checklist").json()["output"]
    assert checklist == "Todo list cleared (revision 2)."


def test_it_reads_with_todoread(api):
    api.call("s1", "TodoWrite", {"todos": TODOS})
    r = api.call("s1", "TodoRead", {}, query="?reply=native")
    assert json.loads(r.json()["output"]) == {"todos": TODOS}
    assert r.json()["output"] == json.dumps({"todos": TODOS}, separators=(",", ":"), ensure_ascii=False)
    assert r.json()["data"]["revision"] == 1


def test_it_reads_an_empty_list(api):
    r = api.call("fresh", "TodoRead", {}, query="?reply=native")
    assert r.json()["output"] == '{"todos":[]}'


def test_it_replaces_the_whole_list_and_empty_clears(api):
    api.call("s1", "TodoWrite", {"todos": TODOS})
    r = api.call("s1", "TodoWrite", {"todos": [TODOS[2]]})
    assert [t["content"] for t in r.json()["data"]["todos"]] == ["Ship it"]
    r = api.call("s1", "TodoWrite", {"todos": []}, query="?reply=native")
    assert r.json()["output"] == '{"success":true,"count":0}'
    assert r.json()["data"]["todos"] == []
    assert r.json()["data"]["revision"] == 3


def test_it_accepts_single_character_content(api):
    r = api.call("s1", "TodoWrite", {"todos": [{"content": "x", "status": "pending", "activeForm": "y"}]})
    assert r.status_code == 200


F008 = [
    ({}, "'todos' array is required"),
    ({"todos": "nope"}, "'todos' must be an array"),
    ({"todos": {"a": 1}}, "'todos' must be an array"),
    (
        {"todos": [{"content": "", "status": "pending", "activeForm": "a"}]},
        "Todo at index 0: content is required and cannot be empty",
    ),
    (
        {"todos": [TODOS[0], {"content": "   ", "status": "pending", "activeForm": "a"}]},
        "Todo at index 1: content is required and cannot be empty",
    ),
    (
        {"todos": [TODOS[0], {"content": "a", "status": "done", "activeForm": "a"}]},
        "Todo at index 1: invalid status 'done'. Must be one of: pending, in_progress, completed",
    ),
    (
        {"todos": [{"content": "a", "status": "pending", "activeForm": " \t"}]},
        "Todo at index 0: activeForm is required and cannot be empty",
    ),
    ({"todos": [{"content": "a", "status": "pending"}]}, "Todo at index 0: activeForm is required and cannot be empty"),
    # First error wins: item 0's status before item 1's content.
    (
        {"todos": [{"content": "a", "status": "DONE", "activeForm": ""}, {"content": ""}]},
        "Todo at index 0: invalid status 'DONE'. Must be one of: pending, in_progress, completed",
    ),
]


@pytest.mark.parametrize(("args", "message"), F008)
def test_it_reports_seed_002_validation_messages_and_writes_nothing(api, args, message):
    api.call("s1", "TodoWrite", {"todos": TODOS})
    r = api.call("s1", "TodoWrite", args, call_id="toolu_bad")
    assert r.status_code == 422
    answer = r.json()
    assert answer["ok"] is False
    assert answer["error"]["code"] == "invalid_input"
    assert answer["error"]["message"] == message
    assert answer["reply"] == {"tool_use_id": "toolu_bad", "content": message, "is_error": True}
    after = api.get("/api/v1/sessions/s1").json()
    assert after["revision"] == 1
    assert [t["content"] for t in after["todos"]] == [t["content"] for t in TODOS]


def test_langchain_reads_the_reply_as_its_own_tool_message(api):
    """deepagents and LangChain agents append the reply to their messages as it is."""
    from langchain_core.messages import ToolMessage, convert_to_messages

    call = {
        "type": "tool_call",
        "id": "call_9",
        "name": "write_todos",
        "args": {"todos": [{"content": "a", "status": "pending"}]},
    }
    (message,) = convert_to_messages([api.tool("s1", call).json()["reply"]])
    assert isinstance(message, ToolMessage)
    assert (message.tool_call_id, message.name, message.status) == ("call_9", "write_todos", "success")
    refused = {**call, "id": "call_10", "args": {"todos": [{"content": "a", "status": "done"}]}}
    (error,) = convert_to_messages([api.tool("s1", refused).json()["reply"]])
    assert error.status == "error" and "done" in error.content


def test_it_suggests_the_tool_a_misspelt_name_was_meant_to_be(api):
    r = api.call("s1", "TodoWrit", {"todos": TODOS})
    assert r.status_code == 422
    assert r.json()["error"] == {
        "code": "unknown_tool",
        "message": "Tool 'TodoWrit' not found. Did you mean 'TodoWrite'?",
        "details": {"tool": "TodoWrit", "closest": "TodoWrite"},
    }


def test_it_names_an_unknown_tool(api):
    r = api.tool("s1", {"type": "tool_use", "id": "toolu_9", "name": "Nope", "input": {}})
    assert r.status_code == 422
    assert r.json()["error"] == {
        "code": "unknown_tool",
        "message": "Tool 'Nope' not found",
        "details": {"tool": "Nope"},
    }
    assert r.json()["reply"] == {
        "type": "tool_result",
        "tool_use_id": "toolu_9",
        "content": "Tool 'Nope' not found",
        "is_error": True,
    }
    assert api.get("/api/v1/sessions/s1").status_code == 404


def test_it_keeps_hostile_text_verbatim(api):
    hostile = "<script>alert(1)</script> <img src=x onerror=alert(2)> 🚀 中文 \u200b \t\u001b[31m"
    r = api.call("s1", "TodoWrite", {"todos": [{"content": hostile, "status": "pending", "activeForm": hostile}]})
    assert r.status_code == 200
    assert r["Content-Type"] == "application/json"
    assert api.get("/api/v1/sessions/s1").json()["todos"][0]["content"] == hostile


def test_it_takes_the_session_title_from_nothing_but_keeps_it(api):
    api.call("s1", "TodoWrite", {"todos": TODOS})
    api.patch("/api/v1/sessions/s1", {"title": "Release 1.0"})
    r = api.call("s1", "TodoWrite", {"todos": TODOS})
    assert r.json()["data"]["session"]["title"] == "Release 1.0"


def test_the_answer_names_the_project_by_its_slug(api, project):
    data = api.call("s1", "TodoWrite", {"todos": TODOS}).json()["data"]
    assert (project.name, project.slug) == ("Alpha", "alpha")
    assert data["session"]["project"] == "alpha"
    assert api.get("/api/v1/sessions/s1").json()["session"]["project"] == "alpha"
