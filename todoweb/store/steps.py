"""The step rows (`Step`): a session's current plan as rows, kept equal to its last
revision's list. A write changes only the rows of the steps its revision changed:
one DELETE of the steps gone or changed, one INSERT of the steps new or changed, in
the revision's transaction. A revision that changes no step (a title, a repeat of the
same list) touches none."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from functools import cache
from typing import Any

import orjson

from todoweb import plan
from todoweb.store import sql


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
        elif previous != step:  # a row holds every field of a stored step
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
        sqlite = sql.this_thread_connection().vendor == "sqlite"
        time = sqlite_time if sqlite else postgresql_time
        updated_at = time(plan.utc_text(at))
        values: list[Any] = []
        for step in come:
            values += [
                session_id,
                step["id"],
                step["position"],
                step["content"],
                step.get("active_form") or "",
                step.get("notes") or "",
                step["status"],
                step.get("priority") or "",
                step.get("owner") or "",
                orjson.dumps(step.get("blocked_by") or []).decode(),
                time(step["first_seen_at"]),
                time(step.get("started_at")),
                time(step.get("completed_at")),
                step.get("duration_s"),
                step.get("reopened") or 0,
                updated_at,
            ]
        sql.execute(insert_statement(len(come)), values)


# The columns a step's row is written with, in the order of `write_steps`' values.
COLUMNS = (
    "session_id",
    "step_id",
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
    "updated_at",
)


@cache
def insert_statement(rows: int) -> str:
    row = "(" + ", ".join(["%s"] * len(COLUMNS)) + ")"
    return f"INSERT INTO todoweb_step ({', '.join(COLUMNS)}) VALUES {', '.join([row] * rows)}"


def sqlite_time(text: str | None) -> str | None:
    """A stored step's time ("…T…Z", UTC) as Django keeps a time in SQLite ("… …", UTC)."""
    return text[:-1].replace("T", " ") if text else None


def postgresql_time(text: str | None) -> str | None:
    """PostgreSQL reads the stored step's ISO 8601 text as it is."""
    return text
