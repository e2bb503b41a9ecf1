"""Which events a write causes, and each event's body (`{"type", "timestamp", "data"}`)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from todoweb import plan

SESSION_CREATED = "session.created"
SESSION_COMPLETED = "session.completed"
SESSION_FAILED = "session.failed"
SESSION_IDLE = "session.idle"
PLAN_EDITED = "plan.edited"
STEP_FAILED = "step.failed"
EVENTS = (SESSION_CREATED, SESSION_COMPLETED, SESSION_FAILED, SESSION_IDLE, PLAN_EDITED, STEP_FAILED)
# What "send a test event" sends.
TEST = "webhook.test"


def outcome(total: int, open_steps: int, working: int) -> str | None:
    """A plan's end, by its counts (as Session.state_at): completed, failed or none yet."""
    if total and not open_steps:
        return SESSION_COMPLETED
    if open_steps and not working:
        return SESSION_FAILED
    return None


def revision_events(
    *,
    created: bool,
    before: tuple[int, int, int],
    after: tuple[int, int, int],
    by_person: bool,
    changes: list[dict[str, Any]],
) -> list[str]:
    """The events of one revision: the session's creation, its plan reaching an end it
    was not at (completed, failed), a person's edit, a step that became failed.
    `before` and `after` are the session's (total, open, working) counts."""
    found = [SESSION_CREATED] if created else []
    end = outcome(*after)
    if end is not None and end != outcome(*before):
        found.append(end)
    if by_person:
        found.append(PLAN_EDITED)
    if any(change["to"] == "failed" and change["from"] != "failed" for change in changes):
        found.append(STEP_FAILED)
    return found


def failed_steps(todos: list[dict[str, Any]], changes: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """The steps that failed (or, with `changes`, became failed in this revision), as
    the messages name them."""
    became = None if changes is None else {c["id"] for c in changes if c["to"] == "failed" and c["from"] != "failed"}
    return [
        {"id": step["id"], "content": step["content"], "status": step["status"], "notes": step.get("notes")}
        for step in todos
        if (step["status"] in ("failed", "blocked") if became is None else step["id"] in became)
    ]


def body(event: str, at: datetime, data: dict[str, Any]) -> dict[str, Any]:
    return {"type": event, "timestamp": plan.iso(at), "data": data}
