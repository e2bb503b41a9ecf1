"""The OpenAI Agents SDK on the board through the client package's
`TodowebTracingProcessor` (and, for people's edits, `todoweb_guardrail`), driven by
the SDK's own scripted model (`agents.testing.ScriptedModel`, no network):

- the agent's `update_plan` calls (a function tool of the test's, in Codex's shape)
  are on the board, revision by revision, and shown live;
- a person's edit made while the agent works reaches the model with the result of its
  next tool call of any kind (the guardrail);
- a board that cannot be reached changes nothing for the agent.

The SDK's package is named `agents`, and so is this folder's package as pytest
imports it (`tests/` has no `__init__.py`): under pytest, `import agents` finds this
folder. So each agent runs in a Python process of its own (this module run with
`-m`), which asks the test before each model turn (a line on stdout) and goes on
when answered (a line on stdin): the test's `before_turn` waits for the board or
edits the plan there, as in the other agent tests.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import json
import os
import socket
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import pytest
from typing_extensions import TypedDict

from tests.agents.conftest import recorded, steps
from tests.agents.steering import BEFORE, CHECKOUT, EDIT_NOTICE, edit_before_turn_1, messages

try:
    importlib.metadata.version("openai-agents")
except importlib.metadata.PackageNotFoundError:  # pytest.importorskip("agents") would find this folder
    pytest.skip("openai-agents is installed by make test-agents", allow_module_level=True)

ROOT = Path(__file__).resolve().parents[2]
PROMPT = "Fix the rounding bug in checkout.py and keep a plan while you work."
FIRST = [{"step": BEFORE[0], "status": "in_progress"}, {"step": BEFORE[1], "status": "pending"}]
DONE = [{"step": BEFORE[0], "status": "completed"}, {"step": BEFORE[1], "status": "completed"}]
RUN_TIMEOUT = 120


def run_agent(scenario: dict[str, Any], before_turn: Callable[[int], None] | None = None) -> dict[str, Any]:
    """Runs `scenario` (see `main`) in its own process; calls `before_turn(n)` when the
    scripted model is about to answer turn n. The run's final output and the input of
    each model call."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("OPENAI_")}
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.agents.test_framework_openai_agents", json.dumps(scenario)],
        cwd=ROOT,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    watchdog = threading.Timer(RUN_TIMEOUT, child.kill)
    watchdog.start()
    try:
        assert child.stdout is not None and child.stdin is not None
        for line in child.stdout:
            said = json.loads(line)
            if "result" in said:
                return said["result"]
            if before_turn is not None:
                before_turn(said["before_turn"])
            child.stdin.write("\n")
            child.stdin.flush()
    finally:
        watchdog.cancel()
        child.kill()
        stderr = child.communicate()[1]
    raise AssertionError(f"the agent's process gave no result:\n{stderr[-5000:]}")


def test_it_puts_the_plan_on_the_board_and_hands_a_persons_edit_to_the_model(todoweb, token, board):
    """Turn 0 writes the plan, the person rewords a step, turn 1 shows a file: the
    model's next request holds the notice after the file's content; turn 2 finishes
    the plan, and the board holds the person's wording with the agent's progress,
    each call recorded once though both the guardrail and the processor post it.

    Seen failing with the mechanism off (no guardrail on the tools): the file's
    result the model reads next lacks the notice."""
    outcome: dict[str, Any] = {}
    group = f"chat-{uuid.uuid4().hex[:8]}"
    scenario = {"url": todoweb.url, "token": token, "guardrail": True, "group_id": group, "script": "fix"}
    result = run_agent(scenario, edit_before_turn_1(todoweb, token, board, outcome))
    inputs = result["inputs"]
    context = f"{outcome}\n{inputs}\n{todoweb.log()[-3000:]}"
    assert result["final_output"] == "The bug is fixed." and len(inputs) == 4, context
    assert outcome["status"] == 200 and board.live == {1: True}, context
    # The update_plan result the model reads is the board's checklist.
    assert f"[>] {BEFORE[0]}" in tool_output(inputs[1], "call_0"), context
    shown = tool_output(inputs[2], "call_1")
    assert shown.startswith(CHECKOUT) and EDIT_NOTICE in shown[len(CHECKOUT) :], context
    assert EDIT_NOTICE not in json.dumps(inputs[1]), context
    [(key, revisions)] = recorded(todoweb, token).items()
    assert key == group == outcome["key"], context
    assert [(r["revision"], r["author"]) for r in revisions] == [(1, "agent"), (2, "user"), (3, "agent")], context
    assert steps(revisions[-1]["todos"]) == [
        (BEFORE[0], "completed"),
        ("Round the total once and add a regression test", "completed"),
    ], context
    [message] = messages(todoweb, token, key)
    told = (message["state"], message["told_via"], message["kept_in"])
    assert told == ("kept", "Agents SDK guardrail (show_file)", 3), context


