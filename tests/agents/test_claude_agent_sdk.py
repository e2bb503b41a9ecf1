"""The Claude Agent SDK (claude-agent-sdk from PyPI, with the Claude Code it bundles)
on the board through the client package's one-line hooks factory,
`ClaudeAgentOptions(hooks=todoweb_hooks(url, token))`, against the scripted Anthropic
model:

- the agent's TodoWrite calls are on the board, revision by revision;
- a person's edit made while the agent works reaches the model with the agent's very
  next tool call of any kind (a Read), as context beside that call's result;
- with `approve_plans=True`, ExitPlanMode waits for a member's answer on the board and
  the model reads the decision;
- a board that cannot be reached changes nothing for the agent.
"""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.agents.conftest import failure_context, recorded, steps
from tests.agents.fake_anthropic import FakeAnthropic
from tests.agents.fake_model import Script, Turn
from tests.agents.test_claude_code import OFFLINE, todo
from tests.agents.test_steering_claude_code import (
    BEFORE,
    CHECKOUT,
    EDIT_NOTICE,
    EDITED,
    OTHER_CALLS,
    PLAN,
    PROMPT,
    answer_when_asked,
    result_of,
)

claude_agent_sdk = pytest.importorskip("claude_agent_sdk", reason="claude-agent-sdk is installed by make test-agents")
from claude_agent_sdk import ClaudeAgentOptions, PermissionResultDeny, ResultMessage, query  # noqa: E402
from todoweb_client.claude_agent_sdk import todoweb_hooks  # noqa: E402

# The Claude Code the SDK bundles (2.1.331) offers its default model no todo tool;
# CLAUDE_CODE_ENABLE_TODO_TOOLS brings them back (docs/agents.md says so). TodoWrite
# rather than Task*, and every tool in the request (no tool search), as in the CLI's
# steering tests.
TODO_TOOLS = {"CLAUDE_CODE_ENABLE_TODO_TOOLS": "1", "CLAUDE_CODE_ENABLE_TASKS": "false", "ENABLE_TOOL_SEARCH": "false"}
DONE = [todo("Read the code", "completed", "Reading the code"), todo("Fix the bug", "completed", "Fixing the bug")]


def options(agent_env: dict[str, str], fake: FakeAnthropic, workdir, hooks, **extra: Any) -> ClaudeAgentOptions:
    env = agent_env | OFFLINE | TODO_TOOLS | {"ANTHROPIC_BASE_URL": fake.url, "ANTHROPIC_API_KEY": "sk-ant-fake"}
    return ClaudeAgentOptions(cwd=str(workdir), env=env, hooks=hooks, setting_sources=[], **extra)


async def prompt_stream(text: str) -> AsyncIterator[dict[str, Any]]:
    """The prompt as a stream (what the SDK needs to answer permission prompts)."""
    yield {"type": "user", "message": {"role": "user", "content": text}, "parent_tool_use_id": None}


def heard(request, text: str) -> bool:
    """Whether what came back to the model after its last turn holds `text` (this Claude
    Code sends a hook's context as a system message after the tool's result)."""
    messages = request.body["messages"]
    last_turn = max(i for i, message in enumerate(messages) if message["role"] == "assistant")
    return json.dumps(text)[1:-1] in json.dumps(messages[last_turn + 1 :])


def run_agent(prompt: Any, agent_options: ClaudeAgentOptions) -> tuple[list[Any], str | None]:
    """Every message the SDK gave, and the run's result text."""

    async def run() -> tuple[list[Any], str | None]:
        messages = [message async for message in query(prompt=prompt, options=agent_options)]
        results = [message.result for message in messages if isinstance(message, ResultMessage)]
        return messages, results[-1] if results else None

    return asyncio.run(asyncio.wait_for(run(), 180))


def edit_after_first_list(todoweb, token: str, board, outcome: dict[str, Any]):
    """`before_turn`: before turn 1, once the board shows revision 1, a person rewords
    the second step (through the API, as the board does)."""

    def before_turn(turn: int) -> None:
        if turn != 1:
            return
        board.live[1] = board.wait_for(1)
        with todoweb.api(token) as api:
            [session] = api.get("/api/v1/sessions").json()["sessions"]
            outcome["key"] = session["key"]
            edit = api.post(
                f"/api/v1/sessions/{session['key']}/edits", json={"todos": EDITED}, headers={"If-Match": "1"}
            )
            outcome["status"] = edit.status_code

    return before_turn


