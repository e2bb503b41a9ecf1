"""Gemini CLI (@google/gemini-cli) drives the board with docs/agents.md's two recipes:
an AfterTool hook on its own `write_todos` tool, and todoweb's MCP server.

Gemini CLI 0.61.0 runs on Node 20. It calls the Gemini API at GOOGLE_GEMINI_BASE_URL
(streamGenerateContent, server-sent events) with the key in GEMINI_API_KEY once
`security.auth.selectedType` is `gemini-api-key`. Its hooks are shell commands that
get the hook input on stdin; settings files expand `$VAR` and `${VAR:-default}`
themselves. MCP tools reach the model as `mcp_<server>_<tool>`.
"""

from __future__ import annotations

import json

import pytest

from tests.agents.cli_support import DONE, PROMPT, Plan, at, check_board, check_revisions, merged, script
from tests.agents.conftest import failure_context, recorded
from tests.agents.fake_gemini import FakeGemini, offered_tools, tool_results
from tests.agents.fake_model import Call
from tests.agents.harness import run_cli

GEMINI_CLI = ("@google/gemini-cli", "0.61.0", "gemini")

# The docs/agents.md recipes (~/.gemini/settings.json), verbatim; the tests only swap in
# the test server's address.
HOOK = {
    "hooks": {
        "AfterTool": [
            {
                "matcher": "^write_todos$",
                "hooks": [
                    {
                        "name": "todoweb",
                        "type": "command",
                        "command": 'curl -s -o /dev/null --max-time 5 -X POST "${TODOWEB_URL:-http://127.0.0.1:8000}/api/v1/hooks/gemini-cli" -H "Authorization: Bearer $TODOWEB_TOKEN" -H \'Content-Type: application/json\' --data-binary @- || true',
                        "timeout": 10000,
                    }
                ],
            }
        ]
    }
}
MCP = {
    "mcpServers": {
        "todoweb": {
            "httpUrl": "http://127.0.0.1:8000/mcp?dialects=gemini",
            "headers": {"Authorization": "Bearer $TODOWEB_TOKEN"},
            "trust": True,
        }
    }
}
# Headless runs (`gemini -p`) offer the model only the tools a policy allows (its
# default there is deny, and `trust: true` does not reach MCP tools in 0.61.0): the
# docs/agents.md's ~/.gemini/policies/todoweb.toml.
POLICY = """\
[[rule]]
toolName = ["write_todos", "mcp_todoweb_write_todos"]
decision = "allow"
priority = 100
"""
# Nothing leaves the machine but the model's requests (the trap catches the rest).
OFFLINE = {
    "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
}
# The fake model: an API key, a Gemini 2.5 model name.
MODEL = {"security": {"auth": {"selectedType": "gemini-api-key"}}, "model": {"name": "gemini-2.5-flash"}}


def todos(*items: tuple[str, str]) -> dict[str, list[dict[str, str]]]:
    return {"todos": [{"description": description, "status": status} for description, status in items]}


READ, FIX, TEST = "Read the checkout code", "Round the total once", "Run the tests"
PLAN = Plan(
    calls=(
        Call("write_todos", todos((READ, "in_progress"), (FIX, "pending"), (TEST, "pending"))),
        Call("write_todos", todos((READ, "completed"), (FIX, "in_progress"), (TEST, "blocked"))),
        Call("write_todos", todos((READ, "completed"), (FIX, "completed"), (TEST, "cancelled"))),
    ),
    revisions=(
        [(READ, "in_progress"), (FIX, "pending"), (TEST, "pending")],
        [(READ, "completed"), (FIX, "in_progress"), (TEST, "blocked")],
        [(READ, "completed"), (FIX, "completed"), (TEST, "cancelled")],
    ),
)
# What Gemini CLI's own write_todos answers the model.
ANSWERS = tuple(
    "Successfully updated the todo list. The current list is now:\n"
    + "\n".join(f"{i}. [{todo['status']}] {todo['description']}" for i, todo in enumerate(call.input["todos"], 1))
    for call in PLAN.calls
)
MCP_PLAN = PLAN.renamed("mcp_todoweb_write_todos")
MCP_ANSWERS = (
    "Todo list updated: 0/3 completed (revision 1).",
    "Todo list updated: 1/3 completed (revision 2).",
    "Todo list updated: 2/3 completed (revision 3).",
)


