"""Claude Code's task tools: TaskCreate, TaskUpdate, TaskGet, TaskList.

Incremental, like Claude Code's own task list: TaskCreate appends a task with the
next numeric id, TaskUpdate patches one task (`deleted` removes it), TaskGet and
TaskList read. Inputs are checked like Claude Code's strict input schemas: every
problem is listed, unknown parameters included. Replies are Claude Code's short
texts (`Task #1 created successfully: …`, `Updated task #1 status`).

Field mapping: subject → content, description → notes, activeForm → active_form,
owner → owner, addBlockedBy → blocked_by; `addBlocks` adds this task to the other
tasks' blocked_by. `metadata` is accepted but not stored (steps have no such field).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from todoweb.calls.errors import InvalidInput
from todoweb.dialects.base import Outcome, ToolDefinition, describe, first_errors, json_type, next_number
from todoweb.plan.steps import Item

NAME = "claude-tasks"
TOOLS = ("TaskCreate", "TaskUpdate", "TaskGet", "TaskList")
SHAPE = "TaskCreate {subject, description, activeForm?}; TaskUpdate {taskId, …}; TaskGet {taskId}; TaskList {}"

STATUSES = ("pending", "in_progress", "completed")
UPDATE_STATUSES = (*STATUSES, "deleted")

# Parameter → expected JSON type, per tool ("status" is checked against its enum).
PARAMETERS: dict[str, dict[str, str]] = {
    "TaskCreate": {"subject": "string", "description": "string", "activeForm": "string", "metadata": "object"},
    "TaskUpdate": {
        "taskId": "string",
        "subject": "string",
        "description": "string",
        "activeForm": "string",
        "status": "string",
        "owner": "string",
        "metadata": "object",
        "addBlocks": "array",
        "addBlockedBy": "array",
    },
    "TaskGet": {"taskId": "string"},
    "TaskList": {},
}
REQUIRED = {"TaskCreate": ("subject", "description"), "TaskUpdate": ("taskId",), "TaskGet": ("taskId",)}


def fits(tool: str, args: Any) -> bool:
    return True


def call(tool: str, args: Any, current: list[Item], *, raw: str | None = None, next_id: int = 1) -> Outcome:
    args = check(tool, args)
    if tool == "TaskCreate":
        return create(args, current, next_id)
    if tool == "TaskList":
        return Outcome(native=list_text(current))
    index = find(current, args["taskId"])
    if tool == "TaskGet":
        return Outcome(native=get_text(current, current[index]))
    return update(args, current, index)


def check(tool: str, args: Any) -> dict[str, Any]:
    """Claude Code's input validation: all issues, in its words, before anything runs."""
    if args is None and tool == "TaskList":
        return {}
    if not isinstance(args, dict):
        raise invalid(tool, [f"The input must be an object, not {json_type(args)}"])
    expected = PARAMETERS[tool]
    issues = [f"The required parameter `{name}` is missing" for name in REQUIRED.get(tool, ()) if name not in args]
    for name, value in args.items():
        kind = expected.get(name)
        if kind is None:
            issues.append(f"An unexpected parameter `{name}` was provided")
        elif json_type(value) != kind:
            issues.append(f"The parameter `{name}` type is expected as `{kind}` but provided as `{json_type(value)}`")
        elif kind == "array" and not all(isinstance(v, str) for v in value):
            issues.append(f"The parameter `{name}` must be an array of strings")
        elif name == "status" and tool == "TaskUpdate" and value not in UPDATE_STATUSES:
            issues.append(f"The parameter `status` must be one of {', '.join(UPDATE_STATUSES)}, not '{value}'")
    if issues:
        raise invalid(tool, issues)
    return args


def invalid(tool: str, issues: list[str]) -> InvalidInput:
    noun = "issue" if len(issues) == 1 else "issues"
    reported = first_errors(issues)
    return InvalidInput(
        f"{tool} failed due to the following {noun}:\n" + "\n".join(reported),
        details={"issues": reported, "count": len(issues)},
    )


def find(current: list[Item], task_id: str) -> int:
    for index, item in enumerate(current):
        if item.id == task_id:
            return index
    raise InvalidInput(f"Task #{task_id} not found", details={"task_id": task_id})


def create(args: dict[str, Any], current: list[Item], next_id: int) -> Outcome:
    task = Item(
        id=str(next_number(current, next_id)),
        content=args["subject"],
        notes=args["description"],
        active_form=args.get("activeForm"),
        status="pending",
    )
    return Outcome(native=f"Task #{task.id} created successfully: {task.content}", items=[*current, task], patched=True)


