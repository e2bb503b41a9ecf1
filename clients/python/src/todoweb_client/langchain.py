"""LangChain and deepagents agents on the board, in one line:

    agent = create_deep_agent(model, middleware=[TodoListMiddleware(), TodowebMiddleware(url, token)])

`TodowebMiddleware` is a LangChain v1 agent middleware (for `create_agent` and
deepagents' `create_deep_agent`): it records each `write_todos` call on the board
and hands the model todoweb's answer as that call's result (people's changes first,
then the plan as the board holds it); after any other tool call it appends what
people told the agent and it has not heard yet to the tool's result. That is how a
person's edit reaches the model.

`TodowebCallbackHandler` only records: a callback sees every tool call of any
LangChain runnable (`config={"callbacks": [handler]}`), but cannot change what the
model reads, so people's edits reach the board and not the model.

The session is the conversation's thread id when the run has one (a checkpointer's
`thread_id`); otherwise the middleware keys it by the conversation's first message
and the callback handler by the top-level run. The board being down or slow never
stops the agent: each call is bounded by `timeout`, and a failure is logged.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Collection
from typing import Any, TypeAlias
from uuid import UUID

from langchain.agents.middleware import AgentMiddleware
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import ToolMessage
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command

from todoweb_client.client import DEFAULT_TIMEOUT, Todoweb

# deepagents' and LangChain's TodoListMiddleware tool.
TODO_TOOLS = frozenset({"write_todos"})

logger = logging.getLogger("todoweb_client")

ToolResult: TypeAlias = ToolMessage | Command[Any]


class TodowebMiddleware(AgentMiddleware):
    """Records the agent's todo calls and hands people's edits to its model with the
    result of its next tool call. Put it after `TodoListMiddleware()` in `middleware`."""

    def __init__(
        self,
        url: str,
        token: str,
        *,
        session: str | None = None,
        todo_tools: Collection[str] = TODO_TOOLS,
        timeout: float = DEFAULT_TIMEOUT,
        client: Todoweb | None = None,
    ):
        super().__init__()
        self.board = client or Todoweb(url, token, timeout=timeout)
        self.session = session
        self.todo_tools = frozenset(todo_tools)

    def wrap_tool_call(self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], ToolResult]) -> ToolResult:
        return self.told(request, handler(request))

    async def awrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Awaitable[ToolResult]]
    ) -> ToolResult:
        result = await handler(request)
        # The sync client in a thread: an asyncio client is tied to one event loop, and
        # an agent may be run from several.
        return await asyncio.to_thread(self.told, request, result)

    def told(self, request: ToolCallRequest, result: ToolResult) -> ToolResult:
        """The result the model reads: the board's answer for a todo call, the tool's
        result with people's pending edits after it for any other call."""
        call = request.tool_call
        try:
            session = self.session or session_of(request)
            if call["name"] in self.todo_tools:
                message = tool_message(result, call["id"])
                if message is None or message.status == "error":
                    return result  # the tool refused the list: nothing to record
                answer = self.board.record(session, dict(call))
                output = answer.get("output") if answer and answer.get("ok") else None
                return with_content(result, call["id"], output, replace=True) if isinstance(output, str) else result
            notice = self.board.tell(session, route=f"LangChain middleware ({call['name']})")
            return with_content(result, call["id"], notice, replace=False) if notice else result
        except Exception:  # the agent goes on whatever happens here
            logger.warning("todoweb: the %s call was not handled", call.get("name"), exc_info=True)
            return result


