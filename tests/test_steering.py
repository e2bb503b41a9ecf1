"""People's messages reach the agent on its very next tool call of any kind, through
its hook, exactly once; notes are messages of their own; the board sees each one
waiting, told (when, by which route) and kept."""

from __future__ import annotations

from typing import Any

import pytest

from todoweb.models import Session

SESSION_ID = "3f0c2b6e-1d5a-4c2e-9a43-58f1d7b0c9e1"
TODOS = [
    {"content": "Write the fix", "status": "in_progress", "activeForm": "Writing the fix"},
    {"content": "Run the tests", "status": "pending", "activeForm": "Running the tests"},
]


def hook(agent: str = "claude-code", tool: str = "Bash", event: str = "PostToolUse", **fields: Any) -> dict[str, Any]:
    return {
        "session_id": SESSION_ID,
        "cwd": "/home/me/shop",
        "hook_event_name": event,
        "tool_name": tool,
        "tool_input": {"command": "make test"},
        "tool_use_id": "toolu_9",
    } | fields


def started(api) -> None:
    assert api.call(SESSION_ID, "TodoWrite", {"todos": TODOS}).status_code == 200


def reworded(api) -> None:
    todos = [
        {"id": "1", "content": "Write the fix and its test", "status": "in_progress"},
        {"id": "2", "content": "Run the tests"},
    ]
    assert (
        api.post(f"/api/v1/sessions/{SESSION_ID}/edits", {"todos": todos}, headers={"If-Match": "1"}).status_code == 200
    )


def messages(api) -> list[dict[str, Any]]:
    return api.get(f"/api/v1/sessions/{SESSION_ID}/messages").json()["messages"]


@pytest.mark.parametrize(
    ("agent", "event", "tool"),
    [
        ("claude-code", "PostToolUse", "Bash"),
        ("claude-code", "PostToolUseFailure", "Read"),
        ("claude-code", "PostToolUse", "mcp__github__create_issue"),
        ("qwen-code", "PostToolUse", "run_shell_command"),
        ("gemini-cli", "AfterTool", "run_shell_command"),
        ("codex", "PostToolUse", "Bash"),
        ("opencode", "tool.execute.after", "bash"),
    ],
)
def test_an_edit_goes_with_the_agents_next_tool_call_of_any_kind_once(api, agent, event, tool):
    started(api)
    reworded(api)
    (message,) = messages(api)
    assert (message["state"], message["told_at"]) == ("waiting", None)
    answer = api.post(f"/api/v1/hooks/{agent}", hook(agent, tool, event)).json()
    assert answer["ignored"] is True  # nothing recorded: it is not a todo tool
    context = answer["hookSpecificOutput"]
    assert context["hookEventName"] == event
    assert context["additionalContext"].startswith(
        'The user changed the plan:\n- reworded "Write the fix" to "Write the fix and its test"'
    )
    (message,) = messages(api)
    assert message["state"] == "told" and message["told_via"].endswith(f" hook ({tool})")
    # Told once: the next call has nothing more to say, and neither has a todo call.
    assert "hookSpecificOutput" not in api.post(f"/api/v1/hooks/{agent}", hook(agent, tool, event)).json()
    assert "The user changed" not in api.call(SESSION_ID, "TodoRead", {}).json()["reply"]["content"]


def test_a_tool_call_with_nothing_to_tell_answers_plainly_and_creates_no_session(api):
    assert api.post("/api/v1/hooks/claude-code", hook()).json() == {
        "ok": True,
        "ignored": True,
        "reason": "Tool 'Bash' is not a todo tool; recorded: TaskCreate, TaskGet, TaskList, TaskUpdate, TodoWrite",
    }
    assert not Session.objects.exists()
    started(api)
    assert "hookSpecificOutput" not in api.post("/api/v1/hooks/claude-code", hook()).json()


