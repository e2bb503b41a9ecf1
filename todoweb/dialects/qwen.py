"""Qwen Code's `todo_write` (items with `id`), as @qwen-code/qwen-code 0.24.4 runs it.

Checked by running the released bundle's TodoWriteTool (`chunks/todoWrite-*.js`) under
Node. The tool overrides `validateToolParams`, so its JSON Schema is never enforced:
only `validateTodos` judges a call, and its first failure wins, in this order:

1. `todos` is an array; then item by item: an object, a non-blank `id` of at most
   500 UTF-16 units, a non-blank `content`, an exact status, a well-formed `blockedBy`;
2. unique ids; then item by item: no duplicate, self or unknown dependency;
3. no dependency cycle.

Extra keys pass and are echoed in the reply (`JSON.stringify` of the list as sent).
An item that omits `blockedBy` keeps its dependencies from the previous list while
that list has unfinished work (filtered to ids still present); if keeping them makes
a cycle they are dropped. A list deep-equal to the stored one is answered "already
up to date" and writes nothing (a read, for todoweb).

Choices where the source left a gap:
- The previous list is rebuilt from todoweb's steps: `{id, content, status}` plus
  `blockedBy` only when a step has blockers. A stored `blockedBy: []` (or an extra key)
  is therefore not remembered, which can turn Qwen's "already up to date" into a write.
- Arguments that are not an object are judged as `{}` (Qwen's streaming parser
  collapses them to `{}`): `Parameter "todos" must be an array.`
- `modified_by_user` / `modified_content` (fields Qwen's editor flow reads, never sent
  by Qwen itself for this tool) are ignored.
- A build-time refusal is the bare message (Qwen sends it as `{"error": message}`);
  one found only after merging the kept dependencies uses Qwen's execute-time
  "Failed to modify todos" text.
"""

from __future__ import annotations

from typing import Any

from todoweb.calls.errors import InvalidInput
from todoweb.dialects._javascript import js_json, js_trim, utf16_len
from todoweb.dialects.base import Outcome, ToolDefinition, describe
from todoweb.plan.steps import Item

NAME = "qwen"
TOOLS = ("todo_write",)
SHAPE = "{todos: [{id, content, status, blockedBy?}]}"

STATUSES = ("pending", "in_progress", "completed")
MAX_ID_UNITS = 500

NOT_AN_ARRAY = 'Parameter "todos" must be an array.'
NOT_AN_OBJECT = "Each todo must be an object."
BAD_ID = f'Each todo must have a non-empty "id" string of at most {MAX_ID_UNITS} characters.'
BAD_CONTENT = 'Each todo must have a non-empty "content" string.'
BAD_STATUS = 'Each todo must have a valid "status" (pending, in_progress, completed).'
BAD_BLOCKED_BY = (
    f'Each todo "blockedBy" value must be an array of non-empty Todo IDs of at most {MAX_ID_UNITS} characters.'
)
DUPLICATE_IDS = "Todo IDs must be unique within the array."
CYCLE = "Todo dependencies must not contain a cycle."

MODIFIED = (
    "Todos have been modified successfully. Ensure that you continue to use the todo list to track your "
    "progress. Please proceed with the current tasks if applicable\n\n"
    "<system-reminder>\n"
    "Your todo list has changed. DO NOT mention this explicitly to the user. Here are the latest contents of "
    "your todo list:\n\n"
    "{todos}. Continue on with the tasks at hand if applicable.\n"
    "</system-reminder>"
)
CLEARED = (
    "Todo list has been cleared.\n\n"
    "<system-reminder>\n"
    "Your todo list is now empty. DO NOT mention this explicitly to the user. You have no pending tasks in your "
    "todo list.\n"
    "</system-reminder>"
)
UNCHANGED = (
    "Todo list is already up to date. No changes were needed.\n\n"
    "<system-reminder>\n"
    "Your todo list was not modified because it is already current. Continue with your existing tasks.\n"
    "</system-reminder>"
)
FAILED = (
    "Failed to modify todos. An error occurred during the operation.\n\n"
    "<system-reminder>\n"
    "Todo list modification failed with error: {error}. You may need to retry or handle this error "
    "appropriately.\n"
    "</system-reminder>"
)


def fits(tool: str, args: Any) -> bool:
    """Last in `todo_write`'s routing order: any other input that has `todos`."""
    return isinstance(args, dict) and "todos" in args


def call(tool: str, args: Any, current: list[Item], *, raw: str | None = None, next_id: int = 1) -> Outcome:
    todos = args.get("todos") if isinstance(args, dict) else None
    problem = validate(todos)
    if problem:
        raise InvalidInput(problem.message, details=problem.details)
    assert isinstance(todos, list)  # validate refused anything else
    final = keep_dependencies(todos, current)
    problem = validate(final)
    if problem:
        raise InvalidInput(FAILED.format(error=problem.message), details=problem.details)
    if final == previous_list(current):
        return Outcome(native=UNCHANGED)
    items = [
        Item(
            id=todo["id"], content=todo["content"], status=todo["status"], blocked_by=list(todo.get("blockedBy") or [])
        )
        for todo in final
    ]
    native = MODIFIED.format(todos=js_json(final)) if final else CLEARED
    return Outcome(native=native, items=items)


