"""A person's edit reaches Gemini CLI's model (the real CLI, headless, scripted model)
with the agent's very next tool call of any kind, through docs/agents.md's steering
hook: an AfterTool command hook on every tool whose stdout is todoweb's answer.

Gemini CLI 0.61.0 reads `hookSpecificOutput.additionalContext` from an AfterTool
hook's stdout and appends it to that tool's result for the model, wrapped in
`<hook_context>…</hook_context>` (`<` and `>` escaped), whatever the tool.
"""

from __future__ import annotations

import json

import pytest

from tests.agents.cli_support import DONE, at, merged
from tests.agents.conftest import failure_context
from tests.agents.fake_gemini import FakeGemini, tool_results
from tests.agents.fake_model import Call, Script, Turn
from tests.agents.steering import BEFORE, CHECKOUT, CHECKOUT_MARK, EDIT_NOTICE, edit_before_turn_1, messages
from tests.agents.test_gemini_cli import GEMINI_CLI, MODEL, OFFLINE, POLICY, run_gemini

# The docs/agents.md steering recipe (~/.gemini/settings.json), verbatim but for the address.
STEERING_HOOK = {
    "hooks": {
        "AfterTool": [
            {
                "matcher": "*",
                "hooks": [
                    {
                        "name": "todoweb",
                        "type": "command",
                        "command": 'curl -s --max-time 5 -X POST "${TODOWEB_URL:-http://127.0.0.1:8000}/api/v1/hooks/gemini-cli?answer=hook" -H "Authorization: Bearer $TODOWEB_TOKEN" -H \'Content-Type: application/json\' --data-binary @- || true',
                        "timeout": 10000,
                    }
                ],
            }
        ]
    }
}
# Headless, the model gets only the tools a policy allows: the recipe's policy, and
# read_file for the test's call of another kind.
READ_POLICY = POLICY + '\n[[rule]]\ntoolName = "read_file"\ndecision = "allow"\npriority = 100\n'


@pytest.fixture(scope="module")
def gemini(install_cli):
    return install_cli(*GEMINI_CLI)


def todos(*items: tuple[str, str]) -> dict[str, list[dict[str, str]]]:
    return {"todos": [{"description": description, "status": status} for description, status in items]}


def test_a_persons_edit_reaches_gemini_clis_model_with_the_next_tool_call_of_any_kind(
    gemini, todoweb, token, board, internet_trap, agent_env, agent_home, workdir, tmp_path
):
    """The person rewords a step after the agent's first write_todos; the agent's next
    call reads a file, and the model gets the notice inside that read's result.

    Seen failing with the mechanism off (the recipe's matcher `^write_todos$`, as in
    the recording recipe): no hook runs for read_file, so its result holds no notice
    (`EDIT_NOTICE in output` fails) and the edit stays waiting."""
    (workdir / "checkout.py").write_text(CHECKOUT)
    outcome: dict = {}
    turns = [
        Turn.call("write_todos", todos((BEFORE[0], "in_progress"), (BEFORE[1], "pending")), text="Let me track this."),
        Turn(text="Let me look at the code.", calls=(Call("read_file", {"file_path": "checkout.py"}),)),
        Turn(text=DONE),
    ]
    settings = merged(merged(OFFLINE, MODEL), at(todoweb.url, STEERING_HOOK))
    with FakeGemini(Script(turns, before_turn=edit_before_turn_1(todoweb, token, board, outcome))) as fake:
        run = run_gemini(
            gemini, settings, fake, agent_env, token, todoweb, agent_home, workdir, tmp_path, policy=READ_POLICY
        )
    context = failure_context(run, fake, internet_trap, todoweb) + f"\n--- edit ---\n{outcome}"
    assert run.returncode == 0 and fake.errors == [], context
    assert json.loads(run.stdout)["response"] == DONE, context
    assert outcome.get("status") == 200 and board.live == {1: True}, context
    requests = {request.turn: request for request in fake.turns()}
    assert sorted(requests) == [0, 1, 2], context
    [result] = tool_results(requests[2])
    output = json.dumps(result["response"], ensure_ascii=False)
    assert result["name"] == "read_file" and CHECKOUT_MARK in output, (result, context)
    assert json.dumps(f"<hook_context>{EDIT_NOTICE}</hook_context>")[1:-1] in output, (result, context)
    assert EDIT_NOTICE not in json.dumps(requests[1].body, ensure_ascii=False), context
    [message] = messages(todoweb, token, outcome["key"])
    assert (message["state"], message["told_via"]) == ("told", "Gemini CLI hook (read_file)"), message
    assert internet_trap.attempts == [], context
