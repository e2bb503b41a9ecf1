"""opencode (opencode-ai) drives the board with docs/agents.md's two recipes: the
plugin integrations/opencode/todoweb.js (its `tool.execute.after` hook posts each
`todowrite` call), and todoweb's MCP server.

opencode 1.18.33 is a single native binary (npm installs the one for the platform).
The fake model is a custom provider in opencode.json on the bundled
@ai-sdk/openai-compatible package (Chat Completions, streaming). `opencode run`
works headless; stdin must not be a terminal (run_cli gives it /dev/null). MCP tools
reach the model as `<server>_<tool>`.

opencode installs @opencode-ai/plugin from npm into every config folder it reads
(~/.config/opencode, the project's .opencode) at each start; the tests seed those
folders as an earlier install leaves them, so that it finds nothing to install and
never asks the registry.
"""

from __future__ import annotations

import json
import shutil

import pytest

from tests.agents.cli_support import DONE, PROMPT, Plan, at, check_board, check_revisions, script
from tests.agents.conftest import failure_context, recorded
from tests.agents.fake_model import Call
from tests.agents.fake_openai_chat import FakeOpenAIChat, offered_tools, tool_results
from tests.agents.harness import run_cli
from tests.servers import ROOT

OPENCODE = ("opencode-ai", "1.18.33", "opencode")
PLUGIN = ROOT / "integrations" / "opencode" / "todoweb.js"

# The docs/agents.md MCP recipe (opencode.json), verbatim; the tests only swap in the test
# server's address. The plugin recipe is the file PLUGIN, copied unchanged.
MCP = {
    "mcp": {
        "todoweb": {
            "type": "remote",
            "url": "http://127.0.0.1:8000/mcp?dialects=opencode",
            "headers": {"Authorization": "Bearer {env:TODOWEB_TOKEN}"},
        }
    }
}
# Nothing leaves the machine but the model's requests (the trap catches the rest).
OFFLINE_CONFIG = {"autoupdate": False, "share": "disabled"}
OFFLINE_ENV = {
    "OPENCODE_DISABLE_AUTOUPDATE": "1",
    "OPENCODE_DISABLE_MODELS_FETCH": "1",
    "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
    "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
    "OPENCODE_DISABLE_SHARE": "1",
}


def provider(url: str) -> dict:
    """The fake model as an OpenAI-compatible provider, and the default model."""
    return {
        "model": "fake/fake-model",
        "provider": {
            "fake": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "Fake",
                "options": {"baseURL": f"{url}/v1", "apiKey": "sk-fake"},
                "models": {"fake-model": {"name": "Fake model", "tool_call": True}},
            }
        },
    }


def todos(*items: tuple[str, str, str]) -> dict[str, list[dict[str, str]]]:
    return {"todos": [{"content": c, "status": s, "priority": p} for c, s, p in items]}


READ, FIX, TEST = "Read the checkout code", "Round the total once", "Run the tests"
PLAN = Plan(
    calls=(
        Call("todowrite", todos((READ, "in_progress", "high"), (FIX, "pending", "high"), (TEST, "pending", "low"))),
        Call("todowrite", todos((READ, "completed", "high"), (FIX, "in_progress", "high"), (TEST, "pending", "low"))),
        Call("todowrite", todos((READ, "completed", "high"), (FIX, "completed", "high"), (TEST, "cancelled", "low"))),
    ),
    revisions=(
        [(READ, "in_progress"), (FIX, "pending"), (TEST, "pending")],
        [(READ, "completed"), (FIX, "in_progress"), (TEST, "pending")],
        [(READ, "completed"), (FIX, "completed"), (TEST, "cancelled")],
    ),
)
ANSWERS = tuple(json.dumps(call.input["todos"], indent=2) for call in PLAN.calls)  # opencode's own todowrite
MCP_PLAN = PLAN.renamed("todoweb_todowrite")
MCP_ANSWERS = (
    "Todo list updated: 0/3 completed (revision 1).",
    "Todo list updated: 1/3 completed (revision 2).",
    "Todo list updated: 2/3 completed (revision 3).",
)


@pytest.fixture(scope="module")
def opencode(install_cli):
    return install_cli(*OPENCODE)