class Problem:
    """A rule the list breaks: the tool's message, and where (for programs)."""

    def __init__(self, message: str, **details: Any):
        self.message = message
        self.details = details


def validate(todos: Any) -> Problem | None:
    """validateTodos: the first rule broken, in the tool's order."""
    if not isinstance(todos, list):
        return Problem(NOT_AN_ARRAY)
    for index, todo in enumerate(todos):
        # `typeof [] === "object"`: an array passes here and fails on its missing id.
        if not isinstance(todo, (dict, list)):
            return Problem(NOT_AN_OBJECT, index=index)
        todo = todo if isinstance(todo, dict) else {}
        step_id = todo.get("id")
        if not isinstance(step_id, str) or not js_trim(step_id) or utf16_len(step_id) > MAX_ID_UNITS:
            return Problem(BAD_ID, index=index)
        content = todo.get("content")
        if not isinstance(content, str) or not js_trim(content):
            return Problem(BAD_CONTENT, index=index)
        if not isinstance(todo.get("status"), str) or todo["status"] not in STATUSES:
            return Problem(BAD_STATUS, index=index)
        if "blockedBy" in todo and not valid_dependencies(todo["blockedBy"]):
            return Problem(BAD_BLOCKED_BY, index=index)
    ids = [todo["id"] for todo in todos]
    if len(set(ids)) != len(ids):
        return Problem(DUPLICATE_IDS)
    known = set(ids)
    for index, todo in enumerate(todos):
        dependencies = todo.get("blockedBy") or []
        if len(set(dependencies)) != len(dependencies):
            return Problem(f'Todo "{todo["id"]}" must not contain duplicate blockedBy references.', index=index)
        if todo["id"] in dependencies:
            return Problem(f'Todo "{todo["id"]}" must not depend on itself.', index=index)
        missing = next((dependency for dependency in dependencies if dependency not in known), None)
        if missing is not None:
            return Problem(f'Todo "{todo["id"]}" references unknown dependency "{missing}".', index=index)
    if has_cycle(todos):
        return Problem(CYCLE)
    return None


def valid_dependencies(value: Any) -> bool:
    return isinstance(value, list) and all(
        isinstance(dependency, str) and js_trim(dependency) and utf16_len(dependency) <= MAX_ID_UNITS
        for dependency in value
    )


def has_cycle(todos: list[dict[str, Any]]) -> bool:
    """The tool's Kahn walk: a list is acyclic when every todo gets queued."""
    remaining = {todo["id"]: len(todo.get("blockedBy") or []) for todo in todos}
    dependents: dict[str, list[str]] = {}
    for todo in todos:
        for dependency in todo.get("blockedBy") or []:
            dependents.setdefault(dependency, []).append(todo["id"])
    queue = [todo["id"] for todo in todos if remaining[todo["id"]] == 0]
    for step_id in queue:
        for dependent in dependents.get(step_id, []):
            remaining[dependent] -= 1
            if remaining[dependent] == 0:
                queue.append(dependent)
    return len(queue) != len(todos)


def keep_dependencies(todos: list[dict[str, Any]], current: list[Item]) -> list[dict[str, Any]]:
    """An omitted `blockedBy` keeps the previous one while the previous list has
    unfinished work, cut to ids still in the list; dropped again if that makes a cycle."""
    if not any(item.status != "completed" for item in current):
        return todos
    before = {item.id: item.blocked_by for item in current if item.blocked_by}
    incoming = {todo["id"] for todo in todos}
    kept = False
    merged = []
    for todo in todos:
        if todo.get("blockedBy") is None and todo["id"] in before:
            todo = {**todo, "blockedBy": [dep for dep in before[todo["id"]] if dep in incoming]}
            kept = True
        merged.append(todo)
    problem = validate(merged) if kept else None
    return todos if problem is not None and problem.message == CYCLE else merged


def previous_list(current: list[Item]) -> list[dict[str, Any]]:
    """The stored list as Qwen would have written it, for its deep-equality check."""
    return [
        {"id": item.id, "content": item.content, "status": item.status}
        | ({"blockedBy": list(item.blocked_by)} if item.blocked_by else {})
        for item in current
    ]


def definitions() -> list[ToolDefinition]:
    # The bundle's own parametersJsonSchema (without its `$schema` line): items close
    # with additionalProperties: false, the top level does not.
    item = {
        "type": "object",
        "properties": {
            "content": {"type": "string", "minLength": 1},
            "status": {"type": "string", "enum": list(STATUSES)},
            "id": {"type": "string", "maxLength": MAX_ID_UNITS},
            "blockedBy": {
                "type": "array",
                "items": {"type": "string", "maxLength": MAX_ID_UNITS},
                "uniqueItems": True,
                "description": "Todo IDs that must be completed before this item. Active-plan updates preserve "
                "omitted dependencies for existing IDs; use [] to remove them.",
            },
        },
        "required": ["content", "status", "id"],
        "additionalProperties": False,
    }
    schema = {
        "type": "object",
        "properties": {"todos": {"type": "array", "items": item, "description": "The updated todo list"}},
        "required": ["todos"],
    }
    return [ToolDefinition(name="todo_write", description=describe(NAME, "todo_write"), input_schema=schema)]
