"""The client side of the live benchmarks: many light websocket watchers and the writes
they watch, on one asyncio loop in a process of its own (see harness.run_client).

A watcher is a bare asyncio protocol, not a websockets client: per frame it reads the
header, inflates the payload if the server compressed it, finds the revision with one
regex and notes (revision, time). That keeps a thousand watchers at a few percent of
a core, so what the benchmarks measure is the server. Like a browser, a watcher offers
permessage-deflate (the server then compresses every frame for every socket), answers
pings, and never sends anything else.
"""

from __future__ import annotations

import asyncio
import base64
import os
import re
import time
import zlib
from functools import lru_cache
from typing import Any
from urllib.parse import urlsplit

import httpx

LIVE_FRAME = re.compile(rb'^\{"type":"(session\.snapshot|session\.summary|dashboard\.snapshot)"')
REVISION = re.compile(rb'"revision":(\d+)')
OPCODE_CONTINUATION, OPCODE_TEXT, OPCODE_BINARY, OPCODE_CLOSE, OPCODE_PING = 0x0, 0x1, 0x2, 0x8, 0x9


def now() -> float:
    return time.monotonic()


@lru_cache(maxsize=256)
def inflated(payload: bytes) -> bytes:
    """A message the server compressed without context (server_no_context_takeover): the
    same bytes inflate to the same text, so the watchers of one frame inflate it once
    (the client's work per frame is then what it is for a server that does not compress)."""
    return zlib.decompressobj(-15).decompress(payload + b"\x00\x00\xff\xff")


class Watcher(asyncio.Protocol):
    """One websocket watching a session, or the dashboard for the summaries of
    `session_id`.

    `seen` lists (revision, monotonic time) of every frame that carried a revision of
    the watched session, in order of receipt; `wire_bytes` counts what came over TCP."""

    def __init__(
        self,
        url: str,
        *,
        session_id: str = "",
        cookie: str = "",
        deflate: bool = True,
        any_message: bool = False,
        marker: re.Pattern[bytes] | None = None,
    ):
        self.url = urlsplit(url)
        self.any_message = any_message  # joined on any first message (another server's socket), not a todoweb frame
        # Another server's messages: the number its group 1 finds is noted in `seen`, as a revision is.
        self.marker = marker
        self.session_mark = f'"id":"{session_id}"'.encode()
        self.cookie = cookie
        self.deflate = deflate
        self.transport: asyncio.Transport | None = None
        self.joined: asyncio.Future = asyncio.get_running_loop().create_future()
        self.buffer = bytearray()
        self.handshaken = False
        self.inflater: Any = None
        self.reset_inflater = False
        self.fragments: list[bytes] = []
        self.compressed = False
        self.seen: list[tuple[int, float]] = []
        self.wire_bytes = 0
        self.closed = False

    # --- the connection ------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        path = self.url.path + (f"?{self.url.query}" if self.url.query else "")
        origin = f"http://{self.url.netloc}"
        lines = [
            f"GET {path} HTTP/1.1",
            f"Host: {self.url.netloc}",
            "Upgrade: websocket",
            "Connection: Upgrade",
            f"Sec-WebSocket-Key: {base64.b64encode(os.urandom(16)).decode()}",
            "Sec-WebSocket-Version: 13",
            f"Origin: {origin}",
        ]
        if self.cookie:
            lines.append(f"Cookie: {self.cookie}")
        if self.deflate:
            lines.append("Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits")
        self.transport.write(("\r\n".join(lines) + "\r\n\r\n").encode())

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if not self.joined.done():
            self.joined.set_exception(ConnectionError(f"closed before the first frame: {exc}"))

    def data_received(self, data: bytes) -> None:
        self.wire_bytes += len(data)
        self.buffer += data
        if not self.handshaken and not self.handshake():
            return
        self.read_frames()

    def handshake(self) -> bool:
        end = self.buffer.find(b"\r\n\r\n")
        if end < 0:
            return False
        head = bytes(self.buffer[:end]).lower()
        del self.buffer[: end + 4]
        if not head.startswith(b"http/1.1 101"):
            self.joined.set_exception(ConnectionError(head.split(b"\r\n", 1)[0].decode()))
            self.transport.close()
            return False
        if b"permessage-deflate" in head:
            self.inflater = zlib.decompressobj(-15)
            self.reset_inflater = b"server_no_context_takeover" in head
        self.handshaken = True
        return True

    def read_frames(self) -> None:
        buffer, pos = self.buffer, 0
        while len(buffer) - pos >= 2:
            first, length = buffer[pos], buffer[pos + 1] & 0x7F
            header = 2
            if length == 126:
                if len(buffer) - pos < 4:
                    break
                length, header = int.from_bytes(buffer[pos + 2 : pos + 4], "big"), 4
            elif length == 127:
                if len(buffer) - pos < 10:
                    break
                length, header = int.from_bytes(buffer[pos + 2 : pos + 10], "big"), 10
            if len(buffer) - pos < header + length:
                break
            self.frame(first, bytes(buffer[pos + header : pos + header + length]))
            pos += header + length
        del buffer[:pos]

    def frame(self, first: int, payload: bytes) -> None:
        opcode = first & 0x0F
        if opcode == OPCODE_PING:
            self.send_control(0xA, payload)
            return
        if opcode == OPCODE_CLOSE:
            self.send_control(OPCODE_CLOSE, payload[:2])
            self.transport.close()
            return
        if opcode in (OPCODE_TEXT, OPCODE_BINARY):
            self.fragments, self.compressed = [payload], bool(first & 0x40)
        elif opcode == OPCODE_CONTINUATION:
            self.fragments.append(payload)
        else:
            return  # a pong
        if first & 0x80:  # FIN: the message is complete
            message = b"".join(self.fragments)
            if self.compressed and self.reset_inflater:
                message = inflated(message)
            elif self.compressed:
                message = self.inflater.decompress(message + b"\x00\x00\xff\xff")
            self.message(message)

    def send_control(self, opcode: int, payload: bytes) -> None:
        """A client frame must be masked (RFC 6455 5.3)."""
        mask = os.urandom(4)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self.transport.write(bytes([0x80 | opcode, 0x80 | len(payload)]) + mask + masked)

    def message(self, text: bytes) -> None:
        received = now()
        if self.any_message and not self.joined.done():
            self.joined.set_result(None)
        if self.marker is not None:
            if found := self.marker.search(text):
                self.seen.append((int(found.group(1)), received))
            return
        kind = LIVE_FRAME.match(text)
        if kind is None:
            return
        if kind.group(1) == b"dashboard.snapshot":
            if not self.joined.done():
                self.joined.set_result(None)
            return
        if kind.group(1) == b"session.summary" and self.session_mark not in text:
            return  # another session's summary on the dashboard
        self.seen.append((int(REVISION.search(text).group(1)), received))
        if not self.joined.done():
            self.joined.set_result(None)

    # --- what it saw ---------------------------------------------------------------

    def shown_at(self, revision: int) -> float | None:
        """When this watcher first showed `revision` or a later one (None: never)."""
        for number, received in self.seen:
            if number >= revision:
                return received
        return None

    def close(self) -> None:
        if self.transport is not None and not self.closed:
            self.transport.close()


