"""Writes. Every change to a session's plan goes through `session_record_call`, in
named steps: resolve the dialect, replay a call seen before, run the dialect, write
the revision, answer. Nothing else writes revisions.

Concurrency. The dialect runs outside any lock, on the session as it was read; the
write then moves the session from revision N to N+1 only if it is still at N (a
compare-and-set on its row, which also locks it) and inserts revision N+1. A writer
that loses the race reads again and runs again; after OPTIMISTIC_ATTEMPTS losses it
reads, runs and writes in one transaction holding the row (and, on SQLite, the
lock), so it cannot starve. Every writer locks the session row before inserting, so
the two kinds never deadlock. The lock is held for database work only (two short
statements): a slow call, or a long fuzzy match, never holds up the writes of another
session, even on SQLite, where one writer at a time has the whole database.

Idempotency. A call's key (its tool call id or Idempotency-Key) is stored on the
revision it wrote, with the answer: a repeat finds both in the same read as the
session, and is answered from there, writing nothing.
"""

from __future__ import annotations

import itertools
import threading
from contextlib import AbstractContextManager, contextmanager, nullcontext
from datetime import datetime
from types import ModuleType
from typing import Any

import orjson
from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.utils import timezone
from pydantic import ValidationError as PydanticError

from . import answers, dialects, edits, events, jsonio, plan, queries, render
from .answers import Answer
from .dialects.base import UNPARSED, Outcome, pydantic_errors, validation_text
from .envelopes import ToolCall
from .errors import IdempotencyConflict, InvalidInput, InvalidJson, RevisionConflict
from .models import Project, Revision, Session
from .selectors import current_data, plan_data, session_summary
from .steps import FINISHED, WORKING, Warning

# Optimistic tries before a writer takes the lock for its whole call.
OPTIMISTIC_ATTEMPTS = 3
TITLE_MAX_CHARS = Session._meta.get_field("title").max_length
OWNER_MAX_CHARS = 200
# Points kept for the dashboard's progress-over-time line.
TREND_POINTS = 32


class Conflict(Exception):
    """The session moved on between this writer's read and its write."""


# `session_record_call` reads the session itself unless its caller read it already.
NOT_READ: Any = object()


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
    session: Session | None = NOT_READ,
) -> Answer:
    """Run one tool call against a session; write a revision if the call changes the plan.

    `parent_key` names the session this one is a subagent of (created if needed, in
    the same transaction, so that an invalid call leaves neither behind). `session`
    is the session as the caller read it with `queries.token_and_session` (None: it
    does not exist yet), for the first try."""
    dialect = resolve_dialect(call)
    key = idempotency_key or call.call_id
    for attempt in itertools.count():
        exclusive = attempt >= OPTIMISTIC_ATTEMPTS
        try:
            with whole_call_locked(exclusive):
                return record_once(
                    project=project,
                    session_key=session_key,
                    call=call,
                    dialect=dialect,
                    key=key,
                    reply_style=reply_style,
                    expected_revision=expected_revision,
                    parent_key=parent_key,
                    default_title=default_title,
                    exclusive=exclusive,
                    session=session if attempt == 0 else NOT_READ,
                )
        except (Conflict, IntegrityError):
            # Another writer moved the session on, or created it, first: read again.
            continue
    raise AssertionError("unreachable")


def resolve_dialect(call: ToolCall) -> ModuleType:
    """The dialect for the call, by its tool name and (where names are shared) its input."""
    dialect = dialects.resolve(call.tool, call.args, call.dialect)
    reads_raw = getattr(dialect, "HANDLES_RAW", False) and call.raw is not None
    if call.args is UNPARSED and not reads_raw:
        raise call.args_problem or InvalidJson("The arguments are not valid JSON")
    if call.raw is not None and not isinstance(call.args, dict) and not reads_raw:
        raise InvalidJson("The arguments are not a JSON object")
    return dialect


