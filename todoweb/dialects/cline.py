"""Cline's focus chain: the `task_progress` checklist, as cline/cline 864419d (2026-06-23) keeps it.

In Cline `task_progress` is not a tool but an optional string parameter of every tool
call; todoweb takes it as a call of its own, `{task_progress: "<markdown checklist>"}`.
What Cline does with it (`FocusChainManager.updateFCListFromToolResponse`):

- a value that JavaScript's `trim()` leaves non-empty replaces the whole checklist with
  the trimmed text; the list's items are its lines (split on `\\n`, trimmed) that start
  with `- [ ]` (pending) or `- [x]` / `- [X]` (completed), the item's text being the
  rest of the line, trimmed (as Cline's task header reads it). Other lines stay in
  the text but are no items, so a text without any clears the list;
- an empty or missing value changes nothing: Cline shows the checklist it has, so
  todoweb answers it as a read, writing nothing;
- native tool calls hand Cline every parameter as a string, a non-string value as its
  JSON text (`JSON.stringify`), so `null` or a list is a checklist text without items.

Nothing is ever refused: Cline has no error for it. Nor has it a reply of its own (the
model gets the host tool's result), so the native reply is empty. Arguments text that
is not JSON is refused with todoweb's own words (Cline would try to pull fields out of
it); arguments that are JSON but not an object carry no `task_progress` (a read).
The checklist text as Cline stores it is in `data.task_progress`.
"""

from __future__ import annotations

import json
from typing import Any

from todoweb.calls.errors import InvalidJson
from todoweb.calls.jsonio import UNPARSED, json_error
from todoweb.dialects.base import Outcome, ToolDefinition, describe
from todoweb.plan.steps import Item, Warning

NAME = "cline"
TOOLS = ("task_progress",)
SHAPE = '{task_progress: "<markdown checklist>"}'
HANDLES_RAW = True

# Cline adds nothing of its own to the tool result.
REPLY = ""

# JavaScript's WhiteSpace and LineTerminator: what `trim()` removes.
JS_SPACE = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
    "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)
# shared/focus-chain-utils.ts: isFocusChainItem / isCompletedFocusChainItem.
PENDING = ("- [ ]",)
COMPLETED = ("- [x]", "- [X]")


def fits(tool: str, args: Any) -> bool:
    return True


def call(tool: str, args: Any, current: list[Item], *, raw: str | None = None, next_id: int = 1) -> Outcome:
    if args is UNPARSED:
        if raw:
            raise InvalidJson(f"The arguments are not valid JSON: {json_error(raw)}")
        args = {}
    value = args.get("task_progress") if isinstance(args, dict) else None
    if isinstance(args, dict) and "task_progress" in args and not isinstance(value, str):
        value = js_stringify(value)
    text = value.strip(JS_SPACE) if isinstance(value, str) else ""
    if not text:
        return Outcome(native=REPLY)
    items = checklist_items(text)
    warnings = []
    if not items:
        warnings.append(
            Warning("no_checklist_items", "task_progress has no '- [ ]' or '- [x]' line: the checklist has no items")
        )
    return Outcome(native=REPLY, items=items, warnings=warnings, extra={"task_progress": text})


def checklist_items(text: str) -> list[Item]:
    items = []
    for line in text.split("\n"):
        line = line.strip(JS_SPACE)
        if line.startswith(PENDING + COMPLETED):
            status = "completed" if line.startswith(COMPLETED) else "pending"
            items.append(Item(content=line[5:].strip(JS_SPACE), status=status))
    return items


def js_stringify(value: Any) -> str:
    """JSON.stringify: compact, raw Unicode, whole floats without a fraction."""
    return json.dumps(js_numbers(value), ensure_ascii=False, separators=(",", ":"))


def js_numbers(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return int(value)
    if isinstance(value, list):
        return [js_numbers(v) for v in value]
    if isinstance(value, dict):
        return {k: js_numbers(v) for k, v in value.items()}
    return value


def definitions() -> list[ToolDefinition]:
    # Cline's parameter (TASK_PROGRESS_PARAMETER), as the one parameter of a tool of its own.
    schema = {
        "type": "object",
        "properties": {
            "task_progress": {
                "type": "string",
                "description": "A checklist showing task progress after this tool use is completed. The task_progress "
                "parameter must be included as a separate parameter inside of the parent tool call, it must be "
                "separate from other parameters such as content, arguments, etc. (See 'UPDATING TASK PROGRESS' "
                "section for more details)",
            }
        },
        "required": ["task_progress"],
        "additionalProperties": False,
    }
    return [ToolDefinition(name="task_progress", description=describe(NAME, "task_progress"), input_schema=schema)]
