"""Kimi CLI's `SetTodoList`, as its tool description has it and kimi-cli 1.49 runs it.

The tool is a pydantic model behind kosong's argument handling, so this module
validates with the same models and reports what pydantic reports:

- every validation error at once (pydantic's `str(ValidationError)`), not the first;
- `min_length=1` counts characters, so a whitespace-only title is a title;
- no coercion (pydantic's lax mode still refuses `title: 123`);
- extra fields are ignored at both levels (pydantic's default), which is why a
  payload without a usable `todos` key (`{}`, `{"todos": null}`, `{"items": …}`,
  empty arguments) is not an error but the tool's *read* mode.

Kimi's `done` is the canonical `completed`; the read reply shows it back as `done`.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from todoweb.calls.errors import InvalidInput, InvalidJson
from todoweb.calls.jsonio import UNPARSED
from todoweb.dialects.base import Outcome, ToolDefinition, describe, inline_refs, pydantic_errors, validation_text
from todoweb.plan.steps import Item, Step

NAME = "kimi"
TOOLS = ("SetTodoList",)
SHAPE = "{todos: [{title, status}] | null}"
HANDLES_RAW = True

KIMI_STATUSES = ("pending", "in_progress", "done")
TO_CANONICAL = {"pending": "pending", "in_progress": "in_progress", "done": "completed"}
# Canonical statuses other dialects may have written (failed, blocked, cancelled)
# have no Kimi word: the read reply passes them through as they are.
TO_KIMI = {"completed": "done"}

WRITTEN = "Todo list updated"
EMPTY = "Todo list is empty."


class Todo(BaseModel):
    title: str = Field(description="What the task is, in a few words.", min_length=1)
    status: Literal["pending", "in_progress", "done"] = Field(description="Where the task stands.")


class Params(BaseModel):
    todos: list[Todo] | None = Field(
        default=None,
        description="The whole updated todo list. Leave it out to get the current list back unchanged.",
    )


def fits(tool: str, args: Any) -> bool:
    return True


def call(tool: str, args: Any, current: list[Item], *, raw: str | None = None, next_id: int = 1) -> Outcome:
    if args is UNPARSED:
        args = parse_arguments(raw or "")
    try:
        params = Params.model_validate(args)
    except ValidationError as exc:
        # kosong hands pydantic's own text to the model; the URLs in it name the
        # installed pydantic version (kimi-cli 1.49 ships 2.12).
        raise InvalidInput(
            f"Error validating JSON arguments: {validation_text(exc)}",
            details=pydantic_errors(exc),
        ) from None
    if params.todos is None:
        return Outcome(native=read_reply(current))
    items = [Item(content=todo.title, status=TO_CANONICAL[todo.status]) for todo in params.todos]
    return Outcome(native=WRITTEN, items=items)


def parse_arguments(raw: str) -> Any:
    """The arguments text as kosong reads it, with Python's json: empty means `{}`,
    control characters are allowed in strings, and `1e400` is a float (infinity).
    What is stored of it is the text itself; the write path checks the steps."""
    try:
        return json.loads(raw or "{}", strict=False)
    except (ValueError, RecursionError) as exc:
        raise InvalidJson(f"Error parsing JSON arguments: {exc}") from None


def read_reply(current: list[Item]) -> str:
    if not current:
        return EMPTY
    lines = ["Current todo list:"]
    lines += [f"- [{TO_KIMI.get(item.status, item.status)}] {item.content}" for item in current]
    return "\n".join(lines)


def display_block(todos: list[Step]) -> dict[str, Any]:
    """Kimi's TodoDisplayBlock, in Kimi's own status words: todoweb's data carries it
    (`display`), so a front end built for Kimi renders todoweb's data unchanged."""
    items = [{"title": step["content"], "status": TO_KIMI.get(step["status"], step["status"])} for step in todos]
    return {"type": "todo", "items": items}


def definitions() -> list[ToolDefinition]:
    # The real schema, generated from the same pydantic models: no
    # `additionalProperties: false` (extra fields are ignored) and `todos` nullable.
    schema = Params.model_json_schema()
    return [
        ToolDefinition(
            name="SetTodoList",
            description=describe(NAME, "SetTodoList"),
            input_schema=inline_refs(schema, schema.get("$defs", {})),
        )
    ]
