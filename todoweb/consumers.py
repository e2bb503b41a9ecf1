"""Websocket consumers: one session's panel and the dashboard (SPEC §8).

Both watch their groups through the process's hub (todoweb.live) before reading the
current state, send that state right after `accept()`, then forward frames. Each
socket keeps the newest few frames it has not sent and sends from one task: a slow
socket skips revisions, never queues more than a few, and never slows another
socket or a writer. Revisions only go forward: a frame older than what the socket
showed is dropped.
"""

from __future__ import annotations

import asyncio
import json
from collections import deque
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Any
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings
from django.utils import timezone

from . import events, live
from .selectors import current_data, dashboard_summaries, visible_projects
from .sharing import session_for_viewer

# Snapshots a session socket holds for sending: a socket that keeps up sees every
# revision; one further behind skips the oldest (each snapshot is the whole plan).
SNAPSHOT_BACKLOG = 4

# Close codes the page understands: stop reconnecting and say why.
FORBIDDEN = 4403
SHARE_ENDED = 4410


def parse_time(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text.replace("Z", "+00:00")) if text else None


def idle_at(state: str, updated_at: str | None) -> datetime | None:
    """When an active session turns idle (no write for TODOWEB_IDLE_AFTER)."""
    return idle_deadline(state, updated_at, settings.TODOWEB_IDLE_AFTER)


@lru_cache(maxsize=1024)
def idle_deadline(state: str, updated_at: str | None, idle_after: int) -> datetime | None:
    # Cached: every socket watching a session asks the same of each of its frames.
    moment = parse_time(updated_at)
    if state != "active" or moment is None:
        return None
    return moment + timedelta(seconds=idle_after)


class LiveConsumer(AsyncWebsocketConsumer):
    """What both consumers share: the hub, the sending task, timers, pings."""

    # Frames come from the hub, not from a channel of this socket's own: an alias
    # that names no layer gives the socket none.
    channel_layer_alias = "todoweb.live.hub"

    async def websocket_connect(self, message: dict[str, Any]) -> None:
        self.groups_watched: list[str] = []
        self.sending_allowed = False
        self.sender: asyncio.Task | None = None
        self.timers: dict[str, asyncio.TimerHandle] = {}
        await super().websocket_connect(message)

    async def watch(self, *groups: str) -> None:
        for group in groups:
            await live.hub().watch(group, self)
            self.groups_watched.append(group)

    def start_sending(self) -> None:
        """From now on frames go out (before, they wait behind the first snapshot)."""
        self.sending_allowed = True
        if self.has_pending():
            self.wake_sender()

    def wake_sender(self, newest_only: bool = False) -> None:
        if newest_only:
            self.skip_to_newest()
        # A task per burst, gone once the socket has sent what it holds: a task kept
        # waiting between frames (and the future each wait makes) would outlive the
        # garbage collector's young generations, a thousand sockets' worth a round,
        # and bring on full collections that stop the process for 200 ms.
        if self.sending_allowed and (self.sender is None or self.sender.done()):
            self.sender = asyncio.ensure_future(self.send_all())

    async def send_all(self) -> None:
        # A send waits while the client reads slowly; frames offered meanwhile are
        # sent by this same task.
        while self.has_pending():
            await self.send_pending()

    def has_pending(self) -> bool:
        raise NotImplementedError

    def skip_to_newest(self) -> None:
        """Keep only the newest of the frames waiting (each is a whole snapshot)."""

    async def send_pending(self) -> None:
        raise NotImplementedError

    def offer(self, message: dict[str, Any]) -> bool:
        """Keep the frame if it is newer than what this socket holds (the hub's pump
        then wakes the sender); True if there is something to send."""
        raise NotImplementedError

    async def send_text(self, text: str) -> None:
        # Channels' send() with its checks skipped: a frame is text, every time.
        await self.base_send({"type": "websocket.send", "text": text})

    def set_timer(self, name: str, when: datetime | None, callback) -> None:
        """Call `callback` (synchronously, on the loop) at `when`; None cancels."""
        old = self.timers.pop(name, None)
        if old is not None:
            old.cancel()
        if when is not None:
            loop = asyncio.get_running_loop()
            delay = max(0.0, (when - timezone.now()).total_seconds())
            self.timers[name] = loop.call_at(loop.time() + delay, callback)

    async def disconnect(self, code: int) -> None:
        if self.sender is not None:
            self.sender.cancel()
        for timer in self.timers.values():
            timer.cancel()
        for group in self.groups_watched:
            live.hub().unwatch(group, self)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        # Read-only sockets: a page may send a ping; anything else is ignored.
        try:
            content = json.loads(text_data or "")
        except ValueError:
            return
        if isinstance(content, dict) and content.get("type") == "ping":
            await self.send(text_data='{"type": "pong"}')


