"""Qwen Code (@qwen-code/qwen-code) drives the board with docs/agents.md's two recipes:
a PostToolUse hook on its own `todo_write` tool, and todoweb's MCP server.

Qwen Code 0.15.10 is the newest release that runs on Node 20 (0.21 and later want
Node >= 22). It calls an OpenAI-compatible Chat Completions API at OPENAI_BASE_URL
with OPENAI_API_KEY and OPENAI_MODEL. Its PostToolUse hook input is Claude Code's
shape (session_id, cwd, hook_event_name, tool_name, tool_input, tool_use_id, …; the
tool_use_id is Qwen Code's own `toolu_<ms>_<random>`, not the model's call id), and
it has `http` hooks as Claude Code does. MCP tools reach the model as
`mcp__<server>__<tool>`, deferred behind its `tool_search` tool: a model calls
`tool_search` with `select:<name>` first, then the tool.

Qwen Code sends every request through HTTPS_PROXY when it is set, NO_PROXY or not,
so its internet trap passes loopback CONNECTs on (tunnel_trap.py).
"""

from __future__ import annotations

import json
import re

import pytest

from tests.agents.cli_support import DONE, PROMPT, Plan, at, check_board, check_revisions, merged, script
from tests.agents.conftest import failure_context, recorded
from tests.agents.fake_model import Call
from tests.agents.fake_openai_chat import FakeOpenAIChat, offered_tools, tool_results
from tests.agents.harness import run_cli
from tests.agents.tunnel_trap import TunnellingTrap

QWEN_CODE = ("@qwen-code/qwen-code", "0.15.10", "qwen")
MODEL = "qwen3-coder-plus"

