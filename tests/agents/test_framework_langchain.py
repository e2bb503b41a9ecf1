"""LangChain v1 agents (`create_agent`) and deepagents (`create_deep_agent`) on the
board through the client package's `TodowebMiddleware` and `TodowebCallbackHandler`,
driven by a scripted LangChain chat model (no network):

- the agent's `write_todos` calls are on the board, revision by revision, and shown live;
- a person's edit made while the agent works reaches the model with the result of its
  next tool call of any kind (the middleware);
- the callback handler records under the run's thread id;
- a board that cannot be reached changes nothing for the agent.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable
from typing import Any

import pytest

from tests.agents.conftest import recorded, steps
from tests.agents.steering import BEFORE, CHECKOUT, EDIT_NOTICE, edit_before_turn_1, messages

pytest.importorskip("langchain.agents", reason="langchain is installed by make test-agents (with deepagents)")
deepagents = pytest.importorskip("deepagents", reason="deepagents is installed by make test-agents")
from langchain.agents import create_agent  # noqa: E402
from langchain.agents.middleware import TodoListMiddleware  # noqa: E402
from langchain_core.language_models import BaseChatModel  # noqa: E402
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage  # noqa: E402
from langchain_core.outputs import ChatGeneration, ChatResult  # noqa: E402
from langchain_core.tools import tool  # noqa: E402
from pydantic import Field  # noqa: E402
from todoweb_client.langchain import TodowebCallbackHandler, TodowebMiddleware  # noqa: E402

PROMPT = "Fix the rounding bug in checkout.py and keep a todo list while you work."
FIRST = [{"content": BEFORE[0], "status": "in_progress"}, {"content": BEFORE[1], "status": "pending"}]
DONE = [{"content": BEFORE[0], "status": "completed"}, {"content": BEFORE[1], "status": "completed"}]


class ScriptedChatModel(BaseChatModel):
    """Answers turn n with `turns[n]` and keeps every request's messages; calls
    `before_turn(n)` first (where the test waits for the board, or edits the plan)."""

    turns: list[AIMessage]
    before_turn: Callable[[int], None] | None = None
    requests: list[list[BaseMessage]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChatModel:
        return self

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any):
        turn = len(self.requests)
        if self.before_turn is not None:
            self.before_turn(turn)
        self.requests.append(list(messages))
        return ChatResult(generations=[ChatGeneration(message=self.turns[turn])])


def call(name: str, args: dict[str, Any], turn: int) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": f"call_{turn}", "type": "tool_call"}])


def script() -> list[AIMessage]:
    """Write the list, read the code, finish the list, answer."""
    return [
        call("write_todos", {"todos": FIRST}, 0),
        call("show_file", {"path": "checkout.py"}, 1),
        call("write_todos", {"todos": DONE}, 2),
        AIMessage(content="The bug is fixed."),
    ]


@tool
def show_file(path: str) -> str:
    """Show a file of the project."""
    return CHECKOUT


def tool_result(request: list[BaseMessage], call_id: str) -> str:
    [message] = [m for m in request if isinstance(m, ToolMessage) and m.tool_call_id == call_id]
    return message.content if isinstance(message.content, str) else str(message.content)


def conversation(requests: list[list[BaseMessage]]) -> list[list[tuple[str, Any]]]:
    """What the model read, without the ids LangGraph gives messages."""
    return [[(type(m).__name__, m.content) for m in request] for request in requests]


def agent_for(kind: str, model: ScriptedChatModel, middleware: list[Any]) -> Any:
    if kind == "deepagents":
        return deepagents.create_deep_agent(model, tools=[show_file], middleware=[TodoListMiddleware(), *middleware])
    return create_agent(model, tools=[show_file], middleware=[TodoListMiddleware(), *middleware])


def run(agent: Any, config: dict[str, Any] | None = None, *, use_async: bool = False) -> dict[str, Any]:
    state = {"messages": [{"role": "user", "content": PROMPT}]}
    if use_async:
        return asyncio.run(asyncio.wait_for(agent.ainvoke(state, config), 60))
    return agent.invoke(state, config)


@pytest.mark.parametrize(("kind", "use_async"), [("deepagents", False), ("create_agent", True)])
def test_it_puts_the_plan_on_the_board_and_hands_a_persons_edit_to_the_model(todoweb, token, board, kind, use_async):
    """Turn 0 writes the list, the person rewords a step, turn 1 shows a file: the
    model's next request holds the notice after the file's content; turn 2 finishes
    the list, and the board holds the person's wording with the agent's progress.
    Runs synchronously through deepagents and asynchronously (`awrap_tool_call`)
    through `create_agent`.

    Seen failing with the mechanism off (`told` returning other tools' results as
    they are, as a recorder without notices would): the file's result the model
    reads next lacks the notice."""
    outcome: dict[str, Any] = {}
    model = ScriptedChatModel(turns=script(), before_turn=edit_before_turn_1(todoweb, token, board, outcome))
    final = run(agent_for(kind, model, [TodowebMiddleware(todoweb.url, token)]), use_async=use_async)
    context = f"{outcome}\n{conversation(model.requests)}\n{todoweb.log()[-3000:]}"
    assert final["messages"][-1].content == "The bug is fixed." and len(model.requests) == 4, context
    assert outcome["status"] == 200 and board.live == {1: True}, context
    # The write_todos result the model reads is the board's checklist.
    assert f"[>] {BEFORE[0]}" in tool_result(model.requests[1], "call_0"), context
    shown = tool_result(model.requests[2], "call_1")
    assert shown.startswith(CHECKOUT) and EDIT_NOTICE in shown[len(CHECKOUT) :], context
    assert EDIT_NOTICE not in str(conversation(model.requests[:2])), context
    [(key, revisions)] = recorded(todoweb, token).items()
    assert key == outcome["key"], context
    assert [(r["revision"], r["author"]) for r in revisions] == [(1, "agent"), (2, "user"), (3, "agent")], context
    assert steps(revisions[-1]["todos"]) == [
        (BEFORE[0], "completed"),
        ("Round the total once and add a regression test", "completed"),
    ], context
    [message] = messages(todoweb, token, key)
    assert (message["state"], message["told_via"], message["kept_in"]) == (
        "kept",
        "LangChain middleware (show_file)",
        3,
    )


def test_the_callback_handler_records_each_list_under_the_runs_thread_id(todoweb, token, board):
    """A callback handler in the run's config records both lists, each shown live
    before the model's next turn, in the session named by the thread id.

    Seen failing with the mechanism off (`on_tool_end` not recording): the board
    never shows revision 1, and no session is recorded."""
    turns = [call("write_todos", {"todos": FIRST}, 0), call("write_todos", {"todos": DONE}, 1), AIMessage("Done.")]
    model = ScriptedChatModel(turns=turns, before_turn=board.before_turn)
    handler = TodowebCallbackHandler(todoweb.url, token)
    final = run(agent_for("create_agent", model, []), {"callbacks": [handler], "configurable": {"thread_id": "lc-7"}})
    context = f"{conversation(model.requests)}\n{todoweb.log()[-3000:]}"
    assert final["messages"][-1].content == "Done." and board.live == {1: True, 2: True}, context
    [(key, revisions)] = recorded(todoweb, token).items()
    assert key == "lc-7", context
    assert [(r["revision"], steps(r["todos"])) for r in revisions] == [
        (1, [(BEFORE[0], "in_progress"), (BEFORE[1], "pending")]),
        (2, [(BEFORE[0], "completed"), (BEFORE[1], "completed")]),
    ], context
    # The callback only records: what the model read is the tool's own result.
    assert tool_result(model.requests[1], "call_0").startswith("Updated todo list to"), context


def test_an_unreachable_board_changes_nothing_for_the_agent(unreachable):
    """Nothing listens at the board's address: the middleware and the handler give up
    at once, and the model reads exactly what it reads without them.

    Seen failing with the guards off (no `except` in `told`, and the answer's
    `output` read when the board gave none): the run raises TypeError."""
    plain = ScriptedChatModel(turns=script())
    run(agent_for("deepagents", plain, []))
    model = ScriptedChatModel(turns=script())
    middleware = TodowebMiddleware(unreachable, "tw_nobody", timeout=2)
    handler = TodowebCallbackHandler(unreachable, "tw_nobody", timeout=2)
    final = run(agent_for("deepagents", model, [middleware]), {"callbacks": [handler]})
    assert final["messages"][-1].content == "The bug is fixed."
    assert conversation(model.requests) == conversation(plain.requests)


@pytest.fixture
def unreachable() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"
