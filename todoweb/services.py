"""Writes. Every change to a session's plan goes through `session_record_call`:
one transaction, one lock on the session row, the next revision number, and the
live event sent after commit. Nothing else writes steps or revisions.
"""

from __future__ import annotations

import threading
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from . import dialects, events, plan, render
from .dialects.base import UNPARSED, InvalidInput, Outcome, Warning
from .envelopes import ToolCall
from .errors import ApiError
from .models import IdempotencyRecord, Project, Revision, Session, Step
from .selectors import last_revision, plan_data, session_summary


@dataclass
class Answer:
    body: dict[str, Any]
    replayed: bool = False


def session_get_or_create(*, project: Project, key: str, parent: Session | None = None) -> Session:
    # get_or_create retries the SELECT when a concurrent writer won the INSERT.
    session, _ = Session.objects.get_or_create(project=project, key=key, defaults={"parent": parent})
    return session


def session_record_call(
    *,
    project: Project,
    session_key: str,
    call: ToolCall,
    reply_style: str,
    idempotency_key: str | None = None,
    expected_revision: int | None = None,
    parent_key: str | None = None,
    default_title: str | None = None,
) -> Answer:
    """Run one tool call against a session; write a revision if the call changes the plan.

    `parent_key` names the session this one is a subagent of (created if needed, in
    the same transaction, so an invalid call leaves neither behind)."""
    try:
        dialect = dialects.resolve(call.tool, call.args)
    except dialects.UnknownTool as exc:
        raise ApiError(422, "unknown_tool", str(exc), details={"tool": call.tool}) from exc
    except InvalidInput as exc:
        raise ApiError(422, exc.code, exc.message, details=exc.details) from exc
    if (call.args is UNPARSED or not isinstance(call.args, dict)) and call.raw is not None:
        if not getattr(dialect, "HANDLES_RAW", False):
            raise ApiError(400, "invalid_json", "The arguments are not a JSON object")

    key = idempotency_key or call.call_id
    with write_lock(), transaction.atomic():
        # Inside the transaction, so that an invalid first call leaves no session behind.
        parent = session_get_or_create(project=project, key=parent_key) if parent_key else None
        session = session_get_or_create(project=project, key=session_key, parent=parent)
        # Serialises writers of this session (PostgreSQL row lock; on SQLite the
        # IMMEDIATE transaction already holds the database write lock).
        session = Session.objects.select_for_update(of=("self",)).select_related("project", "parent").get(pk=session.pk)
        if session.archived_at is not None:
            # An archived session that its agent writes to again is in use: it comes back.
            session.archived_at = None
        if key:
            record = IdempotencyRecord.objects.filter(session=session, key=key).first()
            if record is not None:
                if record.fingerprint != call.fingerprint():
                    raise ApiError(
                        422,
                        "idempotency_conflict",
                        f"Idempotency key '{key}' was already used with a different body",
                        details={"key": key},
                    )
                # The first answer, with its reply in the form this request used.
                replay = record.response | {"reply": call.reply(record.response["output"])}
                return Answer(replay, replayed=True)

        previous = last_revision(session)
        if expected_revision is not None and expected_revision != session.revision:
            raise ApiError(
                409,
                "revision_conflict",
                f"Expected revision {expected_revision}, but the session is at revision {session.revision}",
                details={"expected": expected_revision, "current": session.revision},
                data=plan_data(session, previous),
            )
        previous_todos = previous.todos if previous else []
        try:
            outcome = dialect.call(
                call.tool, call.args, plan.as_items(previous_todos), raw=call.raw, next_id=session.next_step_number
            )
            if outcome.items is not None:
                outcome.warnings = outcome.warnings + apply_policy(project, outcome)
        except InvalidInput as exc:
            status = 400 if exc.code == "invalid_json" else 422
            raise ApiError(status, exc.code, exc.message, details=exc.details) from exc

        if outcome.items is None:
            data = plan_data(session, previous)
            output = (
                outcome.native if reply_style == "native" else render.checklist(data, newly_dropped=[], wrote=False)
            )
            return Answer(answer_body(call, dialect.NAME, output, data | outcome.extra))

        now = timezone.now()
        number = session.revision + 1
        result = plan.reconcile(
            previous_todos,
            previous.dropped if previous else [],
            outcome.items,
            now=now,
            next_number=session.next_step_number,
            revision=number,
            removed=outcome.removed,
        )
        revision = Revision.objects.create(
            session=session,
            number=number,
            tool=call.tool,
            dialect=dialect.NAME,
            call_id=call.call_id or "",
            raw_input=call.raw if call.args is UNPARSED else call.args,
            title=(outcome.title or "")[:500],
            todos=result.todos,
            changes=result.changes,
            dropped=result.dropped,
            warnings=[w.as_dict() for w in outcome.warnings],
            created_at=now,
        )
        update_session(session, revision=revision, outcome=outcome, result=result, default_title=default_title)
        replace_steps(session, result.todos)

        data = plan_data(session, revision, now=now)
        if reply_style == "native":
            output = outcome.native
        else:
            output = render.checklist(data, newly_dropped=result.newly_dropped, wrote=True)
        body = answer_body(call, dialect.NAME, output, data | outcome.extra)
        if key:
            IdempotencyRecord.objects.create(session=session, key=key, fingerprint=call.fingerprint(), response=body)
        events.publish_on_commit(
            public_id=session.public_id,
            project_id=session.project_id,
            session_event=events.snapshot_event(data),
            summary=session_summary(session, now=now),
        )
    return Answer(body)