class SessionConsumer(LiveConsumer):
    """`/ws/sessions/<public_id>/`: one session's snapshots and state changes."""

    async def connect(self) -> None:
        self.public_id: str = self.scope["url_route"]["kwargs"]["public_id"]
        self.share_link_id: int | None = None
        self.sent = -1  # the revision this socket shows
        self.state = ""
        self.title = ""
        self.updated_at: str | None = None
        self.next_snapshots: deque[dict[str, Any]] = deque(maxlen=SNAPSHOT_BACKLOG)
        self.next_state: dict[str, Any] | None = None
        self.idle_deadline: datetime | None = None
        self.idle_armed_for: datetime | None = None
        # Watch before reading: a revision, or a revocation of the share link,
        # committed in between still reaches this socket.
        await self.watch(events.session_group(self.public_id))
        share = parse_qs(self.scope.get("query_string", b"").decode()).get("share", [None])[0]
        found = await database_sync_to_async(viewer_snapshot)(self.scope.get("user"), self.public_id, share)
        if found is None:
            await self.close(code=FORBIDDEN)
            return
        snapshot, link = found
        self.share_link_id = link.pk if link else None
        await self.accept()
        await self.show(snapshot.model_dump_json(), snapshot.route())
        live.hub().saw(self.public_id, snapshot.revision)
        if link is not None:
            self.set_timer("expiry", link.expires_at, self.end_share_soon)
        self.start_sending()

    def offer(self, message: dict[str, Any]) -> bool:
        kind = message["kind"]
        if kind == "session.snapshot":
            newest = self.next_snapshots[-1]["revision"] if self.next_snapshots else self.sent
            if message["revision"] > newest:
                self.next_snapshots.append(message)  # a full backlog drops its oldest
        elif kind == "session.state":
            self.next_state = message
        elif kind == "share.revoked":
            links = message.get("links")
            if self.share_link_id is not None and (links is None or self.share_link_id in links):
                self.end_share_soon()
        return self.has_pending()

    def has_pending(self) -> bool:
        return bool(self.next_snapshots) or self.next_state is not None

    def skip_to_newest(self) -> None:
        while len(self.next_snapshots) > 1:
            self.next_snapshots.popleft()

    async def send_pending(self) -> None:
        while self.next_snapshots:
            snapshot = self.next_snapshots.popleft()
            if snapshot["revision"] > self.sent:
                await self.show(snapshot["text"], snapshot)
        state, self.next_state = self.next_state, None
        # A state event older than the revision shown is already in that snapshot.
        if state is not None and state["revision"] >= self.sent:
            await self.send_text(state["text"])
            self.state, self.title = state["state"], state["title"]
            self.watch_idle()

    async def show(self, text: str, route: dict[str, Any]) -> None:
        await self.send_text(text)
        self.sent = route["revision"]
        self.state, self.title, self.updated_at = route["state"], route["title"], route["updated_at"]
        self.watch_idle()

    def watch_idle(self) -> None:
        """One timer for the idle deadline. Each write moves the deadline later: the
        timer is left as it is, and when it fires early it waits again until then
        (re-arming it for every frame was a tenth of the cost of a frame)."""
        self.idle_deadline = idle_at(self.state, self.updated_at)
        armed = self.timers.get("idle")
        if self.idle_deadline is None or armed is None or self.idle_armed_for > self.idle_deadline:
            self.idle_armed_for = self.idle_deadline
            self.set_timer("idle", self.idle_deadline, self.check_idle)

    def check_idle(self) -> None:
        self.timers.pop("idle", None)
        if self.idle_deadline is None:
            return
        if timezone.now() < self.idle_deadline:
            self.idle_armed_for = self.idle_deadline
            self.set_timer("idle", self.idle_deadline, self.check_idle)
        else:
            self.turn_idle()

    def turn_idle(self) -> None:
        # No write came in time (a write would have moved the deadline).
        event = events.SessionState(session=self.public_id, revision=self.sent, state="idle", title=self.title)
        if self.offer(events.frames(event, events.session_group(self.public_id))[0]):
            self.wake_sender()

    def end_share_soon(self) -> None:
        asyncio.ensure_future(self.end_share())

    async def end_share(self) -> None:
        if self.sender is not None:
            self.sender.cancel()
        await self.send(text_data=json.dumps({"type": "share.ended", "session": self.public_id}))
        await self.close(code=SHARE_ENDED)


