"""Open websockets kept out of the garbage collector's full collections.

A socket is some 55 objects that CPython's cyclic garbage collector tracks (its
protocol, parser, consumer, tasks and alarms), and a watcher's socket lives for
minutes or hours. A full collection examines every tracked object, and nothing else
runs while it does: with 10,000 watchers open, each took 360 ms, and a write landing
in one waited that long (bench/fanout.py). So as sockets accumulate, what the process
holds is moved out of the collector's reach (`gc.freeze`, as the server does once its
start-up is loaded, runtime.server), and full collections examine only what came since.

A closed socket leaves some 40 objects in reference cycles, which only a collection
frees, and frozen objects are never collected. So once half of the frozen sockets
have closed, everything is handed back to the collector, collected once (the full
collection that would have come anyway), and frozen again; at most once a minute, so
that ten thousand watchers leaving at once cost one such collection, not one per
batch of them, unless what closed sockets left frozen outgrows twice what is open
(and twice a batch): watchers that come in rounds of a few hundred and leave, every
few seconds, left a round's worth more frozen each round until the minute was up
(RSS +6.6 MB per 1,000 sessions watched that way, bench/memory.py). A batch is frozen
after a collection of what is not frozen yet (the young generations and what the
last freeze left out: cheap, as the frozen are not examined), so that what sockets
closed before it left is not frozen with the open ones. What closed sockets leave
frozen stays within what they held open: the process never holds more than it did
with all of them open.
"""

from __future__ import annotations

import gc
import time

# Sockets opened since the last freeze that make the next one.
FREEZE_EVERY = 500
# Seconds between two collections of what closed sockets left.
THAW_EVERY = 60.0


class LongLived:
    """The sockets a process holds, frozen in batches as they open and thawed for a
    collection once half of the frozen ones have closed."""

    def __init__(self, freeze_every: int = FREEZE_EVERY, thaw_every: float = THAW_EVERY) -> None:
        self.freeze_every, self.thaw_every = freeze_every, thaw_every
        self.thawed_at = -thaw_every
        self.freezes = 0  # how many times it froze: a socket opened before the latest is frozen
        self.unfrozen = 0  # sockets open and not frozen yet
        self.frozen = 0  # sockets open, or closed since, when it last froze
        self.frozen_closed = 0  # of those, closed since

    def opened(self) -> int:
        """A socket opened: its mark, for `closed`."""
        mark = self.freezes
        self.unfrozen += 1
        if self.unfrozen >= self.freeze_every:
            gc.collect()
            gc.freeze()
            self.frozen, self.unfrozen = self.frozen + self.unfrozen, 0
            self.freezes += 1
        return mark

    def closed(self, mark: int) -> None:
        """The socket of this mark closed."""
        if mark >= self.freezes:
            self.unfrozen -= 1
            return
        self.frozen_closed += 1
        now = time.monotonic()
        still_open = self.frozen - self.frozen_closed + self.unfrozen
        outgrown = self.frozen_closed >= 2 * max(still_open, self.freeze_every)
        if self.frozen_closed * 2 >= self.frozen and (outgrown or now - self.thawed_at >= self.thaw_every):
            self.thawed_at = now
            gc.unfreeze()
            gc.collect()
            gc.freeze()
            self.frozen = self.frozen - self.frozen_closed + self.unfrozen
            self.frozen_closed = self.unfrozen = 0
            self.freezes += 1


# The process's sockets (todoweb's websocket protocol, runtime.server).
SOCKETS = LongLived()
