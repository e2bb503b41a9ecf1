"""Pydantic AI agents on the board, in one line:

    agent = Agent(model, tools=[...], capabilities=[todoweb_hooks("http://127.0.0.1:8000", token)])

Pydantic AI has no todo tool of its own: give the agent one whose name and input
todoweb knows (`write_todos` with `{"todos": [{"content", "status"}]}`,
`update_plan` with Codex's `{"plan": [{"step", "status"}]}`, …). The hooks (a
`Hooks` capability, `after_tool_execute`) record each call of that tool on the board
and hand the model todoweb's answer as its result (people's changes first, then the
plan as the board holds it); after any other tool call they add what people told the
agent and it has not heard yet to the tool's result. That is how a person's edit
reaches the model.

The session is the run's conversation id (`agent.run(..., conversation_id=…)`, kept
across runs that continue a `message_history`), or `session` when given. The board
being down or slow never stops the agent: each call is bounded by `timeout`, and a
failure is logged.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Collection
from typing import Any

from pydantic_ai import RunContext, ToolReturn
from pydantic_ai.capabilities import Hooks
from pydantic_ai.messages import ToolCallPart
from pydantic_ai.tools import ToolDefinition

from todoweb_client.client import DEFAULT_TIMEOUT, KNOWN_TODO_TOOLS, Todoweb

TODO_TOOLS = KNOWN_TODO_TOOLS

logger = logging.getLogger("todoweb_client")


def todoweb_hooks(
    url: str,
    token: str,
    *,
    session: str | None = None,
    todo_tools: Collection[str] = TODO_TOOLS,
    timeout: float = DEFAULT_TIMEOUT,
    client: Todoweb | None = None,
) -> Hooks[Any]:
    """A capability that puts the agent's plan on the board and brings people's edits
    back to its model."""
    board = client or Todoweb(url, token, timeout=timeout)
    tools = frozenset(todo_tools)

    def told(session_key: str, call: ToolCallPart, result: Any) -> Any:
        if call.tool_name in tools:
            plain = {"tool": call.tool_name, "id": call.tool_call_id, "input": call.args_as_dict()}
            answer = board.record(session_key, plain)
            return answer["output"] if answer and answer.get("ok") else result
        notice = board.tell(session_key, route=f"Pydantic AI hook ({call.tool_name})")
        return with_notice(result, notice) if notice else result

    async def after_tool_execute(
        ctx: RunContext[Any], /, *, call: ToolCallPart, tool_def: ToolDefinition, args: Any, result: Any
    ) -> Any:
        try:
            session_key = session or ctx.conversation_id or ctx.run_id or call.tool_call_id
            # The sync client in a thread: an asyncio client is tied to one event loop,
            # and `run_sync` starts one per run.
            return await asyncio.to_thread(told, session_key, call, result)
        except Exception:  # the agent goes on whatever happens here
            logger.warning("todoweb: the %s call was not handled", call.tool_name, exc_info=True)
            return result

    return Hooks(after_tool_execute=after_tool_execute)


def with_notice(result: Any, notice: str) -> Any:
    """The tool's result with `notice` after it: in the text of a text result, else as
    content the model reads beside the result (a `ToolReturn`'s `content`)."""
    if isinstance(result, str):
        return f"{result}\n\n{notice}" if result else notice
    if isinstance(result, ToolReturn):
        content = result.content
        if content is None:
            return dataclasses.replace(result, content=notice)
        if isinstance(content, str):
            return dataclasses.replace(result, content=f"{content}\n\n{notice}")
        return dataclasses.replace(result, content=[*content, notice])
    return ToolReturn(return_value=result, content=notice)
