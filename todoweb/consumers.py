"""Websocket consumers: one session's panel and the dashboard (SPEC §8).

Both send the current state right after `accept()`, then forward the events that
`todoweb.events` publishes after each commit. Every session event is a full
snapshot, so a consumer only ever forwards a revision newer than the last one it
sent: a write that commits between joining the group and reading the snapshot
arrives twice and is sent once.
"""

from __future__ import annotations

import asyncio
import json
from datetime import datetime
from typing import Any
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.conf import settings
from django.utils import timezone

from . import events
from .selectors import current_data, dashboard_summaries, visible_projects
from .sharing import session_for_viewer

# Close codes the page understands: stop reconnecting and say why.
FORBIDDEN = 4403
SHARE_ENDED = 4410

# Messages whose handlers never touch the ORM. Channels 4 closes stale database
# connections (a thread hop) before every message; for these it is pure cost
# (PERFORMANCE.md: 154 -> 72 us per delivered message). connect still goes through
# it, and its queries run in database_sync_to_async, which manages connections.
ORM_FREE = frozenset(
    {
        "websocket.receive",
        "websocket.disconnect",
        "session.snapshot",
        "session.state",
        "session.summary",
        "share.revoked",
        "session.archived",
    }
)


def parse_time(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text.replace("Z", "+00:00")) if text else None


def seconds_until_idle(info: dict[str, Any], now: datetime) -> float | None:
    """When an active session turns idle (no write for TODOWEB_IDLE_AFTER), from now."""
    if info.get("state") != "active":
        return None
    updated_at = parse_time(info.get("updated_at"))
    if updated_at is None:
        return None
    return max(0.0, settings.TODOWEB_IDLE_AFTER - (now - updated_at).total_seconds())


class LiveConsumer(AsyncJsonWebsocketConsumer):
    """What both consumers share: groups, timers, and the fast path for events."""

    async def dispatch(self, message: dict[str, Any]) -> None:
        if message["type"] in ORM_FREE:
            handler = getattr(self, message["type"].replace(".", "_"), None)
            if handler is not None:
                await handler(message)
                return
        await super().dispatch(message)

    async def join(self, *groups: str) -> None:
        self.joined = getattr(self, "joined", []) + list(groups)
        for group in groups:
            await self.channel_layer.group_add(group, self.channel_name)

    def start_timer(self, name: str, delay: float, callback) -> None:
        timers = self.__dict__.setdefault("timers", {})
        old = timers.pop(name, None)
        if old is not None:
            old.cancel()

        async def fire() -> None:
            await asyncio.sleep(delay)
            await callback()

        timers[name] = asyncio.ensure_future(fire())

    def stop_timer(self, name: str) -> None:
        task = self.__dict__.get("timers", {}).pop(name, None)
        if task is not None:
            task.cancel()

    async def disconnect(self, code: int) -> None:
        for task in self.__dict__.get("timers", {}).values():
            task.cancel()
        for group in getattr(self, "joined", []):
            await self.channel_layer.group_discard(group, self.channel_name)

    async def receive_json(self, content: Any, **kwargs) -> None:
        # Read-only sockets: a page may send a ping; anything else is ignored.
        if isinstance(content, dict) and content.get("type") == "ping":
            await self.send_json({"type": "pong"})

    async def receive(self, text_data=None, bytes_data=None, **kwargs) -> None:
        try:
            await super().receive(text_data=text_data, bytes_data=bytes_data, **kwargs)
        except (ValueError, TypeError):
            pass  # not JSON: ignore rather than drop the socket


