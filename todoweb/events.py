"""Live events: typed payloads, their group names, and publishing after commit.

Every event is serialised once, where it is published, into a *frame*: the text to
send to browsers plus the few fields that route it (session, revision, state). A
frame crosses processes through the channel layer once per process and is handed to
every socket as the same text (todoweb.live); nobody downstream parses it again.

Every session event carries a full snapshot, so a watcher that missed one loses
nothing by showing the newest; revisions only go forward.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Literal

import orjson
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction
from pydantic import BaseModel, ConfigDict

from .logs import ThrottledLogger

# While the channel layer is down, every write would log the same warning.
unpublished_logger = ThrottledLogger(__name__, every=60)

STAFF_GROUP = "dashboard-all"
# The channel-layer message type of a frame (todoweb.live's hub receives it).
FRAME = "live.frame"


def session_group(public_id: str) -> str:
    return f"session-{public_id}"


def dashboard_group(project_id: int) -> str:
    return f"dashboard-{project_id}"


class Event(BaseModel):
    model_config = ConfigDict(extra="forbid")

    def route(self) -> dict[str, Any]:
        """What a consumer needs to decide on the frame without parsing its text."""
        raise NotImplementedError


class SessionSnapshot(Event):
    type: Literal["session.snapshot"] = "session.snapshot"
    session: dict[str, Any]
    revision: int
    todos: list[dict[str, Any]]
    counts: dict[str, int]
    progress: float
    current: list[str]
    changes: list[dict[str, Any]]
    dropped: list[dict[str, Any]]
    warnings: list[dict[str, Any]]
    author: str = "agent"
    display: dict[str, Any]

    def route(self) -> dict[str, Any]:
        info = self.session
        return {
            "session": info["id"],
            "revision": self.revision,
            "state": info["state"],
            "title": info["title"],
            "updated_at": info["updated_at"],
        }


class SessionState(Event):
    """Only the derived state (idle, closed) or the title moved."""

    type: Literal["session.state"] = "session.state"
    session: str  # the opaque id
    revision: int
    state: str
    title: str

    def route(self) -> dict[str, Any]:
        return {"session": self.session, "revision": self.revision, "state": self.state, "title": self.title}


class SessionSummary(Event):
    type: Literal["session.summary"] = "session.summary"
    session: dict[str, Any]

    def route(self) -> dict[str, Any]:
        info = self.session
        return {
            "session": info["id"],
            "revision": info["revision"],
            "state": info["state"],
            "updated_at": info["updated_at"],
        }


class DashboardSnapshot(Event):
    type: Literal["dashboard.snapshot"] = "dashboard.snapshot"
    sessions: list[dict[str, Any]]


class SessionArchived(Event):
    """A session left the board: dashboards drop it, share-link watchers hang up."""

    type: Literal["session.archived"] = "session.archived"
    session: str  # the opaque id

    def route(self) -> dict[str, Any]:
        return {"session": self.session}


class ShareRevoked(Event):
    """Internal: tells share-authenticated watchers of a session to hang up."""

    type: Literal["share.revoked"] = "share.revoked"
    session: str  # the opaque id
    links: list[int] | None = None  # the revoked links' ids; None: every link of the session

    def route(self) -> dict[str, Any]:
        return {"session": self.session, "links": self.links}


def snapshot_event(data: dict[str, Any]) -> SessionSnapshot:
    return SessionSnapshot(**{k: v for k, v in data.items() if k in SessionSnapshot.model_fields})


def frames(event: Event, *groups: str, text: str | None = None) -> list[dict[str, Any]]:
    """The channel-layer messages for `event`, one per group: serialised once (unless
    `text` is the serialised event already), with its routing fields."""
    text = event.model_dump_json() if text is None else text
    route = event.route()
    return [{"type": FRAME, "group": group, "kind": event.type, "text": text, **route} for group in groups]


# A publish that takes longer than this (Redis unreachable rather than down) is given
# up: the write's answer must not wait on it, and watchers catch up from the database.
PUBLISH_TIMEOUT = 1.0
# Frames of the writes an async view makes, which it publishes itself (see `deferred`).
_deferred: ContextVar[list[dict[str, Any]] | None] = ContextVar("todoweb_deferred_frames", default=None)


def send(messages: list[dict[str, Any]]) -> None:
    """Publish frames to every process (the channel layer)."""
    deferred = _deferred.get()
    if deferred is not None:
        deferred.extend(messages)
        return
    async_to_sync(asend)(messages)


async def asend(messages: list[dict[str, Any]]) -> None:
    layer = get_channel_layer()
    if layer is None or not messages:
        return
    try:
        async with asyncio.timeout(PUBLISH_TIMEOUT):
            for message in messages:
                await layer.group_send(message["group"], message)
    except Exception as exc:
        # Redis down: the write stands, and watchers catch up from the database.
        unpublished_logger.warning("Live frames not published; watchers will catch up from the database", error=exc)


@contextmanager
def deferred() -> Iterator[list[dict[str, Any]]]:
    """Collect the frames that writes made inside the block (on any thread it hands
    work to) instead of publishing them there: an async view then publishes them
    from the event loop with `asend`, with no thread waiting on the loop."""
    frames: list[dict[str, Any]] = []
    token = _deferred.set(frames)
    try:
        yield frames
    finally:
        _deferred.reset(token)


def publish_on_commit(
    *, public_id: str, project_id: int, session_event: Event, summary: dict[str, Any], session_text: str | None = None
) -> None:
    """Send to watchers of the session and of the dashboard once the write is durable."""
    dashboard_event = SessionSummary.model_construct(session=summary)
    dashboard_text = orjson.dumps({"type": dashboard_event.type, "session": summary}).decode()
    send_on_commit(
        frames(session_event, session_group(public_id), text=session_text)
        + frames(dashboard_event, dashboard_group(project_id), STAFF_GROUP, text=dashboard_text)
    )


def publish_archived(*, public_id: str, project_id: int) -> None:
    send_on_commit(
        frames(ShareRevoked(session=public_id), session_group(public_id))
        + frames(SessionArchived(session=public_id), dashboard_group(project_id), STAFF_GROUP)
    )


def publish_share_revoked(*, public_id: str, links: list[int] | None = None) -> None:
    send_on_commit(frames(ShareRevoked(session=public_id, links=links), session_group(public_id)))


def send_on_commit(messages: list[dict[str, Any]]) -> None:
    # robust: the write is committed whatever happens to its events. A channel layer
    # that is down must not turn a stored revision into an error (and a retry);
    # watchers catch up from the database (todoweb.live's reconciliation).
    transaction.on_commit(lambda: send(messages), robust=True)
