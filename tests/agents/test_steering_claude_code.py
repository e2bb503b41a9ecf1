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
CHECKOUT = "def total(items):\n    return round(sum(items), 2)\n"
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


def edit_once_the_board_shows(revision: int, todoweb, token: str, board, session_id: str, edited: dict[str, Any]):
    """`before_turn` for the fake model: before turn 1 (the agent's first list is on the
    board) a person rewords a step, through the API as the board does."""

    def before_turn(turn: int) -> None:
        if turn == 1:
            board.live[revision] = board.wait_for(revision)
            with todoweb.api(token) as api:
                answer = api.post(
                    f"/api/v1/sessions/{session_id}/edits", json={"todos": EDITED}, headers={"If-Match": str(revision)}
                )
                edited["status"] = answer.status_code

    return before_turn


def run_claude(claude, turns: list[Turn], before_turn, *, todoweb, token, agent_env, workdir, tmp_path, extra=()):
    session_id = str(uuid.uuid4())
    edited: dict[str, Any] = {}
    script = Script(turns, before_turn=before_turn(session_id, edited))
    with FakeAnthropic(script) as fake:
        run = run_cli(
            claude_args(claude, session_id, *extra),
            env=env_for(agent_env, fake, token),
            cwd=workdir,
            log_dir=tmp_path / "logs",
            name="claude",
        )
    return session_id, edited, fake, run


@pytest.mark.parametrize("tool", list(OTHER_CALLS))
def test_a_persons_edit_reaches_the_model_with_the_next_tool_call_of_any_kind(
    claude, todoweb, token, board, internet_trap, agent_env, workdir, tmp_path, tool
):
    """The person rewords a step while the agent works (after its first TodoWrite); the
    agent's next call is a Bash or Read call, and the model's very next request holds
    the notice, beside that call's own result.

    Seen failing with the mechanism off (the hook's matcher `TodoWrite` instead of
    `*`): the Bash/Read call fires no hook, so the request after it lacks the notice
    (`says(turns[2], EDIT_NOTICE)` fails); the notice only comes with the agent's next
    TodoWrite, a turn late."""
    (workdir / "checkout.py").write_text(CHECKOUT)
    settings(workdir, todoweb.url, ANY_TOOL_HOOK)
    turns = [
        Turn.call("TodoWrite", {"todos": BEFORE}, text="Let me track this."),
        Turn(text="Let me look at the code.", calls=(OTHER_CALLS[tool],)),
        Turn(text="The bug is fixed."),
    ]
    session_id, edited, fake, run = run_claude(
        claude,
        turns,
        lambda key, edited: edit_once_the_board_shows(1, todoweb, token, board, key, edited),
        todoweb=todoweb,
        token=token,
        agent_env=agent_env,
        workdir=workdir,
        tmp_path=tmp_path,
        extra=["--allowedTools", "Bash(cat:*)"] if tool == "Bash" else [],
    )
    context = failure_context(run, fake, internet_trap, todoweb)
    assert run.returncode == 0 and fake.errors == [], context
    assert json.loads(run.stdout)["result"] == "The bug is fixed.", context
    assert edited == {"status": 200} and board.live == {1: True}, (edited, board.live, context)
    requests = {request.turn: request for request in fake.turns()}
    assert sorted(requests) == [0, 1, 2], context
    # The Bash/Read call ran (its own result is there) and the notice came with it.
    [result] = tool_results(requests[2])
    assert not result["is_error"] and "round(sum(items), 2)" in result["text"], (result, context)
    assert says(requests[2], EDIT_NOTICE), context
    assert not holds(requests[1], EDIT_NOTICE), context
    with todoweb.api(token) as api:
        [message] = api.get(f"/api/v1/sessions/{session_id}/messages").json()["messages"]
    assert (message["state"], message["told_via"]) == ("told", f"Claude Code hook ({tool})"), message
    assert internet_trap.attempts == [], context


# The agent's stale list, written in the turn after the notice came with its Read call
# ("next-turn"), or in the same turn as that Read call, so composed before any notice
# ("same-turn").
STALE_WRITES = {
    "next-turn": [
        Turn(text="Let me look at the code.", calls=(OTHER_CALLS["Read"],)),
        Turn.call("TodoWrite", {"todos": STALE}, text="Now the fix."),
    ],
    "same-turn": [
        Turn(text="Let me look at the code.", calls=(OTHER_CALLS["Read"], Call("TodoWrite", {"todos": STALE}))),
    ],
}


