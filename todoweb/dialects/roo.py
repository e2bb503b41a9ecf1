"""Roo Code's `update_todo_list`, as RooCodeInc/Roo-Code cb83656 (2026-04-14) runs it.

`{todos: "<markdown checklist>"}` replaces the whole list. Roo's parser
(`parseMarkdownChecklist`) splits the text on `\\r?\\n`, trims each line (JavaScript's
`trim()`), drops empty ones, and keeps the lines that match

    /^(?:-\\s*)?\\[\\s*([ xX\\-~])\\s*\\]\\s+(.+)$/

`[ ]` is pending, `[x]`/`[X]` completed, `[-]`/`[~]` in progress. Every other line is
skipped without a word, so any text is a valid list, and an empty one clears it. The
regex is JavaScript's: `\\s` is JavaScript's whitespace (not Python's), and `.` stops
at `\\r`, U+2028 and U+2029, so a line holding one of those is skipped too.

What is refused is what Roo's native-call parser cannot turn into arguments: no
`todos` key, arguments that are not a JSON object, or text that is not JSON. Roo
answers those before running the tool, with `formatResponse.toolError` around its
"missing nativeArgs" message. `todos` itself is never checked: a value that is not a
string is read as an empty checklist (`parseMarkdownChecklist(todosRaw || "")`
returns `[]` for a non-string), so it clears the list, as in Roo.

Roo names each item md5(content + status); those ids change with the status, so
todoweb does not use them as step ids (a step keeps its id across a status change)
and hands them back in `data.roo_todos` instead. Roo's approval prompt (the user may
decline, or edit the list, changing the reply) has no counterpart here: every call is
taken as approved unchanged. Lines Roo skips, and a `todos` that is not a string,
are reported as warnings (Roo says nothing).
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from todoweb.calls.errors import InvalidInput, InvalidJson
from todoweb.calls.jsonio import UNPARSED, compact_json
from todoweb.dialects.base import Outcome, ToolDefinition, describe
from todoweb.plan.steps import Item, Warning

NAME = "roo"
TOOLS = ("update_todo_list",)
SHAPE = '{todos: "<markdown checklist>"}'
# A call Roo cannot parse has Roo's own answer, whatever envelope carried it.
HANDLES_RAW = True

UPDATED = "Todo list updated successfully."
MISSING_ARGS = (
    "Invalid tool call for 'update_todo_list': missing nativeArgs. "
    "This usually means the model streamed invalid or incomplete arguments and the call could not be finalized."
)

# JavaScript's WhiteSpace and LineTerminator: what `trim()` removes and `\s` matches.
JS_SPACE = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
    "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)
S = f"[{re.escape(JS_SPACE)}]"
# `.` in a JavaScript regex without the `s` flag: anything but a line terminator.
DOT = "[^\n\r\u2028\u2029]"
CHECKLIST_LINE = re.compile(rf"(?:-{S}*)?\[{S}*([ xX\-~]){S}*\]{S}+({DOT}+)\Z")
LINE_BREAK = re.compile(r"\r?\n")
STATUS = {" ": "pending", "x": "completed", "X": "completed", "-": "in_progress", "~": "in_progress"}


# Roo's checklist has three states; a cancelled step is left out (it is not work),
# a failed or blocked one is still to do as far as Roo can say.
MARK = {"completed": "[x]", "in_progress": "[-]", "pending": "[ ]", "failed": "[ ]", "blocked": "[ ]"}


def user_edits_text(todos: list[dict[str, Any]]) -> str:
    """Roo's answer when the person edited the list in its approval view."""
    lines = [f"{MARK[step['status']]} {step['content']}" for step in todos if step["status"] in MARK]
    return "User edits todo:\n\n" + "\n".join(lines)


def fits(tool: str, args: Any) -> bool:
    return True


def call(tool: str, args: Any, current: list[Item], *, raw: str | None = None, next_id: int = 1) -> Outcome:
    if args is UNPARSED:
        if raw:
            # JSON.parse threw: no nativeArgs.
            raise InvalidJson(tool_error(MISSING_ARGS))
        args = {}  # Roo reads empty arguments text as `{}`
    if not isinstance(args, dict) or "todos" not in args:
        raise InvalidInput(tool_error(MISSING_ARGS))
    text = args["todos"]
    warnings = []
    if not isinstance(text, str):
        warnings.append(
            Warning(
                "not_a_checklist", "'todos' is not a string: Roo reads it as an empty checklist, which clears the list"
            )
        )
    todos, skipped = parse_checklist(text if isinstance(text, str) else "")
    if skipped:
        lines = "line is" if skipped == 1 else "lines are"
        warnings.append(Warning("skipped_lines", f"{skipped} {lines} not a checklist item and Roo skips them"))
    items = [Item(content=todo["content"], status=todo["status"]) for todo in todos]
    return Outcome(native=UPDATED, items=items, warnings=warnings, extra={"roo_todos": todos})


def parse_checklist(text: str) -> tuple[list[dict[str, str]], int]:
    """parseMarkdownChecklist: Roo's items ({id, content, status}) and the count of
    non-empty lines it skipped."""
    todos, skipped = [], 0
    for line in LINE_BREAK.split(text):
        line = line.strip(JS_SPACE)
        if not line:
            continue
        match = CHECKLIST_LINE.match(line)
        if match is None:
            skipped += 1
            continue
        content, status = match.group(2), STATUS[match.group(1)]
        # Node hashes a string as UTF-8 (todoweb's JSON holds no lone surrogates).
        digest = hashlib.md5((content + status).encode("utf-8")).hexdigest()
        todos.append({"id": digest, "content": content, "status": status})
    return todos, skipped


def tool_error(error: str) -> str:
    """formatResponse.toolError: JSON.stringify({status, message, error})."""
    return compact_json({"status": "error", "message": "The tool execution failed", "error": error})


def definitions() -> list[ToolDefinition]:
    # Roo's native tool (`strict: true`): one string, nothing else.
    schema = {
        "type": "object",
        "properties": {
            "todos": {
                "type": "string",
                "description": "Full markdown checklist in execution order, using [ ] for pending, [x] for completed, "
                "and [-] for in progress",
            }
        },
        "required": ["todos"],
        "additionalProperties": False,
    }
    return [
        ToolDefinition(name="update_todo_list", description=describe(NAME, "update_todo_list"), input_schema=schema)
    ]
