"""Live events for programs: Server-Sent Events (`GET /api/v1/events`), fed by the
process's hub like the board's sockets.

A stream follows the token's project (every session's summary as it moves, and
sessions archived) or one session (its plan snapshots, state changes, people's
messages to the agent and questions for people). It starts with the current state of
what it follows: a session's snapshot, messages and questions; a project's sessions
that moved since the `Last-Event-ID` the client sends when it reconnects (every event
is a whole state, so "the current state of whatever moved" is what resuming means).
An event's id is the server's clock in microseconds when it was sent.

Like a socket, a stream keeps only what it has not sent yet, newest first: a slow
reader skips revisions (at most SNAPSHOT_BACKLOG wait per session) and never queues
without limit. Its viewer (the token) is checked again by the hub; a revoked token
ends the stream.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import orjson
from django.utils import timezone

from todoweb.live import events
from todoweb.live.access import Viewer
from todoweb.live.hub import CLOCK_SLACK, process_hub
from todoweb.models import Session
from todoweb.reads import current_data, messages_data, questions_data, session_summary
from todoweb.store.database import in_database_thread

# A comment line this often keeps proxies from closing an idle stream.
KEEPALIVE_EVERY = 15.0
# What EventSource waits before it reconnects (milliseconds).
RETRY_MS = 2000
# Snapshots of one session a stream holds unsent: older ones are skipped.
SNAPSHOT_BACKLOG = 4
# Frames a stream holds unsent at most (a project's summaries are one per session).
MAX_PENDING = 1000
# Sessions a project stream resumes with at most (the newest moved).
RESUME_LIMIT = 500

PROJECT_KINDS = frozenset({"session.summary", "session.archived"})
SESSION_KINDS = frozenset({"session.snapshot", "session.state", "session.messages", "session.questions"})


def event_id() -> str:
    return str(time.time_ns() // 1000)


def since_event(last_event_id: str | None) -> datetime | None:
    """The moment a `Last-Event-ID` names (None: absent or not ours)."""
    if not last_event_id or not last_event_id.isdigit() or len(last_event_id) > 20:
        return None
    try:
        return datetime.fromtimestamp(int(last_event_id) / 1_000_000, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return None


def encoded(kind: str, text: str) -> bytes:
    # The frame's text is one line of JSON (orjson and pydantic escape newlines).
    return f"id: {event_id()}\nevent: {kind}\ndata: {text}\n\n".encode()


class EventStream:
    """One client's stream: a watcher of the hub (see todoweb.live.hub.Watcher)."""

    def __init__(self, viewer: Viewer, *, project_id: int, session: str | None):
        self.viewer = viewer
        self.project_id = project_id
        self.session = session  # the followed session's public id (None: the whole project)
        self.kinds = SESSION_KINDS | {"session.archived"} if session else PROJECT_KINDS
        self.pending: OrderedDict[tuple[Any, ...], dict[str, Any]] = OrderedDict()
        self.sent_revisions: dict[str, int] = {}
        self.wake = asyncio.Event()
        self.held = False
        self.ended = False

    def groups(self) -> list[str]:
        # A session's stream watches its project too, for the session being archived.
        dashboard = events.dashboard_group(self.project_id)
        return [events.session_group(self.session), dashboard] if self.session else [dashboard]

    # --- the hub's side -------------------------------------------------------

    def offer(self, message: dict[str, Any]) -> bool:
        kind = message["kind"]
        session = message.get("session")
        if kind not in self.kinds or (self.session and session != self.session):
            return False
        revision = message.get("revision")
        if revision is not None and revision < self.sent_revisions.get(session, -1):
            return False  # older than what this stream showed
        if kind == "session.snapshot":
            self.pending[(kind, session, revision)] = message
            stale = [key for key in self.pending if key[0] == kind and key[2] <= revision - SNAPSHOT_BACKLOG]
            for key in stale:
                del self.pending[key]
        else:
            self.pending.pop((kind, session), None)
            self.pending[(kind, session)] = message
        while len(self.pending) > MAX_PENDING:
            self.pending.popitem(last=False)
        return True

    def wake_sender(self, newest_only: bool = False) -> None:
        if newest_only:
            snapshots = [key for key in self.pending if key[0] == "session.snapshot"]
            for key in snapshots[:-1]:
                del self.pending[key]
        self.wake.set()

    def hold(self) -> None:
        self.held = True

    def release(self) -> None:
        self.held = False
        self.wake.set()

    def lose_access(self, code: int) -> None:
        self.ended = True
        self.wake.set()

    # --- the client's side ----------------------------------------------------

    async def events(self, first: list[tuple[str, str]]) -> AsyncIterator[bytes]:
        """The stream's bytes: `first` (kind, text) events, then live ones until the
        client leaves or its access ends."""
        hub = process_hub()
        yield f"retry: {RETRY_MS}\n\n".encode()
        for kind, text in first:
            yield encoded(kind, text)
        try:
            while not self.ended:
                try:
                    async with asyncio.timeout(KEEPALIVE_EVERY):
                        await self.wake.wait()
                except TimeoutError:
                    yield b": keep-alive\n\n"
                    continue
                self.wake.clear()
                while self.pending and not self.held and not self.ended:
                    _, message = self.pending.popitem(last=False)
                    if message.get("revision") is not None:
                        self.sent_revisions[message["session"]] = message["revision"]
                    yield encoded(message["kind"], message["text"])
                    if message["kind"] == "session.archived" and self.session:
                        return
            yield encoded("stream.ended", '{"type": "stream.ended", "reason": "access_ended"}')
        finally:
            hub.dismiss(self)
            for group in self.groups():
                hub.unwatch(group, self)


async def open_stream(viewer: Viewer, *, project_id: int, session: Session | None, since: datetime | None):
    """Watch first, then read the current state (what commits in between still comes):
    the stream and the events it starts with."""
    stream = EventStream(viewer, project_id=project_id, session=session.public_id if session else None)
    hub = process_hub()
    for group in stream.groups():
        await hub.watch(group, stream)
    hub.admit(stream)
    if session is not None:
        first = await in_database_thread(session_state, session.pk)
    elif since is not None:
        first = await in_database_thread(moved_since, project_id, since - CLOCK_SLACK)
    else:
        first = []
    for kind, text in first:
        if kind == "session.snapshot":
            stream.sent_revisions[session.public_id] = orjson.loads(text)["revision"]
    return stream, first


def session_state(session_pk: int) -> list[tuple[str, str]]:
    session = Session.objects.with_current().select_related("project", "parent").get(pk=session_pk)
    snapshot = events.snapshot_event(current_data(session))
    said = events.SessionMessages(session=session.public_id, messages=messages_data(session))
    asked = events.SessionQuestions(session=session.public_id, questions=questions_data(session))
    return [(event.type, event.model_dump_json()) for event in (snapshot, said, asked)]


def moved_since(project_id: int, since: datetime) -> list[tuple[str, str]]:
    """Summaries of the project's sessions that moved since `since`, oldest first, and
    those archived since."""
    now = timezone.now()
    moved = Session.objects.filter(project_id=project_id, updated_at__gte=since, archived_at__isnull=True)
    rows = list(moved.select_related("project", "parent").order_by("-updated_at")[:RESUME_LIMIT])
    archived = Session.objects.filter(project_id=project_id, archived_at__gte=since).values_list("public_id", flat=True)
    first = [
        ("session.summary", events.SessionSummary(session=session_summary(row, now=now)).model_dump_json())
        for row in reversed(rows)
    ]
    return first + [("session.archived", events.SessionArchived(session=pid).model_dump_json()) for pid in archived]
