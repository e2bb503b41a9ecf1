"""Websocket consumers: one session's panel and the dashboard.

Both watch their groups through the process's hub (todoweb.live) before reading the
current state, send that state right after `accept()`, then forward frames. Each
socket keeps the newest few frames it has not sent and sends from one task: a slow
socket skips revisions, never queues more than a few, and never slows another
socket or a writer. Revisions only go forward: a frame older than what the socket
showed is dropped.

What let a socket in (its viewer: a login or a share link) is checked again by the
hub, not per frame: a socket whose viewer lost access is closed with a code that
tells the page why (todoweb.live.access).
"""

from __future__ import annotations

import asyncio
import json
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Any
from urllib.parse import parse_qs

from channels.consumer import get_handler_name
from channels.exceptions import StopConsumer
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings
from django.utils import timezone

from todoweb import fences
from todoweb.live import events
from todoweb.live.access import FORBIDDEN, SHARE_ENDED, Viewer, dashboard_scope, session_for_viewer
from todoweb.live.alarms import Alarm, clock
from todoweb.live.hub import process_hub
from todoweb.live.viewers import allowed_origin, viewer_of
from todoweb.reads import current_data, dashboard_summaries
from todoweb.store.database import in_database_thread

# The ASGI extension (in a websocket's scope) by which todoweb's server lets a consumer
# send a frame at once: {"send": WebSocketProtocol.send_now} (serve/server.py).
SEND_NOW = "todoweb.websocket.send_now"

# Frames that carry a whole list each (people's messages, open questions): a socket
# sends only the newest of each kind.
LIST_FRAMES = frozenset({"session.messages", "session.questions"})

