"""Appending a revision: the one way a session's plan changes, for an agent's tool call
(writes.record) and a person's edit (writes.people) alike.

Two steps. `new_revision` reconciles the change with the session's current plan and
moves the session to the new revision in memory, giving the revision's data; then the
caller may add what it stores with the revision (an agent call's first answer, for
replays) and `append` writes both and gives the live frames to publish once committed.

Concurrency. The write moves the session from revision N to N+1 only if it is still
at N, and still as the writer read it (a compare-and-set on its row, which also locks
it), and inserts revision N+1; otherwise it raises Conflict and the writer reads
again. Every writer locks the session row before inserting, so writers never
deadlock. The lock is held for database work only (two short statements).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import orjson
from django.db import connection, transaction

from todoweb import plan, store
from todoweb.calls import answers
from todoweb.live import events
from todoweb.models import Revision, Session
from todoweb.plan.steps import FINISHED, WORKING, Item, Warning
from todoweb.reads import plan_data, session_summary
from todoweb.store import sql, steps
from todoweb.store.sql import SessionRow
from todoweb.webhooks import enqueue as webhooks

TITLE_MAX_CHARS = Session._meta.get_field("title").max_length
# Points kept for the dashboard's progress-over-time line.
TREND_POINTS = 32


class Conflict(Exception):
    """The session moved on between this writer's read and its write."""


@dataclass(frozen=True)
class Change:
    """What a new revision is made of, before it meets the session's current plan."""

    items: list[Item]  # the whole list as the writer wants it
    tool: str
    dialect: str
    raw_input: Any
    author: str = Revision.Author.AGENT
    call_id: str = ""
    title: str | None = None  # a new title for the session (WeKnora's task, Codex's explanation)
    default_title: str | None = None  # the session's title if it has none yet
    workdir: str | None = None  # where the agent works, when its call says
    branch: str | None = None
    warnings: list[Warning] = field(default_factory=list)
    removed: Sequence[str] = ()  # step ids taken out on purpose: not "dropped"
    tells: bool = False  # the agent's write tells it of people's messages: it marks them told
    idempotency_key: str | None = None
    fingerprint: str = ""


@dataclass
class NewRevision:
    row: SessionRow  # the session, moved to the new revision in memory
    revision: Revision
    result: plan.Reconciled
    changed: dict[str, Any]  # the session's fields to write
    told: int  # the last of people's messages the agent was told of, as the writer read it
    data: dict[str, Any]  # the revision's data shape
    data_json: bytes
    before: tuple[int, int, int] = (0, 0, 0)  # the session's (total, open, working) steps before it


def new_revision(row: SessionRow, change: Change, *, now: datetime) -> NewRevision:
    session, previous = row.session, row.current
    result = plan.reconcile(
        previous.todos if previous else [],
        previous.dropped if previous else [],
        change.items,
        now=now,
        next_number=session.next_step_number,
        revision=session.revision + 1,
        dropped_count=previous.dropped_count if previous else 0,
        removed=change.removed,
    )
    revision = Revision(
        session=session,
        number=session.revision + 1,
        tool=change.tool,
        dialect=change.dialect,
        call_id=change.call_id,
        raw_input=change.raw_input,
        title=(change.title or "")[:TITLE_MAX_CHARS],
        todos=result.todos,
        changes=result.changes,
        dropped=result.dropped,
        dropped_count=result.dropped_count,
        dropped_here=result.newly_dropped,
        warnings=[warning.as_dict() for warning in change.warnings],
        author=change.author,
        created_at=now,
        idempotency_key=change.idempotency_key,
        fingerprint=change.fingerprint,
    )
    if session.pk is None:
        session.created_at = now  # made by its first revision: the answer shows it as stored
    told = session.told_message
    before = (session.total_steps, session.open_steps, session.working_steps)
    changed = advance_session(session, revision, result, title=change.title, default_title=change.default_title)
    for name in ("workdir", "branch"):
        value = getattr(change, name)
        if value and value != getattr(session, name):
            changed[name] = value
            setattr(session, name, value)
    if change.tells:
        changed["told_message"] = session.told_message = session.last_message
    data = plan_data(session, revision, now=now)
    return NewRevision(row, revision, result, changed, told, data, orjson.dumps(data), before)