def record_once(
    *,
    project: Project,
    session_key: str,
    call: ToolCall,
    dialect: ModuleType,
    key: str | None,
    reply_style: str,
    expected_revision: int | None,
    parent_key: str | None,
    default_title: str | None,
    exclusive: bool,
    session: Session | None,
) -> Answer:
    """One try. Raises IntegrityError when another writer got there first."""
    if session is NOT_READ:
        session = queries.session_for_call(project, session_key, idempotency_key=key, for_update=exclusive)
    if session is not None and key and session.replay_fingerprint is not None:
        return replay(session, call, key)
    if session is None:
        session = new_session(project, session_key, parent_key=parent_key)
    if expected_revision is not None and expected_revision != session.revision:
        raise RevisionConflict(
            f"Expected revision {expected_revision}, but the session is at revision {session.revision}",
            details={"expected": expected_revision, "current": session.revision},
            data=current_data(session),
        )
    outcome = run_dialect(dialect, call, session, project)
    unseen = unseen_edits(session)
    if outcome.items is None:
        return read_answer(session, call, dialect, outcome, reply_style, unseen)

    now = timezone.now()
    previous = session.current
    result = plan.reconcile(
        previous.todos if previous else [],
        previous.dropped if previous else [],
        outcome.items,
        now=now,
        next_number=session.next_step_number,
        revision=session.revision + 1,
        removed=outcome.removed,
        aliases=unseen.aliases() if unseen else None,
    )
    undone = edits.undone(unseen.edits, result.todos) if unseen else []
    if undone:
        outcome.warnings = [*outcome.warnings, edits.undo_warning(session.revision, undone)]
    revision = Revision(
        session=session,
        number=session.revision + 1,
        tool=call.tool,
        dialect=dialect.NAME,
        call_id=call.call_id or "",
        raw_input=call.raw if call.args is UNPARSED else call.args,
        title=(outcome.title or "")[:TITLE_MAX_CHARS],
        todos=result.todos,
        changes=result.changes,
        dropped=result.dropped,
        warnings=[w.as_dict() for w in outcome.warnings],
        created_at=now,
        idempotency_key=key,
        fingerprint=call.fingerprint() if key else "",
    )
    changed = advance_session(
        session, revision=revision, result=result, title=outcome.title, default_title=default_title
    )
    data = plan_data(session, revision, now=now)
    if reply_style == "native":
        output = outcome.native
    else:
        output = render.checklist(data, newly_dropped=result.newly_dropped, wrote=True)
    notice = unseen.notice(dialect, previous.todos) if unseen else None
    if notice:
        output = f"{notice}\n\n{output}"
    data_json = orjson.dumps(data)
    written = answers.answer(call, dialect.NAME, output, data_json, outcome.extra)
    written.notice = notice
    revision.response = queries.Serialised(written.body.decode()) if key else None
    write_revision(session, revision, changed)
    publish_revision(session, data, data_json, now=now)
    return written


def new_session(project: Project, session_key: str, *, parent_key: str | None) -> Session:
    """A session not written yet (nor its parent, if new): the write creates them."""
    parent = None
    if parent_key:
        parent = Session.objects.filter(project=project, key=parent_key).first() or Session(
            project=project, key=parent_key
        )
    session = Session(project=project, key=session_key, parent=parent)
    session.current = session.replay_fingerprint = session.replay_response = None
    return session


def replay(session: Session, call: ToolCall, key: str) -> Answer:
    if session.replay_fingerprint != call.fingerprint():
        raise IdempotencyConflict(
            f"Idempotency key '{key}' was already used with a different body", details={"key": key}
        )
    return answers.replayed(call, session.replay_response)


def run_dialect(dialect: ModuleType, call: ToolCall, session: Session, project: Project) -> Outcome:
    """The dialect's decision on the call, then the project's policy and what storage takes."""
    current = session.current.todos if session.current else []
    outcome = dialect.call(call.tool, call.args, plan.as_items(current), raw=call.raw, next_id=session.next_step_number)
    if outcome.items is not None:
        outcome.warnings = outcome.warnings + apply_policy(project, outcome)
        if call.args is UNPARSED:
            check_storable(outcome)
    return outcome