def seed_config_folders(agent_home, workdir) -> None:
    """~/.config/opencode and the project's .opencode as opencode leaves them once it
    installed @opencode-ai/plugin there (its check: node_modules exists and the lock
    file lists every dependency it wants)."""
    lock = {"lockfileVersion": 3, "packages": {"": {"dependencies": {"@opencode-ai/plugin": OPENCODE[1]}}}}
    for folder in (agent_home / ".config" / "opencode", workdir / ".opencode"):
        (folder / "node_modules").mkdir(parents=True, exist_ok=True)
        (folder / "package-lock.json").write_text(json.dumps(lock))


def run_opencode(opencode, config, agent_env, token, todoweb, agent_home, workdir, tmp_path):
    seed_config_folders(agent_home, workdir)
    (workdir / "opencode.json").write_text(json.dumps(config, indent=2))
    env = agent_env | OFFLINE_ENV | {"TODOWEB_TOKEN": token, "TODOWEB_URL": todoweb.url}
    args = [str(opencode.executable), "run", "--format", "json", PROMPT]
    return run_cli(args, env=env, cwd=workdir, log_dir=tmp_path / "logs", name="opencode")


def events_of(run) -> list[dict]:
    """`opencode run --format json` prints one JSON event a line."""
    return [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]


def final_text(events: list[dict]) -> str:
    return [event["part"]["text"] for event in events if event["type"] == "text"][-1]


def check_turns(fake: FakeOpenAIChat, plan: Plan, answers: tuple[str, ...], context: str) -> None:
    """The model was offered each tool it called, and got the tool's answer to each call."""
    turns = {request.turn: request for request in fake.turns()}
    assert sorted(turns) == [0, 1, 2, 3], context
    for n, call in enumerate(plan.calls):
        assert call.name in offered_tools(turns[n]), (n, call.name, offered_tools(turns[n]), context)
        [result] = tool_results(turns[n + 1])
        assert result["tool_call_id"] == f"call_fake_{n}_0", context
        assert answers[n] in result["text"], (n, result, context)


def test_it_records_opencodes_todowrite_calls_through_the_plugin(
    opencode, todoweb, token, board, internet_trap, agent_env, agent_home, workdir, tmp_path
):
    plugins = workdir / ".opencode" / "plugins"
    plugins.mkdir(parents=True)
    shutil.copy(PLUGIN, plugins / "todoweb.js")
    with FakeOpenAIChat(script(PLAN.calls, board.before_turn)) as fake:
        config = OFFLINE_CONFIG | provider(fake.url)
        run = run_opencode(opencode, config, agent_env, token, todoweb, agent_home, workdir, tmp_path)
    context = failure_context(run, fake, internet_trap, todoweb)
    assert run.returncode == 0 and fake.errors == [], context
    events = events_of(run)
    assert final_text(events) == DONE, context
    check_turns(fake, PLAN, ANSWERS, context)

    revisions = recorded(todoweb, token)
    [session_id] = {event["sessionID"] for event in events}  # opencode's session is the board session
    assert list(revisions) == [session_id], context
    # opencode hands the plugin the model's own tool call ids.
    check_revisions(
        revisions[session_id],
        PLAN,
        tool="todowrite",
        dialect="opencode",
        call_ids=[f"call_fake_{n}_0" for n in range(3)],
        context=context,
    )
    assert revisions[session_id][-1]["session"]["title"] == "shop"  # the folder opencode ran in
    check_board(board, PLAN, context)
    assert internet_trap.attempts == [], context


def test_it_records_opencodes_calls_of_the_mcp_tool(
    opencode, todoweb, token, board, internet_trap, agent_env, agent_home, workdir, tmp_path
):
    with FakeOpenAIChat(script(MCP_PLAN.calls, board.before_turn)) as fake:
        config = OFFLINE_CONFIG | provider(fake.url) | at(todoweb.url, MCP)
        run = run_opencode(opencode, config, agent_env, token, todoweb, agent_home, workdir, tmp_path)
    context = failure_context(run, fake, internet_trap, todoweb)
    assert run.returncode == 0 and fake.errors == [], context
    assert final_text(events_of(run)) == DONE, context
    check_turns(fake, MCP_PLAN, MCP_ANSWERS, context)
    assert "todowrite" in offered_tools(fake.turns()[0])  # its own tool stays, unused

    revisions = recorded(todoweb, token)
    [key] = revisions
    assert key.startswith("mcp-"), key  # the MCP session: one board session per run
    check_revisions(revisions[key], PLAN, tool="todowrite", dialect="opencode", call_ids=[None] * 3, context=context)
    check_board(board, PLAN, context)
    assert internet_trap.attempts == [], context
