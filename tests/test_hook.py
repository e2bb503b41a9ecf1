"""POST /api/v1/hooks/claude-code: Claude Code's PostToolUse hook input, unchanged.

The Task* tests need the `claude-tasks` dialect (todoweb/dialects/claude_tasks.py);
without it the registry answers 422 unknown_tool for those names.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from todoweb.models import Revision, Session

URL = "/api/v1/hooks/claude-code"
SESSION_ID = "8c35adc1-2f4e-4c55-9d0a-6f1b3a7e9d21"
TODOS = [
    {"content": "Reproduce the bug", "status": "completed", "activeForm": "Reproducing the bug"},
    {"content": "Write the fix", "status": "in_progress", "activeForm": "Writing the fix"},
    {"content": "Run the tests", "status": "pending", "activeForm": "Running the tests"},
]


def hook(tool_name: str = "TodoWrite", tool_input: Any = None, **fields: Any) -> dict[str, Any]:
    """A PostToolUse input as Claude Code sends it, fields todoweb does not use included."""
    body = {
        "session_id": SESSION_ID,
        "transcript_path": f"/home/me/.claude/projects/-home-me-shop/{SESSION_ID}.jsonl",
        "cwd": "/home/me/work/shop",
        "permission_mode": "default",
        "hook_event_name": "PostToolUse",
        "tool_name": tool_name,
        "tool_input": {"todos": TODOS} if tool_input is None else tool_input,
        "tool_response": {"oldTodos": [], "newTodos": TODOS},
        "tool_use_id": "toolu_01ABC",
    }
    return body | fields


def test_it_records_a_todowrite_in_the_session_named_by_session_id(api):
    r = api.post(URL, hook())
    assert r.status_code == 200, r.content
    body = r.json()
    assert body["ok"] is True
    assert body["tool"] == "TodoWrite"
    assert body["dialect"] == "claude"
    assert body["output"].startswith("Todo list updated: 1/3 completed (revision 1).")
    assert body["reply"] == {
        "type": "tool_result",
        "tool_use_id": "toolu_01ABC",
        "content": body["output"],
        "is_error": False,
    }
    data = body["data"]
    assert data["session"]["key"] == SESSION_ID
    assert data["session"]["parent"] is None
    assert data["revision"] == 1
    assert [t["content"] for t in data["todos"]] == ["Reproduce the bug", "Write the fix", "Run the tests"]


def test_it_titles_the_session_after_the_last_folder_of_cwd(api):
    api.post(URL, hook(cwd="/home/me/work/shop/"))
    assert Session.objects.get(key=SESSION_ID).title == "shop"


def test_it_takes_the_folder_of_a_windows_cwd(api):
    api.post(URL, hook(cwd="C:\\Users\\me\\src\\billing"))
    assert Session.objects.get(key=SESSION_ID).title == "billing"


def test_it_keeps_a_title_set_by_hand(api):
    api.post(URL, hook())
    api.patch(f"/api/v1/sessions/{SESSION_ID}", {"title": "Checkout fix"})
    api.post(URL, hook(tool_use_id="toolu_02", tool_input={"todos": TODOS[:1]}))
    assert Session.objects.get(key=SESSION_ID).title == "Checkout fix"


def test_it_puts_a_subagents_calls_in_a_child_session(api):
    r = api.post(URL, hook(agent_id="a7f3c2", agent_type="Explore"))
    assert r.status_code == 200, r.content
    child = Session.objects.get(key=f"{SESSION_ID}:a7f3c2")
    parent = Session.objects.get(key=SESSION_ID)
    assert child.parent == parent
    assert child.revision == 1
    assert child.title == "shop"
    # The parent exists for the board to nest the child under, with no plan of its own yet.
    assert parent.revision == 0
    assert parent.state == "empty"
    assert r.json()["data"]["session"]["parent"] == parent.public_id


def test_it_links_a_child_to_an_existing_main_session(api):
    api.post(URL, hook())
    api.post(URL, hook(agent_id="a7f3c2", tool_use_id="toolu_02"))
    parent = Session.objects.get(key=SESSION_ID)
    assert parent.revision == 1
    assert Session.objects.get(key=f"{SESSION_ID}:a7f3c2").parent == parent


def test_it_ignores_other_tools(api):
    r = api.post(URL, hook("Bash", {"command": "ls"}))
    assert r.status_code == 200
    body = r.json()
    assert body["ok"] is True
    assert body["ignored"] is True
    assert "Bash" in body["reason"]
    assert not Session.objects.exists()


def test_it_ignores_other_hook_events(api):
    for event in ("PreToolUse", "UserPromptSubmit", "SessionStart", "Stop"):
        r = api.post(URL, hook(hook_event_name=event))
        assert r.status_code == 200, event
        assert r.json()["ignored"] is True
        assert event in r.json()["reason"]
    assert not Session.objects.exists()


def test_it_answers_an_invalid_todowrite_with_an_error_and_writes_nothing(api):
    todos = [{"content": "Ship it", "status": "done", "activeForm": "Shipping it"}]
    r = api.post(URL, hook(tool_input={"todos": todos}))
    assert r.status_code == 422
    body = r.json()
    assert body["ok"] is False
    assert body["error"]["code"] == "invalid_input"
    message = "Todo at index 0: invalid status 'done'. Must be one of: pending, in_progress, completed"
    assert body["error"]["message"] == message
    assert body["reply"] == {"type": "tool_result", "tool_use_id": "toolu_01ABC", "content": message, "is_error": True}
    assert not Session.objects.exists()
    assert not Revision.objects.exists()


def test_it_leaves_no_parent_behind_for_an_invalid_subagent_call(api):
    r = api.post(URL, hook(agent_id="a7f3c2", tool_input={"todos": "nope"}))
    assert r.status_code == 422
    assert not Session.objects.exists()


def test_it_replays_a_repeated_hook_without_writing(api):
    first = api.post(URL, hook())
    again = api.post(URL, hook())
    assert again.status_code == 200
    assert again["Idempotent-Replayed"] == "true"
    assert again.json() == first.json()
    assert Revision.objects.count() == 1


def test_it_answers_natively_when_asked(api):
    r = api.post(URL + "?reply=native", hook())
    assert r.json()["output"] == '{"success":true,"count":3}'


def test_it_requires_a_session_id(api):
    body = hook()
    del body["session_id"]
    r = api.post(URL, body)
    assert r.status_code == 422
    assert r.json()["error"]["code"] == "invalid_input"
    assert "session_id" in r.json()["error"]["message"]


def test_it_rejects_a_session_id_outside_the_key_format(api):
    r = api.post(URL, hook(session_id="has spaces/and slashes"))
    assert r.status_code == 422
    assert "Invalid session key" in r.json()["error"]["message"]
    assert not Session.objects.exists()


def test_it_rejects_an_agent_id_outside_the_key_format(api):
    r = api.post(URL, hook(agent_id="not ok"))
    assert r.status_code == 422
    assert "agent_id" in r.json()["error"]["message"]


def test_it_rejects_a_body_that_is_not_an_object(api):
    r = api.post(URL, [1, 2])
    assert r.status_code == 422
    assert r.json()["error"]["code"] == "invalid_input"


def test_it_rejects_invalid_json(api):
    r = api.post(URL, "{not json")
    assert r.status_code == 400
    assert r.json()["error"]["code"] == "invalid_json"


def test_it_needs_a_write_token(read_api):
    r = read_api.post(URL, hook())
    assert r.status_code == 403
    assert r.json()["error"]["code"] == "forbidden"
    assert not Session.objects.exists()


def test_it_needs_a_token(client, project):
    r = client.post(URL, data=json.dumps(hook()), content_type="application/json")
    assert r.status_code == 401
    assert r.json()["error"]["code"] == "unauthorized"


def test_it_records_task_create_and_update(api):
    create = {"subject": "Write the parser", "description": "Parse the config file", "activeForm": "Writing the parser"}
    r = api.post(URL, hook("TaskCreate", create, tool_response={"task": {"id": "1"}}))
    assert r.status_code == 200, r.content
    body = r.json()
    assert body["dialect"] == "claude-tasks"
    todo = body["data"]["todos"][0]
    assert (todo["id"], todo["content"], todo["status"]) == ("1", "Write the parser", "pending")

    r = api.post(URL, hook("TaskUpdate", {"taskId": "1", "status": "in_progress"}, tool_use_id="toolu_02"))
    assert r.status_code == 200, r.content
    data = r.json()["data"]
    assert data["revision"] == 2
    assert data["todos"][0]["status"] == "in_progress"
    assert data["session"]["title"] == "shop"


def test_it_answers_task_list_without_writing(api):
    create = {"subject": "Write the parser", "description": "Parse the config file"}
    api.post(URL, hook("TaskCreate", create))
    r = api.post(URL, hook("TaskList", {}, tool_use_id="toolu_02"))
    assert r.status_code == 200, r.content
    assert r.json()["data"]["revision"] == 1
    assert Revision.objects.count() == 1


CODEX_URL = "/api/v1/hooks/codex"
PLAN = {
    "explanation": "Ship it",
    "plan": [{"step": "Build", "status": "completed"}, {"step": "Test", "status": "in_progress"}],
}


def codex_hook(tool_name: str = "update_plan", tool_input: Any = None, **fields: Any) -> dict[str, Any]:
    """Codex's PostToolUse input (as Codex 0.169 sends it to a command hook)."""
    body = {
        "session_id": "019a7b2c-codex-session",
        "turn_id": "1",
        "transcript_path": "/home/me/.codex/sessions/rollout.jsonl",
        "cwd": "/home/me/work/shop",
        "hook_event_name": "PostToolUse",
        "model": "gpt-5.5",
        "permission_mode": "default",
        "tool_name": tool_name,
        "tool_input": PLAN if tool_input is None else tool_input,
        "tool_response": "Plan updated",
        "tool_use_id": "call_abc",
    }
    return body | fields


