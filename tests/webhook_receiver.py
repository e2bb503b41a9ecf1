"""A webhook receiver on the loopback for tests: records every request; answers with
the status its `status` says (a list: one status per request, then the last)."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class Receiver:
    def __init__(self, status: int | list[int] = 200, port: int = 0):
        self.received: list[Received] = []
        self.statuses = [status] if isinstance(status, int) else list(status)
        self.location = ""
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                with receiver.lock:
                    receiver.received.append(Received(self.path, dict(self.headers.items()), body))
                    status = receiver.statuses.pop(0) if len(receiver.statuses) > 1 else receiver.statuses[0]
                answer = b"ok" if status < 400 else b"no thanks " * 300
                self.send_response(status)
                if 300 <= status < 400:
                    self.send_header("Location", receiver.location or "/elsewhere")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: Any) -> None:
                pass

        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def start(self) -> Receiver:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> Receiver:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def events(self) -> list[str]:
        with self.lock:
            return [r.json().get("type") for r in self.received]

    def wait_for(self, count: int, timeout: float = 20) -> list[Received]:
        """Poll until `count` requests arrived (fails after `timeout`)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if len(self.received) >= count:
                    return list(self.received)
            time.sleep(0.05)
        raise AssertionError(f"{len(self.received)} requests arrived, not {count}: {self.events()}")