# Snapshots a session socket holds for sending: a socket that keeps up sees every
# revision; one further behind skips the oldest (each snapshot is the whole plan).
SNAPSHOT_BACKLOG = 4


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

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # Every attribute a socket has is set here, before its first await. CPython
        # lets instances share one table of attribute names, but each new instance
        # shrinks the room left in it: a thousand sockets connecting at once would
        # otherwise each get a whole dict of their own (1.5 KB a socket).
        super().__init__(*args, **kwargs)
        self.groups_watched: list[str] = []
        self.sending_allowed = False
        self.held = False  # while the hub checks this viewer's access again
        self.closing = False
        self.lost_code: int | None = None  # access lost while connecting: close with this
        self.hanging_up: asyncio.Task | None = None  # the task closing the socket, kept while it runs
        self.viewer: Viewer | None = None
        # The hub's access_epoch before the viewer's access was read (see admit).
        self.access_epoch = 0
        self.sender: asyncio.Task | None = None
        self.timers: dict[str, Alarm] = {}
        # Who is watching (set when the socket connects): the Django user, and the key of
        # their login session (None: not logged in).
        self.user: Any = None
        self.login: str | None = None
        # Under todoweb's own websocket protocol, how to send a frame at once (None: another server).
        self.send_now: Any = None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """Channels' consumer loop without a channel layer: frames come from the hub,
        not from a channel of this socket's own. Channels awaits each message in a
        task of its own through asyncio.wait, which a socket keeps for its whole
        life (2.5 KB); here the loop awaits `receive` itself (Channels' internals,
        behind their fence: todoweb.fences)."""
        if not fences.fast("channels"):
            await super().__call__(scope, receive, send)
            return
        self.scope = scope
        self.channel_layer = None
        self.base_send = send
        try:
            while True:
                await self.dispatch(await receive())
        except StopConsumer:
            pass

    async def dispatch(self, message: dict[str, Any]) -> None:
        """Channels' dispatch without its trip to the database thread before every
        message to close old connections: these sockets reach the database only through
        in_database_thread, which gives the connection back after each piece of work
        (and the trip left 0.5 KB of copied context in each socket's task)."""
        if not fences.fast("channels"):
            await super().dispatch(message)
            return
        handler = getattr(self, get_handler_name(message), None)
        if handler is None:
            raise ValueError(f"No handler for message type {message['type']}")
        await handler(message)

    async def websocket_connect(self, message: dict[str, Any]) -> None:
        if not allowed_origin(self.scope):
            await self.close()  # the handshake is refused (403), as Channels' origin validator does
            return
        self.user, self.login = await viewer_of(self.scope)
        self.send_now = self.scope.get("extensions", {}).get(SEND_NOW, {}).get("send")
        await super().websocket_connect(message)

    async def accept(self, subprotocol: str | None = None, headers: Any = None) -> None:
        await super().accept(subprotocol, headers)
        # What let the socket in (its cookie, its origin, its share link) has been
        # read, and the server reads the scope during the handshake only: the scope is
        # let go, which the socket would keep for its life (the request's headers
        # 1.1 KB, the rest of the scope 1.2 KB); its headers are let go from any copy.
        if isinstance(self.scope.get("headers"), list):
            self.scope["headers"].clear()
        self.scope.clear()

    async def watch(self, *groups: str) -> None:
        for group in groups:
            await process_hub().watch(group, self)
            self.groups_watched.append(group)

    def note_access_epoch(self) -> None:
        """Called before the read that lets the socket in: access that ends from here
        on is caught, whether its event reaches the hub before or after `admit`."""
        self.access_epoch = process_hub().access_epoch

    def admit(self, viewer: Viewer) -> None:
        """Let the hub check this socket's viewer again from now on (at once, before it
        sends, if access changed since its read)."""
        self.viewer = viewer
        process_hub().admit(self, self.access_epoch)

    def start_sending(self) -> None:
        """From now on frames go out (before, they wait behind the first snapshot)."""
        self.sending_allowed = not self.closing
        if self.has_pending():
            self.wake_sender()

    def hold(self) -> None:
        self.held = True

    def release(self) -> None:
        self.held = False
        if self.has_pending():
            self.wake_sender()

    def lose_access(self, code: int) -> None:
        """Send nothing more, and close with `code` (said at once: the hub calls this
        while it hands out a frame, which must not reach this socket)."""
        if self.closing:
            return
        self.closing = True
        self.sending_allowed = False
        if self.viewer is None:
            # Still connecting (a revocation came before the socket was accepted):
            # connect() hangs up once it may.
            self.lost_code = code
            return
        self.hanging_up = asyncio.ensure_future(self.hang_up(code))

    async def hang_up(self, code: int) -> None:
        if self.sender is not None:
            self.sender.cancel()
        self.leave_hub()
        if code == SHARE_ENDED:
            await self.send(text_data=json.dumps({"type": "share.ended", "session": self.public_id}))
        await self.close(code=code)

    def leave_hub(self) -> None:
        hub = process_hub()
        hub.dismiss(self)
        for group in self.groups_watched:
            hub.unwatch(group, self)

    def wake_sender(self, newest_only: bool = False) -> None:
        if newest_only:
            self.skip_to_newest()
        if not self.sending_allowed or self.held:
            return
        if self.sender is not None and not self.sender.done():
            return  # a send waits for the client to read: the same task sends these
        if self.send_now is not None:
            texts = self.take_pending()
            for sent, text in enumerate(texts):
                if not self.send_now(text):
                    # The client is not reading: the rest waits for it, in a task.
                    self.sender = asyncio.ensure_future(self.send_all(texts[sent:]))
                    return
            return
        # Under another server than todoweb's own: a task per burst, gone once the
        # socket has sent what it holds (a task kept waiting between frames, and the
        # future each wait makes, would outlive the garbage collector's young
        # generations, a thousand sockets' worth a round, and bring on full collections
        # that stop the process for 200 ms).
        self.sender = asyncio.ensure_future(self.send_all())

    async def send_all(self, texts: list[str] | None = None) -> None:
        """Send `texts`, then what the socket holds until it holds nothing: a send waits
        while the client reads slowly, and frames offered meanwhile are sent by this
        same task."""
        for text in texts or []:
            await self.send_text(text)
        while self.has_pending() and self.sending_allowed and not self.held:
            for text in self.take_pending():
                await self.send_text(text)

    def has_pending(self) -> bool:
        raise NotImplementedError

    def skip_to_newest(self) -> None:
        """Keep only the newest of the frames waiting (each is a whole snapshot)."""

    def take_pending(self) -> list[str]:
        """The frames waiting, to send now in this order; the socket counts them as sent."""
        raise NotImplementedError

    def offer(self, message: dict[str, Any]) -> bool:
        """Keep the frame if it is newer than what this socket holds (the hub's pump
        then wakes the sender); True if there is something to send."""
        raise NotImplementedError

    async def send_text(self, text: str) -> None:
        # Channels' send() with its checks skipped: a frame is text, every time.
        await self.base_send({"type": "websocket.send", "text": text})

    def set_timer(self, name: str, when: datetime | None, callback) -> None:
        """Call `callback` (synchronously, on the loop) at `when` (or up to a tenth of a
        second later); None cancels."""
        old = self.timers.pop(name, None)
        if old is not None:
            old.cancel()
        if when is not None:
            delay = max(0.0, (when - timezone.now()).total_seconds())
            self.timers[name] = clock().call_later(delay, callback)

    async def disconnect(self, code: int) -> None:
        self.closing = True
        if self.sender is not None:
            self.sender.cancel()
        for timer in self.timers.values():
            timer.cancel()
        self.leave_hub()

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

    def __init__(self, *args: Any, public_id: str = "", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.public_id = public_id
        self.share_link_id: int | None = None
        self.sent = -1  # the revision this socket shows
        self.state = ""
        self.title = ""
        self.updated_at: str | None = None
        # A list, not a deque: an empty deque takes 760 bytes, a socket's whole life.
        self.next_snapshots: list[dict[str, Any]] = []
        self.next_state: dict[str, Any] | None = None
        # Frames that carry a whole list each (people's messages, open questions): the newest of each kind.
        self.next_lists: dict[str, dict[str, Any]] = {}
        self.idle_deadline: datetime | None = None
        self.idle_armed_for: datetime | None = None

    async def connect(self) -> None:
        # Watch before reading: a revision, or a revocation of the share link,
        # committed in between still reaches this socket.
        await self.watch(events.session_group(self.public_id))
        share = parse_qs(self.scope.get("query_string", b"").decode()).get("share", [None])[0]
        self.note_access_epoch()
        found = await in_database_thread(viewer_snapshot, self.user, self.public_id, share)
        if found is None:
            await self.close(code=FORBIDDEN)
            return
        snapshot, project_id, link = found
        self.share_link_id = link.pk if link else None
        await self.accept()
        await self.send_text(snapshot.model_dump_json())
        self.shown(snapshot.route())
        process_hub().saw(self.public_id, snapshot.revision)
        if link is not None:
            self.admit(Viewer(link=link.pk, session=self.public_id))
            self.set_timer("expiry", link.expires_at, self.end_share)
        else:
            self.admit(Viewer(user=self.user.pk, login=self.login, project=project_id))
        if self.lost_code is not None:
            await self.hang_up(self.lost_code)
            return
        self.start_sending()

    def offer(self, message: dict[str, Any]) -> bool:
        kind = message["kind"]
        if kind == "session.snapshot":
            newest = self.next_snapshots[-1]["revision"] if self.next_snapshots else self.sent
            if message["revision"] > newest:
                self.next_snapshots.append(message)
                del self.next_snapshots[:-SNAPSHOT_BACKLOG]  # a full backlog drops its oldest
        elif kind == "session.state":
            self.next_state = message
        elif kind in LIST_FRAMES:
            self.next_lists[kind] = message
        elif kind == "share.revoked":
            links = message.get("links")
            if self.share_link_id is not None and (links is None or self.share_link_id in links):
                self.end_share()
        return self.has_pending()

    def has_pending(self) -> bool:
        return bool(self.next_snapshots) or self.next_state is not None or bool(self.next_lists)

    def skip_to_newest(self) -> None:
        del self.next_snapshots[:-1]

    def take_pending(self) -> list[str]:
        texts = []
        for snapshot in self.next_snapshots:
            if snapshot["revision"] > self.sent:
                texts.append(snapshot["text"])
                self.shown(snapshot)
        self.next_snapshots.clear()
        state, self.next_state = self.next_state, None
        # A state event older than the revision shown is already in that snapshot.
        if state is not None and state["revision"] >= self.sent:
            texts.append(state["text"])
            self.state, self.title = state["state"], state["title"]
            self.watch_idle()
        while self.next_lists:
            _, frame = self.next_lists.popitem()
            texts.append(frame["text"])
        return texts

    def shown(self, route: dict[str, Any]) -> None:
        """The socket shows the snapshot of `route` (its revision, state, title)."""
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

    def end_share(self) -> None:
        self.lose_access(SHARE_ENDED)


def viewer_snapshot(user, public_id: str, share: str | None) -> tuple[events.SessionSnapshot, int, Any] | None:
    """What a socket shows first, its session's project and the share link used, if its
    viewer may watch (one trip to the database thread)."""
    access = session_for_viewer(user=user, public_id=public_id, share=share)
    if access is None:
        return None
    session, link = access
    return events.snapshot_event(current_data(session)), session.project_id, link


class DashboardConsumer(LiveConsumer):
    """`/ws/dashboard/`: summaries of every session of the user's projects (staff: all)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Per session: the newest summary sent (its route, and its text or dict).
        self.known: dict[str, dict[str, Any]] = {}
        self.pending: dict[str, dict[str, Any]] = {}
        self.idle_deadline: datetime | None = None

    async def connect(self) -> None:
        if self.user is None or not self.user.is_authenticated:
            await self.close(code=FORBIDDEN)
            return
        await process_hub().start()  # its epoch counts from the first event it receives
        self.note_access_epoch()
        projects = await in_database_thread(dashboard_scope, self.user)
        await self.watch(*dashboard_groups(projects))
        summaries = await in_database_thread(dashboard_summaries, self.user)
        await self.accept()
        self.admit(Viewer(user=self.user.pk, login=self.login, dashboard=True, projects=projects))
        for summary in summaries:
            self.known[summary["id"]] = {"summary": summary} | events.SessionSummary(session=summary).route()
            process_hub().saw(summary["id"], summary["revision"])
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

    def take_pending(self) -> list[str]:
        texts = []
        for session, message in self.pending.items():
            texts.append(message["text"])
            if message["kind"] == "session.archived":
                self.known.pop(session, None)
            else:
                self.known[session] = message
                deadline = idle_at(message["state"], message["updated_at"])
                if deadline is not None and (self.idle_deadline is None or deadline < self.idle_deadline):
                    self.watch_idle()
        self.pending.clear()
        return texts

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


def dashboard_groups(projects: frozenset[int] | None) -> list[str]:
    """The groups of a dashboard that shows `projects` (None: staff, every project)."""
    if projects is None:
        return [events.STAFF_GROUP]
    return [events.dashboard_group(pk) for pk in sorted(projects)]
