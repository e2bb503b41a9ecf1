"""The step rows (`Step`): a session's current plan as rows, kept equal to its last
revision's list. A write changes only the rows of the steps its revision changed:
one DELETE of the steps gone or changed, one INSERT of the steps new or changed, in
the revision's transaction. A revision that changes no step (a title, a repeat of the
same list) touches none."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from todoweb.models import Step
from todoweb.store import sql

# The stored step's fields a row holds: all of them.
COLUMNS = (
    "position",
    "content",
    "active_form",
    "notes",
    "status",
    "priority",
    "owner",
    "blocked_by",
    "first_seen_at",
    "started_at",
    "completed_at",
    "duration_s",
    "reopened",
)


def changed_steps(
    before: Sequence[dict[str, Any]], after: Sequence[dict[str, Any]]
) -> tuple[list[str], list[dict[str, Any]]]:
    """The ids whose rows go (gone, or changed) and the steps whose rows come (new, or changed)."""
    old = {step["id"]: step for step in before}
    gone: list[str] = []
    come: list[dict[str, Any]] = []
    for step in after:
        previous = old.pop(step["id"], None)
        if previous is None:
            come.append(step)
        elif any(previous.get(name) != step.get(name) for name in COLUMNS):
            gone.append(step["id"])
            come.append(step)
    gone.extend(old)
    return gone, come


def write_steps(session_id: int, gone: Sequence[str], come: Sequence[dict[str, Any]], at: datetime) -> None:
    """Change the session's rows as `changed_steps` says."""
    if gone:
        marks = ", ".join(["%s"] * len(gone))
        sql.execute(f"DELETE FROM todoweb_step WHERE session_id = %s AND step_id IN ({marks})", [session_id, *gone])
    if come:
        sql.insert_rows(Step, [row(session_id, step, at) for step in come])


def row(session_id: int, step: dict[str, Any], at: datetime) -> dict[str, Any]:
    return {
        "session_id": session_id,
        "step_id": step["id"],
        "position": step["position"],
        "content": step["content"],
        "active_form": step.get("active_form") or "",
        "notes": step.get("notes") or "",
        "status": step["status"],
        "priority": step.get("priority") or "",
        "owner": step.get("owner") or "",
        "blocked_by": step.get("blocked_by") or [],
        "first_seen_at": moment(step["first_seen_at"]),
        "started_at": moment(step.get("started_at")),
        "completed_at": moment(step.get("completed_at")),
        "duration_s": step.get("duration_s"),
        "reopened": step.get("reopened") or 0,
        "updated_at": at,
    }


def moment(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text) if text else None