async def connect_watchers(
    url: str,
    n: int,
    *,
    session_id: str = "",
    cookie: str = "",
    deflate: bool = True,
    concurrency: int = 50,
    any_message: bool = False,
    marker: re.Pattern[bytes] | None = None,
) -> list[Watcher]:
    """`n` watchers of the websocket at `url`, each past its first frame."""
    target = urlsplit(url)
    gate = asyncio.Semaphore(concurrency)
    loop = asyncio.get_running_loop()

    async def one() -> Watcher:
        async with gate:
            _, watcher = await loop.create_connection(
                lambda: Watcher(
                    url, session_id=session_id, cookie=cookie, deflate=deflate, any_message=any_message, marker=marker
                ),
                target.hostname,
                target.port,
            )
            await asyncio.wait_for(watcher.joined, 120)
            return watcher

    return list(await asyncio.gather(*(one() for _ in range(n))))


async def wait_until_shown(watchers: list[Watcher], revision: int, timeout: float) -> None:
    """Return once every watcher shows `revision` (or later), or after `timeout` seconds."""
    deadline = now() + timeout
    while now() < deadline and any(not w.seen or w.seen[-1][0] < revision for w in watchers):
        await asyncio.sleep(0.01)


def todo_write(call_id: str, n: int, items: int = 5) -> dict[str, Any]:
    """A TodoWrite call of `items` steps; `n` moves the step in progress along."""
    done = n % (items + 1)
    todos = [
        {
            "content": f"Step {k + 1} of the plan",
            "status": "completed" if k < done else "in_progress" if k == done else "pending",
            "activeForm": f"Doing step {k + 1}",
        }
        for k in range(items)
    ]
    return {"type": "tool_use", "id": call_id, "name": "TodoWrite", "input": {"todos": todos}}


def api_client(url: str, token: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=30)
