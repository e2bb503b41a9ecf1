"""Claude Code's TodoWrite / TodoRead, exactly as their specification (F-001, F-002, F-008) gives them.

TodoWrite replaces the whole list (`[]` clears it); TodoRead returns it. The
checks run in the specification's order and the first failure is reported in its words.
"""

from __future__ import annotations

from typing import Any

from todoweb.calls.errors import InvalidInput
from todoweb.calls.jsonio import compact_json
from todoweb.dialects.base import Outcome, ToolDefinition, describe, js_string
from todoweb.plan.steps import Item

NAME = "claude"
TOOLS = ("TodoWrite", "TodoRead")
SHAPE = "{todos: [{content, status, activeForm}]}"
STATUSES = ("pending", "in_progress", "completed")


def fits(tool: str, args: Any) -> bool:
    return True


def call(tool: str, args: Any, current: list[Item], *, raw: str | None = None, next_id: int = 1) -> Outcome:
    if tool == "TodoRead":
        return Outcome(native=read_reply(current))
    items = parse_todos(args)
    return Outcome(native=compact_json({"success": True, "count": len(items)}), items=items)


def parse_todos(args: Any) -> list[Item]:
    if not isinstance(args, dict) or "todos" not in args:
        raise InvalidInput("'todos' array is required")
    todos = args["todos"]
    if not isinstance(todos, list):
        raise InvalidInput("'todos' must be an array")
    return [parse_todo(index, todo) for index, todo in enumerate(todos)]


def parse_todo(index: int, todo: Any) -> Item:
    todo = todo if isinstance(todo, dict) else {}
    content = todo.get("content")
    if not isinstance(content, str) or not content.strip():
        raise InvalidInput(f"Todo at index {index}: content is required and cannot be empty", details={"index": index})
    status = todo.get("status")
    if status not in STATUSES:
        shown = js_string(status) if "status" in todo else "undefined"
        raise InvalidInput(
            f"Todo at index {index}: invalid status '{shown}'. Must be one of: {', '.join(STATUSES)}",
            details={"index": index},
        )
    active_form = todo.get("activeForm")
    if not isinstance(active_form, str) or not active_form.strip():
        raise InvalidInput(
            f"Todo at index {index}: activeForm is required and cannot be empty", details={"index": index}
        )
    step_id = todo.get("id")
    if step_id is not None and not isinstance(step_id, (str, int)) or isinstance(step_id, bool):
        raise InvalidInput(f"Todo at index {index}: id must be a string", details={"index": index})
    return Item(
        content=content,
        status=status,
        active_form=active_form,
        id=str(step_id) if step_id is not None and str(step_id) else None,
    )


def read_reply(current: list[Item]) -> str:
    todos = [{"content": i.content, "status": i.status, "activeForm": i.active_form or i.content} for i in current]
    return compact_json({"todos": todos})


def definitions() -> list[ToolDefinition]:
    todo = {
        "type": "object",
        "properties": {
            "content": {"type": "string", "minLength": 1, "description": "The task, in the imperative form."},
            "status": {"type": "string", "enum": list(STATUSES)},
            "activeForm": {
                "type": "string",
                "minLength": 1,
                "description": "The task in the present continuous form, shown while it runs.",
            },
            "id": {"type": "string", "description": "Optional stable id of the task."},
        },
        "required": ["content", "status", "activeForm"],
        "additionalProperties": False,
    }
    return [
        ToolDefinition(
            name="TodoWrite",
            description=describe(NAME, "TodoWrite"),
            input_schema={
                "type": "object",
                "properties": {"todos": {"type": "array", "items": todo, "description": "The updated todo list."}},
                "required": ["todos"],
                "additionalProperties": False,
            },
        ),
        ToolDefinition(
            name="TodoRead",
            description=describe(NAME, "TodoRead"),
            input_schema={"type": "object", "properties": {}, "additionalProperties": False},
        ),
    ]
