"""The hub's offering of frames to a group's sockets, with watchers that record what
they are offered (the consumers' own behaviour is in test_consumers.py)."""

from __future__ import annotations

import asyncio

from todoweb.live import events, hub


class Recorder:
    """A socket that keeps what it is offered and never has anything to send."""

    viewer = None

    def __init__(self) -> None:
        self.offered: list[int] = []

    def offer(self, message: dict) -> bool:
        self.offered.append(message["revision"])
        return False


def frame(revision: int, group: str = "session-x") -> dict:
    return {
        "type": events.FRAME,
        "kind": "session.snapshot",
        "group": group,
        "session": "x",
        "revision": revision,
        "text": "{}",
    }


def hub_watched_by(count: int, group: str = "session-x") -> tuple[hub.Hub, list[Recorder]]:
    this = hub.Hub(layer=None)
    watchers = [Recorder() for _ in range(count)]
    this.watchers[group] = set(watchers)
    return this, watchers


async def test_a_group_of_up_to_a_batch_is_offered_a_frame_at_once(monkeypatch):
    monkeypatch.setattr(hub, "OFFER_BATCH", 3)
    this, watchers = hub_watched_by(3)
    this.deliver(frame(1))
    assert [w.offered for w in watchers] == [[1], [1], [1]]
    assert not this.offering


async def test_a_larger_group_is_offered_in_batches_with_the_loop_free_between(monkeypatch):
    monkeypatch.setattr(hub, "OFFER_BATCH", 3)
    this, watchers = hub_watched_by(7)
    this.deliver(frame(1))
    this.deliver(frame(2))
    assert all(w.offered == [] for w in watchers)  # nothing held the loop for them

    # A write's work, scheduled now, runs once the first batch has its frame, before the rest.
    seen_by_the_write: list[int] = []
    asyncio.get_running_loop().call_soon(lambda: seen_by_the_write.append(sum(bool(w.offered) for w in watchers)))
    await this.offering["session-x"]
    assert seen_by_the_write == [3]
    assert [w.offered for w in watchers] == [[1, 2]] * 7  # all of them, in order
    assert not this.offering and not this.offers


async def test_a_frame_delivered_while_a_batch_is_offered_waits_its_turn(monkeypatch):
    """Even once the group is small again, a frame does not pass the ones still being offered."""
    monkeypatch.setattr(hub, "OFFER_BATCH", 3)
    this, watchers = hub_watched_by(5)
    this.deliver(frame(1))
    await asyncio.sleep(0)  # the first batch has it
    for gone in watchers[3:]:
        this.unwatch("session-x", gone)
    this.deliver(frame(2))
    await this.offering["session-x"]
    assert [w.offered for w in watchers[:3]] == [[1, 2]] * 3


async def test_stopping_the_hub_stops_its_offering(monkeypatch):
    monkeypatch.setattr(hub, "OFFER_BATCH", 1)
    this, watchers = hub_watched_by(4)
    this.deliver(frame(1))
    await asyncio.sleep(0)  # one watcher has it
    task = this.offering["session-x"]
    await this.stop()
    assert task.cancelled()
    assert sorted(len(w.offered) for w in watchers) == [0, 0, 0, 1]


class Sender(Recorder):
    """A socket that has the frame it is offered to send, and counts its wake-ups."""

    def __init__(self) -> None:
        super().__init__()
        self.woken = 0

    def offer(self, message: dict) -> bool:
        super().offer(message)
        return True

    def wake_sender(self, newest_only: bool = False) -> None:
        self.woken += 1


async def rests_of_a_round(monkeypatch, in_flight: int) -> list[float]:
    """The pauses the pump asks for after each batch of a round to 60 sockets, while
    `in_flight` calls wait for a database thread."""
    monkeypatch.setattr(hub, "SEND_BATCH", 20)
    monkeypatch.setattr(hub, "SENDS_PER_SECOND", 10**9)  # no rate to keep
    monkeypatch.setattr(hub, "REST", 10**6)  # any time a batch takes is a long rest
    monkeypatch.setattr(hub, "calls_in_flight", lambda: in_flight)
    asked: list[float] = []
    sleep = asyncio.sleep

    async def recorded(delay: float) -> None:
        if delay:
            asked.append(delay)
        await sleep(0)

    monkeypatch.setattr(hub.asyncio, "sleep", recorded)
    this = hub.Hub(layer=None)
    senders = [Sender() for _ in range(60)]
    this.watchers["session-x"] = set(senders)
    this.deliver(frame(1))
    await this.pumps["session-x"]
    assert [s.woken for s in senders] == [1] * 60
    return asked


async def test_the_pump_rests_between_batches_while_a_write_waits_for_the_database(monkeypatch):
    rests = await rests_of_a_round(monkeypatch, in_flight=1)
    assert len(rests) == 3 and all(rest > 0.001 for rest in rests)


async def test_the_pump_sends_a_round_without_resting_when_no_write_waits(monkeypatch):
    rests = await rests_of_a_round(monkeypatch, in_flight=0)
    assert all(rest < 0.000001 for rest in rests)  # only what the rate asks: nothing


class Layer:
    """A channel layer that takes group changes and does nothing with them."""

    async def group_discard(self, group: str, channel: str) -> None:
        pass


async def test_the_revisions_of_sessions_no_longer_watched_are_forgotten():
    """What the hub keeps per session goes once the last socket watching it has left: a
    process that sees thousands of sessions come and go holds only the watched ones'."""
    this = hub.Hub(layer=Layer())
    left, stays = Recorder(), Recorder()
    this.watchers = {"session-a": {left}, "session-b": {stays}}
    this.deliver(frame(3, "session-a") | {"session": "a"})
    this.deliver(frame(4, "session-b") | {"session": "b"})
    this.unwatch("session-a", left)
    await this.drop_empty_groups()
    assert this.revisions == {"b": 4}


async def test_a_watched_dashboard_keeps_the_revisions_it_was_sent():
    # A dashboard watches the sessions of its projects through their summaries.
    this = hub.Hub(layer=Layer())
    left = Recorder()
    this.watchers = {"session-a": {left}, "dashboard-1": {Recorder()}}
    this.deliver(frame(3, "session-a") | {"session": "a"})
    this.unwatch("session-a", left)
    await this.drop_empty_groups()
    assert this.revisions == {"a": 3}
