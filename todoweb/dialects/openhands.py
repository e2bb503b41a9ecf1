"""OpenHands' `task_tracker`, as the V1 agent SDK runs it (OpenHands/software-agent-sdk
@ 611629e, `openhands-tools/openhands/tools/task_tracker/definition.py` and
`openhands-sdk/openhands/sdk/agent/agent.py`).

Two implementations share the name. This module follows V1, the SDK
that OpenHands runs today; the V0 CodeActAgent tool (plan mode only) differs:

- V0 requires `command` and, for `plan`, `task_list`; V1 defaults them (`view`, `[]`).
- V0 checks statuses nowhere; V1's pydantic model refuses anything but todo,
  in_progress and done.
- V0's plan reply names a file in the server's session directory
  (`… Stored in session directory: sessions/<sid>/TASKS.md`), which a tool call
  does not know, and its view reply is that file; V1's replies are its own.
- V0 numbers items without an id `task-1`, `task-2`, …; V1's model has no id at all.

How V1 reads a call, in order (each step is the agent's, quoted in the names below):

1. `parse_tool_call_arguments`: `json.loads`, again with raw control characters
   escaped if that fails; anything but an object reads as `{}` (so `[]`, `5`, `null`
   are a `view`); top-level keys whose value is null are dropped (`{"command": null}`
   is a `view` too, `{"task_list": null}` an empty list).
2. `fix_malformed_tool_arguments`: a `task_list` sent as a JSON string is decoded
   (also after cutting trailing garbage at the last `}` or `]`).
3. `security_risk` and `summary` (the field every SDK tool gets) are taken out; the
   SDK's typos of `security_risk` are renamed first. No security analyzer is assumed,
   so their values are never checked.
4. `TaskTrackerAction.model_validate`: extra top-level keys are refused, extra item
   keys ignored; a `kind` other than `TaskTrackerAction` fails the discriminator's
   assertion. Every error is reported at once, as pydantic words it:
   `Error validating tool 'task_tracker': <pydantic text>. Parameters provided: [keys]`.
   pydantic's text names its own version in its links: this module's pydantic's.

Statuses: todo → pending, in_progress, done → completed. V1 drops an item's `id`;
todoweb keeps a non-empty string `id` as the step's identity on the board (the data shape lists
`id?`), which changes no reply.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from todoweb.calls.errors import InvalidInput, InvalidJson
from todoweb.dialects.base import Outcome, ToolDefinition, describe, pydantic_errors, validation_text
from todoweb.plan.steps import Item

NAME = "openhands"
TOOLS = ("task_tracker",)
SHAPE = "{command?: view|plan, task_list?: [{title, status?, notes?}]}"
# The SDK reads the arguments text itself (json.loads, then a control-character repair).
HANDLES_RAW = True

TOOL = "task_tracker"
TO_CANONICAL = {"todo": "pending", "in_progress": "in_progress", "done": "completed"}
ICONS = {"pending": "⏳", "in_progress": "🔄", "completed": "✅"}  # V1's todo/in_progress/done
NO_LIST = 'No task list found. Use the "plan" command to create one.'

# agent/utils.py: the escapes `sanitize_json_control_chars` writes for U+0000–U+001F.
CONTROL_CHARS = re.compile(r"[\x00-\x1f]")
SHORT_ESCAPES = {0x08: "\\b", 0x09: "\\t", 0x0A: "\\n", 0x0C: "\\f", 0x0D: "\\r"}
# `_SECURITY_RISK_TYPOS` is a Python set: with more than one typo in a call the SDK's
# pick depends on string hashing; this module takes them in this fixed order.
SECURITY_RISK_TYPOS = ("security_riks", "security_rort", "securtiy_risk")

COMMAND_DESCRIPTION = (
    "The command to execute. `view` shows the current task list. `plan` creates or updates the task list "
    "based on provided requirements and progress. Always `view` the current list before making changes."
)
TASK_LIST_DESCRIPTION = "The full task list. Required parameter of `plan` command."
SUMMARY_DESCRIPTION = (
    "A concise summary (approximately 10 words) describing what this specific action does. "
    "Focus on the key operation and target. Example: 'List all Python files in current directory'"
)


class TaskItem(BaseModel):
    title: str = Field(..., description="A brief title for the task.")
    notes: str = Field("", description="Additional details or notes about the task.")
    status: Literal["todo", "in_progress", "done"] = Field(
        "todo", description="The current status of the task. One of 'todo', 'in_progress', or 'done'."
    )


class TaskTrackerAction(BaseModel):
    """An action where the agent writes or updates a task list for task management."""

    # The SDK's `Schema` base: extra inputs forbidden.
    model_config = ConfigDict(extra="forbid", frozen=True)

    command: Literal["view", "plan"] = Field(default="view", description=COMMAND_DESCRIPTION)
    task_list: list[TaskItem] = Field(default_factory=list, description=TASK_LIST_DESCRIPTION)

    @model_validator(mode="wrap")
    @classmethod
    def _validate_subtype(cls, data: Any, handler: Any) -> Any:
        # DiscriminatedUnionMixin: `kind` is popped (from the very dict pydantic then
        # shows as input_value) and must name the class.
        if isinstance(data, cls):
            return data
        kind = data.pop("kind", None)
        if not (kind is None or kind == cls.__name__):
            raise AssertionError  # pydantic reports "Assertion failed, "
        return handler(data)


def fits(tool: str, args: Any) -> bool:
    return True


def call(tool: str, args: Any, current: list[Item], *, raw: str | None = None, next_id: int = 1) -> Outcome:
    arguments = normalize(parse_arguments(args, raw))
    fix_task_list(arguments)
    pop_meta_fields(arguments)
    try:
        action = TaskTrackerAction.model_validate(dict(arguments))
    except ValidationError as exc:
        raise InvalidInput(
            f"Error validating tool '{TOOL}': {validation_text(exc)}. Parameters provided: {list(arguments)!r}",
            details=pydantic_errors(exc),
        ) from None
    if action.command == "view":
        return Outcome(native=view_reply(current))
    raw_items = arguments.get("task_list") or []
    items = [
        Item(
            content=task.title,
            status=TO_CANONICAL[task.status],
            notes=task.notes or None,
            id=caller_id(raw_items[index] if index < len(raw_items) else None),
        )
        for index, task in enumerate(action.task_list)
    ]
    return Outcome(native=f"Task list has been updated with {len(items)} item(s).", items=items)


def parse_arguments(args: Any, raw: str | None) -> Any:
    """`parse_tool_call_arguments`'s json.loads, with its control-character retry."""
    if raw is None:
        return args
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        pass
    try:
        return json.loads(CONTROL_CHARS.sub(escape_control_char, raw))
    except (ValueError, RecursionError) as exc:
        raise InvalidJson(f"Error validating tool '{TOOL}': {exc}. Arguments: unparseable JSON") from None


