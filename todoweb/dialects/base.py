"""What every dialect module shares: outcomes, definitions, and JavaScript-ish helpers.

A dialect is one agent tool format, in one module of this package, exposing:

    NAME: str                         # "claude", "kimi", …
    TOOLS: tuple[str, ...]            # tool names it answers
    HANDLES_RAW: bool = False         # True: gets arguments text that is not JSON
    SHAPE: str                        # the input in one line, for errors that list shapes
    def fits(tool, args) -> bool      # only needed where a tool name is shared (see ROUTES)
    def call(tool, args, current, *, raw=None, next_id=1) -> Outcome   # pure: no database
    def definitions() -> list[ToolDefinition]

`call` validates the input exactly as the real tool does, raising `InvalidInput`
(`InvalidJson` for text it cannot read) in the tool's own words, and otherwise
returns the whole resulting list of `Item`s (or None for a read) and the reply text
in the tool's own words.
`current` is the session's list before the call, so incremental tools can patch it;
`next_id` is the lowest number the session never used as a step id, so ids a tool
hands out (like Claude Code's tasks) are never handed out twice.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Protocol

from pydantic import ValidationError

from todoweb.calls.errors import MAX_REPORTED, first_problem
from todoweb.plan.steps import Item, Warning

DESCRIPTIONS_DIR = Path(__file__).resolve().parent.parent / "descriptions"


@dataclass
class Outcome:
    native: str  # the reply text in the tool's own words
    items: list[Item] | None = None  # the whole resulting list; None: a read, nothing written
    title: str | None = None  # a new session title (WeKnora's task, Codex's explanation)
    warnings: list[Warning] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)  # dialect fields added to `data`
    removed: list[str] = field(default_factory=list)  # ids deleted on purpose: not "dropped"
    # The list is the current one changed by the call (an incremental tool): a
    # person's edits in it stay as they are, with no merge.
    patched: bool = False


@dataclass(frozen=True)
class ToolDefinition:
    name: str
    description: str
    input_schema: dict[str, Any]


class Dialect(Protocol):
    """A dialect module, as the write path uses it (optional: `HANDLES_RAW`, `fits`,
    `user_edits_text`)."""

    NAME: str
    TOOLS: tuple[str, ...]
    SHAPE: str

    def call(
        self, tool: str, args: Any, current: list[Item], *, raw: str | None = None, next_id: int = 1
    ) -> Outcome: ...

    def definitions(self) -> list[ToolDefinition]: ...


class SharedName(Dialect, Protocol):
    """A dialect whose tool name another dialect has too: it tells its own input."""

    def fits(self, tool: str, args: Any) -> bool: ...


# A call can break a rule once per item: the answer names the first few and counts the rest.
MAX_REPORTED_ERRORS = MAX_REPORTED


def first_errors(errors: list[str]) -> list[str]:
    """At most MAX_REPORTED_ERRORS of a call's errors, then a line counting the others."""
    if len(errors) <= MAX_REPORTED_ERRORS:
        return errors
    return [*errors[:MAX_REPORTED_ERRORS], f"… and {len(errors) - MAX_REPORTED_ERRORS} more"]


def validation_text(exc: ValidationError) -> str:
    """pydantic's own text, cut after MAX_REPORTED_ERRORS errors (a list of a thousand
    bad items would otherwise make a message of megabytes)."""
    header, *lines = str(exc).split("\n")
    # Each error is a block: its location unindented, then its indented message lines.
    blocks: list[list[str]] = []
    for line in lines:
        if line.startswith(" ") and blocks:
            blocks[-1].append(line)
        else:
            blocks.append([line])
    kept = [line for block in blocks[:MAX_REPORTED_ERRORS] for line in block]
    if len(blocks) > MAX_REPORTED_ERRORS:
        kept.append(f"… and {len(blocks) - MAX_REPORTED_ERRORS} more errors")
    return "\n".join([header, *kept])


def pydantic_errors(exc: ValidationError) -> dict[str, Any]:
    """`details` for a pydantic refusal: the first errors, and how many there were."""
    return first_problem(exc.errors(include_url=False, include_input=False)).details


def inline_refs(schema: Any, defs: dict[str, Any]) -> Any:
    """A pydantic JSON Schema with its `$defs` inlined, for readers that resolve no
    references (Kimi's kosong gives the model its schemas so; OpenAPI bodies)."""
    if isinstance(schema, dict):
        if "$ref" in schema:
            return inline_refs(defs[schema["$ref"].rsplit("/", 1)[-1]], defs)
        return {key: inline_refs(value, defs) for key, value in schema.items() if key != "$defs"}
    if isinstance(schema, list):
        return [inline_refs(value, defs) for value in schema]
    return schema


@cache
def describe(dialect: str, tool: str) -> str:
    """The tool's description for the model, kept as Markdown in descriptions/<dialect>/."""
    return (DESCRIPTIONS_DIR / dialect / f"{tool}.md").read_text(encoding="utf-8").strip()


def json_type(value: Any) -> str:
    """The JSON Schema type name of a decoded JSON value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def js_string(value: Any) -> str:
    """How a JavaScript template literal would print a JSON value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, list):
        return ",".join("" if v is None else js_string(v) for v in value)
    if isinstance(value, dict):
        return "[object Object]"
    return str(value)


NUMERIC_ID = re.compile(r"[0-9]{1,9}")  # longer numbers would overflow the counter


def next_number(current: list[Item], next_id: int) -> int:
    """The next id a tool numbers a new step with: past every id the list or the session used."""
    numbers = [int(item.id) for item in current if item.id and NUMERIC_ID.fullmatch(item.id)]
    return max([next_id, *(n + 1 for n in numbers)])
