"""The deliveries an event makes: one per endpoint that wants it, written in the
transaction of the write that caused the event (a write that rolls back sends nothing;
one that commits cannot lose its deliveries). The write inserts the delivery rows
only, in one statement; the worker queues each one's task after the write, when it
claims it (see worker.first_task), so an agent's write does not wait on the task queue.

A project's endpoints are cached per process under the project's `webhook_version`,
which every write reads with its token: a project that never had an endpoint costs
one integer comparison per write, and one with endpoints a dictionary lookup, until
an endpoint changes (on any process) and the next write reads them again.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import orjson
from django.db import transaction
from django.db.models import F

from todoweb.models import Project, Session, WebhookDelivery, WebhookEndpoint
from todoweb.store import sql
from todoweb.webhooks import events


@dataclass(frozen=True)
class Target:
    """An enabled endpoint as the write path needs it."""

    id: int
    events: frozenset[str]
    created_at: datetime


_cache: dict[int, tuple[int, tuple[Target, ...]]] = {}
_cache_lock = threading.Lock()


def targets(project: Project) -> tuple[Target, ...]:
    """The project's enabled endpoints (none without a query when it never had any)."""
    version = project.webhook_version
    if not version:
        return ()
    cached = _cache.get(project.pk)
    if cached is not None and cached[0] == version:
        return cached[1]
    rows = WebhookEndpoint.objects.filter(project_id=project.pk, disabled_at__isnull=True).values_list(
        "id", "events", "created_at"
    )
    found = tuple(Target(pk, frozenset(wanted), created_at) for pk, wanted, created_at in rows)
    with _cache_lock:
        _cache[project.pk] = (version, found)
    return found


def wanted(project: Project, candidates: Iterable[str]) -> list[str]:
    """Those of `candidates` some endpoint of the project wants."""
    found = targets(project)
    if not found:
        return []
    return [event for event in candidates if any(event in target.events for target in found)]


def changed(project_id: int) -> None:
    """An endpoint of the project was made, changed or removed: every process reads
    them again on the project's next write."""
    Project.objects.filter(pk=project_id).update(webhook_version=F("webhook_version") + 1)


def new_message_id() -> str:
    """`msg_`, the time in hex, then 72 random bits: new ids sort last, so that each
    event's rows are added to the same end of the unique index rather than to random
    pages of it (which made every event's commit write more pages as the log grew)."""
    return f"msg_{time.time_ns():016x}{secrets.token_urlsafe(9)}"


def enqueue(
    project: Project,
    session: Session | None,
    event: str,
    data: dict[str, Any],
    *,
    dedupe_key: str | None,
    at: datetime,
    only: Iterable[Target] | None = None,
) -> int:
    """The deliveries of one event, in one INSERT (their tasks are the worker's to
    queue): call it inside the transaction of the write that caused the event. `only`:
    these endpoints (else every enabled one that wants the event). How many."""
    from todoweb.webhooks.worker import wake

    chosen = [target for target in (targets(project) if only is None else only) if event in target.events]
    if not chosen:
        return 0
    payload = sql.Serialised(orjson.dumps(events.body(event, at, data)).decode())  # encoded once for all
    rows = [
        {
            "endpoint_id": target.id,
            "event": event,
            "message_id": new_message_id(),
            "dedupe_key": dedupe_key,
            "session_id": session.pk if session is not None else None,
            "payload": payload,
            "created_at": at,
            "next_attempt_at": at,
        }
        for target in chosen
    ]
    sql.insert_rows(WebhookDelivery, rows)
    transaction.on_commit(wake)
    return len(rows)


def session_data(summary: dict[str, Any], revision: int, **extra: Any) -> dict[str, Any]:
    return {"session": summary, "revision": revision, **extra}


def revision_events(
    project: Project,
    *,
    created: bool,
    before: tuple[int, int, int],
    session: Session,
    revision: Any,
    changes: list[dict[str, Any]],
) -> list[str]:
    """The events of a revision that some endpoint of the project wants (usually none,
    with no query)."""
    if not project.webhook_version:
        return []
    after = (session.total_steps, session.open_steps, session.working_steps)
    found = events.revision_events(
        created=created, before=before, after=after, by_person=revision.author == "user", changes=changes
    )
    return wanted(project, found) if found else []


def enqueue_revision(
    project: Project,
    session: Session,
    revision: Any,
    changes: list[dict[str, Any]],
    found: list[str],
    summary: dict[str, Any],
) -> None:
    """The deliveries of a revision's events (`revision_events`), in its transaction."""
    for event in found:
        extra: dict[str, Any] = {}
        if event == events.SESSION_FAILED:
            extra["steps"] = events.failed_steps(revision.todos)
        elif event == events.STEP_FAILED:
            extra["steps"] = events.failed_steps(revision.todos, changes)
        elif event == events.PLAN_EDITED:
            raw = revision.raw_input if isinstance(revision.raw_input, dict) else {}
            extra |= {"edited_by": raw.get("user"), "note": raw.get("note")}
        key = f"{event}:{session.pk}" if event == events.SESSION_CREATED else f"{event}:{session.pk}:{revision.number}"
        data = session_data(summary, revision.number, **extra)
        enqueue(project, session, event, data, dedupe_key=key, at=revision.created_at)


def enqueue_created(project: Project, session: Session) -> None:
    """session.created for a session made empty (by a read or a hook), in its transaction."""
    if wanted(project, [events.SESSION_CREATED]):
        from todoweb.reads import session_summary

        data = session_data(session_summary(session, now=session.created_at), session.revision)
        enqueue(
            project,
            session,
            events.SESSION_CREATED,
            data,
            dedupe_key=f"{events.SESSION_CREATED}:{session.pk}",
            at=session.created_at,
        )
