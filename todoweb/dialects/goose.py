"""Goose's `todo_write` (platform extension `todo`), as block/goose e057751 runs it.

`{content: "<free-form markdown>"}` overwrites the whole TODO text. Goose checks only
that `content` is a string of at most GOOSE_TODO_MAX_CHARS characters (default
50,000, counted in Unicode scalar values) and answers `Updated (<n> chars)`; errors
are tool results `Error: <message>`. Extra keys are ignored; an empty text is
accepted (it clears the list).

Goose keeps the text as it is and never reads it. todoweb reads steps out of it:
each checklist line (`- [ ] …`, `* [x] …`, `1. [X] …`, at any indentation, so
Goose's indented sub-tasks too) is a step, `[ ]` pending and `[x]`/`[X]` completed;
the other lines under a step, up to the next one, are that step's notes (cut at
NOTES_MAX characters, with a warning). Text above the first step belongs to no step;
a text without any checklist line gives an empty list, with a warning. The text itself
is kept whole in the revision's input. These are todoweb's choices: Goose has no
checklist syntax of its own beyond the template in its instructions
(`- [x] Requirement 1` / `  - [ ] Sub-task`), so other markers (`[-]`, `[~]`) are text.

The name the model sees is probably `todo__todo_write` (Goose prefixes a tool with its
extension's name; not verified), so both names are taken.

Arguments: Goose reads a Chat Completions call's text with `safely_parse_json`, which
retries with control characters escaped (done here) and, in newer versions, repairs
truncated JSON (not done: such text is refused with todoweb's own words). Empty text
is `{}`, and a JSON value that is not an object becomes `{}` (rmcp's `object()`), so
both are "Missing required parameter: content". Only a call with no arguments at all
(a plain-form `input` of null) is Goose's "Missing arguments".
"""

from __future__ import annotations

import json
import re
from typing import Any

from todoweb.calls.errors import InvalidInput, InvalidJson
from todoweb.calls.jsonio import UNPARSED
from todoweb.dialects.base import Outcome, ToolDefinition, describe
from todoweb.plan.steps import Item, Warning

NAME = "goose"
TOOLS = ("todo_write", "todo__todo_write")
SHAPE = '{content: "<markdown>"}'
HANDLES_RAW = True

MAX_CHARS = 50_000  # GOOSE_TODO_MAX_CHARS' default
# A step's notes are todoweb's reading of the text, not the model's words: they are
# cut at the default content limit of a project rather than refusing a text Goose takes.
NOTES_MAX = 2_000

CHECKLIST_LINE = re.compile(r"\s*(?:[-*+]|[0-9]{1,9}[.)])\s+\[([ xX])\]\s+(.*\S)\s*")


def fits(tool: str, args: Any) -> bool:
    """`todo_write` is shared (WeKnora, Cursor, Amp, Qwen Code): Goose's input is a
    string `content` and no `todos` or `steps`."""
    return isinstance(args, dict) and isinstance(args.get("content"), str) and not {"todos", "steps"} & args.keys()


def call(tool: str, args: Any, current: list[Item], *, raw: str | None = None, next_id: int = 1) -> Outcome:
    if args is UNPARSED:
        args = parse_arguments(raw or "")
    elif args is None and raw is None:
        raise InvalidInput("Error: Missing arguments")
    content = args.get("content") if isinstance(args, dict) else None
    if not isinstance(content, str):
        raise InvalidInput("Error: Missing required parameter: content")
    chars = len(content)
    if chars > MAX_CHARS:
        raise InvalidInput(
            f"Error: Todo list too large: {chars} chars (max: {MAX_CHARS})", details={"chars": chars, "max": MAX_CHARS}
        )
    items, warnings = read_steps(content)
    return Outcome(native=f"Updated ({chars} chars)", items=items, warnings=warnings)


def parse_arguments(raw: str) -> Any:
    if not raw:
        return {}
    try:
        # The retry with control characters escaped reads what strict=False reads.
        return json.loads(raw, strict=False)
    except (ValueError, RecursionError) as exc:
        raise InvalidJson(f"The arguments are not valid JSON: {exc}") from None


def read_steps(content: str) -> tuple[list[Item], list[Warning]]:
    items: list[Item] = []
    notes: list[list[str]] = []
    for line in content.splitlines():
        match = CHECKLIST_LINE.fullmatch(line)
        if match:
            status = "pending" if match.group(1) == " " else "completed"
            items.append(Item(content=match.group(2), status=status))
            notes.append([])
        elif notes:
            notes[-1].append(line)
    warnings = []
    for index, (item, lines) in enumerate(zip(items, notes, strict=True)):
        text = "\n".join(without_blank_ends(lines))
        if len(text) > NOTES_MAX:
            text = text[: NOTES_MAX - 1] + "…"
            warnings.append(
                Warning(
                    "notes_cut", f"Step {index + 1}: the text under it is cut to {NOTES_MAX} characters in its notes"
                )
            )
        item.notes = text or None
    if content.strip() and not items:
        warnings.append(
            Warning("no_checklist_items", "The TODO text has no checklist line ('- [ ] …' or '- [x] …'): no steps")
        )
    return items, warnings


def without_blank_ends(lines: list[str]) -> list[str]:
    blank = [not line.strip() for line in lines]
    if all(blank):
        return []
    return lines[blank.index(False) : len(lines) - blank[::-1].index(False)]


def definitions() -> list[ToolDefinition]:
    # schemars' schema for `struct TodoWriteParams { content: String }` (no
    # additionalProperties: serde ignores unknown fields).
    schema = {
        "title": "TodoWriteParams",
        "type": "object",
        "properties": {"content": {"type": "string"}},
        "required": ["content"],
    }
    return [ToolDefinition(name=tool, description=describe(NAME, tool), input_schema=schema) for tool in TOOLS]
