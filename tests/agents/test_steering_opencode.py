"""A person's edit reaches opencode's model (the real CLI, headless, scripted model)
with the agent's very next tool call of any kind, through a plugin on
`tool.execute.after` for every tool: integrations/opencode/todoweb.js, as shipped.

opencode 1.18.33 runs `tool.execute.after` with the tool's result object as the
second argument and hands the model that object's `output` afterwards, so a plugin
that appends to `output.output` adds context the model sees, whatever the tool.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.agents.cli_support import DONE
from tests.agents.conftest import failure_context
from tests.agents.fake_model import Call, Script, Turn
from tests.agents.fake_openai_chat import FakeOpenAIChat, tool_results
from tests.agents.steering import BEFORE, CHECKOUT, check_told_with_the_read, edit_before_turn_1
from tests.agents.test_opencode import OFFLINE_CONFIG, OPENCODE, events_of, final_text, provider, run_opencode, todos

STEERING_PLUGIN = Path(__file__).resolve().parents[2] / "integrations" / "opencode" / "todoweb.js"


@pytest.fixture(scope="module")
def opencode(install_cli):
    return install_cli(*OPENCODE)


def test_a_persons_edit_reaches_opencodes_model_with_the_next_tool_call_of_any_kind(
    opencode, todoweb, token, board, internet_trap, agent_env, agent_home, workdir, tmp_path
):
    """The person rewords a step after the agent's first todowrite; the agent's next
    call reads a file, and the model gets the notice at the end of that read's output.

    Seen failing with the mechanism off (the plugin as it was, posting only
    todowrite and ignoring the answer): the read's output holds no notice
    (`EDIT_NOTICE in result["text"]` fails) and the edit stays waiting."""
    (workdir / "checkout.py").write_text(CHECKOUT)
    plugins = workdir / ".opencode" / "plugins"
    plugins.mkdir(parents=True)
    shutil.copy(STEERING_PLUGIN, plugins / "todoweb.js")
    outcome: dict = {}
    turns = [
        Turn.call("todowrite", todos((BEFORE[0], "in_progress", "high"), (BEFORE[1], "pending", "high")), text="Plan."),
        Turn(text="Let me look at the code.", calls=(Call("read", {"filePath": str(workdir / "checkout.py")}),)),
        Turn(text=DONE),
    ]
    with FakeOpenAIChat(Script(turns, before_turn=edit_before_turn_1(todoweb, token, board, outcome))) as fake:
        config = OFFLINE_CONFIG | provider(fake.url)
        run = run_opencode(opencode, config, agent_env, token, todoweb, agent_home, workdir, tmp_path)
    context = failure_context(run, fake, internet_trap, todoweb) + f"\n--- edit ---\n{outcome}"
    assert run.returncode == 0 and fake.errors == [], context
    assert final_text(events_of(run)) == DONE, context
    assert outcome.get("status") == 200 and board.live == {1: True}, context
    check_told_with_the_read(fake, tool_results, todoweb, token, outcome["key"], "opencode hook (read)", context)
    assert internet_trap.attempts == [], context
