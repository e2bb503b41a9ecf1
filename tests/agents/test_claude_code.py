"""Claude Code (@anthropic-ai/claude-code) drives the board with docs/agents.md's two
recipes: a PostToolUse hook on its own todo tools, and todoweb's MCP server.

Claude Code 2.1.197 is the newest release that runs on Node 20. It offers the model
the Task* tools (TaskCreate, TaskUpdate, …); CLAUDE_CODE_ENABLE_TASKS=false brings
back TodoWrite instead. Against a base URL that is not Anthropic's it sends every
tool in the request (tool search is off), so the scripted model calls them as
offered. The MCP route does not depend on which todo tool a version offers.
"""

from __future__ import annotations

import json
import shlex
import uuid
from dataclasses import dataclass
from typing import Any

import pytest

from tests.agents.conftest import failure_context, recorded, steps
from tests.agents.fake_anthropic import FakeAnthropic, offered_tools, tool_results
from tests.agents.fake_model import Call, Script, Turn
from tests.agents.harness import run_cli

CLAUDE_CODE = ("@anthropic-ai/claude-code", "2.1.197", "claude")
README_URL = "http://127.0.0.1:8000"

# The recipes of docs/agents.md, verbatim; the tests only swap in the test server's address.
HTTP_HOOK = {
    "hooks": {
        "PostToolUse": [
            {
                "matcher": "TodoWrite|TaskCreate|TaskUpdate",
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
COMMAND_HOOK = {
    "hooks": {
        "PostToolUse": [
            {
                "matcher": "TodoWrite|TaskCreate|TaskUpdate",
                "hooks": [
                    {
                        "type": "command",
                        "command": 'curl -s -o /dev/null --max-time 5 -X POST "${TODOWEB_URL:-http://127.0.0.1:8000}/api/v1/hooks/claude-code" -H "Authorization: Bearer $TODOWEB_TOKEN" -H \'Content-Type: application/json\' --data-binary @- || true',
                        "timeout": 10,
                    }
                ],
            }
        ]
    }
}
# Single quotes: Claude Code stores `${TODOWEB_TOKEN}` and expands it when it connects,
# so the token stays out of ~/.claude.json.
MCP_ADD = "claude mcp add --transport http todoweb http://127.0.0.1:8000/mcp --header 'Authorization: Bearer ${TODOWEB_TOKEN}'"
# The same server for everyone working on the project: .mcp.json at its root.
MCP_JSON = {
    "mcpServers": {
        "todoweb": {
            "type": "http",
            "url": "http://127.0.0.1:8000/mcp",
            "headers": {"Authorization": "Bearer ${TODOWEB_TOKEN}"},
        }
    }
}

# Nothing leaves the machine but the model's requests (the trap catches the rest).
OFFLINE = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
}
PROMPT = "Fix the bug in the shop's checkout and keep a todo list while you work."


@dataclass(frozen=True)
class Plan:
    """Three todo calls the model makes, what Claude Code answers to each, and the
    list todoweb must hold after each (content, status)."""

    env: dict[str, str]
    calls: tuple[Call, Call, Call]
    answers: tuple[str, str, str]
    revisions: tuple[list[tuple[str, str]], ...]


def todo(content: str, status: str, active: str) -> dict[str, str]:
    return {"content": content, "status": status, "activeForm": active}


TASKS = Plan(
    env={},
    calls=(
        Call(
            "TaskCreate",
            {"subject": "Read the code", "description": "Find the checkout code", "activeForm": "Reading the code"},
        ),
        Call(
            "TaskCreate",
            {"subject": "Fix the bug", "description": "Round the total once", "activeForm": "Fixing the bug"},
        ),
        Call("TaskUpdate", {"taskId": "1", "status": "in_progress"}),
    ),
    answers=(
        "Task #1 created successfully: Read the code",
        "Task #2 created successfully: Fix the bug",
        "Updated task #1 status",
    ),
    revisions=(
        [("Read the code", "pending")],
        [("Read the code", "pending"), ("Fix the bug", "pending")],
        [("Read the code", "in_progress"), ("Fix the bug", "pending")],
    ),
)
TODOWRITE = Plan(
    env={"CLAUDE_CODE_ENABLE_TASKS": "false"},
    calls=(
        Call(
            "TodoWrite",
            {
                "todos": [
                    todo("Read the code", "in_progress", "Reading the code"),
                    todo("Fix the bug", "pending", "Fixing the bug"),
                ]
            },
        ),
        Call(
            "TodoWrite",
            {
                "todos": [
                    todo("Read the code", "completed", "Reading the code"),
                    todo("Fix the bug", "in_progress", "Fixing the bug"),
                ]
            },
        ),
        Call(
            "TodoWrite",
            {
                "todos": [
                    todo("Read the code", "completed", "Reading the code"),
                    todo("Fix the bug", "completed", "Fixing the bug"),
                ]
            },
        ),
    ),
    answers=("Todos have been modified successfully.",) * 3,
    revisions=(
        [("Read the code", "in_progress"), ("Fix the bug", "pending")],
        [("Read the code", "completed"), ("Fix the bug", "in_progress")],
        [("Read the code", "completed"), ("Fix the bug", "completed")],
    ),
)


@pytest.fixture(scope="module")
def claude(install_cli):
    return install_cli(*CLAUDE_CODE)


def script(calls: tuple[Call, ...], board) -> Script:
    turns = [Turn(text="Let me track this.", calls=(call,)) for call in calls] + [Turn(text="The bug is fixed.")]
    return Script(turns, before_turn=board.before_turn)


def env_for(agent_env: dict[str, str], fake: FakeAnthropic, token: str, extra: dict[str, str]) -> dict[str, str]:
    return (
        agent_env
        | OFFLINE
        | extra
        | {"ANTHROPIC_BASE_URL": fake.url, "ANTHROPIC_API_KEY": "sk-ant-fake", "TODOWEB_TOKEN": token}
    )


def at(url: str, recipe: Any) -> Any:
    return json.loads(json.dumps(recipe).replace(README_URL, url))


def check_turns(fake: FakeAnthropic, names: list[str], answers: tuple[str, ...], context: str) -> None:
    """The model was offered each tool it called, and got Claude Code's own answer to each call."""
    turns = {request.turn: request for request in fake.turns()}
    assert sorted(turns) == list(range(len(names) + 1)), context
    for n, name in enumerate(names):
        assert name in offered_tools(turns[n]), (name, offered_tools(turns[n]))
        results = tool_results(turns[n + 1])
        assert [r["tool_use_id"] for r in results] == [f"toolu_fake_{n}_0"], context
        assert not results[0]["is_error"] and results[0]["text"].startswith(answers[n]), (results, context)


def check_board(board, revisions: tuple[list[tuple[str, str]], ...], context: str) -> None:
    """Each revision reached the open panel before the model's next turn, with its steps."""
    assert board.live == {n: True for n in range(1, len(revisions) + 1)}, (board.live, board.failures, context)
    [panel] = board.shown().values()
    shown = {event["revision"]: steps(event["todos"]) for event in panel}
    assert shown == {n: revision for n, revision in enumerate(revisions, 1)}, context
    assert board.dashboard_revisions() == list(range(1, len(revisions) + 1)), board.summaries


@pytest.mark.parametrize("plan", [TASKS, TODOWRITE], ids=["task-tools", "todowrite"])
@pytest.mark.parametrize("hook", [HTTP_HOOK, COMMAND_HOOK], ids=["http-hook", "curl-hook"])
def test_it_records_claude_codes_todo_calls_through_the_hook(
    claude, todoweb, token, board, internet_trap, agent_env, workdir, tmp_path, plan, hook
):
    settings = workdir / ".claude" / "settings.json"
    settings.parent.mkdir()
    # The http hook names its URL; the curl one reads TODOWEB_URL, so it goes in verbatim.
    settings.write_text(json.dumps(at(todoweb.url, hook) if hook is HTTP_HOOK else hook, indent=2))
    session_id = str(uuid.uuid4())
    with FakeAnthropic(script(plan.calls, board)) as fake:
        env = env_for(agent_env, fake, token, plan.env)
        if hook is COMMAND_HOOK:  # the recipe for a server elsewhere than 127.0.0.1:8000
            env["TODOWEB_URL"] = todoweb.url
        args = [str(claude.executable), "-p", PROMPT, "--session-id", session_id, "--output-format", "json"]
        run = run_cli(args, env=env, cwd=workdir, log_dir=tmp_path / "logs", name="claude")
    context = failure_context(run, fake, internet_trap, todoweb)
    assert run.returncode == 0 and fake.errors == [], context
    assert json.loads(run.stdout)["result"] == "The bug is fixed.", context
    check_turns(fake, [call.name for call in plan.calls], plan.answers, context)

    revisions = recorded(todoweb, token)
    assert list(revisions) == [session_id], context
    assert [
        (r["revision"], r["written"]["tool"], r["written"]["call_id"], steps(r["todos"])) for r in revisions[session_id]
    ] == [
        (n, call.name, f"toolu_fake_{n - 1}_0", revision)
        for n, (call, revision) in enumerate(zip(plan.calls, plan.revisions, strict=True), 1)
    ], context
    assert revisions[session_id][-1]["session"]["title"] == "shop"  # the folder Claude Code ran in
    check_board(board, plan.revisions, context)
    assert internet_trap.attempts == [], context


MCP_CALLS = tuple(Call(f"mcp__todoweb__{call.name}", call.input) for call in TODOWRITE.calls)
# Claude Code connects to MCP servers in the background unless told to wait: on a busy
# machine its first turn went out before the tool was listed.
WAIT_FOR_MCP = {"MCP_CONNECTION_NONBLOCKING": "false"}
MCP_ANSWERS = (
    "Todo list updated: 0/2 completed (revision 1).",
    "Todo list updated: 1/2 completed (revision 2).",
    "Todo list updated: 2/2 completed (revision 3).",
)


@pytest.mark.parametrize("recipe", ["mcp-add", "mcp-json"])
def test_it_records_claude_codes_calls_of_the_mcp_tool(
    claude, todoweb, token, board, internet_trap, agent_env, agent_home, workdir, tmp_path, recipe
):
    with FakeAnthropic(script(MCP_CALLS, board)) as fake:
        env = env_for(agent_env, fake, token, WAIT_FOR_MCP)
        if recipe == "mcp-add":
            add = shell_words(MCP_ADD.replace(README_URL, todoweb.url))
            added = run_cli(
                [str(claude.executable), *add[1:]], env=env, cwd=workdir, log_dir=tmp_path / "logs", name="add"
            )
            assert added.returncode == 0, failure_context(added, None, internet_trap, todoweb)
            assert token not in (agent_home / ".claude.json").read_text()
        else:
            (workdir / ".mcp.json").write_text(json.dumps(at(todoweb.url, MCP_JSON), indent=2))
        args = [str(claude.executable), "-p", PROMPT, "--allowedTools", "mcp__todoweb", "--output-format", "json"]
        run = run_cli(args, env=env, cwd=workdir, log_dir=tmp_path / "logs", name="claude")
    context = failure_context(run, fake, internet_trap, todoweb)
    assert run.returncode == 0 and fake.errors == [], context
    assert json.loads(run.stdout)["result"] == "The bug is fixed.", context
    check_turns(fake, [call.name for call in MCP_CALLS], MCP_ANSWERS, context)
    assert "mcp__todoweb__TodoRead" in offered_tools(fake.turns()[0])

    revisions = recorded(todoweb, token)
    [key] = revisions
    assert key.startswith("mcp-"), key  # the MCP session: one board session per conversation
    assert [(r["revision"], r["written"]["tool"], steps(r["todos"])) for r in revisions[key]] == [
        (n, "TodoWrite", revision) for n, revision in enumerate(TODOWRITE.revisions, 1)
    ], context
    check_board(board, TODOWRITE.revisions, context)
    assert internet_trap.attempts == [], context


def shell_words(line: str) -> list[str]:
    """A recipe's command line as the shell splits it (nothing to expand in single quotes)."""
    return shlex.split(line)


# A person rewords the second step on the board after the agent's first call.
EDITED = [
    {"id": "1", "content": "Read the code", "status": "in_progress"},
    {"id": "2", "content": "Fix the bug and add a regression test", "status": "pending"},
]
EDIT_NOTICE = 'The user changed the plan:\n- reworded "Fix the bug" to "Fix the bug and add a regression test"'


def edit_after_first_call(todoweb, token: str, board) -> Script:
    """The TodoWrite script, with the person's edit made once the board showed revision 1."""

    def before_turn(turn: int) -> None:
        board.before_turn(turn)
        if turn == 1:
            with todoweb.api(token) as api:
                [session] = api.get("/api/v1/sessions").raise_for_status().json()["sessions"]
                edit = api.post(
                    f"/api/v1/sessions/{session['key']}/edits", json={"todos": EDITED}, headers={"If-Match": "1"}
                )
                edit.raise_for_status()

    turns = [Turn(text="Let me track this.", calls=(call,)) for call in TODOWRITE.calls[:2]]
    turns.append(Turn(text="The bug is fixed."))
    return Script(turns, before_turn=before_turn)


def holds(request, text: str) -> bool:
    """Whether `text` is somewhere in the request's JSON (in any string of it)."""
    return json.dumps(text, ensure_ascii=False)[1:-1] in json.dumps(request.body, ensure_ascii=False)


@pytest.mark.parametrize("route", ["http-hook", "mcp-json"])
def test_a_persons_edit_on_the_board_reaches_claude_codes_model(
    claude, todoweb, token, board, internet_trap, agent_env, workdir, tmp_path, route
):
    """The edit round trip with no code on the agent's side: the hook's answer carries
    it as additional context; the MCP tool's answer starts with it."""
    script_ = edit_after_first_call(todoweb, token, board)
    if route == "http-hook":
        settings = workdir / ".claude" / "settings.json"
        settings.parent.mkdir()
        settings.write_text(json.dumps(at(todoweb.url, HTTP_HOOK), indent=2))
        args = ["--session-id", str(uuid.uuid4())]
    else:
        (workdir / ".mcp.json").write_text(json.dumps(at(todoweb.url, MCP_JSON), indent=2))
        script_.turns[:2] = [
            Turn(text="Let me track this.", calls=(Call(f"mcp__todoweb__{call.name}", call.input),))
            for call in TODOWRITE.calls[:2]
        ]
        args = ["--allowedTools", "mcp__todoweb"]
    with FakeAnthropic(script_) as fake:
        env = env_for(agent_env, fake, token, TODOWRITE.env | (WAIT_FOR_MCP if route != "http-hook" else {}))
        run = run_cli(
            [str(claude.executable), "-p", PROMPT, *args, "--output-format", "json"],
            env=env,
            cwd=workdir,
            log_dir=tmp_path / "logs",
            name="claude",
        )
    context = failure_context(run, fake, internet_trap, todoweb)
    assert run.returncode == 0 and fake.errors == [], context
    turns = {request.turn: request for request in fake.turns()}
    # The model's request after its second call holds the person's change.
    assert holds(turns[2], EDIT_NOTICE), context
    assert not holds(turns[1], EDIT_NOTICE), context
    if route == "mcp-json":
        assert tool_results(turns[2])[0]["text"].startswith(EDIT_NOTICE), context
    [revisions] = recorded(todoweb, token).values()
    assert [(r["revision"], r["author"]) for r in revisions] == [(1, "agent"), (2, "user"), (3, "agent")], context
    # The agent's second call still said "Fix the bug", made without seeing the edit: todoweb
    # merged it, so the person's wording stays, with the agent's progress.
    assert steps(revisions[2]["todos"]) == [
        ("Read the code", "completed"),
        ("Fix the bug and add a regression test", "in_progress"),
    ], context
    assert revisions[2]["warnings"] == [], context
