"""Questions the agent asks people on the board: Claude Code's plan waits for a
member's approval (a PreToolUse hook on ExitPlanMode), a tool waits to be allowed
(the channel's permission relay, by API); the first answer counts."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from django.db import connection
from django.test import Client

from tests.conftest import Api
from todoweb.models import Question

SESSION_ID = "5b7e1c42-9f0d-4a63-8d2e-1a3c5e7f9b0d"
PLAN = "# Plan\n1. Reproduce the bug\n2. Fix <b>it</b>\n3. Add a regression test"


def exit_plan_mode() -> dict[str, Any]:
    return {
        "session_id": SESSION_ID,
        "cwd": "/home/me/shop",
        "hook_event_name": "PreToolUse",
        "tool_name": "ExitPlanMode",
        "tool_input": {"plan": PLAN, "planFilePath": "/home/me/.claude/plans/fix.md"},
        "tool_use_id": "toolu_plan",
    }


def waiting_question(timeout: float = 10) -> Question:
    deadline = time.monotonic() + timeout
    while (question := Question.objects.first()) is None:
        assert time.monotonic() < deadline, "the hook never asked"
        time.sleep(0.02)
    return question


def hook_with_answer(token: str, answer: dict[str, Any] | None, *, wait: int = 20) -> dict[str, Any]:
    """Runs the hook (which waits) and answers its question from another client."""

    def run_hook() -> dict[str, Any]:
        try:
            return Api(token).post(f"/api/v1/hooks/claude-code?wait={wait}", exit_plan_mode()).json()
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=1) as pool:
        pending = pool.submit(run_hook)
        question = waiting_question()
        assert (question.kind, question.text, question.tool_name) == ("plan", PLAN, "ExitPlanMode")
        if answer is not None:
            url = f"/api/v1/sessions/{SESSION_ID}/questions/{question.pk}/answer"
            assert Api(token).post(url, answer).status_code == 200
        return pending.result(timeout=wait + 10)


@pytest.mark.django_db(transaction=True)
def test_an_approved_plan_goes_on_with_the_members_feedback(token):
    output = hook_with_answer(token, {"decision": "allow", "feedback": "Keep the fix small"})["hookSpecificOutput"]
    assert output["permissionDecision"] == "allow"
    # Claude Code leaves plan mode only with the input given back.
    assert output["updatedInput"] == exit_plan_mode()["tool_input"]
    assert output["additionalContext"] == "The user approved the plan and added: Keep the fix small"


@pytest.mark.django_db(transaction=True)
def test_a_denied_plan_tells_the_model_why(token):
    output = hook_with_answer(token, {"decision": "deny", "feedback": "Add a test first"})["hookSpecificOutput"]
    assert output == {
        "hookEventName": "PreToolUse",
        "permissionDecision": "deny",
        "permissionDecisionReason": "The user did not approve the plan: Add a test first",
    }


@pytest.mark.django_db(transaction=True)
def test_with_no_answer_in_time_claude_codes_own_prompt_asks(token):
    output = hook_with_answer(token, None, wait=1)["hookSpecificOutput"]
    assert (output["permissionDecision"], output["permissionDecisionReason"]) == (
        "ask",
        "No answer on the board within 1 s",
    )
    (question,) = Api(token).get(f"/api/v1/sessions/{SESSION_ID}/questions").json()["questions"]
    assert question["state"] == "expired"
    answer = Api(token).post(f"/api/v1/sessions/{SESSION_ID}/questions/{question['id']}/answer", {"decision": "allow"})
    assert answer.status_code == 409 and answer.json()["error"]["code"] == "already_answered"


def test_a_permission_question_is_answered_once_and_waited_on(api):
    asked = api.post(
        f"/api/v1/sessions/{SESSION_ID}/questions",
        {
            "kind": "permission",
            "request_id": "abcde",
            "tool_name": "Bash",
            "text": "Delete build/",
            "detail": '{"command": "rm -rf build"}',
            "wait": 120,
        },
    )
    assert asked.status_code == 201, asked.content
    question = asked.json()
    assert (question["state"], question["tool"], question["kind"]) == ("open", "Bash", "permission")
    url = f"/api/v1/sessions/{SESSION_ID}/questions/{question['id']}"
    assert api.get(f"{url}?wait=0").json()["state"] == "open"
    assert (
        api.post(f"{url}/answer", {"decision": "deny", "feedback": "Not the build folder"}).json()["state"] == "denied"
    )
    assert api.post(f"{url}/answer", {"decision": "allow"}).status_code == 409  # the first answer counts
    answered = api.get(f"{url}?wait=30").json()  # answered already: no wait
    assert (answered["state"], answered["feedback"]) == ("denied", "Not the build folder")


def test_questions_take_only_their_own_fields_and_a_write_token(api, read_api):
    url = f"/api/v1/sessions/{SESSION_ID}/questions"
    assert api.post(url, {"kind": "vote"}).status_code == 422
    assert api.post(url, {"kind": "plan", "wait": 0}).status_code == 422
    assert read_api.post(url, {"kind": "plan"}).status_code == 403


def test_a_member_answers_on_the_board_and_leaves_a_note(api, member):
    question = api.post(f"/api/v1/sessions/{SESSION_ID}/questions", {"kind": "plan", "text": PLAN}).json()
    from todoweb.models import Session

    public_id = Session.objects.get(key=SESSION_ID).public_id
    board = Client()
    board.force_login(member)
    actions = f"/s/{public_id}/actions/"
    answered = board.post(
        f"{actions}answer", {"question": question["id"], "decision": "allow"}, content_type="application/json"
    )
    assert answered.status_code == 200 and answered.json()["state"] == "allowed"
    assert Question.objects.get().decided_by == "member"
    note = board.post(f"{actions}note", {"text": "Ship it after lunch"}, content_type="application/json")
    assert note.status_code == 201 and note.json()["state"] == "waiting"
    told = api.post(f"/api/v1/sessions/{SESSION_ID}/tell", {"route": "Claude Code channel"}).json()
    assert told == {"told": True, "notice": "The user's note: Ship it after lunch"}
    assert api.post(f"/api/v1/sessions/{SESSION_ID}/tell", {}).json() == {"told": False, "notice": None}
    (message,) = api.get(f"/api/v1/sessions/{SESSION_ID}/messages").json()["messages"]
    assert message["told_via"] == "Claude Code channel"


def test_the_panel_carries_the_questions_and_messages(api, member):
    api.post(f"/api/v1/sessions/{SESSION_ID}/questions", {"kind": "plan", "text": PLAN})
    api.post(f"/api/v1/sessions/{SESSION_ID}/messages", {"text": "Hello <agent>"})
    from todoweb.models import Session

    board = Client()
    board.force_login(member)
    page = board.get(Session.objects.get(key=SESSION_ID).get_absolute_url())
    config = page.context["config"]
    assert [q["text"] for q in config["questions"]] == [PLAN]
    assert [m["text"] for m in config["messages"]] == ["Hello <agent>"]
    assert "Hello <agent>" not in page.content.decode()  # only in escaped JSON, never as markup
