"""A person's edit reaches Codex's model (the real CLI, headless, scripted model) with
the agent's very next tool call of any kind, through docs/agents.md's steering hook: a
PostToolUse command hook on every tool whose stdout is todoweb's answer.

Codex 0.169.0 reads a PostToolUse hook's stdout as JSON with a strict schema (no
fields beyond `continue`, `decision`, `reason`, `stopReason`, `suppressOutput`,
`systemMessage`, `hookSpecificOutput`), so the hook asks todoweb for
`?answer=hook`: only `hookSpecificOutput` (with `additionalContext`), or `{}`.
"""

from __future__ import annotations

import json
import re

import pytest

from tests.agents.conftest import failure_context
from tests.agents.fake_model import Call, Script, Turn
from tests.agents.fake_openai_responses import FakeOpenAIResponses, offered_tools, tool_results
from tests.agents.steering import BEFORE, CHECKOUT, CHECKOUT_MARK, EDIT_NOTICE, edit_before_turn_1, messages
from tests.agents.test_codex import CODEX, FUNCTION_MODEL, UPDATE_PLAN_RECIPE, config, run_codex

# The docs/agents.md steering recipe (~/.codex/hooks.json), verbatim.
STEERING_HOOK = {
    "hooks": {
        "PostToolUse": [
            {
                "matcher": "*",
                "hooks": [
                    {
                        "type": "command",
                        "command": 'curl -s --max-time 5 -X POST "${TODOWEB_URL:-http://127.0.0.1:8000}/api/v1/hooks/codex?answer=hook" -H "Authorization: Bearer $TODOWEB_TOKEN" -H \'Content-Type: application/json\' --data-binary @- || true',
                        "timeout": 10,
                    }
                ],
            }
        ]
    }
}
SHELL = "exec_command"


@pytest.fixture(scope="module")
def codex(install_cli):
    return install_cli(*CODEX)


def test_a_persons_edit_reaches_codexs_model_with_the_next_tool_call_of_any_kind(
    codex, todoweb, token, board, internet_trap, agent_env, agent_home, workdir, tmp_path
):
    """The person rewords a step after the agent's first update_plan; the agent's next
    call runs a shell command, and the model gets the notice with its result.

    Seen failing with the mechanism off (the matcher `update_plan` of the recording
    recipe): no hook runs for the shell command, so the request after it holds no
    notice and the edit stays waiting."""
    (workdir / "checkout.py").write_text(CHECKOUT)
    outcome: dict = {}
    plan = {"plan": [{"step": BEFORE[0], "status": "in_progress"}, {"step": BEFORE[1], "status": "pending"}]}
    turns = [
        Turn(calls=(Call("update_plan", plan),)),
        Turn(calls=(Call(SHELL, {"cmd": "cat checkout.py"}),)),
        Turn(text="The bug is fixed."),
    ]
    with FakeOpenAIResponses(Script(turns, before_turn=edit_before_turn_1(todoweb, token, board, outcome))) as fake:
        (agent_home / ".codex").mkdir()
        (agent_home / ".codex" / "config.toml").write_text(config(fake, FUNCTION_MODEL, UPDATE_PLAN_RECIPE))
        (agent_home / ".codex" / "hooks.json").write_text(json.dumps(STEERING_HOOK, indent=2))
        env = agent_env | {"TODOWEB_TOKEN": token, "TODOWEB_URL": todoweb.url}
        run = run_codex(codex, fake, agent_home, env, workdir, tmp_path, "--dangerously-bypass-hook-trust")
    context = failure_context(run, fake, internet_trap, todoweb) + f"\n--- edit ---\n{outcome}"
    assert run.returncode == 0 and fake.errors == [], context
    assert outcome.get("status") == 200 and board.live == {1: True}, context
    requests = {request.turn: request for request in fake.turns()}
    assert sorted(requests) == [0, 1, 2], context
    assert SHELL in offered_tools(requests[0]), offered_tools(requests[0])
    [result] = tool_results(requests[2])
    assert CHECKOUT_MARK in result["text"], (result, context)
    newest = json.dumps(requests[2].body["input"][-3:], ensure_ascii=False)
    assert json.dumps(EDIT_NOTICE, ensure_ascii=False)[1:-1] in newest, (newest, context)
    assert EDIT_NOTICE not in json.dumps(requests[1].body, ensure_ascii=False), context
    [message] = messages(todoweb, token, outcome["key"])
    assert message["state"] == "told" and re.fullmatch(r"Codex hook \(.+\)", message["told_via"]), message
    assert internet_trap.attempts == [], context
