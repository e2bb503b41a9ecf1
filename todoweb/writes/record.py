"""An agent's tool call, in named steps: resolve the dialect, replay a call seen before,
run the dialect, append the revision (writes.revisions), answer. The tool endpoint,
the hooks and the MCP server all come here (web.recording).

Concurrency. The dialect runs outside any lock, on the session as it was read; the
write is a compare-and-set (writes.revisions). A writer that loses the race reads
again and runs again; after OPTIMISTIC_ATTEMPTS losses it reads, runs and writes in
one transaction holding the row (and, on SQLite, the lock), so it cannot starve. A
slow call, or a long fuzzy match, never holds up the writes of another session.

Idempotency. A call's key (its tool call id or Idempotency-Key) is stored on the
revision it wrote, with the answer: a repeat finds both in the same read as the
session, and is answered from there, writing nothing.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import orjson
from django.db import IntegrityError
from django.utils import timezone

from todoweb import dialects, plan, store
from todoweb.calls import answers
from todoweb.calls.answers import Answer
from todoweb.calls.envelopes import ToolCall
from todoweb.calls.errors import IdempotencyConflict, InvalidInput, InvalidJson, RevisionConflict
from todoweb.calls.jsonio import UNPARSED
from todoweb.dialects.base import Dialect, Outcome
from todoweb.live import events
from todoweb.models import Project, Session
from todoweb.plan import edits, text
from todoweb.plan.merge import merge
from todoweb.reads import plan_data
from todoweb.store import sql
from todoweb.store.sql import SessionRow
from todoweb.webhooks import enqueue as webhooks
from todoweb.writes import messages, revisions
from todoweb.writes.policy import apply_policy, check_storable
from todoweb.writes.revisions import Change, Conflict

# Optimistic tries before a writer takes the lock for its whole call.
OPTIMISTIC_ATTEMPTS = 3


@dataclass(frozen=True)
class CallRequest:
    """One tool call to record, and how to answer it."""

    session_key: str
    call: ToolCall
    reply_style: str | None = None  # checklist or native; None: the project's
    idempotency_key: str | None = None  # an Idempotency-Key header; else the call's id
    expected_revision: int | None = None  # If-Match: the call applies only to this revision
    parent_key: str | None = None  # the session this one is a subagent of (created if needed)
    default_title: str | None = None  # the session's title if it has none (a hook's folder)
    workdir: str | None = None  # the folder the agent works in, as its hook says (cwd)
    branch: str | None = None  # the git branch a hook names (X-Todoweb-Branch)
    route: str = "tool call"  # how the call came (tool endpoint, MCP, a hook), as the board says what told the agent

    @property
    def key(self) -> str | None:
        return self.idempotency_key or self.call.call_id


@dataclass(frozen=True)
class Recorded:
    """What a call came to: its answer, and the live frames its caller publishes once
    the write is committed (nothing to publish for a read or a replay)."""

    answer: Answer
    frames: events.Frames


def record(project: Project, request: CallRequest, row: SessionRow | None) -> Recorded:
    """Run one tool call against its session; append a revision if it changes the plan.
    `row` is the session as the caller read it (sql.session_row, or
    sql.token_and_session with the token; None: it does not exist yet)."""
    dialect = resolve_dialect(request.call)
    for attempt in itertools.count():
        exclusive = attempt >= OPTIMISTIC_ATTEMPTS
        try:
            with revisions.locked(exclusive):
                if attempt:
                    row = sql.session_row(
                        project, request.session_key, idempotency_key=request.key, for_update=exclusive
                    )
                return record_once(project, request, dialect, row)
        except (Conflict, IntegrityError):
            # Another writer moved the session on, or created it, first: read again.
            continue
    raise AssertionError("unreachable")


def record_and_publish(project: Project, request: CallRequest) -> Answer:
    """`record` for synchronous code (scripts, commands): reads the session first, and
    publishes the frames once the write commits."""
    row = sql.session_row(project, request.session_key, idempotency_key=request.key)
    recorded = record(project, request, row)
    events.publish_on_commit(recorded.frames)
    return recorded.answer


def resolve_dialect(call: ToolCall) -> Dialect:
    """The dialect for the call, by its tool name and (where names are shared) its input."""
    dialect = dialects.resolve(call.tool, call.args, call.dialect)
    reads_raw = getattr(dialect, "HANDLES_RAW", False) and call.raw is not None
    if call.args is UNPARSED and not reads_raw:
        raise call.args_problem or InvalidJson("The arguments are not valid JSON")
    if call.raw is not None and not isinstance(call.args, dict) and not reads_raw:
        raise InvalidJson("The arguments are not a JSON object")
    return dialect


def record_once(project: Project, request: CallRequest, dialect: Dialect, row: SessionRow | None) -> Recorded:
    """One try. Raises Conflict or IntegrityError when another writer got there first."""
    call, key = request.call, request.key
    if row is not None and key and row.replay is not None:
        return Recorded(replay(row, call, key), [])
    if row is None:
        row = new_session(project, request.session_key, parent_key=request.parent_key)
    session = row.session
    if request.expected_revision is not None and request.expected_revision != session.revision:
        raise RevisionConflict(
            f"Expected revision {request.expected_revision}, but the session is at revision {session.revision}",
            details={"expected": request.expected_revision, "current": session.revision},
            data=plan_data(session, row.current),
        )
    outcome = run_dialect(dialect, call, row, project)
    seen = messages.seen_before_edits(session)
    unseen = messages.untold(row, seen)
    reply_style = request.reply_style or project.reply_style
    if outcome.items is None:
        return read_answer(row, request, dialect, outcome, reply_style, unseen)

    previous = row.current.todos if row.current else []
    items, merged = outcome.items, False
    if seen is not None and not outcome.patched:
        # A whole list made without seeing people's edits: merged with them, not undoing them.
        items, merged = merge(seen, previous, outcome.items), True
    change = Change(
        items=items,
        tool=call.tool,
        dialect=dialect.NAME,
        raw_input=call.raw if call.args is UNPARSED else call.args,
        call_id=call.call_id or "",
        # The caller's title (calls.titles) before the one the tool's input carries.
        title=call.title or outcome.title,
        default_title=request.default_title,
        workdir=request.workdir,
        branch=request.branch,
        warnings=outcome.warnings,
        removed=outcome.removed,
        tells=unseen is not None,
        idempotency_key=key,
        fingerprint=call.fingerprint() if key else "",
    )
    told = session.told_message
    new = revisions.new_revision(row, change, now=timezone.now())
    if reply_style == "native" and not merged:
        output = outcome.native
    else:
        # After a merge the model reads the plan as merged, whatever its tool would say.
        output = text.checklist(new.data, newly_dropped=new.result.newly_dropped, wrote=True)
    notice = unseen.notice(previous, dialect) if unseen else None
    answer = answers.answer(call, dialect.NAME, output, new.data_json, outcome.extra, notice=notice)
    new.revision.response = sql.Serialised(answer.body.decode()) if key else None
    frames = revisions.append(new)
    if unseen:
        frames += messages.mark_told(session, after=told, upto=session.last_message, route=request.route)
    elif seen is not None:
        # The first write of the agent's after people's edits (told already): they are kept in it.
        frames += messages.messages_frames(session)
    return Recorded(answer, frames)


def new_session(project: Project, session_key: str, *, parent_key: str | None) -> SessionRow:
    """A session not written yet (nor its parent, if new): the write creates them."""
    parent = None
    if parent_key:
        parent = Session.objects.filter(project=project, key=parent_key).first() or Session(
            project=project, key=parent_key
        )
    return SessionRow(Session(project=project, key=session_key, parent=parent))


def replay(row: SessionRow, call: ToolCall, key: str) -> Answer:
    if row.replay.fingerprint != call.fingerprint():
        raise IdempotencyConflict(
            f"Idempotency key '{key}' was already used with a different body", details={"key": key}
        )
    return answers.replayed(call, row.replay.response)


def run_dialect(dialect: Dialect, call: ToolCall, row: SessionRow, project: Project) -> Outcome:
    """The dialect's decision on the call, then the project's policy and what storage takes."""
    current = plan.as_items(row.current.todos if row.current else [])
    next_id = row.session.next_step_number
    try:
        outcome = dialect.call(call.tool, call.args, current, raw=call.raw, next_id=next_id)
    except InvalidInput as error:
        hint = None if call.args is UNPARSED else dialects.look_alike_hint(call.tool, call.args, current, next_id)
        if hint:
            error.add(hint)
        raise
    if outcome.items is not None:
        outcome.warnings = outcome.warnings + apply_policy(project, outcome.items)
        if call.args is UNPARSED:
            check_storable(outcome.items, outcome.title)
    return outcome


def read_answer(
    row: SessionRow,
    request: CallRequest,
    dialect: Dialect,
    outcome: Outcome,
    reply_style: str,
    unseen: edits.Unseen | None,
) -> Recorded:
    """A call that reads: nothing written, but the session exists from now on; it tells
    the agent what people told it, unless another call does."""
    session = row.session
    if session.pk is None:
        session = get_or_create_session(session.project, session.key)
    data = plan_data(session, row.current)
    output = outcome.native if reply_style == "native" else text.checklist(data, newly_dropped=[], wrote=False)
    frames = messages.tell(row, request.route, shows_plan=True) if unseen else None
    notice = unseen.notice(data["todos"], dialect) if unseen and frames is not None else None
    answer = answers.answer(request.call, dialect.NAME, output, orjson.dumps(data), outcome.extra, notice=notice)
    return Recorded(answer, frames or [])


def get_or_create_session(project: Project, key: str) -> Session:
    """The session `key` of the project, created empty if it does not exist yet (by a
    read, or an agent turn reported before any write)."""
    session = Session.objects.filter(project=project, key=key).first()
    if session is None:
        with store.atomic_write():
            # get_or_create retries the SELECT when a concurrent writer won the INSERT.
            session, created = Session.objects.get_or_create(project=project, key=key)
            if created:
                session.project = project
                webhooks.enqueue_created(project, session)
    session.project = project
    return session
