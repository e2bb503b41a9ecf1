"""VS Code Copilot Chat's `manage_todo_list`, as microsoft/vscode's ManageTodoListTool
(91f89d9) runs it with its default settings (read/write mode, description field on).

The tool checks nothing about the items: it copies `id`, `title`, `description` and
`status` as they come and stores the list. What fails is JavaScript itself, in the
order VS Code runs the code: `prepareToolInvocation` first (it maps every item's
`id.toString()` for the UI), then `invoke`, whose answers are plain texts:

- `Error: operation parameter is required` / `Error: Unknown operation`;
- `Error: todoList is required for write operation`;
- a TypeError from reading the list, e.g. `Error: Cannot read properties of null (reading 'id')`.

A write answers `Successfully wrote todo list`, then the tool's advice: a list under 3
items, or over 10, and more than 3 index-by-index changes against the previous list.
A read answers the list as a Markdown task list (`- [ ]`, `- [-]`, `- [x]`, the
description on an indented line), or `No todo list found.`

Statuses: not-started, in-progress, completed map to pending, in_progress, completed;
any other value is stored (the tool shows it as `[ ]`), so todoweb keeps it as pending
with an `unknown_status` warning. A title that is not a string is stored as JavaScript
prints it (`${todo.title}`: a missing one reads `undefined`), as VS Code shows it.

Choices where the source left a gap:
- A missing `operation` means write, as in current VS Code (which dropped the field)
  and in the tool's write-only mode; a present but empty one is refused as 91f89d9 does.
- TypeErrors thrown in prepareToolInvocation are worded `Error: <message>` like those
  `invoke` catches, with V8's messages and the source's variable names (`items`,
  `newTodos`); how VS Code frames a failed preparation, and whether its host checks the
  JSON Schema first, are not verified.
- The previous list for the change count is rebuilt from todoweb's steps (title =
  content, description = notes, status in VS Code's words).
- A description that is not a string is stored as its text, so a later read shows it
  where VS Code's read would fail on it (`todo.description.trim is not a function`).
"""

from __future__ import annotations

import math
from typing import Any

from todoweb.calls.errors import InvalidInput
from todoweb.dialects._javascript import js_number, js_trim
from todoweb.dialects.base import Outcome, ToolDefinition, describe
from todoweb.plan.steps import Item, Warning

NAME = "copilot"
TOOLS = ("manage_todo_list",)
SHAPE = "{operation?: write|read, todoList: [{id: number, title, description, status}]}"

TO_CANONICAL = {"not-started": "pending", "in-progress": "in_progress", "completed": "completed"}
TO_VSCODE = {canonical: word for word, canonical in TO_CANONICAL.items()}
CHECKBOX = {"completed": "[x]", "in-progress": "[-]"}

WROTE = "Successfully wrote todo list"
EMPTY = "No todo list found."
NO_OPERATION = "Error: operation parameter is required"
UNKNOWN_OPERATION = "Error: Unknown operation"
NO_LIST = "Error: todoList is required for write operation"
SMALL = "Warning: Small todo list (<3 items). This task might not need a todo list."
LARGE = "Warning: Large todo list (>10 items). Consider keeping the list focused and actionable."
MANY_CHANGES = "Warning: Did you mean to update so many todos at the same time? Consider working on them one by one."

MISSING: Any = type("Missing", (), {"__repr__": lambda self: "undefined"})()


def fits(tool: str, args: Any) -> bool:
    return True


def call(tool: str, args: Any, current: list[Item], *, raw: str | None = None, next_id: int = 1) -> Outcome:
    if args is None:
        raise InvalidInput("Error: Cannot read properties of null (reading 'operation')")
    # Reading a property of an array, string or number finds nothing: undefined.
    params = args if isinstance(args, dict) else {}
    operation = params.get("operation", "write")
    todo_list = params.get("todoList", MISSING)
    prepare(operation, todo_list, current)
    if not js_truthy(operation):
        raise InvalidInput(NO_OPERATION)
    if operation == "read":
        return Outcome(native=read_reply(current))
    if operation != "write":
        raise InvalidInput(UNKNOWN_OPERATION)
    if not js_truthy(todo_list):
        raise InvalidInput(NO_LIST)
    return write(todo_list, current)


def prepare(operation: Any, todo_list: Any, current: list[Item]) -> None:
    """prepareToolInvocation's reads of the list, which throw before `invoke` runs."""
    if operation == "write" and js_truthy(todo_list) and current:
        # generatePastTenseMessage filters the new list, reading each todo's id.
        if not isinstance(todo_list, list):
            raise type_error("newTodos.filter is not a function")
        for todo in todo_list:
            read_property(todo, "id")
    if todo_list is MISSING or todo_list is None:
        return  # `args.todoList ?? currentTodoItems`: the stored list, which is fine
    if not isinstance(todo_list, list):
        raise type_error("items.map is not a function")
    for index, todo in enumerate(todo_list):
        step_id = read_property(todo, "id", index=index)
        if step_id is MISSING or step_id is None:
            raise type_error(f"Cannot read properties of {js_kind(step_id)} (reading 'toString')", index=index)


