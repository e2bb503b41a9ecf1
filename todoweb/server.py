"""How todoweb runs under uvicorn, for `manage.py serve` (production) and
`manage.py start` (`make run`): the websocket protocol and the server's options.
"""

from __future__ import annotations

import os

import uvicorn
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

APPLICATION = "todoweb.asgi:application"


class WebSocketProtocol(WebSocketsSansIOProtocol):
    """uvicorn's websockets protocol, except that a handshake the websockets library
    refuses before it is parsed (a request line over 8 KiB, e.g. a huge `?share=`)
    gets its 414 answer: uvicorn builds it but never sends it, leaving the client
    waiting on an open connection."""

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
