"""Real agent CLIs put their plan on the board through their own OpenTelemetry export
alone (no hook, no MCP): docs/agents.md's OpenTelemetry recipes, run as written
against todoweb's OTLP receiver, with the scripted models.

The CLIs export when they exit (one batch per signal), so the board gets the plan
at the end of these short runs, not turn by turn: the tests check what was recorded.
"""

from __future__ import annotations

import json
import re
import uuid

import pytest

from tests.agents.cli_support import check_revisions, merged, script
from tests.agents.conftest import failure_context, recorded, steps
from tests.agents.fake_anthropic import FakeAnthropic
from tests.agents.fake_gemini import FakeGemini
from tests.agents.fake_model import Call
from tests.agents.fake_openai_chat import FakeOpenAIChat
from tests.agents.fake_openai_responses import FakeOpenAIResponses
from tests.agents.harness import run_cli
from tests.agents.test_claude_code import CLAUDE_CODE, TASKS, TODOWRITE, env_for
from tests.agents.test_codex import CODEX, PLANS, REVISIONS, UPDATE_PLAN_RECIPE, config, run_codex
from tests.agents.test_gemini_cli import GEMINI_CLI, MODEL, run_gemini
from tests.agents.test_gemini_cli import OFFLINE as GEMINI_OFFLINE
from tests.agents.test_gemini_cli import PLAN as GEMINI_PLAN
from tests.agents.test_qwen_code import AUTH, QWEN_CODE, result_of, run_qwen
from tests.agents.test_qwen_code import MODEL as QWEN_MODEL
from tests.agents.test_qwen_code import OFFLINE as QWEN_OFFLINE
from tests.agents.test_qwen_code import PLAN as QWEN_PLAN
from tests.agents.tunnel_trap import TunnellingTrap

README_URL = "http://127.0.0.1:8000"
# The docs/agents.md recipes, verbatim: environment variables (the shell's
# "$TODOWEB_TOKEN" stands for the token) and Codex's config.toml block.
CLAUDE_CODE_OTEL = {
    "CLAUDE_CODE_ENABLE_TELEMETRY": "1",
    "OTEL_LOGS_EXPORTER": "otlp",
    "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
    "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:8000",
    "OTEL_EXPORTER_OTLP_HEADERS": "Authorization=Bearer $TODOWEB_TOKEN",
    "OTEL_LOG_TOOL_DETAILS": "1",
}
CODEX_OTEL = """\
[otel]
exporter = { otlp-http = { endpoint = "http://127.0.0.1:8000/v1/logs", protocol = "binary", headers = { "Authorization" = "Bearer $TODOWEB_TOKEN" } } }
"""
GEMINI_OTEL = {
    "GEMINI_TELEMETRY_ENABLED": "true",
    "GEMINI_TELEMETRY_TARGET": "local",
    "GEMINI_TELEMETRY_OTLP_ENDPOINT": "http://127.0.0.1:8000",
    "GEMINI_TELEMETRY_OTLP_PROTOCOL": "http",
    "OTEL_EXPORTER_OTLP_HEADERS": "Authorization=Bearer $TODOWEB_TOKEN",
}
QWEN_OTEL = {
    "QWEN_TELEMETRY_ENABLED": "true",
    "QWEN_TELEMETRY_TARGET": "local",
    "QWEN_TELEMETRY_OTLP_ENDPOINT": "http://127.0.0.1:8000",
    "QWEN_TELEMETRY_OTLP_PROTOCOL": "http",
    "OTEL_EXPORTER_OTLP_HEADERS": "Authorization=Bearer $TODOWEB_TOKEN",
}


@pytest.fixture
def internet_trap():
    """Qwen Code sends every request through the proxy: this trap passes loopback
    CONNECTs on (to todoweb and the fake model) and refuses the rest, as the others."""
    trap = TunnellingTrap().start()
    yield trap
    trap.stop()


def recipe_env(recipe: dict[str, str], url: str, token: str) -> dict[str, str]:
    """A recipe's variables as the shell would set them, for the test server."""
    return {name: value.replace(README_URL, url).replace("$TODOWEB_TOKEN", token) for name, value in recipe.items()}


