"""opencode's `todowrite` (and the `todoread` older versions had), as opencode 1.18.33
ships it; Kilo Code's CLI (an opencode fork) is the same tool that also takes `todos`
as a JSON string.

The tool decodes its input with an Effect Schema (every field a plain string, extra
keys dropped) and nothing else checks it: any status or priority is accepted. A
failed decode is reported as opencode's ToolInvalidArgumentsError, whose detail is
`String(SchemaError)`: the first issue, in schema order, with its path:

    The todowrite tool was called with invalid arguments: SchemaError(Expected string, got 5
      at ["todos"][0]["content"]).
    Please rewrite the input so it satisfies the expected schema.

The issue texts are those of the Effect release whose formatter the 1.18.33 binary
carries (`Expected X, got <value>`, `Missing key`; items are `Todo`), checked against
effect 4.0.0-beta.102. The reply is `JSON.stringify(todos, null, 2)` of the decoded
list (fields in schema order); `[]` for an empty one.

Statuses: pending, in_progress, completed and cancelled are canonical; any other
string is stored as pending with an `unknown_status` warning (the reply shows it as sent).

Choices where the source left a gap:
- `todos` as a JSON string is Kilo's; text that is not JSON is answered with the
  schema error `SyntaxError: <Python's json reason>` (Kilo's runtime words its own).
  Other issues use opencode's words where Kilo's differ (Kilo: `Expected array | string`
  for a `todos` that is neither, `Expected object` for an item that is not one).
- No output truncation: opencode cuts replies over 2,000 lines or 50 KB and saves the
  rest to a file todoweb cannot offer; todoweb replies in full.
- `todoread` (gone from 1.18.33) answers the current list in the same JSON; a step
  without a priority (written by another dialect) shows `"priority": null`.
"""

from __future__ import annotations

import json
from typing import Any

from todoweb.calls.errors import InvalidInput
from todoweb.calls.jsonio import JsonError, UnacceptableJson, parse
from todoweb.dialects._javascript import js_json
from todoweb.dialects.base import Outcome, ToolDefinition, describe
from todoweb.plan.steps import Item, Warning

NAME = "opencode"
TOOLS = ("todowrite", "todoread")
SHAPE = "{todos: [{content, status, priority}]}"

STATUSES = ("pending", "in_progress", "completed", "cancelled")
FIELDS = ("content", "status", "priority")
INVALID = "The {tool} tool was called with invalid arguments: {detail}.\nPlease rewrite the input so it satisfies the expected schema."


class SchemaIssue(Exception):
    """The first issue Effect's decoder finds, and where."""

    def __init__(self, message: str, path: tuple[str | int, ...] = ()):
        super().__init__(message)
        self.message = message
        self.path = path

    def __str__(self) -> str:
        where = "".join(
            f"[{json.dumps(key, ensure_ascii=False) if isinstance(key, str) else key}]" for key in self.path
        )
        return f"SchemaError({self.message}" + (f"\n  at {where}" if where else "") + ")"


def fits(tool: str, args: Any) -> bool:
    return True


def call(tool: str, args: Any, current: list[Item], *, raw: str | None = None, next_id: int = 1) -> Outcome:
    try:
        if tool == "todoread":
            check_object(args)
            return Outcome(native=pretty([todo_of(item) for item in current]))
        todos = decode(args)
    except SchemaIssue as issue:
        details = {"path": list(issue.path)} if issue.path else {}
        raise InvalidInput(INVALID.format(tool=tool, detail=issue), details=details) from None
    items, warnings = [], []
    for index, todo in enumerate(todos):
        status = todo["status"]
        if status not in STATUSES:
            warnings.append(
                Warning(
                    "unknown_status",
                    f"Todo {index + 1}: status '{status}' is not one of {', '.join(STATUSES)}; stored as pending",
                )
            )
            status = "pending"
        items.append(Item(content=todo["content"], status=status, priority=todo["priority"]))
    return Outcome(native=pretty(todos), items=items, warnings=warnings)


def check_object(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise SchemaIssue(f"Expected object, got {js_json(value)}")
    return value


def decode(args: Any) -> list[dict[str, str]]:
    """Schema.decodeUnknown for {todos: Todo[]}, stopping at the first issue."""
    params = check_object(args)
    if "todos" not in params:
        raise SchemaIssue("Missing key", ("todos",))
    todos = params["todos"]
    if isinstance(todos, str):
        todos = from_json_string(todos)
    if not isinstance(todos, list):
        raise SchemaIssue(f"Expected array, got {js_json(todos)}", ("todos",))
    return [decode_todo(index, todo) for index, todo in enumerate(todos)]


def from_json_string(text: str) -> Any:
    """Kilo's Schema.fromJsonString: the list may come as JSON text."""
    try:
        return parse(text, what="todos")
    except JsonError as exc:
        raise SchemaIssue(f"SyntaxError: {exc.reason}", ("todos",)) from None
    except UnacceptableJson as exc:
        raise InvalidInput(str(exc)) from None


def decode_todo(index: int, todo: Any) -> dict[str, str]:
    if not isinstance(todo, dict):
        raise SchemaIssue(f"Expected Todo, got {js_json(todo)}", ("todos", index))
    for field in FIELDS:
        if field not in todo:
            raise SchemaIssue("Missing key", ("todos", index, field))
        if not isinstance(todo[field], str):
            raise SchemaIssue(f"Expected string, got {js_json(todo[field])}", ("todos", index, field))
    return {field: todo[field] for field in FIELDS}


def todo_of(item: Item) -> dict[str, str | None]:
    return {"content": item.content, "status": item.status, "priority": item.priority}


def pretty(todos: list[dict[str, Any]]) -> str:
    """JSON.stringify(todos, null, 2)."""
    return json.dumps(todos, indent=2, ensure_ascii=False)


def definitions() -> list[ToolDefinition]:
    # The JSON Schema opencode derives from its Effect Schema: all three fields
    # required, free strings, no additionalProperties (extra keys are dropped).
    todo = {
        "type": "object",
        "properties": {
            "content": {"type": "string", "description": "Brief description of the task"},
            "status": {
                "type": "string",
                "description": "Current status of the task: pending, in_progress, completed, cancelled",
            },
            "priority": {"type": "string", "description": "Priority level of the task: high, medium, low"},
        },
        "required": list(FIELDS),
    }
    write = {
        "type": "object",
        "properties": {"todos": {"type": "array", "items": todo, "description": "The updated todo list"}},
        "required": ["todos"],
    }
    return [
        ToolDefinition(name="todowrite", description=describe(NAME, "todowrite"), input_schema=write),
        ToolDefinition(
            name="todoread",
            description=describe(NAME, "todoread"),
            input_schema={"type": "object", "properties": {}},
        ),
    ]
