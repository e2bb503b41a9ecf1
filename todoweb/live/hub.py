"""Live delivery inside one process: one subscription per watched group, and the
newest frame per socket.

Channels' own fan-out gives every socket a channel and a queue of its own: a watcher
that falls behind queues every revision (without limit), and every socket unpacks
its own copy of every message. Here each process has one hub, which subscribes once
per group that a local socket watches. A frame (todoweb.live.events) is received and
unpacked once per process and offered to each local socket as the same text; each
socket keeps only the newest frame it has not sent yet (see consumers.py), so a slow
socket skips to the newest revision and never queues, and a fast one sees them all.

Sending is paced so that watchers never slow the writers. A frame for a group is
kept in each socket's slot at once (OFFER_BATCH sockets at a time in a larger
group), but the sockets are woken to send it by one pump per group, in rounds of
SEND_BATCH sockets at a time with the loop free between them: a group gets at most
SENDS_PER_SECOND frames a second, and at most half of the interpreter while a call
waits for a database thread.
Under todoweb's own server a thousand watchers of an agent writing 20 times a second
see every revision; ten thousand see the newest one a few times a second; and a
write's answer never waits behind a burst of a thousand sends (bench/fanout.py).

Frames can be lost on the way: the channel layer (Redis) was down, a publish failed,
a process died between commit and publish. Every RECONCILE_EVERY seconds the hub
asks the database, in one query, which of the sessions watched here moved past the
revision it last saw, and sends those as if their frames had come. So every watcher
converges on the current revision within seconds of any outage, Redis or not.

Access ends too (todoweb.live.access): a logout, a member removed, a link revoked. The
event that says so reaches every hub through the channel layer, which closes or
holds the sockets concerned at once; and before each reconciliation sends anything,
the hub checks every socket it serves against the database (four queries at most,
for all of them) and closes those whose viewer lost access. The hub probes its
channel layer every PROBE_EVERY seconds and counts the times the layer connected to
Redis again (todoweb.redis_connections: its subscriptions may have been cut, in an
outage shorter than a probe); once it has seen either, it
checks again before it passes on the first frame that comes through after the
outage, as events published meanwhile were lost.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any, Protocol

from channels.layers import get_channel_layer
from django.db.models import Q
from django.utils import timezone

from todoweb import redis_connections
from todoweb.live import access, events
from todoweb.logs import ThrottledLogger
from todoweb.models import Session
from todoweb.reads import current_data, session_summary
from todoweb.store.database import calls_in_flight, in_database_thread

logger = logging.getLogger(__name__)
layer_down_logger = ThrottledLogger(__name__, every=60)


RECONCILE_EVERY = 5.0
# How often the hub checks that its channel layer answers (a publish to its own channel).
PROBE_EVERY = 1.0
PROBE_TIMEOUT = 1.0
# Writes commit a little after they read the clock: look back this far past the last check.
CLOCK_SLACK = timedelta(seconds=2)
# Channels' in-memory layer forgets a group membership after a day: renew it hourly.
RENEW_GROUPS_EVERY = timedelta(hours=1)


# Sockets woken per turn of the event loop by a group's pump. After a batch the pump
# rests as long as the batch took while a call waits for a database thread (REST:
# fan-out then takes at most 1 / (1 + REST) of the interpreter, which that thread
# needs too), and at least until the group's SENDS_PER_SECOND allows the next. Sent in
# one burst, a round to 1,000 watchers held the interpreter for ~50 ms, and the writes
# landing in it waited: answer p99 3.8x the same writes unwatched; spread, 1.1-1.5x.
# A socket under todoweb's own server writes a frame at once from bytes shared by all
# (~18 µs a socket, where an ASGI send in a task of its own took ~90 µs): a round to
# 1,000 watchers takes ~20 ms when no write waits, and each sees every revision of an
# agent writing 20 times a second (bench/fanout.py).
SEND_BATCH = 25
REST = 1.0
SENDS_PER_SECOND = 50_000
# A round of more sockets than this wakes each to send only its newest frame (a
# socket holds a few, see consumers.py), so that the group's frames stay within
# SENDS_PER_SECOND and its watchers within a round of the newest revision.
FULL_ROUND = 2000
# A frame for a group of more sockets than this is offered to them OFFER_BATCH at a
# time, the loop free between batches. Offered to ten thousand sockets at once, each
# frame held the interpreter ~15 ms, and the writes landing meanwhile waited: answer
# p99 5x the same writes unwatched.
OFFER_BATCH = 1000


class Watcher(Protocol):
    viewer: access.Viewer | None

    def offer(self, message: dict[str, Any]) -> bool:
        """Keep `message` if it is newer than what the socket holds; True if it has something to send."""

    def wake_sender(self, newest_only: bool = False) -> None:
        """Send what the socket holds (only the newest frame if `newest_only`)."""

    def hold(self) -> None:
        """Send nothing until `release()`: its viewer's access is being checked."""

    def release(self) -> None:
        """Send again what the socket holds."""

    def lose_access(self, code: int) -> None:
        """Stop sending at once and close the socket with `code`."""