def escape_control_char(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    return SHORT_ESCAPES.get(code, f"\\u{code:04x}")


def normalize(parsed: Any) -> dict[str, Any]:
    """`_normalize_arguments`: a non-object is `{}`; typos renamed; null values dropped."""
    arguments = dict(parsed) if isinstance(parsed, dict) else {}
    for typo in SECURITY_RISK_TYPOS:
        if typo in arguments:
            arguments["security_risk"] = arguments.pop(typo)
            break
    return {key: value for key, value in arguments.items() if value is not None}


def fix_task_list(arguments: dict[str, Any]) -> None:
    """`fix_malformed_tool_arguments` for the one list field: JSON text becomes its value."""
    value = arguments.get("task_list")
    if not isinstance(value, str):
        return
    try:
        parsed = json.loads(value, strict=False)
    except (ValueError, RecursionError):
        for end in ("}", "]"):
            cut = value.rfind(end)
            if cut == -1:
                continue
            try:
                parsed = json.loads(value[: cut + 1], strict=False)
            except (ValueError, RecursionError):
                continue
            if isinstance(parsed, (list, dict)):
                arguments["task_list"] = parsed
                return
        return
    if isinstance(parsed, (list, dict)):
        arguments["task_list"] = parsed


def pop_meta_fields(arguments: dict[str, Any]) -> None:
    """`_extract_security_risk` and `_extract_summary`: both fields leave the arguments."""
    arguments.pop("security_risk", None)
    arguments.pop("summary", None)


def caller_id(raw_item: Any) -> str | None:
    step_id = raw_item.get("id") if isinstance(raw_item, dict) else None
    return step_id if isinstance(step_id, str) and step_id else None


def view_reply(current: list[Item]) -> str:
    """`_format_task_list`: numbered, an icon per status, notes indented under the title."""
    if not current:
        return NO_LIST
    content = "# Task List\n\n"
    for number, item in enumerate(current, 1):
        content += f"{number}. {ICONS.get(item.status, '⏳')} {item.content}\n"
        if item.notes:
            content += f"   {item.notes}\n"
        content += "\n"
    return content.strip()


def definitions() -> list[ToolDefinition]:
    # What the SDK hands the model (`to_openai_tool`): the action's schema with the
    # `summary` field first, through `_process_schema_node` (which keeps only type,
    # description, properties, required, items and enum). The action refuses extra
    # top-level keys, so this one says so; item extras are ignored, so items don't.
    item = {
        "type": "object",
        "properties": {
            "title": {"type": "string", "description": "A brief title for the task."},
            "notes": {"type": "string", "description": "Additional details or notes about the task."},
            "status": {
                "type": "string",
                "description": "The current status of the task. One of 'todo', 'in_progress', or 'done'.",
                "enum": ["todo", "in_progress", "done"],
            },
        },
        "required": ["title"],
    }
    schema = {
        "type": "object",
        "properties": {
            "summary": {"type": "string", "description": SUMMARY_DESCRIPTION},
            "command": {"type": "string", "description": COMMAND_DESCRIPTION, "enum": ["view", "plan"]},
            "task_list": {"type": "array", "description": TASK_LIST_DESCRIPTION, "items": item},
        },
        "additionalProperties": False,
    }
    return [ToolDefinition(name=TOOL, description=describe(NAME, TOOL), input_schema=schema)]
