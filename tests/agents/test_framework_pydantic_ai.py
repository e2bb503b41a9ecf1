"""Pydantic AI on the board through the client package's `todoweb_hooks` capability,
driven by Pydantic AI's `FunctionModel` playing a script (no network):

- the agent's `write_todos` calls (a tool of the test's, in deepagents' shape) are on
  the board, revision by revision, and shown live;
- a person's edit made while the agent works reaches the model with the result of its
  next tool call of any kind;
- a tool result that is not text gets the notice beside it (`ToolReturn.content`);
- a board that cannot be reached changes nothing for the agent.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any, Literal

import pytest
from typing_extensions import TypedDict

from tests.agents.conftest import recorded, steps
from tests.agents.steering import BEFORE, CHECKOUT, EDIT_NOTICE, edit_before_turn_1, messages

pytest.importorskip("pydantic_ai", reason="pydantic-ai-slim is installed by make test-agents")
from pydantic_ai import Agent  # noqa: E402
from pydantic_ai.messages import (  # noqa: E402
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel  # noqa: E402
from todoweb_client.pydantic_ai import todoweb_hooks  # noqa: E402

PROMPT = "Fix the rounding bug in checkout.py and keep a todo list while you work."
FIRST = [{"content": BEFORE[0], "status": "in_progress"}, {"content": BEFORE[1], "status": "pending"}]
DONE = [{"content": BEFORE[0], "status": "completed"}, {"content": BEFORE[1], "status": "completed"}]


class Todo(TypedDict):
    content: str
    status: Literal["pending", "in_progress", "completed"]


def write_todos(todos: list[Todo]) -> str:
    """Write the todo list of the task (deepagents' todo tool)."""
    return "Updated todo list"


def show_file(path: str) -> str:
    """Show a file of the project."""
    return CHECKOUT


def line_count(path: str) -> dict[str, int]:
    """Count the lines of a file of the project."""
    return {"lines": CHECKOUT.count("\n")}


class Script:
    """A `FunctionModel` function answering turn n with `turns[n]` (a tool call or the
    final text), after `before_turn(n)`; keeps the messages of every request."""

    def __init__(self, turns: list[ToolCallPart | str], before_turn: Callable[[int], None] | None = None):
        self.turns = turns
        self.before_turn = before_turn
        self.requests: list[list[ModelMessage]] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        turn = len(self.requests)
        if self.before_turn is not None:
            self.before_turn(turn)
        self.requests.append(list(messages))
        answer = self.turns[turn]
        return ModelResponse(parts=[TextPart(answer) if isinstance(answer, str) else answer])


def call(name: str, args: dict[str, Any], turn: int) -> ToolCallPart:
    return ToolCallPart(tool_name=name, args=args, tool_call_id=f"call_{turn}")


def fix_script(other_tool: str = "show_file") -> list[ToolCallPart | str]:
    """Write the list, use another tool, finish the list, answer."""
    return [
        call("write_todos", {"todos": FIRST}, 0),
        call(other_tool, {"path": "checkout.py"}, 1),
        call("write_todos", {"todos": DONE}, 2),
        "The bug is fixed.",
    ]


def agent_for(script: Script, capabilities: list[Any]) -> Agent[None, str]:
    return Agent(FunctionModel(script), tools=[write_todos, show_file, line_count], capabilities=capabilities)


def returned(request: list[ModelMessage], call_id: str) -> ToolReturnPart:
    [part] = [
        part
        for message in request
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, ToolReturnPart) and part.tool_call_id == call_id
    ]
    return part


def last_request(request: list[ModelMessage]) -> list[tuple[str, str | None, str]]:
    """What came back to the model after its last turn (without the times)."""
    last = request[-1]
    parts = last.parts if isinstance(last, ModelRequest) else []
    return [(type(part).__name__, getattr(part, "tool_name", None), str(part.content)) for part in parts]


def test_it_puts_the_plan_on_the_board_and_hands_a_persons_edit_to_the_model(todoweb, token, board):
    """Turn 0 writes the list, the person rewords a step, turn 1 shows a file: the
    model's next request holds the notice after the file's content; turn 2 finishes
    the list, and the board holds the person's wording with the agent's progress, in
    the run's conversation.

    Seen failing with the mechanism off (the hook returning other tools' results as
    they are): the file's result the model reads next lacks the notice."""
    outcome: dict[str, Any] = {}
    script = Script(fix_script(), edit_before_turn_1(todoweb, token, board, outcome))
    result = agent_for(script, [todoweb_hooks(todoweb.url, token)]).run_sync(PROMPT)
    context = f"{outcome}\n{script.requests}\n{todoweb.log()[-3000:]}"
    assert result.output == "The bug is fixed." and len(script.requests) == 4, context
    assert outcome["status"] == 200 and board.live == {1: True}, context
    # The write_todos result the model reads is the board's checklist.
    assert f"[>] {BEFORE[0]}" in returned(script.requests[1], "call_0").model_response_str(), context
    shown = returned(script.requests[2], "call_1").model_response_str()
    assert shown.startswith(CHECKOUT) and EDIT_NOTICE in shown[len(CHECKOUT) :], context
    assert EDIT_NOTICE not in str(script.requests[1]), context
    [(key, revisions)] = recorded(todoweb, token).items()
    assert key == outcome["key"] == result.conversation_id, context
    assert [(r["revision"], r["author"]) for r in revisions] == [(1, "agent"), (2, "user"), (3, "agent")], context
    assert steps(revisions[-1]["todos"]) == [
        (BEFORE[0], "completed"),
        ("Round the total once and add a regression test", "completed"),
    ], context
    [message] = messages(todoweb, token, key)
    told = (message["state"], message["told_via"], message["kept_in"])
    assert told == ("kept", "Pydantic AI hook (show_file)", 3), context


def test_a_result_that_is_not_text_gets_the_notice_beside_it(todoweb, token, board):
    """The tool after the edit returns a dict: the model reads it as it was, and the
    notice in a user part of the same request.

    Seen failing with the mechanism off (`with_notice` appending `str(result)` and the
    notice as one text): the tool's result is no longer the dict's JSON."""
    outcome: dict[str, Any] = {}
    script = Script(fix_script("line_count"), edit_before_turn_1(todoweb, token, board, outcome))
    result = agent_for(script, [todoweb_hooks(todoweb.url, token, session="pai-7")]).run_sync(PROMPT)
    context = f"{outcome}\n{script.requests}\n{todoweb.log()[-3000:]}"
    assert result.output == "The bug is fixed." and outcome.get("key") == "pai-7", context
    assert returned(script.requests[2], "call_1").model_response_str() == '{"lines":2}', context
    [after] = [
        part.content
        for part in script.requests[2][-1].parts  # type: ignore[union-attr]
        if isinstance(part, UserPromptPart)
    ]
    assert isinstance(after, str) and after.startswith(EDIT_NOTICE), context


def test_an_unreachable_board_changes_nothing_for_the_agent(unreachable):
    """Nothing listens at the board's address: every hook gives up at once, and the
    model reads exactly what it reads without the hooks.

    Seen failing with the guards off (no `except` in the hook, and the answer's
    `output` read when the board gave none): the run raises TypeError."""
    plain = Script(fix_script())
    agent_for(plain, []).run_sync(PROMPT)
    script = Script(fix_script())
    result = agent_for(script, [todoweb_hooks(unreachable, "tw_nobody", timeout=2)]).run_sync(PROMPT)
    assert result.output == "The bug is fixed."
    assert [last_request(r) for r in script.requests[1:]] == [last_request(r) for r in plain.requests[1:]]


@pytest.fixture
def unreachable() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"