class Hub:
    """This process's subscriptions, and the sockets watching each group."""

    def __init__(self, layer: Any):
        self.layer = layer
        self.channel: str | None = None
        self.watchers: dict[str, set[Watcher]] = {}
        self.joined: dict[str, asyncio.Future] = {}
        # The newest revision of each session this process has framed or read.
        self.revisions: dict[str, int] = {}
        self.ready: asyncio.Future | None = None
        self.tasks: list[asyncio.Task] = []
        # Per group: the sockets that have a frame to send, and the pump sending them.
        self.due: dict[str, set[Watcher]] = {}
        self.pumps: dict[str, asyncio.Task] = {}
        # Per group too large to offer a frame at once: its frames not offered yet, in
        # order, and the task offering them.
        self.offers: dict[str, list[dict[str, Any]]] = {}
        self.offering: dict[str, asyncio.Task] = {}
        self.renewed_at = timezone.now()
        # The sockets let in (with their viewers), for access checks.
        self.viewers: set[Watcher] = set()
        # Users whose sockets are held until checked again, sockets let in while access
        # changed (held too), and the task checking them.
        self.recheck: set[int] = set()
        self.unchecked: set[Watcher] = set()
        self.rechecking: asyncio.Task | None = None
        self.reconciling = asyncio.Lock()
        self.since = timezone.now()  # moves before this were caught up on
        # Channel layer failures seen, and how many of them an access check has followed:
        # while they differ, access that ended may have been announced into the void.
        self.outages = 0
        self.outages_checked = 0
        self.connections_seen = redis_connections.made
        self.layer_down = False
        # Moves whenever access may have ended (an access event, an outage of the layer):
        # a socket reads what lets it in, then is admitted; if this moved in between,
        # the event may have passed it by, and it is checked again before it sends.
        self.access_epoch = 0

    async def start(self) -> None:
        if self.ready is None:
            self.ready = asyncio.ensure_future(self.open_channel())
        await self.ready

    async def open_channel(self) -> None:
        self.channel = await self.layer.new_channel()
        await self.layer.group_add(events.ACCESS_GROUP, self.channel)
        self.tasks = [asyncio.ensure_future(self.receive_forever()), asyncio.ensure_future(self.reconcile_forever())]

    async def stop(self) -> None:
        tasks = self.tasks + list(self.pumps.values()) + list(self.offering.values())
        tasks += [self.rechecking] if self.rechecking else []
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def watch(self, group: str, watcher: Watcher) -> None:
        """From when this returns, every frame of `group` reaches `watcher`."""
        await self.start()
        self.watchers.setdefault(group, set()).add(watcher)
        if group not in self.joined:
            self.joined[group] = asyncio.ensure_future(self.layer.group_add(group, self.channel))
        await self.joined[group]

    def unwatch(self, group: str, watcher: Watcher) -> None:
        # Groups left empty are unsubscribed by the next reconciliation, not here: a
        # socket that reconnects at once finds its subscription still in place.
        self.watchers.get(group, set()).discard(watcher)

    def admit(self, watcher: Watcher, epoch: int | None = None) -> None:
        """From now on `watcher`'s viewer is checked again (its `viewer` is set). `epoch`:
        the hub's access_epoch before its viewer's access was read; if access changed
        since, the socket is held until its viewer is checked again, as an access event
        that came before it was admitted did not reach it."""
        self.viewers.add(watcher)
        if epoch is not None and epoch != self.access_epoch:
            watcher.hold()
            self.unchecked.add(watcher)
            self.start_rechecking()

    def dismiss(self, watcher: Watcher) -> None:
        self.viewers.discard(watcher)
        self.unchecked.discard(watcher)

    def saw(self, public_id: str, revision: int) -> None:
        if revision > self.revisions.get(public_id, -1):
            self.revisions[public_id] = revision

    def deliver(self, message: dict[str, Any]) -> None:
        if message.get("type") != events.FRAME:
            return
        if message["kind"] == "access.changed":
            self.access_changed(message)
            return
        if message["kind"] in ("session.snapshot", "session.summary"):
            self.saw(message["session"], message["revision"])
        group = message["group"]
        watchers = self.watchers.get(group, ())
        if len(watchers) <= OFFER_BATCH and group not in self.offering:
            self.offer(group, watchers, message)
            return
        # Behind the frames of the group still being offered, if any: in order.
        self.offers.setdefault(group, []).append(message)
        if group not in self.offering:
            self.offering[group] = asyncio.ensure_future(self.offer_in_batches(group))

    def offer(self, group: str, watchers: Iterable[Watcher], message: dict[str, Any]) -> None:
        """Offer `message` to `watchers`, and have the group's pump wake those that have something to send."""
        due = self.due.setdefault(group, set())
        for watcher in watchers:
            if watcher.offer(message):
                due.add(watcher)
        if due and group not in self.pumps:
            self.pumps[group] = asyncio.ensure_future(self.pump(group))

    async def offer_in_batches(self, group: str) -> None:
        """Offer the group's frames, in order, to its sockets OFFER_BATCH at a time,
        letting the loop run between batches."""
        try:
            while messages := self.offers.pop(group, None):
                for message in messages:
                    watchers = list(self.watchers.get(group, ()))
                    for start in range(0, len(watchers), OFFER_BATCH):
                        self.offer(group, watchers[start : start + OFFER_BATCH], message)
                        await asyncio.sleep(0)
        finally:
            self.offering.pop(group, None)

    async def pump(self, group: str) -> None:
        """Wake the group's sockets that have a frame, SEND_BATCH at a time, until none
        has. The loop is free between batches (a request arriving waits one batch at
        most). After a batch the pump rests as long as the batch took while a call
        waits for a database thread, and longer if the group would otherwise get more
        than SENDS_PER_SECOND frames a second: a round does not hold the interpreter
        in one burst while a write waits."""
        loop = asyncio.get_running_loop()
        try:
            while self.due.get(group):
                due, self.due[group] = list(self.due[group]), set()
                newest_only = len(due) > FULL_ROUND
                for start in range(0, len(due), SEND_BATCH):
                    began = loop.time()
                    batch = due[start : start + SEND_BATCH]
                    for watcher in batch:
                        watcher.wake_sender(newest_only)
                    await asyncio.sleep(0)  # the batch sends
                    took = loop.time() - began
                    rest = took * REST if calls_in_flight() else 0.0
                    await asyncio.sleep(max(rest, len(batch) / SENDS_PER_SECOND - took))
        finally:
            self.pumps.pop(group, None)
            if not self.due.get(group):
                self.due.pop(group, None)

    async def receive_forever(self) -> None:
        while True:
            try:
                message = await self.layer.receive(self.channel)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                layer_down_logger.warning("Live frames cannot be received: the channel layer failed", error=exc)
                self.layer_went_down()
                await asyncio.sleep(1)
                continue
            self.count_cuts()
            if self.outages != self.outages_checked:
                # The first message after an outage: access that ended meanwhile was
                # announced into the void. Check (or wait for the check under way)
                # before passing anything on.
                await self.reconcile()
            self.deliver(message)

    def layer_went_down(self) -> None:
        self.access_epoch += 1
        if not self.layer_down:
            self.layer_down = True
            self.outages += 1

    def count_cuts(self) -> bool:
        """Whether the layer connected to Redis again since last asked (its
        subscriptions may have been cut: an outage too short for the probe to see)."""
        if redis_connections.made == self.connections_seen:
            return False
        self.connections_seen = redis_connections.made
        self.outages += 1
        self.access_epoch += 1
        return True

    async def reconcile_forever(self) -> None:
        loop = asyncio.get_running_loop()
        due = loop.time() + RECONCILE_EVERY
        while True:
            await asyncio.sleep(min(PROBE_EVERY, max(0.0, due - loop.time())))
            if not await self.probe():
                self.layer_went_down()
            elif self.layer_down or self.count_cuts():
                self.layer_down = False
                due = loop.time()  # back after an outage: reconcile now
            if loop.time() >= due:
                await self.reconcile()
                await self.drop_empty_groups()
                due = loop.time() + RECONCILE_EVERY

    async def probe(self) -> bool:
        """Whether the channel layer takes a message (one to this hub's own channel)."""
        try:
            async with asyncio.timeout(PROBE_TIMEOUT):
                await self.layer.send(self.channel, {"type": "live.probe"})
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            layer_down_logger.warning("The channel layer does not answer; live frames wait for it", error=exc)
            return False
        return True

    async def reconcile(self) -> None:
        """Close the sockets whose viewers lost access, then send the others what moved
        on without this process hearing of it (both from the database)."""
        async with self.reconciling:
            checked_at = timezone.now()
            outages = self.outages
            try:
                await self.check_access(list(self.viewers))
                self.outages_checked = outages
                for message in await in_database_thread(self.missed_frames, self.since - CLOCK_SLACK):
                    self.deliver(message)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                layer_down_logger.warning("Live reconciliation failed; retrying", error=exc)
                return
            self.since = checked_at

    async def check_access(self, watchers: list[Watcher]) -> None:
        if not watchers:
            return
        lost = await in_database_thread(access.lost, [watcher.viewer for watcher in watchers])
        for watcher in watchers:
            code = lost.get(watcher.viewer)
            if code is not None:
                watcher.lose_access(code)

    def access_changed(self, message: dict[str, Any]) -> None:
        """Hang up the sockets of ended logins, deleted links and revoked tokens; hold the named users'
        sockets until they are checked again."""
        links, logins, users = set(message["links"]), set(message["logins"]), set(message["users"])
        tokens = set(message.get("tokens", ()))
        self.access_epoch += 1
        for watcher in list(self.viewers):
            viewer = watcher.viewer
            if viewer.link is not None and viewer.link in links:
                watcher.lose_access(access.SHARE_ENDED)
            elif viewer.token is not None and viewer.token in tokens:
                watcher.lose_access(access.FORBIDDEN)
            elif viewer.login is not None and logins and access.login_digest(viewer.login) in logins:
                watcher.lose_access(access.SIGNED_OUT)
            elif viewer.user is not None and viewer.user in users:
                watcher.hold()
        if users:
            self.recheck |= users
            self.start_rechecking()

    def start_rechecking(self) -> None:
        if self.rechecking is None or self.rechecking.done():
            self.rechecking = asyncio.ensure_future(self.check_held())

    async def check_held(self) -> None:
        while self.recheck or self.unchecked:
            users, self.recheck = self.recheck, set()
            unchecked, self.unchecked = self.unchecked, set()
            watchers = [watcher for watcher in self.viewers if watcher.viewer.user in users or watcher in unchecked]
            try:
                await self.check_access(watchers)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                # The database is out of reach: the sockets stay held until it answers.
                layer_down_logger.warning("Access check failed; retrying", error=exc)
                self.recheck |= users
                self.unchecked |= unchecked & self.viewers
                await asyncio.sleep(1)
                continue
            for watcher in watchers:
                # A user named again meanwhile waits for the next check.
                if watcher.viewer.user not in self.recheck and watcher not in self.unchecked:
                    watcher.release()

    async def drop_empty_groups(self) -> None:
        renew = timezone.now() - self.renewed_at > RENEW_GROUPS_EVERY
        dropped = False
        try:
            for group, members in list(self.watchers.items()):
                if not members:
                    del self.watchers[group]
                    self.joined.pop(group, None)
                    dropped = True
                    await self.layer.group_discard(group, self.channel)
                elif renew:
                    await self.layer.group_add(group, self.channel)
            if renew:
                await self.layer.group_add(events.ACCESS_GROUP, self.channel)
                self.renewed_at = timezone.now()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            layer_down_logger.warning("Live subscriptions not updated: the channel layer failed", error=exc)
        finally:
            if dropped:
                self.forget_unwatched()

    def forget_unwatched(self) -> None:
        """Forget the revisions of sessions no one here watches any more: a process that
        sees thousands of sessions come and go keeps only its watched ones'. While a
        dashboard is watched they stay: its reconciliation compares every session of
        its projects with them (one it forgot would be sent again)."""
        sessions, projects, staff = watched(list(self.watchers))
        if projects or staff:
            return
        kept = set(sessions)
        for public_id in [public_id for public_id in self.revisions if public_id not in kept]:
            del self.revisions[public_id]

    def missed_frames(self, since: datetime) -> list[dict[str, Any]]:
        """Frames for what moved on without this process hearing of it (a sync DB read)."""
        sessions, projects, staff = watched(list(self.watchers))
        if not (sessions or projects or staff):
            return []
        moved = Q(public_id__in=sessions)
        if staff:
            moved |= Q(updated_at__gte=since)
        elif projects:
            moved |= Q(project_id__in=projects, updated_at__gte=since)
        rows = Session.objects.filter(moved, archived_at__isnull=True).values_list("public_id", "revision")
        stale = [public_id for public_id, revision in rows if revision > self.revisions.get(public_id, -1)]
        if not stale:
            return []
        now = timezone.now()
        messages = []
        for session in Session.objects.with_current().select_related("project", "parent").filter(public_id__in=stale):
            snapshot = events.snapshot_event(current_data(session))
            summary = events.SessionSummary(session=session_summary(session, now=now))
            messages += events.frames(snapshot, events.session_group(session.public_id))
            messages += events.frames(summary, events.dashboard_group(session.project_id), events.STAFF_GROUP)
        return messages


def watched(groups: list[str]) -> tuple[list[str], list[int], bool]:
    """The sessions and projects these group names watch, and whether staff's group is one."""
    sessions = [group.removeprefix("session-") for group in groups if group.startswith("session-")]
    projects = [int(group.removeprefix("dashboard-")) for group in groups if group.removeprefix("dashboard-").isdigit()]
    return sessions, projects, events.STAFF_GROUP in groups


# One hub per event loop (a server process has one; each test has its own), for the
# channel layer of the moment.
_hubs: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Hub] = weakref.WeakKeyDictionary()


def process_hub() -> Hub:
    loop = asyncio.get_running_loop()
    layer = get_channel_layer()
    found = _hubs.get(loop)
    if found is None or found.layer is not layer:
        found = _hubs[loop] = Hub(layer)
    return found
