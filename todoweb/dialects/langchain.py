"""LangChain's `write_todos` (TodoListMiddleware, also deepagents'), as langchain 1.4 runs it.

The tool is `write_todos(todos: list[Todo], tool_call_id)` with `Todo` a TypedDict of
`content: str` and `status: Literal["pending", "in_progress", "completed"]`. LangGraph's
ToolNode validates the call with the pydantic model LangChain builds from that
signature, so this module validates with the same types and reports what ToolNode
reports (checked against langchain 1.4.7, langgraph 1.2.22, pydantic 2.14):

- every validation error, one `loc: msg` line each, inside ToolNode's template that
  repeats the call's arguments as a Python repr;
- pydantic's lax mode, which still refuses `content: 5`, and no other checks: an
  empty `content` is accepted, and so are several `in_progress` items;
- extra keys ignored at both levels; the validated items keep only `content` and
  `status`, in that order, which is what the reply (a Python repr) shows.

The arguments themselves are read as langchain-openai reads a Chat Completions call:
a JSON value that Python finds falsy (`[]`, `null`, `0`, `""`, `false`, or no text at
all) becomes `{}`; any other value that is not an object never reaches the tool (the
message itself fails to build), so it is refused here with LangChain's words for
malformed arguments. Those words name the call id, which a dialect does not see:
todoweb leaves the id out (a faithful choice, not a copy).

Not reproduced: the middleware's refusal of several `write_todos` calls in one model
turn (todoweb receives one call per request), and the error list is cut after
MAX_REPORTED_ERRORS lines (LangChain prints them all).
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ValidationError
from typing_extensions import TypedDict

from todoweb.calls.errors import InvalidInput, InvalidJson
from todoweb.calls.jsonio import UNPARSED
from todoweb.dialects.base import Outcome, ToolDefinition, describe, first_errors
from todoweb.plan.steps import Item

NAME = "langchain"
TOOLS = ("write_todos",)
SHAPE = "{todos: [{content, status}]}"
HANDLES_RAW = True

STATUSES = ("pending", "in_progress", "completed")

# langgraph.prebuilt.tool_node.TOOL_INVOCATION_ERROR_TEMPLATE
ERROR_TEMPLATE = (
    "Error invoking tool '{tool}' with kwargs {kwargs} with error:\n {error}\n Please fix the error and try again."
)
# langchain.agents.factory._invalid_tool_call_message, without the call id.
MALFORMED = "Tool call write_todos could not be executed - arguments were malformed or truncated."


class Todo(TypedDict):
    """A single todo item with content and status."""

    content: str
    status: Literal["pending", "in_progress", "completed"]


class Params(BaseModel):
    todos: list[Todo]


def fits(tool: str, args: Any) -> bool:
    """`write_todos` is also Gemini CLI's name (items with `description`): this one is
    ours when the items use `content` and none uses `description`."""
    todos = args.get("todos") if isinstance(args, dict) else None
    if not isinstance(todos, list):
        return False
    fields = [todo.keys() for todo in todos if isinstance(todo, dict)]
    return any("content" in keys for keys in fields) and not any("description" in keys for keys in fields)


def call(tool: str, args: Any, current: list[Item], *, raw: str | None = None, next_id: int = 1) -> Outcome:
    if args is UNPARSED:
        args = parse_arguments(raw or "")
    if not isinstance(args, dict):
        # langchain-openai's parse_tool_call: `"args": function_args or {}`.
        if args:
            raise InvalidInput(MALFORMED)
        args = {}
    try:
        todos = Params.model_validate(args).todos
    except ValidationError as exc:
        errors = exc.errors(include_url=False, include_input=False)
        lines = [f"{'.'.join(str(part) for part in error['loc'])}: {error['msg']}" for error in errors]
        raise InvalidInput(
            ERROR_TEMPLATE.format(tool=tool, kwargs=repr(args), error="\n".join(first_errors(lines))),
            details={"errors": first_errors(lines), "count": len(lines)},
        ) from None
    items = [Item(content=todo["content"], status=todo["status"]) for todo in todos]
    return Outcome(native=f"Updated todo list to {todos}", items=items)


def parse_arguments(raw: str) -> Any:
    """The arguments text as langchain-openai reads it: Python's json, control
    characters allowed in strings; no text at all is `{}`."""
    if not raw:
        return {}
    try:
        return json.loads(raw, strict=False)
    except (ValueError, RecursionError):
        raise InvalidJson(MALFORMED) from None


def definitions() -> list[ToolDefinition]:
    # What LangChain gives the model (convert_to_openai_tool of the middleware's tool):
    # no `additionalProperties: false`, since extra keys are ignored.
    todo = {
        "description": "A single todo item with content and status.",
        "properties": {
            "content": {"type": "string"},
            "status": {"enum": list(STATUSES), "type": "string"},
        },
        "required": ["content", "status"],
        "type": "object",
    }
    schema = {
        "properties": {"todos": {"items": todo, "type": "array"}},
        "required": ["todos"],
        "type": "object",
    }
    return [ToolDefinition(name="write_todos", description=describe(NAME, "write_todos"), input_schema=schema)]