class TodowebCallbackHandler(BaseCallbackHandler):
    """Records each todo tool call that ran (in any LangChain runnable) on the board.
    Pass it in the run's config: `agent.invoke(..., {"callbacks": [handler]})`."""

    # Tool runs are short and the client bounded: running inline keeps the calls in
    # order, where an executor thread per event could reorder two quick revisions.
    run_inline = True

    def __init__(
        self,
        url: str,
        token: str,
        session: str | None = None,
        *,
        todo_tools: Collection[str] = TODO_TOOLS,
        timeout: float = DEFAULT_TIMEOUT,
        client: Todoweb | None = None,
    ):
        self.board = client or Todoweb(url, token, timeout=timeout)
        self.session = session
        self.todo_tools = frozenset(todo_tools)
        self.roots: dict[UUID, UUID] = {}  # each live run → its top-level run
        self.started: dict[UUID, tuple[str, dict[str, Any]]] = {}  # todo runs → (session, call)

    def on_chain_start(
        self, serialized: Any, inputs: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any
    ) -> None:
        self.roots[run_id] = self.roots.get(parent_run_id, parent_run_id) if parent_run_id else run_id

    def on_chain_end(self, outputs: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self.forget(run_id)

    def on_chain_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self.forget(run_id)

    def on_tool_start(
        self,
        serialized: dict[str, Any],
        input_str: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        metadata: dict[str, Any] | None = None,
        inputs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        name = kwargs.get("name") or (serialized or {}).get("name")
        if name not in self.todo_tools or not isinstance(inputs, dict):
            return
        top = self.roots.get(parent_run_id, parent_run_id) if parent_run_id else run_id
        session = self.session or str((metadata or {}).get("thread_id") or top)
        call = {"type": "tool_call", "name": name, "args": inputs, "id": kwargs.get("tool_call_id") or str(run_id)}
        self.started[run_id] = (session, call)

    def on_tool_end(self, output: Any, *, run_id: UUID, **kwargs: Any) -> None:
        # Recorded once it ran: a list the tool refused never reaches the board.
        started = self.started.pop(run_id, None)
        if started is not None:
            try:
                self.board.record(*started)
            except Exception:
                logger.warning("todoweb: the todo call was not recorded", exc_info=True)

    def on_tool_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self.started.pop(run_id, None)

    def forget(self, run_id: UUID) -> None:
        if self.roots.pop(run_id, None) == run_id:  # the top-level run ended: drop its children
            self.roots = {run: top for run, top in self.roots.items() if top != run_id}


def session_of(request: ToolCallRequest) -> str:
    """The conversation's thread id, else the id of its first message (LangGraph gives
    every message an id when it enters the state, and the first one stays)."""
    config = getattr(request.runtime, "config", None) or {}
    thread = (config.get("configurable") or {}).get("thread_id")
    if thread:
        return str(thread)
    state = request.state
    messages = state.get("messages") if isinstance(state, dict) else getattr(state, "messages", None)
    first = getattr(messages[0], "id", None) if messages else None
    return str(first or request.tool_call["id"])


def tool_message(result: ToolResult, call_id: str | None) -> ToolMessage | None:
    """The call's ToolMessage: the result itself, or the one a Command (deepagents'
    `write_todos`) adds to the conversation."""
    if isinstance(result, ToolMessage):
        return result
    update = result.update if isinstance(result.update, dict) else {}
    found = [m for m in update.get("messages", ()) if isinstance(m, ToolMessage) and m.tool_call_id == call_id]
    return found[0] if found else None


def with_content(result: ToolResult, call_id: str | None, text: str, *, replace: bool) -> ToolResult:
    """`result` with its ToolMessage's content replaced by `text`, or `text` after it."""
    message = tool_message(result, call_id)
    if message is None:
        return result
    if replace:
        content: Any = text
    elif isinstance(message.content, str):
        content = f"{message.content}\n\n{text}" if message.content else text
    else:
        content = [*message.content, {"type": "text", "text": text}]
    changed = message.model_copy(update={"content": content})
    if isinstance(result, ToolMessage):
        return changed
    update = dict(result.update or {})
    update["messages"] = [changed if m is message else m for m in update["messages"]]
    return Command(graph=result.graph, update=update, resume=result.resume, goto=result.goto)
