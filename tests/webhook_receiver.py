"""Webhook receivers on the loopback for tests: `Receiver` records every request and
answers with the status its `status` says (a list: one status per request, then the
last); `Dripping`, `Silent` and `BlackHole` are receivers that hold a delivery up."""

from __future__ import annotations

import json
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes
    at: float = field(default_factory=time.monotonic)  # when it arrived

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


class Dripping:
    """A receiver that answers 200 one byte every `every` seconds: from the status line
    on (`part="headers"`) or after whole headers (`part="body"`, a body of `length`
    bytes); or (`part="tls"`) the server's side of a TLS handshake, `length` bytes. It notes how many bytes it sent each connection before the client hung up."""

    def __init__(self, every: float = 0.5, part: str = "headers", length: int = 200):
        self.every, self.part, self.length = every, part, length
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}/drip"
        self.sent: list[int] = []  # bytes dripped, per connection that ended
        self.whole: list[bool] = []  # whether it dripped its whole answer
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.threads: list[threading.Thread] = []
        self.connections = 0

    def answer(self) -> tuple[bytes, bytes]:
        """What is sent at once, and what is dripped."""
        body = b"o" * self.length
        head = f"HTTP/1.1 200 OK\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
        if self.part == "tls":
            # A TLS handshake record of 16 KB announced, its bytes dripped.
            return b"\x16\x03\x03\x40\x00", b"\x00" * self.length
        return (b"", head + body) if self.part == "headers" else (head, body)

    def serve(self, conn: socket.socket) -> None:
        sent = 0
        whole = False
        try:
            conn.settimeout(10)
            request = b""
            while b"\r\n\r\n" not in request and self.part != "tls":
                request += conn.recv(65536) or b"\r\n\r\n"
            if self.part == "tls":
                conn.recv(65536)  # the client's hello
            at_once, dripped = self.answer()
            conn.sendall(at_once)
            for byte in dripped:
                time.sleep(self.every)
                conn.sendall(bytes([byte]))
                sent += 1
            whole = True
        except OSError:
            pass  # the client hung up
        finally:
            conn.close()
            with self.lock:
                self.sent.append(sent)
                self.whole.append(whole)

    def take(self) -> None:
        self.listener.settimeout(0.05)
        while not self.stopping.is_set():
            try:
                conn = self.listener.accept()[0]
            except TimeoutError:
                continue
            self.connections += 1
            thread = threading.Thread(target=self.serve, args=(conn,), daemon=True)
            thread.start()
            self.threads.append(thread)
        self.listener.close()

    def __enter__(self) -> Dripping:
        threading.Thread(target=self.take, daemon=True).start()
        return self

    def __exit__(self, *exc: Any) -> None:
        """Stop taking connections; give those taken a moment to see their client gone."""
        self.stopping.set()
        for thread in self.threads:
            thread.join(timeout=2)


class Silent:
    """A receiver that takes each connection and never answers (until stopped)."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(0.05)
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}/silent"
        self.stopping = threading.Event()
        self.taken: list[socket.socket] = []

    def take(self) -> None:
        while not self.stopping.is_set():
            try:
                self.taken.append(self.listener.accept()[0])
            except TimeoutError:
                pass
        for held in self.taken:
            held.close()
        self.listener.close()

    def __enter__(self) -> Silent:
        threading.Thread(target=self.take, daemon=True).start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stopping.set()


class BlackHole:
    """An address whose connections never complete: a listener that never accepts,
    its backlog filled, so that the kernel drops every further SYN (as a firewall
    that drops packets does)."""

    def __init__(self) -> None:
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(0)
        self.port = self.listener.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/void"
        self.fillers: list[socket.socket] = []
        for _ in range(4):
            filler = socket.socket()
            filler.setblocking(False)
            try:
                filler.connect(("127.0.0.1", self.port))
            except BlockingIOError:
                pass
            self.fillers.append(filler)

    def __enter__(self) -> BlackHole:
        return self

    def __exit__(self, *exc: Any) -> None:
        for filler in self.fillers:
            filler.close()
        self.listener.close()