def write(todo_list: list[Any], current: list[Item]) -> Outcome:
    todos = [
        {
            "id": todo.get("id", MISSING),
            "title": todo.get("title", MISSING),
            "description": todo.get("description") if js_truthy(todo.get("description")) else "",
            "status": todo.get("status", MISSING),
        }
        for todo in (todo if isinstance(todo, dict) else {} for todo in todo_list)
    ]
    advice = []
    if len(todos) < 3:
        advice.append(SMALL)
    elif len(todos) > 10:
        advice.append(LARGE)
    if changes(current, todos) > 3:
        advice.append(MANY_CHANGES)
    items, warnings = [], []
    for index, todo in enumerate(todos):
        status = TO_CANONICAL.get(todo["status"]) if isinstance(todo["status"], str) else None
        if status is None:
            warnings.append(
                Warning(
                    "unknown_status",
                    f"Todo {index + 1}: status '{js_text(todo['status'])}' is not one of "
                    f"{', '.join(TO_CANONICAL)}; stored as pending",
                )
            )
        step_id = js_text(todo["id"])
        items.append(
            Item(
                id=step_id or None,
                content=js_text(todo["title"]),
                status=status or "pending",
                notes=js_text(todo["description"]) or None,
            )
        )
    native = WROTE + ("\n\n" + "\n".join(advice) if advice else "")
    return Outcome(native=native, items=items, warnings=warnings)


def changes(current: list[Item], todos: list[dict[str, Any]]) -> int:
    """calculateTodoChanges: index by index, plus what was added or removed."""
    modified = 0
    for item, todo in zip(current, todos, strict=False):  # only the indexes both lists have
        before = (item.content, item.notes or "", TO_VSCODE.get(item.status, item.status))
        after = (todo["title"], todo["description"], todo["status"])
        modified += any(not (isinstance(new, str) and new == old) for old, new in zip(before, after, strict=True))
    return modified + abs(len(todos) - len(current))


def read_reply(current: list[Item]) -> str:
    if not current:
        return EMPTY
    lines = []
    for item in current:
        lines.append(f"- {CHECKBOX.get(TO_VSCODE.get(item.status, item.status), '[ ]')} {item.content}")
        if item.notes and js_trim(item.notes):
            lines.append(f"  - {js_trim(item.notes)}")
    return "# Todo List\n\n" + "\n".join(lines)


def read_property(value: Any, name: str, *, index: int | None = None) -> Any:
    if value is None:
        raise type_error(f"Cannot read properties of null (reading '{name}')", index=index)
    return value.get(name, MISSING) if isinstance(value, dict) else MISSING


def type_error(message: str, *, index: int | None = None) -> InvalidInput:
    return InvalidInput(f"Error: {message}", details={"index": index} if index is not None else {})


def js_kind(value: Any) -> str:
    return "undefined" if value is MISSING else "null"


def js_truthy(value: Any) -> bool:
    if value is MISSING or value is None or value is False:
        return False
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value != 0 and not math.isnan(value)
    return value != ""


def js_text(value: Any) -> str:
    """`${value}`: how a template literal prints a JSON value."""
    if value is MISSING:
        return "undefined"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return js_number(value)
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return ",".join("" if element is None else js_text(element) for element in value)
    return "[object Object]"


def definitions() -> list[ToolDefinition]:
    # createManageTodoListToolData(writeOnly=false, includeDescription=true): VS Code's
    # own schema, which names no additionalProperties.
    todo = {
        "type": "object",
        "properties": {
            "id": {
                "type": "number",
                "description": "Unique identifier for the todo. Use sequential numbers starting from 1.",
            },
            "title": {
                "type": "string",
                "description": "Concise action-oriented todo label (3-7 words). Displayed in UI.",
            },
            "description": {
                "type": "string",
                "description": "Detailed context, requirements, or implementation notes. Include file paths, specific "
                "methods, or acceptance criteria.",
            },
            "status": {
                "type": "string",
                "enum": list(TO_CANONICAL),
                "description": "not-started: Not begun | in-progress: Currently working (max 1) | completed: Fully "
                "finished with no blockers",
            },
        },
        "required": ["id", "title", "description", "status"],
    }
    schema = {
        "type": "object",
        "properties": {
            "todoList": {
                "type": "array",
                "description": "Complete array of all todo items (required for write operation, ignored for read). "
                "Must include ALL items - both existing and new.",
                "items": todo,
            },
            "operation": {
                "type": "string",
                "enum": ["write", "read"],
                "description": "write: Replace entire todo list with new content. read: Retrieve current todo list. "
                "ALWAYS provide complete list when writing - partial updates not supported.",
            },
        },
        "required": ["operation"],
    }
    return [
        ToolDefinition(name="manage_todo_list", description=describe(NAME, "manage_todo_list"), input_schema=schema)
    ]