def advance_session(
    session: Session,
    revision: Revision,
    result: plan.Reconciled,
    *,
    title: str | None = None,
    default_title: str | None = None,
) -> dict[str, Any]:
    """Move the session (in memory) to the new revision; returns the fields to write."""
    todos = result.todos
    point = [int(revision.created_at.timestamp()), plan.progress(todos)]
    changed = {
        "revision": revision.number,
        "dialect": revision.dialect,
        "next_step_number": result.next_number,
        "total_steps": len(todos),
        "completed_steps": sum(step["status"] == "completed" for step in todos),
        "open_steps": sum(step["status"] not in FINISHED for step in todos),
        "working_steps": sum(step["status"] in WORKING for step in todos),
        "current_text": plan.current_text(todos)[:2000],
        "updated_at": revision.created_at,
        # An archived session that its agent writes to again is in use: it comes back.
        "archived_at": None,
        "trend": [*session.trend[1 - TREND_POINTS :], point],
    }
    if revision.author == Revision.Author.AGENT:
        changed |= {"rounds_since_todo": 0, "agent_revision": revision.number}
    if title:
        changed["title"] = title[:TITLE_MAX_CHARS]
    elif not session.title and default_title:
        changed["title"] = default_title[:TITLE_MAX_CHARS]
    for name, value in changed.items():
        setattr(session, name, value)
    return changed


def append(new: NewRevision) -> events.Frames:
    """Write the session's move and the revision, and the webhook deliveries of its
    events (in the same transaction); the frames that show it to watchers (to publish
    once committed). Raises Conflict (or, for a session created meanwhile,
    IntegrityError) when another writer got there first, or another call told the
    agent of an edit since it was read (see sql.session_update)."""
    session, revision = new.row.session, new.revision
    project = session.project
    hooks = webhooks.revision_events(
        project,
        created=session.pk is None,
        before=new.before,
        session=session,
        revision=revision,
        changes=new.result.changes,
    )
    summary = session_summary(session, now=revision.created_at)
    gone, come = steps.changed_steps(new.row.current.todos if new.row.current else [], revision.todos)
    updates_on_postgresql = session.pk is not None and connection.vendor == "postgresql"
    if updates_on_postgresql and not hooks and not gone and not come:
        # One statement, atomic without a transaction: one round trip.
        if not sql.advance_and_insert(session, new.changed, revision, new.told):
            raise Conflict()
    elif updates_on_postgresql:
        with transaction.atomic():
            if not sql.advance_and_insert(session, new.changed, revision, new.told):
                raise Conflict()
            steps.write_steps(session.pk, gone, come, revision.created_at)
            if hooks:
                webhooks.enqueue_revision(project, session, revision, new.result.changes, hooks, summary)
    else:
        with store.atomic_write():
            parent = session.parent
            if parent is not None and parent.pk is None:
                parent.save(force_insert=True)
                session.parent = parent
            if session.pk is None:
                session.save(force_insert=True)
            elif not sql.advance(session, new.changed, revision.number, new.told):
                raise Conflict()
            revision.session = session
            sql.insert(revision)
            steps.write_steps(session.pk, gone, come, revision.created_at)
            if hooks:
                webhooks.enqueue_revision(project, session, revision, new.result.changes, hooks, summary)
    new.row.current = revision
    return events.revision_frames(
        public_id=session.public_id,
        project_id=session.project_id,
        data=new.data,
        snapshot_text=answers.snapshot_text(new.data_json),
        summary=summary,
    )


@contextmanager
def locked(exclusive: bool = True) -> Iterator[None]:
    """Read, decide and write in one transaction holding the session's row (and, on
    SQLite, the write lock): for a writer that lost too often, and for a person's edit."""
    if not exclusive:
        yield
        return
    with store.atomic_write():
        yield
