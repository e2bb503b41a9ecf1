"""Amp's `todo_write` / `todo_read`, as the Amp CLI runs them (npm `@sourcegraph/amp`
0.0.1767830505-ga62310, `dist/main.js`; later releases dropped both tools).

Amp's schema is known from a September 2025 thread dump (items `{id, content,
status, priority}`, all required); the bundle's schema no longer has `priority`.
Neither is enforced: Amp checks no tool input against its schema, and the two tools
are, in full:

    todo_write({args}) → JSON.stringify(args.todos)
    todo_read(env)     → env.todos, the `todos` of the thread's last todo_write whose
                         `todos` is a list (else [])

So every `todo_write` is answered, in its own input's JSON:

- `todos` a list: the list replaces the session's (`[]` clears it); the reply is that
  list as JavaScript's JSON.stringify writes it (its key order, its numbers);
- `todos` anything else (missing, null, a string, …), or arguments that are not an
  object: nothing changes; the reply is `JSON.stringify` of that value (`undefined`
  when there is none);
- arguments `null`: JavaScript's TypeError, which Amp hands back as
  `<error>Cannot read properties of null (reading 'todos')</error>` (refused here).

Items are stored as they come. todo → pending, in-progress → in_progress, completed →
completed; any other status is kept as pending with an `unknown_status` warning; a
priority other than high/medium/low, a content that is not text and an item that is
not an object are stored too, with a warning each.

`todo_read` answers `<result>` + the list as JSON + `</result>` (Amp's rendering of a
non-text result) and nothing for an empty list. todoweb keeps steps, not Amp's raw
objects, so the list is rebuilt in the schema's order: `id` (the board's), `content`,
`status` (in Amp's words; statuses Amp has no word for pass through), `priority` when
the step has one. Chat-form arguments that are not a JSON object are todoweb's 400,
not Amp's `undefined`.
"""

from __future__ import annotations

from typing import Any

from todoweb.calls.errors import InvalidInput
from todoweb.dialects._javascript import js_json
from todoweb.dialects.base import Outcome, ToolDefinition, describe
from todoweb.plan.steps import Item, Warning

NAME = "amp"
TOOLS = ("todo_write", "todo_read")
SHAPE = "{todos: [{id, content, status: todo|in-progress|completed, priority}]}"

TO_CANONICAL = {"todo": "pending", "in-progress": "in_progress", "completed": "completed"}
TO_AMP = {"pending": "todo", "in_progress": "in-progress", "completed": "completed"}
PRIORITIES = ("high", "medium", "low")
NULL_ARGS = "<error>Cannot read properties of null (reading 'todos')</error>"


def fits(tool: str, args: Any) -> bool:
    """`todo_write` is shared (see ROUTES): Amp's items carry `priority`, or a status
    only Amp uses (`todo`, `in-progress`)."""
    todos = args.get("todos") if isinstance(args, dict) else None
    if not isinstance(todos, list):
        return False
    return any(
        isinstance(todo, dict) and ("priority" in todo or todo.get("status") in ("todo", "in-progress"))
        for todo in todos
    )


def call(tool: str, args: Any, current: list[Item], *, raw: str | None = None, next_id: int = 1) -> Outcome:
    if tool == "todo_read":
        return Outcome(native=read_reply(current))
    if args is None:
        raise InvalidInput(NULL_ARGS)
    todos = args.get("todos", UNDEFINED) if isinstance(args, dict) else UNDEFINED
    native = js_stringify(todos)
    if not isinstance(todos, list):
        return Outcome(native=native)
    warnings: list[Warning] = []
    items = [to_item(index, todo, warnings) for index, todo in enumerate(todos)]
    return Outcome(native=native, items=items, warnings=warnings)


UNDEFINED: Any = type("Undefined", (), {"__repr__": lambda self: "UNDEFINED"})()


def to_item(index: int, todo: Any, warnings: list[Warning]) -> Item:
    where = f"Todo {index + 1}"
    if not isinstance(todo, dict):
        warnings.append(Warning("invalid_item", f"{where} is not an object; stored as a pending step"))
        return Item(content=todo if isinstance(todo, str) else js_stringify(todo), status="pending")
    step_id = todo.get("id")
    step_id = str(step_id) if isinstance(step_id, int) and not isinstance(step_id, bool) else step_id
    step_id = step_id if isinstance(step_id, str) and step_id else None
    where = f"{where} ({step_id or 'no id'})"
    content = todo.get("content")
    if not isinstance(content, str):
        warnings.append(Warning("invalid_content", f"{where}: content is not a string"))
        content = "" if content is None else js_stringify(content)
    status = todo.get("status")
    canonical = TO_CANONICAL.get(status) if isinstance(status, str) else None
    if canonical is None:
        shown = status if isinstance(status, str) else js_stringify(todo.get("status", UNDEFINED))
        warnings.append(Warning("unknown_status", f"{where}: status '{shown}' is not an Amp status; stored as pending"))
        canonical = "pending"
    priority = todo.get("priority")
    if priority is not None and priority not in PRIORITIES:
        shown = priority if isinstance(priority, str) else js_stringify(priority)
        warnings.append(Warning("unknown_priority", f"{where}: priority '{shown}' is not high, medium or low"))
    return Item(
        content=content,
        status=canonical,
        id=step_id,
        priority=priority if priority in PRIORITIES else None,
    )


def read_reply(current: list[Item]) -> str:
    if not current:
        return ""
    todos = []
    for item in current:
        todo: dict[str, Any] = {"id": item.id, "content": item.content, "status": TO_AMP.get(item.status, item.status)}
        if item.priority:
            todo["priority"] = item.priority
        todos.append(todo)
    return f"<result>{js_stringify(todos)}</result>"


def js_stringify(value: Any) -> str:
    """JSON.stringify(value), `undefined` for no value."""
    return "undefined" if value is UNDEFINED else js_json(value)


def definitions() -> list[ToolDefinition]:
    # Amp's schema as that dump quotes it (with `priority`); Amp
    # checks none of it, so no additionalProperties either.
    item = {
        "type": "object",
        "properties": {
            "id": {"type": "string", "description": "Unique identifier for the todo item"},
            "content": {"type": "string", "description": "The content/description of the todo item"},
            "status": {
                "type": "string",
                "enum": ["completed", "in-progress", "todo"],
                "description": "The current status of the todo item",
            },
            "priority": {
                "type": "string",
                "enum": ["medium", "low", "high"],
                "description": "The priority level of the todo item",
            },
        },
        "required": ["id", "content", "status", "priority"],
    }
    write = {
        "type": "object",
        "properties": {
            "todos": {
                "type": "array",
                "description": "The list of todo items. This replaces any existing todos.",
                "items": item,
            }
        },
        "required": ["todos"],
    }
    read = {"type": "object", "properties": {}, "required": []}
    return [
        ToolDefinition(name="todo_write", description=describe(NAME, "todo_write"), input_schema=write),
        ToolDefinition(name="todo_read", description=describe(NAME, "todo_read"), input_schema=read),
    ]
