"""A person's edit reaches Qwen Code's model (the real CLI, headless, scripted model)
with the agent's very next tool call of any kind, through docs/agents.md's steering
hook: a PostToolUse http hook on every tool.

Qwen Code 0.15.10 reads `hookSpecificOutput.additionalContext` from a PostToolUse
hook's answer and appends it to that tool's result for the model, whatever the tool.
"""

from __future__ import annotations

import pytest

from tests.agents.cli_support import DONE, at, merged
from tests.agents.fake_model import Call, Script, Turn
from tests.agents.fake_openai_chat import FakeOpenAIChat, tool_results
from tests.agents.steering import BEFORE, CHECKOUT, check_told_with_the_read, edit_before_turn_1
from tests.agents.test_qwen_code import AUTH, OFFLINE, QWEN_CODE, context_of, result_of, run_qwen, todos
from tests.agents.tunnel_trap import TunnellingTrap

# The docs/agents.md steering recipe (~/.qwen/settings.json), verbatim but for the address.
STEERING_HOOK = {
    "hooks": {
        "PostToolUse": [
            {
                "matcher": "*",
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


@pytest.fixture(scope="module")
def qwen(install_cli):
    return install_cli(*QWEN_CODE)


@pytest.fixture
def internet_trap():
    """test_qwen_code's: the trap that also passes loopback CONNECTs on (Qwen Code sends
    every request through the proxy)."""
    trap = TunnellingTrap().start()
    yield trap
    trap.stop()


def test_a_persons_edit_reaches_qwen_codes_model_with_the_next_tool_call_of_any_kind(
    qwen, todoweb, token, board, internet_trap, agent_env, agent_home, workdir, tmp_path
):
    """The person rewords a step after the agent's first todo_write; the agent's next
    call reads a file, and the model gets the notice with that read's result.

    Seen failing with the mechanism off (the matcher `^todo_write$` of the recording
    recipe): no hook runs for read_file, so its result holds no notice
    (`EDIT_NOTICE in result["text"]` fails) and the edit stays waiting."""
    (workdir / "checkout.py").write_text(CHECKOUT)
    outcome: dict = {}
    turns = [
        Turn.call("todo_write", todos(("1", BEFORE[0], "in_progress"), ("2", BEFORE[1], "pending")), text="Tracking."),
        Turn(text="Let me look at the code.", calls=(Call("read_file", {"file_path": str(workdir / "checkout.py")}),)),
        Turn(text=DONE),
    ]
    settings = merged(merged(OFFLINE, AUTH), at(todoweb.url, STEERING_HOOK))
    with FakeOpenAIChat(Script(turns, before_turn=edit_before_turn_1(todoweb, token, board, outcome))) as fake:
        run = run_qwen(qwen, settings, fake, agent_env, token, todoweb, agent_home, workdir, tmp_path)
    context = context_of(run, fake, internet_trap, todoweb, agent_home) + f"\n--- edit ---\n{outcome}"
    assert run.returncode == 0 and fake.errors == [], context
    assert result_of(run)["result"] == DONE, context
    assert outcome.get("status") == 200 and board.live == {1: True}, context
    check_told_with_the_read(fake, tool_results, todoweb, token, outcome["key"], "Qwen Code hook (read_file)", context)
    assert internet_trap.attempts == [], context
