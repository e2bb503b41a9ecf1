"""Codex (@openai/codex) drives the board through todoweb's MCP server, and through
its PostToolUse hook on its own `update_plan` tool.

Codex 0.169.0 talks to its model over the Responses API only (a custom provider
in config.toml points it at the fake). It offers the model no `update_plan` by
default; `[tools.update_plan] enabled = true` brings it back. Two kinds of model
are proven, since they reach tools differently:

- gpt-5.5 calls tools as functions; MCP tools are deferred behind Codex's client
  `tool_search`, so the model searches first and then calls
  `update_plan` in the `mcp__todoweb` namespace.
- gpt-6.1-sol (0.169.0's default, "code mode") gets a single `exec` tool and calls
  every tool from JavaScript: `await tools.mcp__todoweb__update_plan({...})`.
"""

from __future__ import annotations

import json
import re

import pytest

from tests.agents.conftest import failure_context, recorded, steps
from tests.agents.fake_model import Call, Script, Turn
from tests.agents.fake_openai_responses import FakeOpenAIResponses, offered_tools, tool_results
from tests.agents.harness import run_cli

CODEX = ("@openai/codex", "0.169.0", "codex")
README_URL = "http://127.0.0.1:8000"

# The docs/agents.md recipes (~/.codex/config.toml and ~/.codex/hooks.json), verbatim;
# the tests only swap in the test server's address.
MCP_RECIPE = """\
[mcp_servers.todoweb]
url = "http://127.0.0.1:8000/mcp?dialects=codex"
bearer_token_env_var = "TODOWEB_TOKEN"
"""
UPDATE_PLAN_RECIPE = """\
[tools.update_plan]
enabled = true
"""
HOOKS_RECIPE = {
    "hooks": {
        "PostToolUse": [
            {
                "matcher": "update_plan",
                "hooks": [
                    {
                        "type": "command",
                        "command": 'curl -s -o /dev/null --max-time 5 -X POST "${TODOWEB_URL:-http://127.0.0.1:8000}/api/v1/hooks/codex" -H "Authorization: Bearer $TODOWEB_TOKEN" -H \'Content-Type: application/json\' --data-binary @- || true',
                        "timeout": 10,
                    }
                ],
            }
        ]
    }
}

# Nothing leaves the machine but the model's requests: without these Codex syncs
# its curated plugins from github.com / chatgpt.com and reports to ab.chatgpt.com
# (the trap caught each of them).
OFFLINE = """\
check_for_update_on_startup = false

[features]
plugins = false

[analytics]
enabled = false
"""
PROMPT = "Fix the bug in the shop's checkout and keep a plan while you work."

PLANS = (
    {
        "explanation": "Start with the checkout code",
        "plan": [{"step": "Read the code", "status": "in_progress"}, {"step": "Fix the bug", "status": "pending"}],
    },
    {
        "explanation": "Found it",
        "plan": [{"step": "Read the code", "status": "completed"}, {"step": "Fix the bug", "status": "in_progress"}],
    },
    {
        "explanation": "Fixed",
        "plan": [{"step": "Read the code", "status": "completed"}, {"step": "Fix the bug", "status": "completed"}],
    },
)
REVISIONS = [[(item["step"], item["status"]) for item in plan["plan"]] for plan in PLANS]
CHECKLISTS = (
    "Todo list updated: 0/2 completed (revision 1).",
    "Todo list updated: 1/2 completed (revision 2).",
    "Todo list updated: 2/2 completed (revision 3).",
)
FUNCTION_MODEL, CODE_MODE_MODEL = "gpt-5.5", "gpt-6.1-sol"
TOOL_SEARCH = {
    "type": "tool_search_call",
    "id": "tsc_fake_0",
    "call_id": "call_search_0",
    "status": "completed",
    "execution": "client",
    "arguments": {"query": "update plan todo list"},
}


@pytest.fixture(scope="module")
def codex(install_cli):
    return install_cli(*CODEX)


def exec_call(step: int, tool: str, plan: dict) -> dict:
    """Code mode: the model runs JavaScript that calls the tool."""
    return {
        "type": "custom_tool_call",
        "id": f"ctc_fake_{step}",
        "call_id": f"call_exec_{step}",
        "status": "completed",
        "name": "exec",
        "input": f"const result = await tools.{tool}({json.dumps(plan)});\ntext(result);",
    }


def config(fake: FakeOpenAIResponses, model: str, *recipes: str) -> str:
    """~/.codex/config.toml: the scripted model as a custom Responses provider, the
    offline switches, and the recipes under test."""
    top, _, tables = OFFLINE.partition("\n\n")
    provider = f"""\
[model_providers.scripted]
name = "Scripted model"
base_url = "{fake.url}/v1"
wire_api = "responses"
env_key = "SCRIPTED_API_KEY"
"""
    return "\n".join([f'model = "{model}"', 'model_provider = "scripted"', top, "", provider, tables, *recipes])


def run_codex(codex, fake, home, env, workdir, tmp_path, *flags: str):
    args = [str(codex.executable), "exec", *flags, PROMPT]
    return run_cli(
        args, env=env | {"SCRIPTED_API_KEY": "sk-fake"}, cwd=workdir, log_dir=tmp_path / "logs", name="codex"
    )


def check_board(board, context: str) -> None:
    assert board.live == {1: True, 2: True, 3: True}, (board.live, board.failures, context)
    [panel] = board.shown().values()
    assert {event["revision"]: steps(event["todos"]) for event in panel} == dict(enumerate(REVISIONS, 1)), context
    assert board.dashboard_revisions() == [1, 2, 3], board.summaries