# The docs/agents.md recipes (~/.qwen/settings.json), verbatim; the tests only swap in the
# test server's address.
HTTP_HOOK = {
    "hooks": {
        "PostToolUse": [
            {
                "matcher": "^todo_write$",
                "hooks": [
                    {
                        "type": "http",
                        "url": "http://127.0.0.1:8000/api/v1/hooks/qwen-code",
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
                "matcher": "^todo_write$",
                "hooks": [
                    {
                        "type": "command",
                        "command": 'curl -s -o /dev/null --max-time 5 -X POST "${TODOWEB_URL:-http://127.0.0.1:8000}/api/v1/hooks/qwen-code" -H "Authorization: Bearer $TODOWEB_TOKEN" -H \'Content-Type: application/json\' --data-binary @- || true',
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
            "httpUrl": "http://127.0.0.1:8000/mcp?dialects=qwen",
            "headers": {"Authorization": "Bearer $TODOWEB_TOKEN"},
            "trust": True,
        }
    }
}
# Nothing leaves the machine but the model's requests (the trap catches the rest).
OFFLINE = {
    "general": {"enableAutoUpdate": False},
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
}
AUTH = {"security": {"auth": {"selectedType": "openai"}}}


def todos(*items: tuple[str, str, str]) -> dict[str, list[dict[str, str]]]:
    return {"todos": [{"id": id, "content": content, "status": status} for id, content, status in items]}


READ, FIX, TEST = "Read the checkout code", "Round the total once", "Run the tests"
PLAN = Plan(
    calls=(
        Call("todo_write", todos(("1", READ, "in_progress"), ("2", FIX, "pending"), ("3", TEST, "pending"))),
        Call("todo_write", todos(("1", READ, "completed"), ("2", FIX, "in_progress"), ("3", TEST, "pending"))),
        Call("todo_write", todos(("1", READ, "completed"), ("2", FIX, "completed"), ("3", TEST, "completed"))),
    ),
    revisions=(
        [(READ, "in_progress"), (FIX, "pending"), (TEST, "pending")],
        [(READ, "completed"), (FIX, "in_progress"), (TEST, "pending")],
        [(READ, "completed"), (FIX, "completed"), (TEST, "completed")],
    ),
)
ANSWER = "Todos have been modified successfully."  # Qwen Code's own todo_write
MCP_TOOL = "mcp__todoweb__todo_write"
MCP_PLAN = PLAN.renamed(MCP_TOOL)
TOOL_SEARCH = Call("tool_search", {"query": f"select:{MCP_TOOL}"})
MCP_ANSWERS = (
    "Todo list updated: 0/3 completed (revision 1).",
    "Todo list updated: 1/3 completed (revision 2).",
    "Todo list updated: 3/3 completed (revision 3).",
)
QWEN_TOOL_USE_ID = re.compile(r"toolu_\d+_[a-z0-9]+")


@pytest.fixture
def internet_trap():
    """Overrides conftest's: the trap that also passes loopback CONNECTs on."""
    trap = TunnellingTrap().start()
    yield trap
    trap.stop()


@pytest.fixture(scope="module")
def qwen(install_cli):
    return install_cli(*QWEN_CODE)


def run_qwen(qwen, settings, fake, agent_env, token, todoweb, agent_home, workdir, tmp_path):
    (agent_home / ".qwen").mkdir()
    (agent_home / ".qwen" / "settings.json").write_text(json.dumps(settings, indent=2))
    env = agent_env | {
        "OPENAI_BASE_URL": f"{fake.url}/v1",
        "OPENAI_API_KEY": "sk-fake",
        "OPENAI_MODEL": MODEL,
        "TODOWEB_TOKEN": token,
        "TODOWEB_URL": todoweb.url,
    }
    args = [str(qwen.executable), "-p", PROMPT, "--output-format", "json"]
    return run_cli(args, env=env, cwd=workdir, log_dir=tmp_path / "logs", name="qwen")


def context_of(run, fake, trap, todoweb, agent_home) -> str:
    """The failure message: the usual parts, the tunnels the trap passed on, and the
    errors in Qwen Code's own debug log (MCP discovery, hooks)."""
    errors = [
        line
        for log in sorted((agent_home / ".qwen" / "debug").glob("*.txt"))
        for line in log.read_text(errors="replace").splitlines()
        if "[ERROR]" in line or "[WARN]" in line
    ]
    return "\n".join(
        [
            failure_context(run, fake, trap, todoweb),
            f"--- loopback tunnels ---\n{trap.tunnelled}\n{trap.errors}",
            "--- Qwen Code's debug log (errors and warnings) ---",
            *errors[-40:],
        ]
    )


def result_of(run) -> dict:
    """The `result` event of `--output-format json` (a JSON array of events)."""
    [result] = [event for event in json.loads(run.stdout) if event.get("type") == "result"]
    return result


def check_turns(fake: FakeOpenAIChat, calls: tuple[Call, ...], answers: tuple[str, ...], context: str) -> None:
    """The model was offered each tool it called when it called it, and got the tool's
    answer to each todo call."""
    turns = {request.turn: request for request in fake.turns()}
    assert sorted(turns) == list(range(len(calls) + 1)), context
    for n, call in enumerate(calls):
        assert call.name in offered_tools(turns[n]), (n, call.name, offered_tools(turns[n]), context)
        [result] = tool_results(turns[n + 1])
        assert result["tool_call_id"] == f"call_fake_{n}_0", context
        assert answers[n] in result["text"], (n, result, context)


@pytest.mark.parametrize("hook", [HTTP_HOOK, COMMAND_HOOK], ids=["http-hook", "curl-hook"])
def test_it_records_qwen_codes_todo_write_calls_through_the_post_tool_use_hook(
    qwen, todoweb, token, board, internet_trap, agent_env, agent_home, workdir, tmp_path, hook
):
    settings = merged(merged(OFFLINE, AUTH), at(todoweb.url, hook))
    with FakeOpenAIChat(script(PLAN.calls, board.before_turn), model=MODEL) as fake:
        run = run_qwen(qwen, settings, fake, agent_env, token, todoweb, agent_home, workdir, tmp_path)
    context = context_of(run, fake, internet_trap, todoweb, agent_home)
    assert run.returncode == 0 and fake.errors == [], context
    result = result_of(run)
    assert result["result"] == DONE and not result["is_error"], context
    check_turns(fake, PLAN.calls, (ANSWER,) * 3, context)

    revisions = recorded(todoweb, token)
    session_id = result["session_id"]  # the hook input's session_id is the board session
    assert list(revisions) == [session_id], context
    check_revisions(
        revisions[session_id], PLAN, tool="todo_write", dialect="qwen", call_ids=QWEN_TOOL_USE_ID, context=context
    )
    assert revisions[session_id][-1]["session"]["title"] == "shop"  # the folder Qwen Code ran in
    check_board(board, PLAN, context)
    assert internet_trap.attempts == [], context


def test_it_records_qwen_codes_calls_of_the_mcp_tool(
    qwen, todoweb, token, board, internet_trap, agent_env, agent_home, workdir, tmp_path
):
    settings = merged(merged(OFFLINE, AUTH), at(todoweb.url, MCP))
    # The model finds the MCP tool with a tool search first: its writes start at turn 1.
    turns = script(MCP_PLAN.calls, board.gate(1), first=(TOOL_SEARCH,))
    with FakeOpenAIChat(turns, model=MODEL) as fake:
        run = run_qwen(qwen, settings, fake, agent_env, token, todoweb, agent_home, workdir, tmp_path)
    context = context_of(run, fake, internet_trap, todoweb, agent_home)
    assert run.returncode == 0 and fake.errors == [], context
    assert result_of(run)["result"] == DONE, context
    search = f'"name":"{MCP_TOOL}"'  # tool_search answers with the tool's schema
    check_turns(fake, (TOOL_SEARCH, *MCP_PLAN.calls), (search, *MCP_ANSWERS), context)
    assert MCP_TOOL not in offered_tools(fake.turns()[0])  # deferred until searched

    revisions = recorded(todoweb, token)
    [key] = revisions
    assert key.startswith("mcp-"), key  # the MCP session: one board session per run
    check_revisions(revisions[key], PLAN, tool="todo_write", dialect="qwen", call_ids=[None] * 3, context=context)
    check_board(board, PLAN, context)
    assert internet_trap.attempts == [], context