@pytest.fixture(scope="module")
def gemini(install_cli):
    return install_cli(*GEMINI_CLI)


def run_gemini(gemini, settings, fake, agent_env, token, todoweb, agent_home, workdir, tmp_path, *, policy=POLICY):
    (agent_home / ".gemini" / "policies").mkdir(parents=True)
    (agent_home / ".gemini" / "settings.json").write_text(json.dumps(settings, indent=2))
    (agent_home / ".gemini" / "policies" / "todoweb.toml").write_text(policy)
    env = agent_env | {
        "GEMINI_API_KEY": "fake-gemini-key",
        "GOOGLE_GEMINI_BASE_URL": fake.url,
        "TODOWEB_TOKEN": token,
        "TODOWEB_URL": todoweb.url,
    }
    # Headless runs trust the folder they run in only when told (a person answers a
    # dialog in an interactive run).
    args = [str(gemini.executable), "-p", PROMPT, "--skip-trust", "--output-format", "json"]
    return run_cli(args, env=env, cwd=workdir, log_dir=tmp_path / "logs", name="gemini")


def check_turns(fake: FakeGemini, plan: Plan, answers: tuple[str, ...], context: str) -> None:
    """The model was offered each tool it called, and got the tool's answer to each call."""
    turns = {request.turn: request for request in fake.turns()}
    assert sorted(turns) == [0, 1, 2, 3], context
    for n, call in enumerate(plan.calls):
        assert call.name in offered_tools(turns[n]), (n, call.name, offered_tools(turns[n]), context)
        [result] = tool_results(turns[n + 1])
        assert result["name"] == call.name, (result, context)
        assert answers[n] in result["response"]["output"], (result, context)


def test_it_records_gemini_clis_write_todos_calls_through_the_after_tool_hook(
    gemini, todoweb, token, board, internet_trap, agent_env, agent_home, workdir, tmp_path
):
    settings = merged(merged(OFFLINE, MODEL), at(todoweb.url, HOOK))
    with FakeGemini(script(PLAN.calls, board.before_turn)) as fake:
        run = run_gemini(gemini, settings, fake, agent_env, token, todoweb, agent_home, workdir, tmp_path)
    context = failure_context(run, fake, internet_trap, todoweb)
    assert run.returncode == 0 and fake.errors == [], context
    output = json.loads(run.stdout)
    assert output["response"] == DONE, context
    check_turns(fake, PLAN, ANSWERS, context)

    revisions = recorded(todoweb, token)
    session_id = output["session_id"]  # the hook input's session_id is the board session
    assert list(revisions) == [session_id], context
    # Gemini CLI's hook input carries no tool call id.
    check_revisions(
        revisions[session_id], PLAN, tool="write_todos", dialect="gemini", call_ids=[None] * 3, context=context
    )
    assert revisions[session_id][-1]["session"]["title"] == "shop"  # the folder Gemini CLI ran in
    check_board(board, PLAN, context)
    assert internet_trap.attempts == [], context


def test_it_records_gemini_clis_calls_of_the_mcp_tool(
    gemini, todoweb, token, board, internet_trap, agent_env, agent_home, workdir, tmp_path
):
    settings = merged(merged(OFFLINE, MODEL), at(todoweb.url, MCP))
    with FakeGemini(script(MCP_PLAN.calls, board.before_turn)) as fake:
        run = run_gemini(gemini, settings, fake, agent_env, token, todoweb, agent_home, workdir, tmp_path)
    context = failure_context(run, fake, internet_trap, todoweb)
    assert run.returncode == 0 and fake.errors == [], context
    assert json.loads(run.stdout)["response"] == DONE, context
    check_turns(fake, MCP_PLAN, MCP_ANSWERS, context)
    assert "write_todos" in offered_tools(fake.turns()[0])  # its own tool stays, unused

    revisions = recorded(todoweb, token)
    [key] = revisions
    assert key.startswith("mcp-"), key  # the MCP session: one board session per run
    check_revisions(revisions[key], PLAN, tool="write_todos", dialect="gemini", call_ids=[None] * 3, context=context)
    check_board(board, PLAN, context)
    assert internet_trap.attempts == [], context