def test_answer_hook_gives_only_what_the_hook_hands_the_model(api):
    started(api)
    assert api.post("/api/v1/hooks/codex?answer=hook", hook("codex")).json() == {}
    reworded(api)
    answer = api.post("/api/v1/hooks/codex?answer=hook", hook("codex")).json()
    assert list(answer) == ["hookSpecificOutput"]
    assert answer["hookSpecificOutput"]["additionalContext"].startswith("The user changed the plan:")


def test_a_note_alone_reaches_the_agent_and_changes_no_plan(api):
    started(api)
    note = api.post(f"/api/v1/sessions/{SESSION_ID}/messages", {"text": "Use the staging database <b>please</b>"})
    assert note.status_code == 201, note.content
    assert note.json()["kind"] == "note" and note.json()["state"] == "waiting"
    assert api.revision(SESSION_ID) == 1
    context = api.post("/api/v1/hooks/claude-code", hook())
    assert (
        context.json()["hookSpecificOutput"]["additionalContext"]
        == "The user's note: Use the staging database <b>please</b>"
    )
    (message,) = messages(api)
    assert (message["state"], message["told_via"]) == ("told", "Claude Code hook (Bash)")


def test_an_edit_waits_then_is_kept_in_the_agents_next_revision(api):
    started(api)
    reworded(api)
    api.post("/api/v1/hooks/claude-code", hook())
    api.call(
        SESSION_ID,
        "TodoWrite",
        {"todos": [dict(TODOS[0], content="Write the fix and its test", status="completed"), TODOS[1]]},
    )
    (message,) = messages(api)
    assert (message["state"], message["kept_in"]) == ("kept", 3)


def test_a_subagents_tool_call_is_told_what_people_told_its_own_session(api):
    child = f"{SESSION_ID}:explorer"
    api.post("/api/v1/hooks/claude-code", hook(tool="TodoWrite", tool_input={"todos": TODOS}, agent_id="explorer"))
    api.post(f"/api/v1/sessions/{child}/messages", {"text": "Skip the vendored code"})
    assert "hookSpecificOutput" not in api.post("/api/v1/hooks/claude-code", hook()).json()  # the main agent
    answer = api.post("/api/v1/hooks/claude-code", hook(agent_id="explorer")).json()
    assert answer["hookSpecificOutput"]["additionalContext"] == "The user's note: Skip the vendored code"


@pytest.mark.parametrize("text", ["", "   ", "x" * 2001])
def test_a_note_must_say_something_within_the_limit(api, text):
    started(api)
    answer = api.post(f"/api/v1/sessions/{SESSION_ID}/messages", {"text": text})
    assert answer.status_code == 422
    assert messages(api) == []


def test_a_read_token_cannot_leave_a_note(read_api, api):
    started(api)
    assert read_api.post(f"/api/v1/sessions/{SESSION_ID}/messages", {"text": "hi"}).status_code == 403


def test_a_stale_list_after_a_hook_told_the_edit_is_merged_with_it(api):
    """A hook tells the edit beside another tool's result, but the agent's next whole
    list may have been made before (the same turn): it is merged, not taken as is.
    Only a todo tool's answer shows the agent the plan; its next list is its own."""
    started(api)
    reworded(api)
    assert "hookSpecificOutput" in api.post("/api/v1/hooks/claude-code", hook()).json()
    stale = [dict(TODOS[0], status="completed"), dict(TODOS[1], status="in_progress")]
    api.call(SESSION_ID, "TodoWrite", {"todos": stale})
    todos = api.get(f"/api/v1/sessions/{SESSION_ID}").json()["todos"]
    assert [(t["content"], t["status"]) for t in todos] == [
        ("Write the fix and its test", "completed"),
        ("Run the tests", "in_progress"),
    ]
    (message,) = messages(api)
    assert (message["state"], message["kept_in"]) == ("kept", 3)
    # The answer showed the merged plan: the agent's next list is taken as written.
    api.call(SESSION_ID, "TodoWrite", {"todos": stale})
    todos = api.get(f"/api/v1/sessions/{SESSION_ID}").json()["todos"]
    assert [t["content"] for t in todos] == ["Write the fix", "Run the tests"]