class SessionConsumer(LiveConsumer):
    """`/ws/sessions/<public_id>/`: one session's snapshots and state changes."""

    async def connect(self) -> None:
        self.public_id: str = self.scope["url_route"]["kwargs"]["public_id"]
        self.share_link_id = None
        self.revision = -1
        self.state = ""
        self.title = ""
        self.updated_at: str | None = None
        # Join before checking access and reading: a revision, or a revocation of
        # the share link, committed in between still reaches this socket.
        await self.join(events.session_group(self.public_id))
        share = parse_qs(self.scope.get("query_string", b"").decode()).get("share", [None])[0]
        access = await database_sync_to_async(session_for_viewer)(
            user=self.scope.get("user"), public_id=self.public_id, share=share
        )
        if access is None:
            await self.close(code=FORBIDDEN)
            return
        session, link = access
        self.share_link_id = link.pk if link else None
        data = await database_sync_to_async(current_data)(session)
        await self.accept()
        await self.send_snapshot(data)
        if link is not None:
            remaining = (link.expires_at - timezone.now()).total_seconds()
            self.start_timer("expiry", max(0.0, remaining), self.end_share)

    async def send_snapshot(self, event: dict[str, Any], text: str | None = None) -> None:
        """Send a snapshot unless this socket already showed that revision or a newer one.

        `text` is the event as published, serialised once for every watcher."""
        if event["revision"] <= self.revision:
            return
        self.revision = event["revision"]
        info = event["session"]
        self.state = info["state"]
        self.title = info["title"]
        self.updated_at = info["updated_at"]
        if text is None:
            text = events.snapshot_event(event).model_dump_json()
        await self.send(text_data=text)
        self.watch_idle()

    def watch_idle(self) -> None:
        delay = seconds_until_idle({"state": self.state, "updated_at": self.updated_at}, timezone.now())
        if delay is None:
            self.stop_timer("idle")
        else:
            self.start_timer("idle", delay, self.turn_idle)

    async def turn_idle(self) -> None:
        # No write arrived in time (a write would have restarted the timer).
        self.state = "idle"
        event = events.SessionState(session=self.public_id, revision=self.revision, state="idle", title=self.title)
        await self.send_json(event.model_dump(mode="json"))

    async def session_snapshot(self, message: dict[str, Any]) -> None:
        await self.send_snapshot(message["event"], message.get("text"))

    async def session_state(self, message: dict[str, Any]) -> None:
        event = message["event"]
        if event["revision"] < self.revision:
            return
        self.state = event["state"]
        self.title = event["title"]
        await self.send(text_data=message.get("text") or json.dumps(event))
        self.watch_idle()

    async def share_revoked(self, message: dict[str, Any]) -> None:
        links = message["event"].get("links")
        if self.share_link_id is not None and (links is None or self.share_link_id in links):
            await self.end_share()

    async def end_share(self) -> None:
        await self.send_json({"type": "share.ended", "session": self.public_id})
        await self.close(code=SHARE_ENDED)


def dashboard_sessions(user) -> tuple[list[dict[str, Any]], list[str]]:
    """The summaries a user may see (newest activity first) and the groups to join."""
    summaries = dashboard_summaries(user)
    if user.is_staff:
        groups = [events.STAFF_GROUP]
    else:
        groups = [events.dashboard_group(pk) for pk in visible_projects(user).values_list("pk", flat=True)]
    return summaries, groups


class DashboardConsumer(LiveConsumer):
    """`/ws/dashboard/`: summaries of every session of the user's projects (staff: all)."""

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=FORBIDDEN)
            return
        self.summaries: dict[str, dict[str, Any]] = {}
        # Projects are read before joining; a write in between only means the
        # snapshot is already newer than the event, which the page ignores.
        summaries, groups = await database_sync_to_async(dashboard_sessions)(user)
        await self.join(*groups)
        await self.accept()
        for summary in summaries:
            self.summaries[summary["id"]] = summary
        await self.send_json(events.DashboardSnapshot(sessions=summaries).model_dump(mode="json"))
        self.watch_idle()

    async def session_summary(self, message: dict[str, Any]) -> None:
        summary = message["event"]["session"]
        known = self.summaries.get(summary["id"])
        if known is not None and known["revision"] > summary["revision"]:
            return
        self.summaries[summary["id"]] = summary
        await self.send(text_data=message.get("text") or events.SessionSummary(session=summary).model_dump_json())
        self.watch_idle()

    async def session_archived(self, message: dict[str, Any]) -> None:
        self.summaries.pop(message["event"]["session"], None)
        await self.send(text_data=message["text"])
        self.watch_idle()

    def watch_idle(self) -> None:
        now = timezone.now()
        delays = [d for s in self.summaries.values() if (d := seconds_until_idle(s, now)) is not None]
        if delays:
            self.start_timer("idle", min(delays), self.turn_idle)
        else:
            self.stop_timer("idle")

    async def turn_idle(self) -> None:
        now = timezone.now()
        for summary in list(self.summaries.values()):
            if seconds_until_idle(summary, now) == 0.0:
                summary = summary | {"state": "idle"}
                self.summaries[summary["id"]] = summary
                await self.send_json(events.SessionSummary(session=summary).model_dump(mode="json"))
        self.watch_idle()
