"""The Agent Client Protocol's plan, as an ACP agent sends it to its editor:

    {"sessionUpdate": "plan", "entries": [{"content", "priority", "status"}]}

There is no tool in ACP: the plan is a `session/update` notification, always the
whole list (the editor replaces its copy). `todoweb-acp`, the stdio proxy between an
editor and an ACP agent, posts each one as a call of the tool `acp_plan` with the
update (or just its `entries`) as input. The newer `plan_update` of an item plan
carries the same entries and is posted the same way.

The checks are the protocol's schema: `entries` a list; each entry an object with a
string `content`, a `priority` of high, medium or low and a `status` of pending,
in_progress or completed, all three required. Other fields (`_meta`, the update's
`sessionUpdate`) are ignored. The first entry that breaks a rule is named in the
refusal, and nothing is written. Priorities are kept on the steps.

ACP has no reply to a plan; the native reply is a fixed line, so that a caller that
asks for it (`?reply=native`) knows an answer that says anything else carries
people's edits (their notice first, then the plan as merged).
"""

from __future__ import annotations

from typing import Any

from todoweb.calls.errors import InvalidInput
from todoweb.dialects.base import Outcome, ToolDefinition, describe, json_type
from todoweb.plan.steps import Item

NAME = "acp"
TOOLS = ("acp_plan",)
SHAPE = "{entries: [{content, priority, status}]}"

STATUSES = ("pending", "in_progress", "completed")
PRIORITIES = ("high", "medium", "low")
RECORDED = "Plan recorded."


def call(tool: str, args: Any, current: list[Item], *, raw: str | None = None, next_id: int = 1) -> Outcome:
    if not isinstance(args, dict) or "entries" not in args:
        raise InvalidInput("'entries' array is required")
    entries = args["entries"]
    if not isinstance(entries, list):
        raise InvalidInput(f"'entries' must be an array, not {json_type(entries)}")
    return Outcome(native=RECORDED, items=[to_item(index, entry) for index, entry in enumerate(entries)])


def to_item(index: int, entry: Any) -> Item:
    where = f"Entry {index}"
    if not isinstance(entry, dict):
        raise InvalidInput(f"{where}: must be an object, not {json_type(entry)}", details={"index": index})
    content = entry.get("content")
    if not isinstance(content, str):
        shown = "missing" if "content" not in entry else json_type(content)
        raise InvalidInput(f"{where}: content must be a string ({shown})", details={"index": index})
    for name, allowed in (("priority", PRIORITIES), ("status", STATUSES)):
        value = entry.get(name)
        if value not in allowed:
            shown = "missing" if name not in entry else repr(value) if isinstance(value, str) else json_type(value)
            raise InvalidInput(
                f"{where}: {name} must be one of {', '.join(allowed)} ({shown})",
                details={"index": index, "field": name},
            )
    return Item(content=content, status=entry["status"], priority=entry["priority"])


def definitions() -> list[ToolDefinition]:
    entry = {
        "type": "object",
        "properties": {
            "content": {"type": "string", "description": "What the step is, in a few words."},
            "priority": {"type": "string", "enum": list(PRIORITIES)},
            "status": {"type": "string", "enum": list(STATUSES)},
        },
        "required": ["content", "priority", "status"],
    }
    return [
        ToolDefinition(
            name="acp_plan",
            description=describe(NAME, "acp_plan"),
            input_schema={
                "type": "object",
                "properties": {
                    "entries": {"type": "array", "items": entry, "description": "The whole plan, every entry."}
                },
                "required": ["entries"],
            },
        )
    ]
