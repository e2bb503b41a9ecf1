"""Live events: typed payloads, their group names, and publishing after commit.

Every event carries a full snapshot, so a client that missed one loses nothing by
rendering the newest; revisions only go forward.
"""

from __future__ import annotations

from typing import Any, Literal

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction
from pydantic import BaseModel, ConfigDict

STAFF_GROUP = "dashboard-all"


def session_group(public_id: str) -> str:
    return f"session-{public_id}"


def dashboard_group(project_id: int) -> str:
    return f"dashboard-{project_id}"


class Event(BaseModel):
    model_config = ConfigDict(extra="forbid")


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
    display: dict[str, Any]


class SessionState(Event):
    type: Literal["session.state"] = "session.state"
    session: str  # the opaque id
    revision: int
    state: str
    title: str


class SessionSummary(Event):
    type: Literal["session.summary"] = "session.summary"
    session: dict[str, Any]


class DashboardSnapshot(Event):
    type: Literal["dashboard.snapshot"] = "dashboard.snapshot"
    sessions: list[dict[str, Any]]


def snapshot_event(data: dict[str, Any]) -> SessionSnapshot:
    return SessionSnapshot(**{k: v for k, v in data.items() if k in SessionSnapshot.model_fields})


def send(group: str, event: Event) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    # The consumer handler is named after the type: session.snapshot -> session_snapshot.
    # `text` is the event serialised once, here, for every watcher in every process.
    message = {"type": event.type, "event": event.model_dump(mode="json"), "text": event.model_dump_json()}
    async_to_sync(layer.group_send)(group, message)


def publish_on_commit(*, public_id: str, project_id: int, session_event: Event, summary: dict[str, Any]) -> None:
    """Send to watchers of the session and of the dashboard once the write is durable."""

    def publish() -> None:
        send(session_group(public_id), session_event)
        dashboard_event = SessionSummary(session=summary)
        send(dashboard_group(project_id), dashboard_event)
        send(STAFF_GROUP, dashboard_event)

    # robust: the write is committed whatever happens to its event; a channel layer
    # that is down must not turn a stored revision into an error (and a retry).
    transaction.on_commit(publish, robust=True)


class SessionArchived(Event):
    """A session left the board: dashboards drop it, share-link watchers hang up."""

    type: Literal["session.archived"] = "session.archived"
    session: str  # the opaque id


class ShareRevoked(Event):
    """Internal: tells share-authenticated watchers of a session to hang up."""

    type: Literal["share.revoked"] = "share.revoked"
    session: str  # the opaque id
    links: list[int] | None = None  # the revoked links' ids; None: every link of the session


def publish_archived(*, public_id: str, project_id: int) -> None:
    def publish() -> None:
        event = SessionArchived(session=public_id)
        send(session_group(public_id), ShareRevoked(session=public_id))
        send(dashboard_group(project_id), event)
        send(STAFF_GROUP, event)

    transaction.on_commit(publish, robust=True)


def publish_share_revoked(*, public_id: str, links: list[int] | None = None) -> None:
    event = ShareRevoked(session=public_id, links=links)
    transaction.on_commit(lambda: send(session_group(public_id), event), robust=True)
