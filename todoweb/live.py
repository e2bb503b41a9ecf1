"""Live delivery inside one process: one subscription per watched group, and the
newest frame per socket.

Channels' own fan-out gives every socket a channel and a queue of its own: a watcher
that falls behind queues every revision (without limit), and every socket unpacks
its own copy of every message. Here each process has one hub, which subscribes once
per group that a local socket watches. A frame (todoweb.events) is received and
unpacked once per process and offered to each local socket as the same text; each
socket keeps only the newest frame it has not sent yet (see consumers.py), so a slow
socket skips to the newest revision and never queues, and a fast one sees them all.

Sending is paced so that watchers never slow the writers. A frame for a group is
kept in each socket's slot at once, but the sockets are woken to send it by one
pump per group, in rounds of SEND_BATCH sockets at a time spread out in time: a
group gets at most SENDS_PER_SECOND frames a second, and at most half of the loop.
A hundred watchers of an agent writing 20 times a second see every revision; a
thousand see the newest one four times a second; and a write's answer never waits
behind a burst of a thousand sends (bench/fanout.py).

Frames can be lost on the way: the channel layer (Redis) was down, a publish failed,
a process died between commit and publish. Every RECONCILE_EVERY seconds the hub
asks the database, in one query, which of the sessions watched here moved past the
revision it last saw, and sends those as if their frames had come. So every watcher
converges on the current revision within seconds of any outage, Redis or not.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from datetime import datetime, timedelta
from typing import Any, Protocol

from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.db.models import Q
from django.utils import timezone

from . import events
from .logs import ThrottledLogger
from .models import Session
from .selectors import current_data, session_summary

logger = logging.getLogger(__name__)
layer_down_logger = ThrottledLogger(__name__, every=60)

RECONCILE_EVERY = 5.0
# Writes commit a little after they read the clock: look back this far past the last check.
CLOCK_SLACK = timedelta(seconds=2)
# Channels' in-memory layer forgets a group membership after a day: renew it hourly.
RENEW_GROUPS_EVERY = timedelta(hours=1)


# Sockets woken per turn of the event loop by a group's pump. After a batch the pump
# rests as long as the batch took (REST: fan-out takes at most 1 / (1 + REST) of the
# loop) and at least until the group's SENDS_PER_SECOND allows the next. Sent in one
# burst, a round to 1,000 watchers held the interpreter for ~50 ms, and the writes
# landing in it waited: answer p99 3.8x the same writes unwatched; spread, 1.1-1.5x.
SEND_BATCH = 25
REST = 1.0
SENDS_PER_SECOND = 4000
# A round of more sockets than this wakes each to send only its newest frame (a
# socket holds a few, see consumers.py), so that the group's frames stay within
# SENDS_PER_SECOND and its watchers within a round of the newest revision.
FULL_ROUND = 200


class Watcher(Protocol):
    def offer(self, message: dict[str, Any]) -> bool:
        """Keep `message` if it is newer than what the socket holds; True if it has something to send."""

    def wake_sender(self, newest_only: bool = False) -> None:
        """Send what the socket holds (only the newest frame if `newest_only`)."""


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
        self.renewed_at = timezone.now()

    async def start(self) -> None:
        if self.ready is None:
            self.ready = asyncio.ensure_future(self.open_channel())
        await self.ready

    async def open_channel(self) -> None:
        self.channel = await self.layer.new_channel()
        self.tasks = [asyncio.ensure_future(self.receive_forever()), asyncio.ensure_future(self.reconcile_forever())]

    async def stop(self) -> None:
        tasks = self.tasks + list(self.pumps.values())
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

    def saw(self, public_id: str, revision: int) -> None:
        if revision > self.revisions.get(public_id, -1):
            self.revisions[public_id] = revision

    def deliver(self, message: dict[str, Any]) -> None:
        if message.get("type") != events.FRAME:
            return
        if message["kind"] in ("session.snapshot", "session.summary"):
            self.saw(message["session"], message["revision"])
        group = message["group"]
        due = self.due.setdefault(group, set())
        for watcher in self.watchers.get(group, ()):
            if watcher.offer(message):
                due.add(watcher)
        if due and group not in self.pumps:
            self.pumps[group] = asyncio.ensure_future(self.pump(group))

    async def pump(self, group: str) -> None:
        """Wake the group's sockets that have a frame, SEND_BATCH at a time, until none
        has. After each batch the pump rests as long as the batch took, and longer if
        the group would otherwise get more than SENDS_PER_SECOND frames a second: a
        round of a thousand sockets is spread over a quarter of a second rather than
        sent in one burst that holds the interpreter while a write waits."""
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
                    await asyncio.sleep(max(took * REST, len(batch) / SENDS_PER_SECOND - took))
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
                await asyncio.sleep(1)
                continue
            self.deliver(message)

    async def reconcile_forever(self) -> None:
        since = timezone.now()
        while True:
            await asyncio.sleep(RECONCILE_EVERY)
            checked_at = timezone.now()
            try:
                await self.drop_empty_groups()
                for message in await database_sync_to_async(self.missed_frames)(since - CLOCK_SLACK):
                    self.deliver(message)
                since = checked_at
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                layer_down_logger.warning("Live reconciliation failed; retrying", error=exc)

    async def drop_empty_groups(self) -> None:
        renew = timezone.now() - self.renewed_at > RENEW_GROUPS_EVERY
        for group, members in list(self.watchers.items()):
            if not members:
                del self.watchers[group]
                self.joined.pop(group, None)
                await self.layer.group_discard(group, self.channel)
            elif renew:
                await self.layer.group_add(group, self.channel)
        if renew:
            self.renewed_at = timezone.now()

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


def hub() -> Hub:
    loop = asyncio.get_running_loop()
    layer = get_channel_layer()
    found = _hubs.get(loop)
    if found is None or found.layer is not layer:
        found = _hubs[loop] = Hub(layer)
    return found
