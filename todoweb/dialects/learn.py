"""learn-claude-code's `todo` (s03 TodoManager), as its lesson describes it and its code runs it.

The tool replaces the whole list. Its checks, in its order: more than 20 items
first (even when every item is also broken); then item by item, text before
status; the in_progress count only once every item passed. Values are coerced
the way the Python original does (`str(...)`), so odd types are accepted, and
errors name the caller's id (the 1-based position only when the id is absent).

One deliberate deviation: `text: null` is rejected as "text required" instead of
being stored as the text "None" (an accident of `str(None)`).
"""

from __future__ import annotations

from typing import Any

from todoweb.calls.errors import InvalidInput
from todoweb.dialects.base import Outcome, ToolDefinition, describe
from todoweb.plan.steps import Item

NAME = "learn"
TOOLS = ("todo",)
SHAPE = "{items: [{id, text, status}]}"

MAX_ITEMS = 20
STATUSES = ("pending", "in_progress", "completed")
MARKERS = {"pending": "[ ]", "in_progress": "[>]", "completed": "[x]"}


def fits(tool: str, args: Any) -> bool:
    return True


def call(tool: str, args: Any, current: list[Item], *, raw: str | None = None, next_id: int = 1) -> Outcome:
    # The loop calls `handler(**block.input)` and then reads `kw["items"]`: these
    # are the messages Python gives for a non-mapping input and a missing key.
    if not isinstance(args, dict):
        raise InvalidInput(f"<lambda>() argument after ** must be a mapping, not {type(args).__name__}")
    if "items" not in args:
        raise InvalidInput("'items'", details={"field": "items"})
    items = update(args["items"])
    return Outcome(native=render(items), items=items)


def update(items: Any) -> list[Item]:
    """TodoManager.update, with Python's own error texts where its code trips over a type."""
    try:
        count = len(items)
    except TypeError:
        raise InvalidInput(f"object of type '{type(items).__name__}' has no len()") from None
    if count > MAX_ITEMS:
        raise InvalidInput(f"Max {MAX_ITEMS} todos allowed", details={"count": count, "max_items": MAX_ITEMS})
    validated = []
    in_progress = 0
    # Iterating a string or an object walks its characters or keys, exactly as the
    # original does: `""` and `{}` clear the list, anything else fails on `.get`.
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            raise InvalidInput(f"'{type(item).__name__}' object has no attribute 'get'", details={"index": index})
        raw_text = item.get("text", "")
        text = "" if raw_text is None else str(raw_text).strip()  # deviation: null is not "None"
        status = str(item.get("status", "pending")).lower()
        item_id = str(item.get("id", str(index + 1)))
        if not text:
            raise InvalidInput(f"Item {item_id}: text required", details={"index": index, "id": item_id})
        if status not in STATUSES:
            raise InvalidInput(f"Item {item_id}: invalid status '{status}'", details={"index": index, "id": item_id})
        in_progress += status == "in_progress"
        validated.append(Item(content=text, status=status, id=item_id))
    if in_progress > 1:
        raise InvalidInput("Only one task can be in_progress at a time", details={"in_progress": in_progress})
    return validated


def render(items: list[Item]) -> str:
    """TodoManager.render: marker lines, a blank line, then the count."""
    if not items:
        return "No todos."
    lines = [f"{MARKERS[item.status]} #{item.id}: {item.content}" for item in items]
    done = sum(item.status == "completed" for item in items)
    lines.append(f"\n({done}/{len(items)} completed)")
    return "\n".join(lines)


def definitions() -> list[ToolDefinition]:
    item = {
        "type": "object",
        "properties": {
            "id": {"type": "string"},
            "text": {"type": "string"},
            "status": {"type": "string", "enum": list(STATUSES)},
        },
        "required": ["id", "text", "status"],
        "additionalProperties": False,
    }
    return [
        ToolDefinition(
            name="todo",
            description=describe(NAME, "todo"),
            input_schema={
                "type": "object",
                "properties": {"items": {"type": "array", "items": item, "maxItems": MAX_ITEMS}},
                "required": ["items"],
                "additionalProperties": False,
            },
        )
    ]
