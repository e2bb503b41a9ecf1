"""The vocabulary of a plan, shared by dialects, the write path and the board:
statuses, a step as a dialect reads or writes it (`Item`), a stored step (`Step`),
and warnings. Dialects import it; it imports nothing of todoweb's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypedDict

STATUSES = ("pending", "in_progress", "completed", "failed", "blocked", "cancelled")
# Done with: neither waits for work. A step dropped in one of these states is not "dropped".
FINISHED = frozenset({"completed", "cancelled"})
# Work that remains: a session with none left but failed or blocked steps has failed.
WORKING = frozenset({"pending", "in_progress"})
# A status at a glance, in checklists, exports and the manager tool's own replies.
MARKERS = {
    "pending": "[ ]",
    "in_progress": "[>]",
    "completed": "[x]",
    "failed": "[!]",
    "blocked": "[~]",
    "cancelled": "[-]",
}


@dataclass(slots=True)
class Item:
    """One step in canonical form, as a dialect reads or writes it."""

    content: str
    status: str
    id: str | None = None
    active_form: str | None = None
    notes: str | None = None
    priority: str | None = None
    owner: str | None = None
    blocked_by: list[str] = field(default_factory=list)


class Step(TypedDict):
    """A step as stored in a revision and sent in the data shape."""

    id: str
    content: str
    active_form: str | None
    notes: str | None
    status: str
    priority: str | None
    owner: str | None
    blocked_by: list[str]
    position: int
    first_seen_at: str
    started_at: str | None
    completed_at: str | None
    duration_s: float | None
    reopened: int


@dataclass(frozen=True)
class Warning:
    code: str
    message: str

    def as_dict(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message}
