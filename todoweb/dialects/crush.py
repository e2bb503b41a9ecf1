"""Crush's `todos`, as charmbracelet/crush (37f36e9) runs it on charm.land/fantasy 0.41.2.

A call passes three hands, and the first refusal is the answer, in its own words:

1. fantasy's validateToolCall: the arguments must unmarshal into a Go map (`invalid JSON
   input: json: cannot unmarshal array into Go value of type map[string]interface {}`)
   and hold the required key, spelled exactly (`missing required parameter: todos`);
2. fantasy's typed wrapper: Go's encoding/json into `TodosParams` (`invalid parameters:
   json: cannot unmarshal number into Go struct field TodoItem.todos.content of type
   string`): keys match case-insensitively, unknown keys and nulls are ignored, the
   first wrong type in the text wins, and a repeated `todos` decodes into the items
   already there (Go reuses a slice's elements);
3. the tool: every status must be pending, in_progress or completed
   (`invalid status "done" for todo "Write tests"`, quoted as Go's %q does).

`todos: null` is no list at all, and clears it. Empty content is accepted. Crush hands
the model a failure as the error's own text; arguments that are not JSON get Crush's
`Tool call failed: arguments were not valid JSON. …` and nothing is written.

Choices where the source left a gap:
- Go's wording is that of encoding/json without GOEXPERIMENT=jsonv2 (Crush builds with
  Go 1.26), checked against Go's own decoder; Unicode tables are Python's.
- Crush may still run a call whose broken JSON fantasy's jsonrepair mends while telling
  the model it failed; todoweb writes nothing then.
"""

from __future__ import annotations

import json
import unicodedata
from typing import Any

from todoweb.calls.errors import InvalidInput, InvalidJson
from todoweb.calls.jsonio import UNPARSED, JsonError, UnacceptableJson, parse
from todoweb.dialects.base import Outcome, ToolDefinition, describe
from todoweb.plan.steps import Item

NAME = "crush"
TOOLS = ("todos",)
SHAPE = "{todos: [{content, status, active_form}]}"
HANDLES_RAW = True

STATUSES = ("pending", "in_progress", "completed")
FIELDS = ("content", "status", "active_form")
NOT_JSON = "Tool call failed: arguments were not valid JSON. Please check your tool call format and try again."
UPDATED = (
    "Todo list updated successfully.\n\n"
    "Status: {pending} pending, {in_progress} in progress, {completed} completed\n"
    "Todos have been modified successfully. Ensure that you continue to use the todo list to track your progress. "
    "Please proceed with the current tasks if applicable."
)


class Pairs(list):
    """A JSON object as Go reads it: every key, repeats included, in order."""


def fits(tool: str, args: Any) -> bool:
    return True


def call(tool: str, args: Any, current: list[Item], *, raw: str | None = None, next_id: int = 1) -> Outcome:
    value = arguments(args, raw)
    if value is not None and not isinstance(value, (dict, Pairs)):
        raise InvalidInput(
            f"invalid JSON input: json: cannot unmarshal {go_kind(value)} into Go value of type map[string]interface {{}}"
        )
    if value is None or "todos" not in {key for key, _ in entries(value)}:
        raise InvalidInput("missing required parameter: todos")
    todos = unmarshal(value)
    for index, todo in enumerate(todos):
        if todo["status"] not in STATUSES:
            raise InvalidInput(
                f"invalid status {go_quote(todo['status'])} for todo {go_quote(todo['content'])}",
                details={"index": index},
            )
    counts = {status: sum(todo["status"] == status for todo in todos) for status in STATUSES}
    items = [
        Item(content=todo["content"], status=todo["status"], active_form=todo["active_form"] or None) for todo in todos
    ]
    return Outcome(native=UPDATED.format(**counts), items=items)


def arguments(args: Any, raw: str | None) -> Any:
    """The call's arguments with every key kept: from the model's own text where there is one."""
    if args is UNPARSED:
        try:
            # Go's json.Valid: strict JSON, no NaN or Infinity.
            json.loads(raw or "", parse_constant=reject_constant)
        except (ValueError, RecursionError):
            raise InvalidJson(NOT_JSON) from None
        try:
            parse(raw or "", what="The arguments text")
        except (JsonError, UnacceptableJson) as exc:
            raise InvalidInput(str(exc)) from None
    if raw is not None:
        return json.loads(raw, object_pairs_hook=Pairs)
    return args


def reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def entries(obj: dict[str, Any] | Pairs) -> list[tuple[str, Any]]:
    return list(obj) if isinstance(obj, Pairs) else list(obj.items())


def unmarshal(params: dict[str, Any] | Pairs) -> list[dict[str, str]]:
    """json.Unmarshal into TodosParams; raises the first type error, as Go reports it."""
    errors: list[str] = []
    todos: list[dict[str, str]] = []
    for key, value in entries(params):
        if match(key, ("todos",)) is None:
            continue
        if value is None:
            todos = []
        elif not is_array(value):
            errors.append(type_error(value, "TodosParams.todos", "[]tools.TodoItem"))
        elif not value:
            todos = []  # an empty array is a new empty slice
        else:
            # Decoding into a slice reuses the elements it already has.
            todos = [
                unmarshal_item(element, dict(todos[index]) if index < len(todos) else dict.fromkeys(FIELDS, ""), errors)
                for index, element in enumerate(value)
            ]
    if errors:
        raise InvalidInput(f"invalid parameters: {errors[0]}")
    return todos


def unmarshal_item(element: Any, todo: dict[str, str], errors: list[str]) -> dict[str, str]:
    if element is None:
        return todo  # null leaves a struct as it is
    if not isinstance(element, (dict, Pairs)):
        errors.append(type_error(element, "TodosParams.todos", "tools.TodoItem"))
        return todo
    for key, value in entries(element):
        field = match(key, FIELDS)
        if field is None or value is None:
            continue
        if not isinstance(value, str):
            errors.append(type_error(value, f"TodoItem.todos.{field}", "string"))
            continue
        todo[field] = value
    return todo


def match(key: str, fields: tuple[str, ...]) -> str | None:
    """encoding/json's field match: the exact name, else a case-insensitive one."""
    if key in fields:
        return key
    folded = go_fold(key)
    return next((field for field in fields if go_fold(field) == folded), None)


def go_fold(name: str) -> str:
    # unicode.ToUpper is a one-rune mapping: where Python's upper() gives more runes, Go keeps the rune.
    return "".join(upper if len(upper := char.upper()) == 1 else char for char in name)


def is_array(value: Any) -> bool:
    return isinstance(value, list) and not isinstance(value, Pairs)


def type_error(value: Any, field: str, go_type: str) -> str:
    return f"json: cannot unmarshal {go_kind(value)} into Go struct field {field} of type {go_type}"


def go_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if is_array(value):
        return "array"
    return "object"


def go_quote(text: str) -> str:
    """strconv.Quote, which fmt's %q uses: printable runes as they are, the rest escaped."""
    out = ['"']
    for char in text:
        code = ord(char)
        if char in '"\\':
            out.append("\\" + char)
        elif go_printable(char):
            out.append(char)
        elif char in GO_ESCAPES:
            out.append(GO_ESCAPES[char])
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\x{code:02x}")
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


GO_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}


def go_printable(char: str) -> bool:
    """unicode.IsPrint: letters, marks, numbers, punctuation, symbols and the ASCII space."""
    return char == " " or unicodedata.category(char)[0] in "LMNPS"


def definitions() -> list[ToolDefinition]:
    # fantasy's schema for TodosParams: every field required (none is omitempty), and
    # no additionalProperties (unknown keys are ignored).
    item = {
        "type": "object",
        "properties": {
            "content": {"type": "string", "description": "What needs to be done (imperative form)"},
            "status": {"type": "string", "description": "Task status: pending, in_progress, or completed"},
            "active_form": {"type": "string", "description": "Present continuous form (e.g., 'Running tests')"},
        },
        "required": list(FIELDS),
    }
    schema = {
        "type": "object",
        "properties": {"todos": {"type": "array", "description": "The updated todo list", "items": item}},
        "required": ["todos"],
    }
    return [ToolDefinition(name="todos", description=describe(NAME, "todos"), input_schema=schema)]
