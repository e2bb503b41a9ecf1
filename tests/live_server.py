"""The real ASGI app under uvicorn in a thread of the test process, so that it shares
the in-memory channel layer and the pytest-django test database (a file)."""

from __future__ import annotations

import socket
import threading
import time

import uvicorn

from todoweb.serve.server import uvicorn_options


class LiveServer:
    def __init__(self) -> None:
        from todoweb.asgi import application

        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.application = application
        self.server: uvicorn.Server | None = None
        self.thread: threading.Thread | None = None

    def start(self) -> None:
        config = uvicorn.Config(
            self.application,
            host="127.0.0.1",
            port=self.port,
            log_level="warning",
            lifespan="off",
            **uvicorn_options(),  # the production protocols: frames for many sockets written at once
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("live server did not start")
            time.sleep(0.01)

    def stop(self) -> None:
        """Stop the server: every open websocket is dropped."""
        assert self.server is not None and self.thread is not None
        self.server.should_exit = True
        self.thread.join(timeout=10)