def unseen_edits(session: Session) -> edits.Unseen | None:
    """People's changes since the agent last wrote or was told: every revision after
    `agent_revision` is a person's edit."""
    if session.pk is None or session.agent_revision >= session.revision:
        return None
    rows = Revision.objects.filter(
        session=session, number__gte=session.agent_revision, number__lte=session.revision
    ).values_list("number", "todos", "raw_input")
    seen = next((todos for number, todos, _ in rows if number == session.agent_revision), [])
    notes = [raw["note"] for number, _, raw in rows if number > session.agent_revision and raw and raw.get("note")]
    return edits.Unseen(edits.between(seen, session.current.todos), notes)


def read_answer(
    session: Session,
    call: ToolCall,
    dialect: ModuleType,
    outcome: Outcome,
    reply_style: str,
    unseen: edits.Unseen | None,
) -> Answer:
    """A call that reads: nothing written, but the session exists from now on."""
    if session.pk is None:
        session = session_get_or_create(project=session.project, key=session.key)
    data = current_data(session)
    output = outcome.native if reply_style == "native" else render.checklist(data, newly_dropped=[], wrote=False)
    notice = unseen.notice(dialect, data["todos"]) if unseen else None
    if notice:
        output = f"{notice}\n\n{output}"
        # Told once: the next call starts from here.
        Session.objects.filter(pk=session.pk, agent_revision__lt=session.revision).update(
            agent_revision=session.revision
        )
    read = answers.answer(call, dialect.NAME, output, orjson.dumps(data), outcome.extra)
    read.notice = notice
    return read


