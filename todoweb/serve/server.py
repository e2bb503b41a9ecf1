"""How todoweb runs under uvicorn, for `manage.py serve` (production) and
`manage.py start` (`make run`): the websocket protocol and the server's options.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import struct
import sys
import zlib
from functools import lru_cache
from typing import Any

import uvicorn
import websockets.version
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from websockets.extensions.permessage_deflate import PerMessageDeflate, ServerPerMessageDeflateFactory
from websockets.frames import CONT, CTRL_OPCODES, Frame
from websockets.protocol import State
from websockets.server import ServerProtocol

from todoweb.live.alarms import clock
from todoweb.serve.long_lived import SOCKETS

# The versions the protocols below were written and tested against: they subclass
# uvicorn's httptools and websockets-sansio protocols, the latter still changing
# upstream (uvicorn PRs #3056 and #3138, 2026). Other versions run uvicorn's own.
TESTED_VERSIONS = {"uvicorn": "0.54.0", "websockets": "17.4"}


# uvicorn's own permessage-deflate settings.
WINDOW_BITS = 12
COMPRESS_SETTINGS = {"memLevel": 5}


class SharedDeflate(PerMessageDeflate):
    """permessage-deflate that keeps no context between the messages it sends, so a
    message compresses to the same bytes on every socket: a live frame sent to a
    thousand watchers is compressed once, not a thousand times (compressing was a
    quarter of the cost of a fan-out)."""

    def encode(self, frame: Frame) -> Frame:
        if frame.opcode in CTRL_OPCODES or frame.opcode is CONT or not frame.fin:
            return super().encode(frame)
        data = compressed(bytes(frame.data), self.local_max_window_bits)
        return Frame(frame.opcode, data, frame.fin, True, frame.rsv2, frame.rsv3)


@lru_cache(maxsize=256)
def compressed(data: bytes, window_bits: int) -> bytes:
    encoder = zlib.compressobj(wbits=-window_bits, **COMPRESS_SETTINGS)
    # A sync flush ends with 00 00 ff ff, which the extension leaves out (RFC 7692).
    return (encoder.compress(data) + encoder.flush(zlib.Z_SYNC_FLUSH))[:-4]


class SharedDeflateFactory(ServerPerMessageDeflateFactory):
    """The extension's terms: no context kept on either side. The server's messages are
    compressed once for all sockets (SharedDeflate); the browser compresses each of its
    own (it sends next to nothing), so that no socket keeps a decompressor's 7 KB for
    the whole connection (a server may ask this of any client, RFC 7692 7.1.1.2)."""

    def __init__(self) -> None:
        super().__init__(
            server_no_context_takeover=True,
            client_no_context_takeover=True,
            server_max_window_bits=WINDOW_BITS,
            client_max_window_bits=WINDOW_BITS,
            compress_settings=COMPRESS_SETTINGS,
        )

    def process_request_params(self, params: Any, accepted_extensions: Any) -> tuple[list, PerMessageDeflate]:
        response, extension = super().process_request_params(params, accepted_extensions)
        shared = SharedDeflate(
            extension.remote_no_context_takeover,
            extension.local_no_context_takeover,
            extension.remote_max_window_bits,
            extension.local_max_window_bits,
            COMPRESS_SETTINGS,
        )
        return response, shared


# The extensions offered on every socket: the factory keeps nothing of a socket's, so
# one serves them all (one each was 0.2 KB a socket for its life).
EXTENSIONS = [SharedDeflateFactory()]


@lru_cache(maxsize=64)
def shared_frame(text: str, window_bits: int | None) -> bytes:
    """A text message as one unmasked frame on the wire (RFC 6455 5.2), compressed with
    `window_bits` (None: not compressed): the same bytes for every socket that
    negotiated the same."""
    payload, first = text.encode(), 0x81  # FIN, text
    if window_bits is not None:
        payload, first = compressed(payload, window_bits), first | 0x40  # RSV1: compressed
    size = len(payload)
    if size < 126:
        head = struct.pack("!BB", first, size)
    elif size < 1 << 16:
        head = struct.pack("!BBH", first, 126, size)
    else:
        head = struct.pack("!BBQ", first, 127, size)
    return head + payload


class ReceiveQueue:
    """What uvicorn's websocket protocol uses of asyncio.Queue (put_nowait, get,
    empty), in two lists: an asyncio.Queue keeps three deques and an Event with a
    fourth, 2.9 KB a socket for its whole life. `get` returns a future, not a
    coroutine, so a socket waiting for its next message keeps no frame for it; an
    item goes straight to the get waiting for it. A get cancelled after it was handed
    an item loses it: the one reader is the socket's app, whose task is cancelled only
    when the socket is done."""

    __slots__ = ("items", "getters")

    def __init__(self) -> None:
        self.items: list[Any] = []
        self.getters: list[asyncio.Future] = []

    def put_nowait(self, item: Any) -> None:
        while self.getters:
            getter = self.getters.pop(0)
            if not getter.done():  # not cancelled
                getter.set_result(item)
                return
        self.items.append(item)

    def empty(self) -> bool:
        return not self.items

    def get(self) -> asyncio.Future:
        getter = asyncio.get_running_loop().create_future()
        if self.items:
            getter.set_result(self.items.pop(0))
        else:
            self.getters.append(getter)
        return getter


class Flag:
    """What uvicorn's websocket protocol uses of asyncio.Event (set, clear, is_set,
    wait), its waiters in a list: an asyncio.Event keeps a deque (0.7 KB)."""

    __slots__ = ("flag", "waiters")

    def __init__(self) -> None:
        self.flag = False
        self.waiters: list[asyncio.Future] = []

    def is_set(self) -> bool:
        return self.flag

    def set(self) -> None:
        self.flag = True
        wake(self.waiters)

    def clear(self) -> None:
        self.flag = False

    async def wait(self) -> bool:
        while not self.flag:
            await woken(self.waiters)
        return True


async def woken(waiters: list[asyncio.Future]) -> None:
    """Wait in `waiters` until `wake(waiters)` (the caller checks again why it waited)."""
    waiter = asyncio.get_running_loop().create_future()
    waiters.append(waiter)
    try:
        await waiter
    finally:
        waiters.remove(waiter)


def wake(waiters: list[asyncio.Future]) -> None:
    for waiter in waiters:
        if not waiter.done():
            waiter.set_result(None)


class WebSocketProtocol(WebSocketsSansIOProtocol):
    """uvicorn's websockets protocol with these changes:

    - a handshake the websockets library refuses before it is parsed (a request line
      over 8 KiB, e.g. a huge `?share=`) gets its 414 answer: uvicorn builds it but
      never sends it, leaving the client waiting on an open connection (not reported
      upstream as of 2026-11; the nearest is uvicorn PR #3138, on the handshake's
      state after a denial on websockets-sansio);
    - permessage-deflate compresses each message once for all sockets (SharedDeflate);
    - once the handshake is answered, its request and response are let go, and the
      request's headers emptied (6.5 KB a socket, kept for the connection's life
      otherwise);
    - its receive queue and its writable flag keep lists, not deques (3.6 KB a socket);
    - its keep-alive ping waits on a shared alarm, not a timer of its own (0.5 KB);
    - what is the same for every socket of the server is kept in slots, so that fewer
      than 30 attributes are left in its `__dict__`: past 30, CPython stops sharing an
      instance dict's keys with the class's other instances, and each socket's dict
      took 1.6 KB;
    - the app may send a frame at once, written from bytes made once for all sockets
      (`send_now`, offered in the scope's extensions as live.consumers.SEND_NOW): a live frame for a
      thousand watchers costs a thousand writes, not a thousand ASGI sends, tasks and
      frame encodings;
    - open sockets are kept out of the garbage collector's full collections
      (runtime.long_lived).
    """

    __slots__ = (
        "config",
        "app",
        "loop",
        "logger",
        "root_path",
        "asgi_version",
        "app_state",
        "connections",
        "tasks",
        "default_headers",
        "close_timeout",
        "ping_interval",
        "ping_timeout",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.queue = ReceiveQueue()  # type: ignore[assignment]
        self.writable = Flag()  # type: ignore[assignment]
        self.writable.set()
        if self.config.ws_per_message_deflate:
            self.conn = ServerProtocol(
                extensions=EXTENSIONS,
                max_size=self.config.ws_max_size,
                logger=logging.getLogger("uvicorn.error"),
            )

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self.long_lived = SOCKETS.opened()

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        SOCKETS.closed(self.long_lived)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if not self.handshake_initiated and self.conn.handshake_exc is not None:
            self.transport.write(b"".join(self.conn.data_to_send()))
            self.transport.close()

    def handle_connect(self, event: Any) -> None:
        super().handle_connect(event)
        if hasattr(self, "scope"):  # the app runs (the handshake was not refused first)
            from todoweb.live.consumers import SEND_NOW  # the app is loaded by now

            self.scope["extensions"][SEND_NOW] = {"send": self.send_now}

    async def send(self, message: Any) -> None:
        await super().send(message)
        if self.handshake_complete and getattr(self, "response", None) is not None:
            # The websockets library's parser keeps the request in its frame for the
            # connection's life: what it holds goes (the scope has copies of its own).
            self.request.headers.clear()
            self.request.path = self.request.method = self.request.protocol = ""
            self.request = self.response = None

    def schedule_ping(self) -> None:
        delay = max(0.0, self.ping_interval - self.last_ping_rtt)  # type: ignore[operator]
        self.ping_timer = clock().call_later(delay, self.send_keepalive_ping)  # type: ignore[assignment]

    def send_now(self, text: str) -> bool:
        """Write `text` as one frame now if the socket takes it now: open, and its client
        reading (writing not paused). False: nothing written; send it the ASGI way,
        which waits for the client."""
        if not self.handshake_complete or self.conn.state is not State.OPEN or not self.writable.is_set():
            return False
        if self.transport.is_closing():
            return False
        extensions = self.conn.extensions
        self.transport.write(shared_frame(text, extensions[0].local_max_window_bits if extensions else None))
        return True


class HttpProtocol(HttpToolsProtocol):
    """uvicorn's HTTP protocol, each response written in one call: a response's head
    (its status line and headers) and its body went out in two `send` system calls,
    a fifth of what the server spends on a small answer."""

    def on_headers_complete(self) -> None:
        earlier = self.cycle
        super().on_headers_complete()
        if self.cycle is not earlier:  # a request to answer (not a websocket's upgrade)
            self.cycle.transport = HeadWithBody(self.transport)  # type: ignore[union-attr]

    def send_400_response(self, msg: str) -> None:
        if self.cycle is not None:
            self.cycle.transport.flush()  # type: ignore[attr-defined]  # what it holds goes first
        super().send_400_response(msg)


class HeadWithBody:
    """A request's transport as its response sees it: the first write (the response's
    head, or a 100 Continue) is held and written with the next one, or at the loop's
    next turn if none comes before (a stream's first part may come much later)."""

    __slots__ = ("transport", "held", "first")

    def __init__(self, transport: asyncio.Transport) -> None:
        self.transport = transport
        self.held: bytes | None = None
        self.first = True

    def write(self, data: bytes) -> None:
        if self.first:
            self.first = False
            self.held = data
            asyncio.get_running_loop().call_soon(self.flush)
            return
        if self.held is not None:
            data, self.held = self.held + data, None
        self.transport.write(data)

    def flush(self) -> None:
        if self.held is not None:
            data, self.held = self.held, None
            self.transport.write(data)

    def close(self) -> None:
        self.flush()
        self.transport.close()

    def is_closing(self) -> bool:
        return self.transport.is_closing()


def untested_versions() -> dict[str, str]:
    """The server libraries installed in versions other than the tested ones."""
    installed = {"uvicorn": uvicorn.__version__, "websockets": websockets.version.version}
    return {name: version for name, version in installed.items() if version != TESTED_VERSIONS[name]}


def uvicorn_options() -> dict[str, Any]:
    """uvicorn's options for todoweb's application: todoweb's protocols on the tested
    versions (uvicorn's own on others), and none of uvicorn's proxy-header handling:
    the application applies it to HTTP itself (serve.handlers). TODOWEB_FAST_PATHS=0
    takes uvicorn's own too (todoweb.fences)."""
    from todoweb import fences

    untested = untested_versions()
    if not fences.enabled():
        protocols = {"http": "httptools", "ws": "websockets-sansio"}
    elif not untested:
        protocols = {"http": "todoweb.serve.server:HttpProtocol", "ws": "todoweb.serve.server:WebSocketProtocol"}
    else:
        logging.getLogger(__name__).warning(
            "%s: not the versions todoweb's protocols were tested with (%s); serving with uvicorn's own "
            "(live frames are compressed once per socket, not once for all)",
            ", ".join(f"{name} {version}" for name, version in untested.items()),
            ", ".join(f"{name} {version}" for name, version in TESTED_VERSIONS.items()),
        )
        protocols = {"http": "httptools", "ws": "websockets-sansio"}
    return protocols | {"proxy_headers": False}


def tuned_application() -> Any:
    """The ASGI application, in each server process, with the process tuned for it."""
    from django.conf import settings
    from django.utils.module_loading import import_string

    # By the name settings give it, as Django's own servers find it: the server sits
    # on top of the application, which never imports it.
    application = import_string(settings.ASGI_APPLICATION)

    # The event loop (HTTP, websocket fan-out) and the database threads share the
    # GIL. A thread that wants it waits out the holder's switch interval (5 ms by
    # default) at each hand-over, and a write hands over several times: with 1,000
    # watchers on the loop, 1 ms cut the write answers' p99 from 165-169 ms to
    # 120-142 ms (bench/fanout.py).
    sys.setswitchinterval(0.001)
    # What the process loaded to start (Django, the apps, the URL resolvers: 165,000
    # objects) lives as long as it does: keep it out of the garbage collector's full
    # collections, which otherwise re-examine it every time and stop the process for
    # ~90 ms more on a 2-core machine (with 1,000 sockets open, 300 ms instead of 200 ms).
    gc.freeze()
    return application


def serve(*, host: str, port: int, workers: int = 1, log_level: str = "info") -> None:
    uvicorn.run(
        "todoweb.serve.server:tuned_application",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        **uvicorn_options(),
        lifespan="off",
        log_level=log_level,
    )
