"""The one-process channel layer: a group's message reaches each member's channel as it
is, and expired memberships are still swept (at most once a second). Its fast path:
with every fast path off, Channels' own group_send serves."""

from __future__ import annotations

import time

from tests.conftest import fast_path
from todoweb.live import layer
from todoweb.live.layer import ProcessLayer

pytestmark = fast_path


async def test_a_group_message_reaches_every_member_as_it_is():
    channels = ProcessLayer()
    first, second = await channels.new_channel(), await channels.new_channel()
    await channels.group_add("session-a", first)
    await channels.group_add("session-a", second)
    await channels.group_add("session-b", second)
    frame = {"type": "live.frame", "group": "session-a", "text": "{}"}
    await channels.group_send("session-a", frame)
    assert await channels.receive(first) is frame
    assert await channels.receive(second) is frame
    await channels.group_send("session-c", frame)  # no member: nothing, no error
    assert first not in channels.channels and second not in channels.channels


async def test_frames_put_at_once_reach_their_groups_members_as_they_are():
    channels = ProcessLayer()
    first, second = await channels.new_channel(), await channels.new_channel()
    await channels.group_add("session-a", first)
    await channels.group_add("dashboard-1", second)
    snapshot = {"type": "live.frame", "group": "session-a", "text": "{}"}
    summary = {"type": "live.frame", "group": "dashboard-1", "text": "[]"}
    unwatched = {"type": "live.frame", "group": "dashboard-all", "text": "[]"}
    channels.put_frames([snapshot, summary, unwatched])
    assert await channels.receive(first) is snapshot
    assert await channels.receive(second) is summary
    assert first not in channels.channels and second not in channels.channels  # nothing more queued


async def test_expired_memberships_are_swept_at_most_once_a_second(monkeypatch):
    channels = ProcessLayer(group_expiry=60)
    member = await channels.new_channel()
    await channels.group_add("session-a", member)
    channels.groups["session-a"][member] = time.time() - 120  # joined long ago
    clock = [time.time()]
    monkeypatch.setattr(layer.time, "time", lambda: clock[0])
    await channels.group_send("session-a", {"type": "live.frame"})
    assert member not in channels.groups["session-a"]  # the first send sweeps
    await channels.group_add("session-a", member)
    channels.groups["session-a"][member] = clock[0] - 120
    clock[0] += 0.5
    await channels.group_send("session-a", {"type": "live.frame", "n": 1})
    assert (await channels.receive(member))["n"] == 1  # within the second: not swept yet
    clock[0] += 1
    await channels.group_send("session-a", {"type": "live.frame", "n": 2})
    assert member not in channels.groups["session-a"]