def advance_session(
    session: Session,
    *,
    revision: Revision,
    result: plan.Reconciled,
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
    for field, value in changed.items():
        setattr(session, field, value)
    return changed


def write_revision(session: Session, revision: Revision, changed: dict[str, Any]) -> None:
    """Move the session to the new revision and insert it. Raises Conflict (or, for a
    session created meanwhile, IntegrityError) when another writer got there first."""
    if connection.vendor == "postgresql" and session.pk is not None:
        if not queries.advance_and_insert(session, changed, revision):
            raise Conflict()
        session.current = revision
        return
    with write_lock(), transaction.atomic():
        parent = session.parent
        if parent is not None and parent.pk is None:
            parent.save(force_insert=True)
            session.parent = parent
        if session.pk is None:
            session.created_at = revision.created_at
            session.save(force_insert=True)
        elif not queries.advance(session, changed, revision.number):
            raise Conflict()
        revision.session = session
        queries.insert(revision)
    session.current = revision


# SQLite lets one writer in at a time and makes the others sleep-and-retry with a
# growing back-off (p99 over a second under 8 writers). Queueing this process's
# writers on a lock first keeps them in order and the waits short. Reentrant: a
# writer that holds it for its whole call writes under it too.
_sqlite_writer = threading.RLock()


def write_lock() -> AbstractContextManager:
    return _sqlite_writer if connection.vendor == "sqlite" else nullcontext()


@contextmanager
def whole_call_locked(exclusive: bool):
    """For a writer that lost too often: read, run and write in one locked transaction."""
    if not exclusive:
        yield
        return
    with write_lock(), transaction.atomic():
        yield


def apply_policy(project: Project, outcome: Outcome) -> list[Warning]:
    """The project's limits on top of the dialect's own rules."""
    items = outcome.items or []
    max_items = min(project.max_items, settings.TODOWEB_MAX_ITEMS_CAP)
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
        if len(item.blocked_by) > max_items:
            # Blockers accumulate over calls (TaskUpdate's addBlockedBy): cap what a step keeps.
            raise InvalidInput(
                f"Item at index {index}: blocked by {len(item.blocked_by)} steps; this project allows at most {max_items}",
                details={"index": index, "field": "blocked_by", "max_items": max_items},
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


def check_storable(outcome: Outcome) -> None:
    """Text a tool read with its own parser (Kimi's, Codex's) may hold what no database
    stores; text that came through jsonio.parse was checked there."""
    texts = [outcome.title]
    for item in outcome.items or []:
        texts += [item.content, item.id, item.active_form, item.notes, item.owner, *item.blocked_by]
    try:
        jsonio.check([text for text in texts if text is not None])
    except ValueError as exc:
        raise InvalidInput(str(exc)) from None


def session_get_or_create(*, project: Project, key: str, parent: Session | None = None) -> Session:
    # get_or_create retries the SELECT when a concurrent writer won the INSERT.
    session, _ = Session.objects.with_current().get_or_create(project=project, key=key, defaults={"parent": parent})
    session.project = project
    if "current_number" not in session.__dict__:
        session.current = None  # created just now: no revision yet
    return session


def session_change(session: Session, *, title: str | None = None, closed: bool | None = None) -> Session:
    """PATCH: rename, close or reopen. Sends the new state to watchers."""
    with transaction.atomic():
        session = (
            Session.objects.with_current()
            .select_for_update(of=("self",))
            .select_related("project", "parent")
            .get(pk=session.pk)
        )
        if title is not None:
            session.title = title
        if closed is not None:
            session.closed_at = (session.closed_at or timezone.now()) if closed else None
        session.save(update_fields=["title", "closed_at"])
        publish_state(session)
    return session


def session_edit(
    session: Session, *, todos: list[dict[str, Any]], note: str | None, if_match: int, user: Any = None
) -> dict[str, Any]:
    """A person's edit of the plan (SPEC §7): the whole list as they want it, made on
    revision `if_match`. Writes a revision marked `author: user`, sends it to watchers,
    and returns its data; the agent is told on its next call (see `unseen_edits`)."""
    try:
        edit = edits.PlanEdit.model_validate({"todos": todos, "note": note})
    except PydanticError as exc:
        raise InvalidInput(validation_text(exc), details=pydantic_errors(exc)) from None
    project = session.project
    items = [step.as_item() for step in edit.todos]
    check_storable(Outcome(native="", items=items, title=edit.note))
    apply_policy(project, Outcome(native="", items=items))
    with write_lock(), transaction.atomic():
        session = queries.session_for_call(project, session.key, idempotency_key=None, for_update=True)
        if session.revision != if_match:
            raise RevisionConflict(
                f"The plan changed while you were editing: you edited revision {if_match}, "
                f"the session is at revision {session.revision}",
                details={"expected": if_match, "current": session.revision},
                data=current_data(session),
            )
        now = timezone.now()
        previous = session.current
        kept = {item.id for item in items}
        result = plan.reconcile(
            previous.todos if previous else [],
            previous.dropped if previous else [],
            items,
            now=now,
            next_number=session.next_step_number,
            revision=session.revision + 1,
            # A step the person took out is not work the agent lost: not "dropped".
            removed=[step["id"] for step in (previous.todos if previous else []) if step["id"] not in kept],
        )
        revision = Revision(
            session=session,
            number=session.revision + 1,
            tool="edit",
            dialect=session.dialect,
            raw_input={**edit.model_dump(mode="json", exclude_none=True), "user": getattr(user, "username", None)},
            todos=result.todos,
            changes=result.changes,
            dropped=result.dropped,
            author=Revision.Author.USER,
            created_at=now,
        )
        changed = advance_session(session, revision=revision, result=result)
        write_revision(session, revision, changed)
        data = plan_data(session, revision, now=now)
        publish_revision(session, data, orjson.dumps(data), now=now)
    return data


def session_archive(session: Session) -> None:
    """Hide a session (kept until pruned): dashboards drop it, share links stop working."""
    with transaction.atomic():
        archived = Session.objects.filter(pk=session.pk, archived_at__isnull=True).update(archived_at=timezone.now())
        if archived:
            events.publish_archived(public_id=session.public_id, project_id=session.project_id)


def publish_revision(session: Session, data: dict[str, Any], data_json: bytes, *, now: datetime) -> None:
    """A new revision to its watchers and dashboards, once committed: the snapshot is
    `data` (serialised already as `data_json`)."""
    events.publish_on_commit(
        public_id=session.public_id,
        project_id=session.project_id,
        session_event=events.SessionSnapshot.model_construct(**data),
        session_text=answers.snapshot_text(data_json),
        summary=session_summary(session, now=now),
    )


def publish_state(session: Session) -> None:
    events.publish_on_commit(
        public_id=session.public_id,
        project_id=session.project_id,
        session_event=events.SessionState(
            session=session.public_id, revision=session.revision, state=session.state, title=session.title
        ),
        summary=session_summary(session),
    )
