"""People's edits to a plan: what a person changed, and how the agent is told.

A person edits the list (board or `POST sessions/{key}/edits`); the agent has not seen
it. Its next call on the session is answered with the changes first, in its tool's
own words where the real tool has them (a dialect's `user_edits_text(todos)`, e.g.
Roo's "User edits todo:" block) and otherwise as a short list. A full-list write made
without seeing them is merged with them (plan.merge), never undoes them.
Pure functions over the stored steps (the data shape's dicts); no database here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from todoweb.plan.steps import Item

# A change list longer than this is summarised: the agent needs the gist, not a log.
MAX_LISTED = 20


class EditedStep(BaseModel):
    """A step as a person sends it: canonical fields, the id of a step kept."""

    model_config = ConfigDict(extra="forbid")

    id: str | None = Field(None, min_length=1, max_length=200)
    content: str = Field(min_length=1)
    status: Literal["pending", "in_progress", "completed", "failed", "blocked", "cancelled"] = "pending"
    active_form: str | None = None
    notes: str | None = None
    priority: Literal["high", "medium", "low"] | None = None
    owner: str | None = None
    blocked_by: list[str] = Field(default_factory=list, max_length=1000)

    def as_item(self) -> Item:
        return Item(**self.model_dump())


class PlanEdit(BaseModel):
    """The body of `POST sessions/{key}/edits`: the whole list as the person wants it."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "todos": [
                        {"id": "1", "content": "Write the migration", "status": "completed"},
                        {"content": "Add a test for the empty list", "status": "pending"},
                    ],
                    "note": "Test the empty list before going on",
                }
            ]
        },
    )

    todos: list[EditedStep] = Field(max_length=1000)
    note: str | None = Field(None, max_length=2000)


@dataclass(frozen=True)
class Edit:
    kind: str  # added, reworded, status, removed, reordered
    step: str  # the step's id ("" for reordered)
    content: str  # the step's text as the person left it (as it was, for removed)
    before: Any = None
    after: Any = None

    def describe(self) -> str:
        match self.kind:
            case "added":
                return f'added "{self.content}" ({self.after})'
            case "reworded":
                return f'reworded "{self.before}" to "{self.after}"'
            case "status":
                return f'marked "{self.content}" {self.after.replace("_", " ")} (was {self.before.replace("_", " ")})'
            case "removed":
                return f'removed "{self.content}"'
            case _:
                return "reordered the steps: " + ", ".join(f'"{text}"' for text in self.after)


def between(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> list[Edit]:
    """The changes from one list to the next, step by step (steps known by id)."""
    old = {step["id"]: step for step in before}
    new_ids = {step["id"] for step in after}
    edits = []
    for step in after:
        was = old.get(step["id"])
        if was is None:
            edits.append(Edit("added", step["id"], step["content"], after=step["status"]))
            continue
        if was["content"] != step["content"]:
            edits.append(Edit("reworded", step["id"], step["content"], before=was["content"], after=step["content"]))
        if was["status"] != step["status"]:
            edits.append(Edit("status", step["id"], step["content"], before=was["status"], after=step["status"]))
    edits += [Edit("removed", step["id"], step["content"]) for step in before if step["id"] not in new_ids]
    kept_before = [step["id"] for step in before if step["id"] in new_ids]
    kept_after = [step for step in after if step["id"] in old]
    if kept_before != [step["id"] for step in kept_after]:
        edits.append(Edit("reordered", "", "", before=kept_before, after=[step["content"] for step in kept_after]))
    return edits


def listed(edits: list[Edit], *, indent: str = "") -> str:
    lines = [f"{indent}- {edit.describe()}" for edit in edits[:MAX_LISTED]]
    if len(edits) > MAX_LISTED:
        lines.append(f"{indent}- and {len(edits) - MAX_LISTED} more changes")
    return "\n".join(lines)


@dataclass(frozen=True)
class Unseen:
    """What people told the agent that it has not heard yet: the plan's changes since
    the list it last saw (`seen`), and their notes."""

    seen: list[dict[str, Any]]
    edits: list[Edit]
    notes: list[str]
    more_notes: int = 0  # notes past what one answer carries (writes.messages): counted

    def notice(self, todos: list[dict[str, Any]], dialect: object = None) -> str:
        """What the agent is told, in its tool's words where it has them; `todos` is the
        list as the people left it."""
        parts = []
        if self.edits:
            own_words = getattr(dialect, "user_edits_text", None)
            parts.append(own_words(todos) if own_words else "The user changed the plan:\n" + listed(self.edits))
        parts += [f"The user's note: {note}" for note in self.notes]
        if self.more_notes:
            parts.append(f"The user's notes: and {self.more_notes} more notes (on the board)")
        return "\n\n".join(parts)
