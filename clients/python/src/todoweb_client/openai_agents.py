"""OpenAI Agents SDK agents on the board, in one line:

    add_trace_processor(TodowebTracingProcessor("http://127.0.0.1:8000", token))

The SDK has no todo tool of its own: give the agent one whose name and input todoweb
knows (`update_plan` with Codex's `{"plan": [{"step", "status"}]}`, `write_todos`
with `{"todos": [{"content", "status"}]}`, …). The processor records each run of
such a function tool from its trace span, in the session named by the trace's
`group_id` (`RunConfig(group_id=…)`, one board session per conversation), else its
trace id (one per run). It posts from a thread of its own, so the run never waits
on the board.

A tracing processor cannot change what the model reads. `todoweb_guardrail(url,
token)` can: a tool output guardrail, attached to each tool
(`function_tool(tool_output_guardrails=[guardrail])`), that hands the model
todoweb's answer as a todo tool's result (people's changes first, then the plan as
the board holds it) and appends what people told the agent and it has not heard yet
to any other tool's result. It does so through the SDK's `reject_content`, the one
way a guardrail replaces a result, so such results are listed as rejections in
`result.tool_output_guardrail_results`.

Both need tracing on (the SDK's default) and the tool's arguments in its spans
(`trace_include_sensitive_data`, on by default). The board being down or slow never
stops the agent: each call is bounded by `timeout`, and a failure is logged.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Collection
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from agents import ToolGuardrailFunctionOutput, ToolOutputGuardrail, ToolOutputGuardrailData
from agents.tracing import FunctionSpanData, Span, Trace, TracingProcessor, get_current_span, get_current_trace

from todoweb_client.client import DEFAULT_TIMEOUT, KNOWN_TODO_TOOLS, Todoweb

TODO_TOOLS = KNOWN_TODO_TOOLS
# What the SDK's tracing gives when tracing is off.
NO_OP = "no-op"

logger = logging.getLogger("todoweb_client")


class TodowebTracingProcessor(TracingProcessor):
    """Records each run of a todo function tool on the board, from its trace span."""

    def __init__(
        self,
        url: str,
        token: str,
        *,
        todo_tools: Collection[str] = TODO_TOOLS,
        timeout: float = DEFAULT_TIMEOUT,
        client: Todoweb | None = None,
    ):
        self.board = client or Todoweb(url, token, timeout=timeout)
        self.todo_tools = frozenset(todo_tools)
        self.groups: dict[str, str] = {}  # trace id → its group id
        # One worker: the SDK calls processors on the event loop and asks them to
        # return at once; a single thread keeps the revisions in their order.
        self.worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="todoweb")

    def on_trace_start(self, trace: Trace) -> None:
        group = getattr(trace, "group_id", None)
        if group:
            self.groups[trace.trace_id] = group

    def on_trace_end(self, trace: Trace) -> None:
        self.groups.pop(trace.trace_id, None)

    def on_span_start(self, span: Span[Any]) -> None:
        pass

    def on_span_end(self, span: Span[Any]) -> None:
        data = span.span_data
        if not isinstance(data, FunctionSpanData) or data.name not in self.todo_tools or span.error:
            return
        call = todo_call(data.name, span.span_id, data.input)
        if call is not None:
            self.worker.submit(self.record, self.groups.get(span.trace_id, span.trace_id), call)

    def record(self, session: str, call: dict[str, Any]) -> None:
        try:
            self.board.record(session, call)
        except Exception:  # a worker's error would go unseen: log it
            logger.warning("todoweb: the %s call was not recorded", call["tool"], exc_info=True)

    def force_flush(self) -> None:
        self.worker.submit(lambda: None).result()

    def shutdown(self) -> None:
        self.worker.shutdown(wait=True)


def todoweb_guardrail(
    url: str,
    token: str,
    *,
    todo_tools: Collection[str] = TODO_TOOLS,
    timeout: float = DEFAULT_TIMEOUT,
    client: Todoweb | None = None,
) -> ToolOutputGuardrail[Any]:
    """A tool output guardrail that brings people's edits to the model with the result
    of the tool it is attached to (attach it to every tool)."""
    board = client or Todoweb(url, token, timeout=timeout)
    tools = frozenset(todo_tools)

    async def tell_the_model(data: ToolOutputGuardrailData) -> ToolGuardrailFunctionOutput:
        # Read where the call runs: the trace and the tool's span are context variables.
        trace, span = get_current_trace(), get_current_span()
        tool = data.context.tool_name
        try:
            if trace is None or trace.trace_id == NO_OP:
                return ToolGuardrailFunctionOutput.allow()
            session = getattr(trace, "group_id", None) or trace.trace_id
            if tool in tools:
                # The span's id, as the processor records it: the board takes the
                # processor's later post of the same call for a repeat.
                call_id = span.span_id if span is not None and span.span_id != NO_OP else data.context.tool_call_id
                call = todo_call(tool, call_id, data.context.tool_arguments)
                answer = await asyncio.to_thread(board.record, session, call) if call else None
                text = answer["output"] if answer and answer.get("ok") else None
            else:
                notice = await asyncio.to_thread(board.tell, session, f"Agents SDK guardrail ({tool})")
                text = f"{data.output}\n\n{notice}" if notice else None
        except Exception:  # the agent goes on whatever happens here
            logger.warning("todoweb: the %s call was not handled", tool, exc_info=True)
            text = None
        return ToolGuardrailFunctionOutput.reject_content(text) if text else ToolGuardrailFunctionOutput.allow()

    return ToolOutputGuardrail(guardrail_function=tell_the_model, name="todoweb")


def todo_call(tool: str, call_id: str, arguments: str | None) -> dict[str, Any] | None:
    """The plain tool call for the board; None when the span carries no arguments."""
    try:
        args = json.loads(arguments) if arguments else None
    except ValueError:
        args = None
    if not isinstance(args, dict):
        logger.warning("todoweb: the %s call has no arguments to record (trace_include_sensitive_data off?)", tool)
        return None
    return {"tool": tool, "id": call_id, "input": args}
