"""Alarms: callbacks due at a time, many of them on few timers.

Every open websocket waits on timers for its whole life: its keep-alive ping, its
session's idle deadline, its share link's expiry. A timer of the event loop costs
about 500 bytes (its handle, a copy of the context, the libuv timer); a thousand
sockets watching one session wait for the same moments. Here callbacks due within
the same tenth of a second share one loop timer, and each costs a small `Alarm`.

An alarm rings at its time or up to RESOLUTION later, never earlier. Its callback
runs as a loop's callback would (an exception goes to the loop's handler).
"""

from __future__ import annotations

import asyncio
import math
import weakref
from collections.abc import Callable

RESOLUTION = 0.1  # seconds


class Alarm:
    """A callback due at a time; `cancel()` as a loop's TimerHandle."""

    __slots__ = ("callback", "due", "clock")

    def __init__(self, callback: Callable[[], object], due: int, clock: Clock) -> None:
        self.callback = callback
        self.due = due
        self.clock = clock

    def cancel(self) -> None:
        self.clock.cancel(self)


class Clock:
    """The alarms of one event loop, by the tenth of a second they are due in."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.due: dict[int, dict[Alarm, None]] = {}

    def call_at(self, when: float, callback: Callable[[], object]) -> Alarm:
        """`callback` at `when` (the loop's time), or up to RESOLUTION later."""
        due = math.ceil(when / RESOLUTION)
        alarms = self.due.get(due)
        if alarms is None:
            alarms = self.due[due] = {}
            self.loop.call_at(due * RESOLUTION, self.ring, due)
        alarm = Alarm(callback, due, self)
        alarms[alarm] = None
        return alarm

    def call_later(self, delay: float, callback: Callable[[], object]) -> Alarm:
        return self.call_at(self.loop.time() + delay, callback)

    def cancel(self, alarm: Alarm) -> None:
        alarms = self.due.get(alarm.due)
        if alarms is not None:
            alarms.pop(alarm, None)

    def ring(self, due: int) -> None:
        for alarm in self.due.pop(due, ()):
            self.loop.call_soon(alarm.callback)


_clocks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Clock] = weakref.WeakKeyDictionary()


def clock() -> Clock:
    """The running loop's alarms."""
    loop = asyncio.get_running_loop()
    found = _clocks.get(loop)
    if found is None:
        found = _clocks[loop] = Clock(loop)
    return found
