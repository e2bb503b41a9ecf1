"""How todoweb runs under uvicorn, for `manage.py serve` (production) and
`manage.py start` (`make run`): the websocket protocol and the server's options.
"""

from __future__ import annotations

import logging
import os
import zlib
from functools import lru_cache
from typing import Any

import uvicorn
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from websockets.extensions.permessage_deflate import PerMessageDeflate, ServerPerMessageDeflateFactory
from websockets.frames import CONT, CTRL_OPCODES, Frame
from websockets.server import ServerProtocol

APPLICATION = "todoweb.asgi:application"


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
    def __init__(self) -> None:
        super().__init__(
            server_no_context_takeover=True,
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


class WebSocketProtocol(WebSocketsSansIOProtocol):
    """uvicorn's websockets protocol with two changes:

    - a handshake the websockets library refuses before it is parsed (a request line
      over 8 KiB, e.g. a huge `?share=`) gets its 414 answer: uvicorn builds it but
      never sends it, leaving the client waiting on an open connection;
    - permessage-deflate compresses each message once for all sockets (SharedDeflate).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.config.ws_per_message_deflate:
            self.conn = ServerProtocol(
                extensions=[SharedDeflateFactory()],
                max_size=self.config.ws_max_size,
                logger=logging.getLogger("uvicorn.error"),
            )

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if not self.handshake_initiated and self.conn.handshake_exc is not None:
            self.transport.write(b"".join(self.conn.data_to_send()))
            self.transport.close()


def serve(*, host: str, port: int, workers: int = 1, log_level: str = "info") -> None:
    uvicorn.run(
        APPLICATION,
        host=host,
        port=port,
        workers=workers,
        ws="todoweb.server:WebSocketProtocol",
        lifespan="off",
        log_level=log_level,
        # Behind a proxy: client addresses and the scheme from X-Forwarded-*, trusted
        # from the addresses in FORWARDED_ALLOW_IPS (uvicorn's own variable).
        proxy_headers=True,
        forwarded_allow_ips=os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1"),
    )