def viewer_snapshot(user, public_id: str, share: str | None) -> tuple[events.SessionSnapshot, Any] | None:
    """What a socket shows first, if its viewer may watch (one trip to the database thread)."""
    access = session_for_viewer(user=user, public_id=public_id, share=share)
    if access is None:
        return None
    session, link = access
    return events.snapshot_event(current_data(session)), link


class DashboardConsumer(LiveConsumer):
    """`/ws/dashboard/`: summaries of every session of the user's projects (staff: all)."""

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=FORBIDDEN)
            return
        # Per session: the newest summary sent (its route, and its text or dict).
        self.known: dict[str, dict[str, Any]] = {}
        self.pending: dict[str, dict[str, Any]] = {}
        self.idle_deadline: datetime | None = None
        await self.watch(*await database_sync_to_async(dashboard_groups)(user))
        summaries = await database_sync_to_async(dashboard_summaries)(user)
        await self.accept()
        for summary in summaries:
            self.known[summary["id"]] = {"summary": summary} | events.SessionSummary(session=summary).route()
            live.hub().saw(summary["id"], summary["revision"])
        await self.send(text_data=events.DashboardSnapshot(sessions=summaries).model_dump_json())
        self.watch_idle()
        self.start_sending()

    def offer(self, message: dict[str, Any]) -> bool:
        session = message["session"]
        if message["kind"] == "session.summary":
            newest = self.pending.get(session) or self.known.get(session)
            if newest is not None and newest.get("revision", -1) > message["revision"]:
                return bool(self.pending)
        self.pending[session] = message
        return True

    def has_pending(self) -> bool:
        return bool(self.pending)

    async def send_pending(self) -> None:
        while self.pending:
            session, message = next(iter(self.pending.items()))
            del self.pending[session]
            await self.send_text(message["text"])
            if message["kind"] == "session.archived":
                self.known.pop(session, None)
            else:
                self.known[session] = message
                deadline = idle_at(message["state"], message["updated_at"])
                if deadline is not None and (self.idle_deadline is None or deadline < self.idle_deadline):
                    self.watch_idle()

    def watch_idle(self) -> None:
        deadlines = [d for info in self.known.values() if (d := idle_at(info["state"], info["updated_at"]))]
        self.idle_deadline = min(deadlines, default=None)
        self.set_timer("idle", self.idle_deadline, self.turn_idle)

    def turn_idle(self) -> None:
        now = timezone.now()
        for session, info in list(self.known.items()):
            deadline = idle_at(info["state"], info["updated_at"])
            if deadline is not None and deadline <= now:
                summary = info.get("summary") or json.loads(info["text"])["session"]
                idle = events.SessionSummary(session=summary | {"state": "idle"})
                self.known[session] = {"summary": idle.session} | idle.route()
                if self.offer(events.frames(idle, events.STAFF_GROUP)[0]):
                    self.wake_sender()
        self.watch_idle()


def dashboard_groups(user) -> list[str]:
    if user.is_staff:
        return [events.STAFF_GROUP]
    return [events.dashboard_group(pk) for pk in visible_projects(user).values_list("pk", flat=True)]