@pytest.mark.parametrize("plan", [TASKS, TODOWRITE], ids=["task-tools", "todowrite"])
def test_claude_codes_export(install_cli, todoweb, token, internet_trap, agent_env, workdir, tmp_path, plan):
    """Claude Code's Task* calls (its default todo tools) come whole and are written;
    its telemetry cuts TodoWrite's items ("<nested>"), so nothing of those is written
    and the session's panel says why.

    Seen failing with the mechanism off (OTEL_LOG_TOOL_DETAILS unset): the records
    carry no tool_input, and the task-tools run leaves no session on the board."""
    claude = install_cli(*CLAUDE_CODE)
    session_id = str(uuid.uuid4())
    with FakeAnthropic(script(plan.calls, None)) as fake:
        env = env_for(agent_env, fake, token, plan.env) | recipe_env(CLAUDE_CODE_OTEL, todoweb.url, token)
        args = [str(claude.executable), "-p", "Fix the bug.", "--session-id", session_id, "--output-format", "json"]
        run = run_cli(args, env=env, cwd=workdir, log_dir=tmp_path / "logs", name="claude")
    context = failure_context(run, fake, internet_trap, todoweb)
    assert run.returncode == 0 and fake.errors == [], context
    revisions = recorded(todoweb, token)
    assert list(revisions) == [session_id], context
    if plan is TASKS:
        assert [(r["written"]["tool"], r["written"]["call_id"], steps(r["todos"])) for r in revisions[session_id]] == [
            (call.name, f"toolu_fake_{n}_0", revision)
            for n, (call, revision) in enumerate(zip(plan.calls, plan.revisions, strict=True))
        ], context
    else:
        assert revisions[session_id] == [], context
        with todoweb.api(token) as api:
            panel = api.get(f"/api/v1/sessions/{session_id}").json()
        assert panel["revision"] == 0, (panel, context)
    assert internet_trap.attempts == [], context


def test_codexs_export(install_cli, todoweb, token, internet_trap, agent_env, agent_home, workdir, tmp_path):
    """Codex's `codex.tool_result` records carry update_plan's arguments whole (protobuf).

    Seen failing with the mechanism off (no [otel] block): no session on the board."""
    codex = install_cli(*CODEX)
    calls = tuple(Call("update_plan", plan) for plan in PLANS)
    with FakeOpenAIResponses(script(calls, None)) as fake:
        otel = CODEX_OTEL.replace(README_URL, todoweb.url).replace("$TODOWEB_TOKEN", token)
        (agent_home / ".codex").mkdir()
        (agent_home / ".codex" / "config.toml").write_text(config(fake, "gpt-5.5", UPDATE_PLAN_RECIPE, otel))
        run = run_codex(codex, fake, agent_home, agent_env, workdir, tmp_path)
    context = failure_context(run, fake, internet_trap, todoweb)
    assert run.returncode == 0 and fake.errors == [], context
    [(key, revisions)] = recorded(todoweb, token).items()
    assert re.fullmatch(r"[0-9a-f-]{36}", key), context  # Codex's conversation id
    assert [(r["written"]["tool"], r["written"]["call_id"], steps(r["todos"])) for r in revisions] == [
        ("update_plan", f"call_fake_{n}_0", revision) for n, revision in enumerate(REVISIONS)
    ], context
    assert internet_trap.attempts == [], context


def test_gemini_clis_export(install_cli, todoweb, token, internet_trap, agent_env, agent_home, workdir, tmp_path):
    """Gemini CLI's `gemini_cli.tool_call` records carry write_todos' arguments whole.

    Seen failing with the mechanism off (GEMINI_TELEMETRY_ENABLED unset): no session."""
    gemini = install_cli(*GEMINI_CLI)
    settings = merged(GEMINI_OFFLINE, MODEL)
    with FakeGemini(script(GEMINI_PLAN.calls, None)) as fake:
        env = agent_env | recipe_env(GEMINI_OTEL, todoweb.url, token)
        run = run_gemini(gemini, settings, fake, env, token, todoweb, agent_home, workdir, tmp_path)
    context = failure_context(run, fake, internet_trap, todoweb)
    assert run.returncode == 0 and fake.errors == [], context
    session_id = json.loads(run.stdout)["session_id"]
    revisions = recorded(todoweb, token)
    assert list(revisions) == [session_id], context
    check_revisions(
        revisions[session_id], GEMINI_PLAN, tool="write_todos", dialect="gemini", call_ids=[None] * 3, context=context
    )
    assert internet_trap.attempts == [], context


def test_qwen_codes_export(install_cli, todoweb, token, internet_trap, agent_env, agent_home, workdir, tmp_path):
    """Qwen Code's `qwen-code.tool_call` records carry todo_write's arguments whole.

    Seen failing with the mechanism off (QWEN_TELEMETRY_ENABLED unset): no session."""
    qwen = install_cli(*QWEN_CODE)
    settings = merged(QWEN_OFFLINE, AUTH)
    with FakeOpenAIChat(script(QWEN_PLAN.calls, None), model=QWEN_MODEL) as fake:
        env = agent_env | recipe_env(QWEN_OTEL, todoweb.url, token)
        run = run_qwen(qwen, settings, fake, env, token, todoweb, agent_home, workdir, tmp_path)
    context = failure_context(run, fake, internet_trap, todoweb)
    assert run.returncode == 0 and fake.errors == [], context
    session_id = result_of(run)["session_id"]
    revisions = recorded(todoweb, token)
    assert list(revisions) == [session_id], context
    check_revisions(
        revisions[session_id], QWEN_PLAN, tool="todo_write", dialect="qwen", call_ids=[None] * 3, context=context
    )
    assert internet_trap.attempts == [], context