@pytest.mark.parametrize("model", [FUNCTION_MODEL, CODE_MODE_MODEL])
def test_it_records_codexs_calls_of_the_mcp_tool(
    codex, todoweb, token, board, internet_trap, agent_env, agent_home, workdir, tmp_path, model
):
    if model == FUNCTION_MODEL:
        turns = [Turn(raw=(TOOL_SEARCH,))]
        turns += [Turn(calls=(Call("update_plan", plan, namespace="mcp__todoweb"),)) for plan in PLANS]
        first_write = 1
    else:
        turns = [Turn(raw=(exec_call(n, "mcp__todoweb__update_plan", plan),)) for n, plan in enumerate(PLANS)]
        first_write = 0
    turns.append(Turn(text="The bug is fixed."))
    with FakeOpenAIResponses(Script(turns, before_turn=board.gate(first_write))) as fake:
        (agent_home / ".codex").mkdir()
        recipe = MCP_RECIPE.replace(README_URL, todoweb.url)
        (agent_home / ".codex" / "config.toml").write_text(config(fake, model, recipe))
        run = run_codex(codex, fake, agent_home, agent_env | {"TODOWEB_TOKEN": token}, workdir, tmp_path)
    context = failure_context(run, fake, internet_trap, todoweb)
    assert run.returncode == 0 and fake.errors == [], context
    assert run.stdout.strip().endswith("The bug is fixed."), context

    requests = {request.turn: request for request in fake.turns()}
    assert sorted(requests) == list(range(len(turns))), context
    if model == FUNCTION_MODEL:
        assert "tool_search" in offered_tools(requests[0]), offered_tools(requests[0])
        [found] = [item for item in requests[1].body["input"] if item.get("type") == "tool_search_output"]
        assert [(ns["name"], [t["name"] for t in ns["tools"]]) for ns in found["tools"]] == [
            ("mcp__todoweb", ["update_plan"])
        ], found
    else:
        # The one `exec` tool; MCP tools are deferred, out of its description, yet
        # on the `tools` object (and in `ALL_TOOLS`) all the same.
        [offered] = [item for item in requests[0].body["input"] if item.get("type") == "additional_tools"]
        assert [tool["name"] for tool in offered["tools"][0]["tools"]][0] == "exec", offered
    for n, checklist in enumerate(CHECKLISTS):
        [result] = tool_results(requests[first_write + n + 1])
        assert checklist in result["text"], (result, context)

    revisions = recorded(todoweb, token)
    [key] = revisions
    assert key.startswith("mcp-"), key  # the MCP session: one board session per conversation
    assert [(r["revision"], r["written"]["tool"], steps(r["todos"])) for r in revisions[key]] == [
        (n, "update_plan", revision) for n, revision in enumerate(REVISIONS, 1)
    ], context
    check_board(board, context)
    assert internet_trap.attempts == [], context


@pytest.mark.parametrize("model", [FUNCTION_MODEL, CODE_MODE_MODEL])
def test_it_records_codexs_update_plan_through_the_hook(
    codex, todoweb, token, board, internet_trap, agent_env, agent_home, workdir, tmp_path, model
):
    if model == FUNCTION_MODEL:
        turns = [Turn(calls=(Call("update_plan", plan),)) for plan in PLANS]
    else:
        turns = [Turn(raw=(exec_call(n, "update_plan", plan),)) for n, plan in enumerate(PLANS)]
    turns.append(Turn(text="The bug is fixed."))
    log_start = len(todoweb.log())
    with FakeOpenAIResponses(Script(turns, before_turn=board.before_turn)) as fake:
        (agent_home / ".codex").mkdir()
        (agent_home / ".codex" / "config.toml").write_text(config(fake, model, UPDATE_PLAN_RECIPE))
        (agent_home / ".codex" / "hooks.json").write_text(json.dumps(HOOKS_RECIPE, indent=2))
        env = agent_env | {"TODOWEB_TOKEN": token, "TODOWEB_URL": todoweb.url}
        run = run_codex(codex, fake, agent_home, env, workdir, tmp_path, "--dangerously-bypass-hook-trust")
    context = failure_context(run, fake, internet_trap, todoweb)
    assert run.returncode == 0 and fake.errors == [], context
    assert run.stdout.strip().endswith("The bug is fixed."), context
    requests = {request.turn: request for request in fake.turns()}
    assert sorted(requests) == list(range(len(turns))), context
    if model == FUNCTION_MODEL:
        assert "update_plan" in offered_tools(requests[0]), offered_tools(requests[0])
    for n in range(len(PLANS)):
        [result] = tool_results(requests[n + 1])
        # Codex's own answer to the call; in code mode, the script's outcome.
        if model == FUNCTION_MODEL:
            assert result["text"] == "Plan updated", (result, context)
        else:
            assert result["text"].startswith("Script completed"), (result, context)
    # Codex ran the hook once per call (the server's access log).
    assert todoweb.log()[log_start:].count('"POST /api/v1/hooks/codex HTTP/1.1"') == len(PLANS), context

    revisions = recorded(todoweb, token)
    session_id = re.search(r"session id: (\S+)", run.stderr).group(1)
    assert list(revisions) == [session_id], context
    assert [(r["revision"], r["written"]["tool"], steps(r["todos"])) for r in revisions[session_id]] == [
        (n, "update_plan", revision) for n, revision in enumerate(REVISIONS, 1)
    ], context
    check_board(board, context)
    assert internet_trap.attempts == [], context