def test_it_records_codexs_update_plan_from_its_hook(api):
    r = api.post(CODEX_URL, codex_hook())
    assert r.status_code == 200, r.content
    session = Session.objects.get(key="019a7b2c-codex-session")
    revision = Revision.objects.get(session=session)
    assert revision.dialect == "codex" and revision.call_id == "call_abc"
    assert [(t["content"], t["status"]) for t in revision.todos] == [("Build", "completed"), ("Test", "in_progress")]
    assert session.title == "Ship it"
    # The same hook again (Codex retried): written once.
    assert api.post(CODEX_URL, codex_hook()).status_code == 200
    assert Revision.objects.filter(session=session).count() == 1


def test_each_agents_hook_records_only_its_own_tools(api):
    assert api.post(CODEX_URL, codex_hook("TodoWrite", {"todos": TODOS})).json()["ignored"] is True
    assert api.post(URL, hook("update_plan", PLAN)).json()["ignored"] is True
    assert not Revision.objects.exists()


# What each agent's hook sends for its own todo tool (captured from the real CLIs).
AGENT_HOOKS = [
    (
        "gemini-cli",
        {
            "hook_event_name": "AfterTool",
            "tool_name": "write_todos",
            "tool_input": {"todos": [{"description": "Read the code", "status": "in_progress"}]},
            "tool_response": {"llmContent": "Successfully updated the todo list."},
        },
        "gemini",
    ),
    (
        "qwen-code",
        {
            "hook_event_name": "PostToolUse",
            "permission_mode": "default",
            "tool_name": "todo_write",
            "tool_input": {"todos": [{"id": "1", "content": "Read the code", "status": "in_progress"}]},
            "tool_response": {"llmContent": "Todos have been modified successfully."},
            "tool_use_id": "toolu_1795429506834_w8ruq1tsa",
        },
        "qwen",
    ),
    (
        "opencode",
        {
            "hook_event_name": "tool.execute.after",
            "tool_name": "todowrite",
            "tool_input": {"todos": [{"content": "Read the code", "status": "in_progress", "priority": "high"}]},
            "tool_use_id": "call_1",
        },
        "opencode",
    ),
]


