"""The channel layer of a deployment of one process (no Redis): Channels' in-memory
layer, with a group send that costs what a write can afford.

Channels' own `group_send` sweeps every group and channel for expired entries, makes
a task per member channel and deep-copies the message for each: for every frame of
every write, on the event loop the writes' answers go out from. Here a group's
message is put on its members' queues as it is (todoweb's frames are only ever read
by their receivers, the process's hub), and the sweep runs at most once a second.
Both use the layer's internals, behind their fence (todoweb.fences): without it,
Channels' own group_send.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from channels.layers import InMemoryChannelLayer

from todoweb import fences

SWEEP_EVERY = 1.0


class ProcessLayer(InMemoryChannelLayer):
    swept_at = 0.0

    @property
    def puts_at_once(self) -> bool:
        """Whether frames go on the members' queues directly (`put_frames`)."""
        return fences.fast("channels")

    async def group_send(self, group: str, message: dict[str, Any]) -> None:
        if not self.puts_at_once:
            await super().group_send(group, message)
            return
        assert isinstance(message, dict), "Message is not a dict"
        self.require_valid_group_name(group)
        self.put(group, message)

    def put_frames(self, frames: list[dict[str, Any]]) -> None:
        """`group_send` of each of todoweb's frames to its group (named by todoweb,
        valid by construction), at once: the writes' way, with nothing to wait for."""
        for frame in frames:
            self.put(frame["group"], frame)

    def put(self, group: str, message: dict[str, Any]) -> None:
        now = time.time()
        if now - self.swept_at >= SWEEP_EVERY:
            self._clean_expired()
            self.swept_at = now
        for channel in self.groups.get(group, ()):
            queue = self.channels.setdefault(channel, asyncio.Queue(maxsize=self.get_capacity(channel)))
            try:
                queue.put_nowait((now + self.expiry, message))
            except asyncio.QueueFull:
                pass  # as Channels' own: a full channel misses a group's message
