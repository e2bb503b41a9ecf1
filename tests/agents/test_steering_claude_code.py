"""People steer a running Claude Code (the real CLI, headless, scripted model) through
docs/agents.md's steering hooks.

- A PostToolUse http hook with matcher `*`: a person's edit made while the agent works
  reaches the model with the agent's very next tool call of any kind (here a Bash or
  a Read call), as context beside that tool's result.
- The agent's own full TodoWrite list, written afterwards from what it held before
  the edit, keeps the person's edit (todoweb merges it).
- A PreToolUse http hook on ExitPlanMode with `?wait=`: the CLI waits until a member
  answers the plan question (here through the API, as the board does); the model
  reads the decision and the member's feedback.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from typing import Any

import pytest

from tests.agents.conftest import failure_context, recorded, steps
from tests.agents.fake_anthropic import FakeAnthropic, tool_results
from tests.agents.fake_model import Call, Script, Turn
from tests.agents.harness import run_cli
from tests.agents.test_claude_code import CLAUDE_CODE, OFFLINE, at, holds, todo

# The docs/agents.md recipes, verbatim; the tests only swap in the test server's address.
ANY_TOOL_HOOK = {
    "hooks": {
        "PostToolUse": [
            {
                "matcher": "*",
                "hooks": [
                    {
                        "type": "http",
                        "url": "http://127.0.0.1:8000/api/v1/hooks/claude-code",
                        "headers": {"Authorization": "Bearer $TODOWEB_TOKEN"},
                        "allowedEnvVars": ["TODOWEB_TOKEN"],
                        "timeout": 5,
                    }
                ],
            }
        ]
    }
}
PLAN_HOOK = {
    "hooks": {
        "PreToolUse": [
            {
                "matcher": "ExitPlanMode",
                "hooks": [
                    {
                        "type": "http",
                        "url": "http://127.0.0.1:8000/api/v1/hooks/claude-code?wait=300",
                        "headers": {"Authorization": "Bearer $TODOWEB_TOKEN"},
                        "allowedEnvVars": ["TODOWEB_TOKEN"],
                        "timeout": 330,
                    }
                ],
            }
        ]
    }
}

PROMPT = "Fix the bug in the shop's checkout and keep a todo list while you work."
BEFORE = [todo("Read the code", "in_progress", "Reading the code"), todo("Fix the bug", "pending", "Fixing the bug")]
# What the agent writes next, from the list it held before the person's edit.
STALE = [todo("Read the code", "completed", "Reading the code"), todo("Fix the bug", "in_progress", "Fixing the bug")]
EDITED = [
    {"id": "1", "content": "Read the code", "status": "in_progress"},
    {"id": "2", "content": "Fix the bug and add a regression test", "status": "pending"},
]
EDIT_NOTICE = 'The user changed the plan:\n- reworded "Fix the bug" to "Fix the bug and add a regression test"'
# A call of each kind but a todo call: a shell command (allowed on the command line)
# and a file read (allowed in the project folder by default).
OTHER_CALLS = {
    "Bash": Call("Bash", {"command": "cat checkout.py", "description": "Show the checkout code"}),
    "Read": Call("Read", {"file_path": "checkout.py"}),
}


@pytest.fixture(scope="module")
def claude(install_cli):
    return install_cli(*CLAUDE_CODE)


def env_for(agent_env: dict[str, str], fake: FakeAnthropic, token: str) -> dict[str, str]:
    return (
        agent_env
        | OFFLINE
        | {
            "CLAUDE_CODE_ENABLE_TASKS": "false",  # TodoWrite: a whole list, written stale below
            "ANTHROPIC_BASE_URL": fake.url,
            "ANTHROPIC_API_KEY": "sk-ant-fake",
            "TODOWEB_TOKEN": token,
        }
    )


def settings(workdir, url: str, recipe: dict[str, Any]) -> None:
    path = workdir / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text(json.dumps(at(url, recipe), indent=2))


def says(request, text: str) -> bool:
    """Whether the request's newest message (what came back from the agent's last
    calls) holds `text`."""
    newest = request.body["messages"][-1]
    return json.dumps(text, ensure_ascii=False)[1:-1] in json.dumps(newest, ensure_ascii=False)


def claude_args(claude, session_id: str, *extra: str) -> list[str]:
    return [str(claude.executable), "-p", PROMPT, "--session-id", session_id, "--output-format", "json", *extra]


@pytest.mark.parametrize("tool", list(OTHER_CALLS))
def test_a_persons_edit_reaches_the_model_with_the_next_tool_call_of_any_kind_and_is_kept(
    claude, todoweb, token, board, internet_trap, agent_env, workdir, tmp_path, tool
):
    """The person rewords a step while the agent works (after its first TodoWrite); the
    agent's next call is a Bash or Read call, and the model's very next request holds
    the notice as context. Then the agent writes its stale whole list: the edit stays.

    Seen failing with the mechanism off (the hook's matcher `TodoWrite` instead of
    `*`): the Bash/Read call fires no hook, so the request after it lacks the notice
    (the first assertion on `turns[2]` fails); the notice only comes with the next
    TodoWrite, a turn late."""
    (workdir / "checkout.py").write_text("def total(items):\n    return round(sum(items), 2)\n")
    settings(workdir, todoweb.url, ANY_TOOL_HOOK)
    session_id = str(uuid.uuid4())
    edited: dict[str, Any] = {}

    def before_turn(turn: int) -> None:
        if turn == 1:  # the agent's first list is on the board: the person edits it
            board.live[1] = board.wait_for(1)
            with todoweb.api(token) as api:
                answer = api.post(
                    f"/api/v1/sessions/{session_id}/edits", json={"todos": EDITED}, headers={"If-Match": "1"}
                )
                edited["status"] = answer.status_code

    script = Script(
        [
            Turn.call("TodoWrite", {"todos": BEFORE}, text="Let me track this."),
            Turn(text="Let me look at the code.", calls=(OTHER_CALLS[tool],)),
            Turn.call("TodoWrite", {"todos": STALE}, text="Now the fix."),
            Turn(text="The bug is fixed."),
        ],
        before_turn=before_turn,
    )
    with FakeAnthropic(script) as fake:
        extra = ["--allowedTools", "Bash(cat:*)"] if tool == "Bash" else []
        run = run_cli(
            claude_args(claude, session_id, *extra),
            env=env_for(agent_env, fake, token),
            cwd=workdir,
            log_dir=tmp_path / "logs",
            name="claude",
        )
    context = failure_context(run, fake, internet_trap, todoweb)
    assert run.returncode == 0 and fake.errors == [], context
    assert edited == {"status": 200} and board.live == {1: True}, (edited, board.live, context)
    turns = {request.turn: request for request in fake.turns()}
    assert sorted(turns) == [0, 1, 2, 3], context
    # The Bash/Read call ran (its own result is there) and the notice came with it.
    [result] = tool_results(turns[2])
    assert not result["is_error"] and "round(sum(items), 2)" in result["text"], (result, context)
    assert says(turns[2], EDIT_NOTICE), context
    assert not holds(turns[1], EDIT_NOTICE), context
    assert not says(turns[3], EDIT_NOTICE), context  # told once: the stale TodoWrite's answer does not repeat it

    with todoweb.api(token) as api:
        [message] = api.get(f"/api/v1/sessions/{session_id}/messages").json()["messages"]
        current = api.get(f"/api/v1/sessions/{session_id}").json()
    assert message["told_via"] == f"Claude Code hook ({tool})", message
    # The stale list kept the person's wording, with the agent's progress.
    assert steps(current["todos"]) == [
        ("Read the code", "completed"),
        ("Fix the bug and add a regression test", "in_progress"),
    ], (current, context)
    [revisions] = recorded(todoweb, token).values()
    assert [(r["revision"], r["author"]) for r in revisions] == [(1, "agent"), (2, "user"), (3, "agent")], context
    assert internet_trap.attempts == [], context


PLAN = "1. Read the checkout code\n2. Round the total once\n3. Run the tests"


def answer_when_asked(todoweb, token: str, session_id: str, decision: str, feedback: str, outcome: dict[str, Any]):
    """A member's answer to the plan question, once it is open: on a thread, while the CLI waits."""

    def answer() -> None:
        deadline = time.monotonic() + 60
        with todoweb.api(token) as api:
            while time.monotonic() < deadline:
                found = api.get(f"/api/v1/sessions/{session_id}/questions")
                if found.status_code == 200:
                    open_ = [q for q in found.json()["questions"] if q["state"] == "open"]
                    if open_:
                        outcome["question"] = open_[0]
                        outcome["answered_at"] = time.time()
                        url = f"/api/v1/sessions/{session_id}/questions/{open_[0]['id']}/answer"
                        reply = api.post(url, json={"decision": decision, "feedback": feedback})
                        outcome["answer"] = (reply.status_code, reply.json())
                        return
                time.sleep(0.2)  # polling for the question, with a deadline
        outcome["answer"] = "no question was asked within 60 s"

    thread = threading.Thread(target=answer, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize(
    ("decision", "feedback", "told"),
    [
        ("deny", "Add a regression test first", "The user did not approve the plan: Add a regression test first"),
        ("allow", "Keep the diff small", "The user approved the plan and added: Keep the diff small"),
    ],
)
def test_a_plan_waits_for_a_members_answer_on_the_board(
    claude, todoweb, token, internet_trap, agent_env, workdir, tmp_path, decision, feedback, told
):
    """In plan mode the model calls ExitPlanMode; the PreToolUse hook holds the CLI
    until a member answers (the model's next request comes after the answer), and the
    model reads the decision with the member's feedback.

    Seen failing with the mechanism off (no PreToolUse hook): headless Claude Code
    decides ExitPlanMode by itself at once: the next request comes before any member
    could answer, no question is ever asked on the board (the answering thread gives
    up), and the feedback is nowhere in the model's request."""
    settings(workdir, todoweb.url, PLAN_HOOK)
    session_id = str(uuid.uuid4())
    outcome: dict[str, Any] = {}
    script = Script(
        [
            Turn.call("ExitPlanMode", {"plan": PLAN}, text="Here is my plan."),
            Turn(text="Understood."),
        ]
    )
    with FakeAnthropic(script) as fake:
        waiter = answer_when_asked(todoweb, token, session_id, decision, feedback, outcome)
        run = run_cli(
            claude_args(claude, session_id, "--permission-mode", "plan"),
            env=env_for(agent_env, fake, token),
            cwd=workdir,
            log_dir=tmp_path / "logs",
            name="claude",
        )
        waiter.join(5)
    context = failure_context(run, fake, internet_trap, todoweb) + f"\n--- member ---\n{outcome}"
    assert run.returncode == 0 and fake.errors == [], context
    assert outcome.get("answer", (None,))[0] == 200, context
    assert outcome["question"]["kind"] == "plan" and outcome["question"]["tool_name"] == "ExitPlanMode", context
    turns = {request.turn: request for request in fake.turns()}
    assert sorted(turns) == [0, 1], context
    # The CLI waited for the member: the model's next request came after the answer.
    assert turns[1].at > outcome["answered_at"], context
    [result] = tool_results(turns[1])
    assert holds(turns[1], told), context
    assert result["is_error"] is (decision == "deny"), (result, context)
    with todoweb.api(token) as api:
        [question] = api.get(f"/api/v1/sessions/{session_id}/questions").json()["questions"]
    assert question["state"] == ("denied" if decision == "deny" else "allowed"), question
    assert internet_trap.attempts == [], context