def update(args: dict[str, Any], current: list[Item], index: int) -> Outcome:
    task_id = args["taskId"]
    if args.get("status") == "deleted":
        # Other tasks stop waiting on a deleted one.
        items = [
            replace(item, blocked_by=[b for b in item.blocked_by if b != task_id])
            for i, item in enumerate(current)
            if i != index
        ]
        return Outcome(native=f"Updated task #{task_id} deleted", items=items, removed=[task_id], patched=True)

    items = list(current)
    task = current[index]
    updated: list[str] = []
    for parameter, field in (
        ("subject", "content"),
        ("description", "notes"),
        ("activeForm", "active_form"),
        ("status", "status"),
        ("owner", "owner"),
    ):
        # Like Claude Code, a field set to the value it already has is not an update.
        if parameter in args and getattr(task, field) != args[parameter]:
            task = replace(task, **{field: args[parameter]})
            updated.append(parameter)
    if "metadata" in args:
        updated.append("metadata")
    # Sets and an index by id: the cost stays linear in the lists' lengths.
    position = {item.id: i for i, item in enumerate(items)}
    for other in dict.fromkeys(args.get("addBlocks", [])):
        # A task that is not on the list cannot be marked; Claude Code skips it too.
        target = position.get(other)
        if target is not None and target != index and task_id not in items[target].blocked_by:
            items[target] = replace(items[target], blocked_by=[*items[target].blocked_by, task_id])
            if "blocks" not in updated:
                updated.append("blocks")
    known = set(task.blocked_by)
    new_blockers = [b for b in dict.fromkeys(args.get("addBlockedBy", [])) if b not in known and b != task_id]
    if new_blockers:
        task = replace(task, blocked_by=[*task.blocked_by, *new_blockers])
        updated.append("blockedBy")
    items[index] = task

    if items == current:
        # Nothing to store: answer without writing a revision.
        return Outcome(
            native=f"Updated task #{task_id} {', '.join(updated)}" if updated else f"No changes to task #{task_id}"
        )
    return Outcome(native=f"Updated task #{task_id} {', '.join(updated)}", items=items, patched=True)


def blocks(current: list[Item], task_id: str | None) -> list[str]:
    return [item.id for item in current if item.id and task_id in item.blocked_by]


def ids(values: list[str]) -> str:
    return ", ".join(f"#{value}" for value in values)


def get_text(current: list[Item], task: Item) -> str:
    lines = [f"Task #{task.id}: {task.content}", f"Status: {task.status}", f"Description: {task.notes or ''}"]
    if task.owner:
        lines.append(f"Owner: {task.owner}")
    if task.blocked_by:
        lines.append(f"Blocked by: {ids(task.blocked_by)}")
    blocked = blocks(current, task.id)
    if blocked:
        lines.append(f"Blocks: {ids(blocked)}")
    return "\n".join(lines)


def list_text(current: list[Item]) -> str:
    if not current:
        return "No tasks found"
    lines = []
    for task in current:
        line = f"#{task.id} [{task.status}] {task.content}"
        if task.owner:
            line += f" ({task.owner})"
        if task.blocked_by:
            line += f" [blocked by {ids(task.blocked_by)}]"
        lines.append(line)
    return "\n".join(lines)


def definitions() -> list[ToolDefinition]:
    text = {"type": "string"}
    id_list = {"type": "array", "items": {"type": "string"}}
    metadata = {"type": "object", "description": "Arbitrary metadata to attach to the task."}
    return [
        ToolDefinition(
            name="TaskCreate",
            description=describe(NAME, "TaskCreate"),
            input_schema={
                "type": "object",
                "properties": {
                    "subject": text | {"description": "A brief title for the task, in the imperative form."},
                    "description": text | {"description": "What needs to be done, in detail."},
                    "activeForm": text | {"description": "Present continuous form shown while the task runs."},
                    "metadata": metadata,
                },
                "required": ["subject", "description"],
                "additionalProperties": False,
            },
        ),
        ToolDefinition(
            name="TaskUpdate",
            description=describe(NAME, "TaskUpdate"),
            input_schema={
                "type": "object",
                "properties": {
                    "taskId": text | {"description": "The id of the task to update."},
                    "subject": text | {"description": "A new title for the task."},
                    "description": text | {"description": "A new description for the task."},
                    "activeForm": text | {"description": "A new present continuous form."},
                    "status": {"type": "string", "enum": list(UPDATE_STATUSES)},
                    "owner": text | {"description": "Who works on the task."},
                    "metadata": metadata,
                    "addBlocks": id_list | {"description": "Ids of tasks that cannot start until this one is done."},
                    "addBlockedBy": id_list | {"description": "Ids of tasks that must be done before this one."},
                },
                "required": ["taskId"],
                "additionalProperties": False,
            },
        ),
        ToolDefinition(
            name="TaskGet",
            description=describe(NAME, "TaskGet"),
            input_schema={
                "type": "object",
                "properties": {"taskId": text | {"description": "The id of the task to read."}},
                "required": ["taskId"],
                "additionalProperties": False,
            },
        ),
        ToolDefinition(
            name="TaskList",
            description=describe(NAME, "TaskList"),
            input_schema={"type": "object", "properties": {}, "additionalProperties": False},
        ),
    ]