@pytest.mark.parametrize("when", list(STALE_WRITES))
def test_the_agents_stale_list_keeps_the_persons_edit(
    claude, todoweb, token, board, internet_trap, agent_env, workdir, tmp_path, when
):
    """After the person's edit the agent writes its whole TodoWrite list from what it
    held before the edit (the first step done, the second started, in the old words):
    the session's plan keeps the person's wording with the agent's progress."""
    (workdir / "checkout.py").write_text(CHECKOUT)
    settings(workdir, todoweb.url, ANY_TOOL_HOOK)
    turns = [
        Turn.call("TodoWrite", {"todos": BEFORE}, text="Let me track this."),
        *STALE_WRITES[when],
        Turn(text="The bug is fixed."),
    ]
    session_id, edited, fake, run = run_claude(
        claude,
        turns,
        lambda key, edited: edit_once_the_board_shows(1, todoweb, token, board, key, edited),
        todoweb=todoweb,
        token=token,
        agent_env=agent_env,
        workdir=workdir,
        tmp_path=tmp_path,
    )
    context = failure_context(run, fake, internet_trap, todoweb)
    assert run.returncode == 0 and fake.errors == [], context
    assert edited == {"status": 200}, context
    assert sorted({request.turn for request in fake.turns()}) == list(range(len(turns))), context
    # The model heard of the edit once, whichever call told it.
    newest = [says(request, EDIT_NOTICE) for request in fake.turns()]
    assert newest.count(True) == 1, (newest, context)
    [revisions] = recorded(todoweb, token).values()
    with todoweb.api(token) as api:
        [message] = api.get(f"/api/v1/sessions/{session_id}/messages").json()["messages"]
    context += f"\n--- the edit ---\n{message}"
    assert [(r["revision"], r["author"]) for r in revisions] == [(1, "agent"), (2, "user"), (3, "agent")], context
    assert steps(revisions[-1]["todos"]) == [
        ("Read the code", "completed"),
        ("Fix the bug and add a regression test", "in_progress"),
    ], context
    assert (message["state"], message["kept_in"]) == ("kept", 3), context
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


# Headless, Claude Code offers ExitPlanMode only when something answers its permission
# prompts: as the Agent SDK runs it, with `--permission-prompt-tool stdio` (control
# requests on stdout, answers on stdin) and the prompt as a stream-json message. The
# hook decides before any permission prompt.
HEADLESS_PLAN_MODE = [
    "--permission-mode",
    "plan",
    "--permission-prompt-tool",
    "stdio",
    "--input-format",
    "stream-json",
    "--output-format",
    "stream-json",
    "--verbose",
]


def result_of(request, tool_use_id: str) -> dict[str, Any]:
    """The tool_result block for `tool_use_id`, wherever it is in the request's messages."""
    for message in request.body["messages"]:
        for block in message["content"] if isinstance(message["content"], list) else []:
            if block.get("type") == "tool_result" and block.get("tool_use_id") == tool_use_id:
                return {key: block[key] for key in ("is_error", "content") if key in block}
    return {}


def stream_json_prompt(session_id: str) -> str:
    message = {"role": "user", "content": PROMPT}
    return json.dumps({"type": "user", "message": message, "parent_tool_use_id": None, "session_id": session_id}) + "\n"


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
    until a member answers the plan question (the model's next request comes after
    the answer), and the model reads the decision with the member's feedback.

    Seen failing with the mechanism off (no PreToolUse hook): Claude Code asks its own
    permission prompt at once (here the stdio prompt, whose stream is closed: "Tool
    permission request failed: Error: Stream closed"), no question is ever asked on
    the board, so the member's thread finds none and `outcome["answer"]` is not 200."""
    settings(workdir, todoweb.url, PLAN_HOOK)
    session_id = str(uuid.uuid4())
    outcome: dict[str, Any] = {}
    script = Script([Turn.call("ExitPlanMode", {"plan": PLAN}, text="Here is my plan."), Turn(text="Understood.")])
    with FakeAnthropic(script) as fake:
        member = answer_when_asked(todoweb, token, session_id, decision, feedback, outcome)
        run = run_cli(
            [str(claude.executable), "-p", "--session-id", session_id, *HEADLESS_PLAN_MODE],
            env=env_for(agent_env, fake, token),
            cwd=workdir,
            log_dir=tmp_path / "logs",
            name="claude",
            stdin=stream_json_prompt(session_id),
        )
        member.join(65)
    context = failure_context(run, fake, internet_trap, todoweb) + f"\n--- member ---\n{outcome}"
    assert run.returncode == 0 and fake.errors == [], context
    assert outcome.get("answer", (None,))[0] == 200, context
    question = outcome["question"]
    assert (question["kind"], question["tool"], question["text"]) == ("plan", "ExitPlanMode", PLAN), context
    requests = {request.turn: request for request in fake.turns()}
    assert sorted(requests) == [0, 1], context
    # The CLI waited for the member: the model's next request came after the answer.
    assert requests[1].at > outcome["answered_at"], context
    # Denied, ExitPlanMode fails with the member's reason; allowed, it runs (Claude Code
    # adds a system message after it) and the feedback comes as context.
    result = result_of(requests[1], "toolu_fake_0_0")
    if decision == "deny":
        assert result == {"is_error": True, "content": told}, (result, context)
    else:
        assert not result.get("is_error") and result["content"].startswith("User has approved your plan"), result
        assert holds(requests[1], told), context
    with todoweb.api(token) as api:
        [question] = api.get(f"/api/v1/sessions/{session_id}/questions").json()["questions"]
    assert (question["state"], question["feedback"]) == (
        "denied" if decision == "deny" else "allowed",
        feedback,
    ), question
    assert internet_trap.attempts == [], context