@pytest.mark.parametrize(("agent", "fields", "dialect"), AGENT_HOOKS, ids=[a for a, _, _ in AGENT_HOOKS])
def test_each_agents_hook_records_its_todo_tool_in_its_dialect(api, agent, fields, dialect):
    body = {"session_id": f"{agent}-session", "cwd": "/home/me/shop", "timestamp": "2026-11-23T10:21:58.400Z"}
    r = api.post(f"/api/v1/hooks/{agent}", body | fields)
    assert r.status_code == 200, r.content
    revision = Revision.objects.get(session__key=f"{agent}-session")
    assert revision.dialect == dialect
    assert [(t["content"], t["status"]) for t in revision.todos] == [("Read the code", "in_progress")]
    assert revision.session.title == "shop"


def test_a_tool_call_that_failed_in_the_agent_is_not_recorded(api):
    _, fields, _ = AGENT_HOOKS[0]
    body = {"session_id": "s1"} | fields | {"tool_response": {"error": "Invalid parameters"}}
    assert api.post("/api/v1/hooks/gemini-cli", body).json()["ignored"] is True
    assert not Revision.objects.exists()


def test_it_gives_claude_code_a_persons_edit_as_context_for_the_model(api):
    api.post(URL, hook())
    todos = [{"id": "1", "content": "Reproduce the bug", "status": "completed"}]
    assert (
        api.post(f"/api/v1/sessions/{SESSION_ID}/edits", {"todos": todos}, headers={"If-Match": "1"}).status_code == 200
    )
    body = api.post(URL, hook(tool_use_id="toolu_02")).json()
    context = body["hookSpecificOutput"]
    assert context["hookEventName"] == "PostToolUse"
    assert context["additionalContext"].startswith('The user changed the plan:\n- removed "Write the fix"')
    assert body["output"].startswith(context["additionalContext"])
    # Told once.
    assert "hookSpecificOutput" not in api.post(URL, hook(tool_use_id="toolu_03")).json()
