"""Alarms: callbacks due at a time share the loop's timers, ring never early and at
most a tenth of a second late, and a cancelled one never rings."""

from __future__ import annotations

import asyncio

from todoweb.live.alarms import RESOLUTION, Clock, clock


async def test_an_alarm_rings_at_its_time_not_before():
    loop = asyncio.get_running_loop()
    rang = loop.create_future()
    start = loop.time()
    clock().call_later(0.25, lambda: rang.set_result(loop.time()))
    at = await asyncio.wait_for(rang, 5)
    assert start + 0.25 <= at


async def test_alarms_due_in_the_same_tenth_of_a_second_share_one_timer(monkeypatch):
    loop = asyncio.get_running_loop()
    timers = []
    original = loop.call_at
    alarms = Clock(loop)

    def noting(when, callback, *args, **kwargs):
        if callback == alarms.ring:
            timers.append(when)
        return original(when, callback, *args, **kwargs)

    monkeypatch.setattr(loop, "call_at", noting)
    rang = []
    when = (int(loop.time() / RESOLUTION) + 3) * RESOLUTION + RESOLUTION / 2
    for n in range(1000):
        alarms.call_at(when, lambda n=n: rang.append(n))
    alarms.call_at(when + 1, lambda: rang.append("later"))
    assert len(timers) == 2
    while len(rang) < 1000:
        await asyncio.sleep(0.05)
    assert rang == list(range(1000))  # in the order they were set
    assert loop.time() >= when


async def test_a_cancelled_alarm_never_rings():
    loop = asyncio.get_running_loop()
    rang = []
    kept = loop.create_future()
    cancelled = clock().call_later(0.1, lambda: rang.append("cancelled"))
    clock().call_later(0.1, lambda: kept.set_result(True))
    cancelled.cancel()
    cancelled.cancel()  # twice, as a TimerHandle may be
    await asyncio.wait_for(kept, 5)
    await asyncio.sleep(RESOLUTION)
    assert rang == []


async def test_a_failing_alarm_goes_to_the_loop_s_handler_and_the_others_still_ring():
    loop = asyncio.get_running_loop()
    errors = []
    loop.set_exception_handler(lambda _, context: errors.append(context["exception"]))
    rang = loop.create_future()

    def fail():
        raise ValueError("boom")

    clock().call_later(0, fail)
    clock().call_later(0, lambda: rang.set_result(True))
    assert await asyncio.wait_for(rang, 5)
    await asyncio.sleep(0)
    assert [str(error) for error in errors] == ["boom"]
    loop.set_exception_handler(None)