# SQLite lets one writer in at a time and makes the others sleep-and-retry with a
# growing back-off (p99 over a second under 8 writers). Queueing this process's
# writers on a lock first keeps them in order and the waits short.
_sqlite_writer = threading.Lock()


def write_lock() -> AbstractContextManager:
    return _sqlite_writer if connection.vendor == "sqlite" else nullcontext()


OWNER_MAX_CHARS = Step._meta.get_field("owner").max_length


def apply_policy(project: Project, outcome: Outcome) -> list[Warning]:
    """The project's limits on top of the dialect's own rules."""
    items = outcome.items or []
    max_items = min(project.max_items, 500)
    if len(items) > max_items:
        raise InvalidInput(
            f"Too many items: {len(items)}. This project allows at most {max_items}",
            details={"count": len(items), "max_items": max_items},
        )
    limit = project.max_content_chars
    for index, item in enumerate(items):
        for field in ("content", "active_form", "notes"):
            value = getattr(item, field)
            if value is not None and len(value) > limit:
                raise InvalidInput(
                    f"Item at index {index}: {field} is {len(value)} characters long; "
                    f"this project allows at most {limit}",
                    details={"index": index, "field": field, "max_content_chars": limit},
                )
        if item.owner is not None and len(item.owner) > OWNER_MAX_CHARS:
            raise InvalidInput(
                f"Item at index {index}: owner is longer than {OWNER_MAX_CHARS} characters",
                details={"index": index, "field": "owner"},
            )
    in_progress = [index for index, item in enumerate(items) if item.status == "in_progress"]
    if len(in_progress) <= 1 or project.single_in_progress == Project.SingleInProgress.OFF:
        return []
    where = ", ".join(str(index) for index in in_progress)
    if project.single_in_progress == Project.SingleInProgress.REJECT:
        raise InvalidInput(
            f"Only one step can be in progress at a time: {len(in_progress)} are (at index {where})",
            details={"indexes": in_progress},
        )
    return [
        Warning(
            "multiple_in_progress",
            f"{len(in_progress)} steps are in progress (at index {where}); keep exactly one step in progress.",
        )
    ]


def update_session(
    session: Session, *, revision: Revision, outcome: Outcome, result: plan.Reconciled, default_title: str | None
) -> None:
    todos = result.todos
    session.revision = revision.number
    session.dialect = revision.dialect
    session.next_step_number = result.next_number
    session.total_steps = len(todos)
    session.completed_steps = sum(step["status"] == "completed" for step in todos)
    session.open_steps = sum(step["status"] not in ("completed", "cancelled") for step in todos)
    session.current_text = plan.current_text(todos)[:2000]
    session.rounds_since_todo = 0
    session.updated_at = revision.created_at
    if outcome.title:
        session.title = outcome.title[:500]
    elif not session.title and default_title:
        session.title = default_title[:500]
    session.save()


def replace_steps(session: Session, todos: list[dict[str, Any]]) -> None:
    Step.objects.filter(session=session).delete()
    Step.objects.bulk_create(
        Step(
            session=session,
            position=step["position"],
            step_id=step["id"][:200],
            content=step["content"],
            active_form=step["active_form"],
            notes=step["notes"],
            status=step["status"],
            priority=step["priority"],
            owner=step["owner"],
            blocked_by=step["blocked_by"],
            first_seen_at=plan.parse_iso(step["first_seen_at"]),
            started_at=plan.parse_iso(step["started_at"]),
            completed_at=plan.parse_iso(step["completed_at"]),
            reopened=step["reopened"],
        )
        for step in todos
    )


def answer_body(call: ToolCall, dialect: str, output: str, data: dict[str, Any]) -> dict[str, Any]:
    return {
        "ok": True,
        "tool": call.tool,
        "dialect": dialect,
        "output": output,
        "reply": call.reply(output),
        "data": data,
    }


def session_change(session: Session, *, title: str | None = None, closed: bool | None = None) -> Session:
    """PATCH: rename, close or reopen. Sends the new state to watchers."""
    with transaction.atomic():
        session = Session.objects.select_for_update(of=("self",)).select_related("project", "parent").get(pk=session.pk)
        if title is not None:
            session.title = title
        if closed is not None:
            session.closed_at = (session.closed_at or timezone.now()) if closed else None
        session.save(update_fields=["title", "closed_at"])
        publish_state(session)
    return session


def session_archive(session: Session) -> None:
    """Hide a session (kept until pruned): dashboards drop it, share links stop working."""
    with transaction.atomic():
        archived = Session.objects.filter(pk=session.pk, archived_at__isnull=True).update(archived_at=timezone.now())
        if archived:
            events.publish_archived(public_id=session.public_id, project_id=session.project_id)


def publish_state(session: Session) -> None:
    events.publish_on_commit(
        public_id=session.public_id,
        project_id=session.project_id,
        session_event=events.SessionState(
            session=session.public_id, revision=session.revision, state=session.state, title=session.title
        ),
        summary=session_summary(session),
    )