def test_the_processor_alone_records_each_plan_under_the_trace_id(todoweb, token, board):
    """With the processor only, both plans are on the board, each shown live before
    the model's next turn, in a session named by the run's trace id; what the model
    reads is the tool's own result.

    Seen failing with the mechanism off (`on_span_end` submitting nothing): the board
    never shows revision 1, and no session is recorded."""
    result = run_agent({"url": todoweb.url, "token": token, "script": "plans"}, board.before_turn)
    inputs = result["inputs"]
    context = f"{inputs}\n{todoweb.log()[-3000:]}"
    assert result["final_output"] == "Done." and board.live == {1: True, 2: True}, context
    [(key, revisions)] = recorded(todoweb, token).items()
    assert key.startswith("trace_"), context
    assert [(r["revision"], steps(r["todos"])) for r in revisions] == [
        (1, [(BEFORE[0], "in_progress"), (BEFORE[1], "pending")]),
        (2, [(BEFORE[0], "completed"), (BEFORE[1], "completed")]),
    ], context
    assert tool_output(inputs[1], "call_0") == "Plan updated", context


def test_an_unreachable_board_changes_nothing_for_the_agent(unreachable):
    """Nothing listens at the board's address: the guardrail allows every result and
    the processor gives up at once; the model reads exactly what it reads without them.

    Seen failing with the guards off (no `except` in the guardrail, and the answer's
    `output` read when the board gave none): the run stops with the SDK's UserError
    ("Error running tool update_plan: 'NoneType' object is not subscriptable")."""
    plain = run_agent({"script": "fix"})
    result = run_agent({"url": unreachable, "token": "tw_nobody", "guardrail": True, "timeout": 2, "script": "fix"})
    assert result["final_output"] == "The bug is fixed."
    assert result["inputs"] == plain["inputs"]


@pytest.fixture
def unreachable() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


def tool_output(model_input: list[Any], call_id: str) -> str:
    [item] = [i for i in model_input if isinstance(i, dict) and i.get("call_id") == call_id and "output" in i]
    return str(item["output"])


# The agent's side, run in its own process (see the module's docstring).


class PlanStep(TypedDict):
    step: str
    status: Literal["pending", "in_progress", "completed"]


def update_plan(plan: list[PlanStep]) -> str:
    """Update the plan of the task (Codex's todo tool)."""
    return "Plan updated"


def show_file(path: str) -> str:
    """Show a file of the project."""
    return CHECKOUT


def ask_the_test(turn: int) -> None:
    print(json.dumps({"before_turn": turn}), flush=True)
    sys.stdin.readline()


def main(scenario: dict[str, Any]) -> dict[str, Any]:
    """Runs the agent: with the processor when `url` is given, the guardrail on every
    tool when `guardrail`; the scripted model plays `script` ("fix": write the plan,
    show a file, finish the plan, answer; "plans": write it, finish it, answer)."""
    from todoweb_client.openai_agents import TodowebTracingProcessor, todoweb_guardrail

    from agents import Agent, RunConfig, Runner, function_tool, set_trace_processors
    from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message, function_call

    url, token, timeout = scenario.get("url"), scenario.get("token", ""), scenario.get("timeout", 5)
    processor = TodowebTracingProcessor(url, token, timeout=timeout) if url else None
    # In place of the SDK's default processor, which exports traces to OpenAI.
    set_trace_processors([processor] if processor else [])
    guardrails = [todoweb_guardrail(url, token, timeout=timeout)] if url and scenario.get("guardrail") else None
    tools = [function_tool(f, tool_output_guardrails=guardrails) for f in (update_plan, show_file)]
    if scenario["script"] == "fix":
        outputs = [
            function_call("update_plan", {"plan": FIRST}, call_id="call_0"),
            function_call("show_file", {"path": "checkout.py"}, call_id="call_1"),
            function_call("update_plan", {"plan": DONE}, call_id="call_2"),
            assistant_message("The bug is fixed."),
        ]
    else:
        outputs = [
            function_call("update_plan", {"plan": FIRST}, call_id="call_0"),
            function_call("update_plan", {"plan": DONE}, call_id="call_1"),
            assistant_message("Done."),
        ]

    def step(turn: int) -> ModelStep:
        async def respond(call: ModelCall) -> list[Any]:
            await asyncio.to_thread(ask_the_test, turn)
            return [outputs[turn]]

        return ModelStep.respond(respond)

    model = ScriptedModel([step(turn) for turn in range(len(outputs))])
    agent = Agent(name="fixer", instructions="Fix bugs.", model=model, tools=tools)
    result = Runner.run_sync(agent, PROMPT, run_config=RunConfig(group_id=scenario.get("group_id")))
    if processor is not None:
        processor.shutdown()
    return {"final_output": result.final_output, "inputs": [call.input for call in model.calls]}


if __name__ == "__main__":
    print(json.dumps({"result": main(json.loads(sys.argv[1]))}, default=str), flush=True)
