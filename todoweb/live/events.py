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
import threading
from typing import Any, Literal

import orjson
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction
from pydantic import BaseModel, ConfigDict

from todoweb.live.layer import ProcessLayer
from todoweb.logs import ThrottledLogger

# While the channel layer is down, every write would log the same warning.
unpublished_logger = ThrottledLogger(__name__, every=60)

STAFF_GROUP = "dashboard-all"
# Every process's hub listens here for access that ended (todoweb.live.access).
ACCESS_GROUP = "access"
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
    dropped_count: int = 0
    warnings: list[dict[str, Any]]
    author: str = "agent"
    display: dict[str, Any]

    def route(self) -> dict[str, Any]:
        return snapshot_route(self.session, self.revision)


def snapshot_route(info: dict[str, Any], revision: int) -> dict[str, Any]:
    """A snapshot's routing fields, from its session's info and its revision."""
    return {
        "session": info["id"],
        "revision": revision,
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


class SessionMessages(Event):
    """People's messages to the agent and where each stands (waiting, told, kept)."""

    type: Literal["session.messages"] = "session.messages"
    session: str  # the opaque id
    messages: list[dict[str, Any]]

    def route(self) -> dict[str, Any]:
        return {"session": self.session}


class SessionQuestions(Event):
    """The agent's questions to people (a plan to approve, a tool to allow) and their answers."""

    type: Literal["session.questions"] = "session.questions"
    session: str  # the opaque id
    questions: list[dict[str, Any]]

    def route(self) -> dict[str, Any]:
        return {"session": self.session}


class SessionSummary(Event):
    type: Literal["session.summary"] = "session.summary"
    session: dict[str, Any]

    def route(self) -> dict[str, Any]:
        return summary_route(self.session)


def summary_route(summary: dict[str, Any]) -> dict[str, Any]:
    """A session summary's routing fields."""
    return {
        "session": summary["id"],
        "revision": summary["revision"],
        "state": summary["state"],
        "updated_at": summary["updated_at"],
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


class AccessChanged(Event):
    """Internal: access to watch ended or may have (todoweb.live.access); never sent to a browser."""

    type: Literal["access.changed"] = "access.changed"
    users: list[int] = []  # check these users' sockets again
    logins: list[str] = []  # login sessions that ended (their keys' digests): hang up
    links: list[int] = []  # share links deleted: hang up
    tokens: list[int] = []  # API tokens revoked or deleted: end their event streams

    def route(self) -> dict[str, Any]:
        return {"users": self.users, "logins": self.logins, "links": self.links, "tokens": self.tokens}


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

Frames = list[dict[str, Any]]


def session_frames(*, public_id: str, project_id: int, session_event: Event, summary: dict[str, Any]) -> Frames:
    """For watchers of the session and of its project's dashboards: a snapshot or a
    state event, and the session's summary."""
    return frames(session_event, session_group(public_id)) + summary_frames(project_id, summary)


def revision_frames(
    *, public_id: str, project_id: int, data: dict[str, Any], snapshot_text: str, summary: dict[str, Any]
) -> Frames:
    """`session_frames` of a new revision's snapshot, made from the revision's data
    shape and the snapshot's text (serialised already) without the event itself:
    every write of an agent makes these."""
    route = snapshot_route(data["session"], data["revision"])
    snapshot = {"type": FRAME, "group": session_group(public_id), "kind": "session.snapshot", "text": snapshot_text}
    return [snapshot | route, *summary_frames(project_id, summary)]


def summary_frames(project_id: int, summary: dict[str, Any]) -> Frames:
    """The session.summary frames of a session's summary, without making the event."""
    text = orjson.dumps({"type": "session.summary", "session": summary}).decode()
    route = summary_route(summary)
    return [
        {"type": FRAME, "group": group, "kind": "session.summary", "text": text, **route}
        for group in (dashboard_group(project_id), STAFF_GROUP)
    ]


def archived_frames(*, public_id: str, project_id: int) -> Frames:
    return frames(ShareRevoked(session=public_id), session_group(public_id)) + frames(
        SessionArchived(session=public_id), dashboard_group(project_id), STAFF_GROUP
    )


def share_revoked_frames(*, public_id: str, links: list[int] | None = None) -> Frames:
    return frames(ShareRevoked(session=public_id, links=links), session_group(public_id))


def access_changed_frames(*, users: list[int], logins: list[str], links: list[int], tokens: list[int]) -> Frames:
    if not (users or logins or links or tokens):
        return []
    return frames(AccessChanged(users=users, logins=logins, links=links, tokens=tokens), ACCESS_GROUP)


def publish_on_commit(messages: Frames) -> None:
    """Publish once the transaction that wrote what they show commits (at once outside
    one). robust: the write is committed whatever happens to its frames. A channel
    layer that is down must not turn a stored revision into an error (and a retry);
    watchers catch up from the database (todoweb.live.hub's reconciliation)."""
    if messages:
        transaction.on_commit(lambda: send(messages), robust=True)


def send(messages: Frames) -> None:
    """Publish frames to every process (the channel layer), from synchronous code."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        async_to_sync(asend)(messages)
        return
    # Synchronous code on a thread whose event loop runs (a signal sent from code
    # driven by Playwright's synchronous API, in the browser tests) cannot wait on
    # the loop: it publishes from a thread of its own.
    threading.Thread(target=async_to_sync(asend), args=(messages,), name="todoweb-publish").start()


async def asend(messages: Frames) -> None:
    """Publish frames to every process (the channel layer), from the event loop."""
    layer = get_channel_layer()
    if layer is None or not messages:
        return
    try:
        if isinstance(layer, ProcessLayer) and layer.puts_at_once:
            layer.put_frames(messages)  # on the process's queues: nothing to wait for
            return
        async with asyncio.timeout(PUBLISH_TIMEOUT):
            for message in messages:
                await layer.group_send(message["group"], message)
    except Exception as exc:
        # Redis down: the write stands, and watchers catch up from the database.
        unpublished_logger.warning("Live frames not published; watchers will catch up from the database", error=exc)