def test_the_plan_is_on_the_board_and_a_persons_edit_reaches_the_model_on_its_next_tool_call(
    todoweb, token, board, internet_trap, agent_env, workdir
):
    """Turn 0 writes the list, the person rewords a step, turn 1 reads a file: the
    model's next request holds the notice beside the file's content; turn 2 finishes
    the list, and the board holds the person's wording with the agent's progress.

    Seen failing with the mechanism off (the factory's PostToolUse matcher set to
    "TodoWrite"): the Read fires no hook, so the request after it lacks the notice."""
    (workdir / "checkout.py").write_text(CHECKOUT)
    outcome: dict[str, Any] = {}
    turns = [
        Turn.call("TodoWrite", {"todos": BEFORE}, text="Let me track this."),
        Turn(text="Let me look at the code.", calls=(OTHER_CALLS["Read"],)),
        Turn.call("TodoWrite", {"todos": DONE}, text="Done."),
        Turn(text="The bug is fixed."),
    ]
    with FakeAnthropic(Script(turns, before_turn=edit_after_first_list(todoweb, token, board, outcome))) as fake:
        hooks = todoweb_hooks(todoweb.url, token)
        messages, result = run_agent(PROMPT, options(agent_env, fake, workdir, hooks))
    context = failure_context(None, fake, internet_trap, todoweb) + f"\n--- messages ---\n{messages}\n{outcome}"
    assert result == "The bug is fixed." and fake.errors == [], context
    assert outcome["status"] == 200 and board.live == {1: True}, context
    requests = {request.turn: request for request in fake.turns()}
    assert sorted(requests) == [0, 1, 2, 3], context
    read = result_of(requests[2], "toolu_fake_1_0")
    assert "round(sum(items), 2)" in read["content"] and heard(requests[2], EDIT_NOTICE), context
    assert not heard(requests[1], EDIT_NOTICE), context
    [(key, revisions)] = recorded(todoweb, token).items()
    assert key == outcome["key"], context
    assert [(r["revision"], r["author"]) for r in revisions] == [(1, "agent"), (2, "user"), (3, "agent")], context
    assert steps(revisions[-1]["todos"]) == [
        ("Read the code", "completed"),
        ("Fix the bug and add a regression test", "completed"),
    ], context
    with todoweb.api(token) as api:
        [message] = api.get(f"/api/v1/sessions/{key}/messages").json()["messages"]
    assert (message["state"], message["told_via"], message["kept_in"]) == ("kept", "Claude Code hook (Read)", 3)
    assert internet_trap.attempts == [], context


@pytest.mark.parametrize(
    ("decision", "feedback", "told"),
    [
        ("deny", "Add a regression test first", "The user did not approve the plan: Add a regression test first"),
        ("allow", "Keep the diff small", "The user approved the plan and added: Keep the diff small"),
    ],
)
def test_a_plan_waits_for_a_members_answer_on_the_board(
    todoweb, token, internet_trap, agent_env, workdir, decision, feedback, told
):
    """In plan mode the model calls ExitPlanMode; the factory's PreToolUse hook holds
    the agent until a member answers on the board, and the model reads the decision.

    Seen failing with the mechanism off (`approve_plans=False`): the SDK's own
    permission callback is asked instead (it denies: "asked the SDK"), and no question
    is ever put on the board."""
    session_id = str(uuid.uuid4())
    outcome: dict[str, Any] = {}
    asked_the_sdk: list[str] = []

    async def can_use_tool(tool_name: str, tool_input: dict[str, Any], context: Any) -> PermissionResultDeny:
        asked_the_sdk.append(tool_name)
        return PermissionResultDeny(message="asked the SDK")

    # The bundled Claude Code has the model write its plan to the plan file its system
    # prompt names (found in the first request), then call ExitPlanMode with no input.
    script = Script([Turn(), Turn.call("ExitPlanMode", {}), Turn(text="Understood.")])
    with FakeAnthropic(script) as fake:

        def write_the_plan_file(turn: int) -> None:
            if turn == 0:
                [path] = set(re.findall(r"/[^\s\"']*/\.claude/plans/[\w.-]+\.md", json.dumps(fake.turns()[0].body)))
                script.turns[0] = Turn.call("Write", {"file_path": path, "content": PLAN}, text="Here is my plan.")

        script.before_turn = write_the_plan_file
        hooks = todoweb_hooks(todoweb.url, token, approve_plans=True, plan_wait=60)
        member = answer_when_asked(todoweb, token, session_id, decision, feedback, outcome)
        agent_options = options(
            agent_env,
            fake,
            workdir,
            hooks,
            permission_mode="plan",
            can_use_tool=can_use_tool,
            extra_args={"session-id": session_id},
        )
        messages, result = run_agent(prompt_stream(PROMPT), agent_options)
        member.join(65)
    context = failure_context(None, fake, internet_trap, todoweb) + f"\n--- messages ---\n{messages}\n{outcome}"
    assert result == "Understood." and fake.errors == [], context
    assert outcome.get("answer", (None,))[0] == 200 and asked_the_sdk == [], (asked_the_sdk, context)
    assert (outcome["question"]["kind"], outcome["question"]["text"]) == ("plan", PLAN), context
    requests = {request.turn: request for request in fake.turns()}
    assert sorted(requests) == [0, 1, 2] and requests[2].at > outcome["answered_at"], context
    result_block = result_of(requests[2], "toolu_fake_1_0")
    if decision == "deny":
        # This Claude Code puts "PreToolUse:ExitPlanMode hook error: " before the reason.
        assert result_block["is_error"] and result_block["content"].endswith(told), (result_block, context)
    else:
        assert not result_block.get("is_error") and heard(requests[2], told), context
    assert internet_trap.attempts == [], context


def test_an_unreachable_board_changes_nothing_for_the_agent(internet_trap, agent_env, workdir, unused_port):
    """The board is down (nothing listens): every hook gives up at once with no
    opinion, and the agent's run is the same as without the hooks."""
    turns = [
        Turn.call("TodoWrite", {"todos": BEFORE}, text="Let me track this."),
        Turn.call("TodoWrite", {"todos": DONE}, text="Done."),
        Turn(text="The bug is fixed."),
    ]
    with FakeAnthropic(Script(turns)) as fake:
        hooks = todoweb_hooks(f"http://127.0.0.1:{unused_port}", "tw_nobody", timeout=2)
        messages, result = run_agent(PROMPT, options(agent_env, fake, workdir, hooks))
    context = failure_context(None, fake, internet_trap, None) + f"\n--- messages ---\n{messages}"
    assert result == "The bug is fixed." and fake.errors == [], context
    assert sorted(request.turn for request in fake.turns()) == [0, 1, 2], context
    assert not result_of(fake.turns()[1], "toolu_fake_0_0").get("is_error"), context
    assert internet_trap.attempts == [], context


@pytest.fixture
def unused_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
