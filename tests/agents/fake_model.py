"""What the fake model servers share: a scripted model, an HTTP server on a free
port that logs every request, and the writing of JSON and server-sent events.

A script is a list of `Turn`s: what the model answers at each step of the main
conversation (some text and tool calls). Each fake reads from the request itself
which step the conversation is at (how many model turns it already holds), so a
retried request gets the same answer and requests the script does not cover (a
CLI's side calls: titles, summaries, quota checks) get a short text answer instead.
`before_turn(n)` runs before turn n is answered, on the server's thread: the tests
use it to wait until the board showed the revision the previous turn made.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Call:
    """One tool call the model makes: the tool's name as the CLI offers it, and its
    input. `namespace`: the Responses API's, for a tool offered inside a namespace."""

    name: str
    input: dict[str, Any]
    namespace: str | None = None


@dataclass(frozen=True)
class Turn:
    """The model's answer at one step: text, then tool calls (none: the run ends).
    `raw` items, in the API's own wire format, follow the calls: for what a `Call`
    cannot say (e.g. a Responses `tool_search_call`)."""

    text: str = ""
    calls: tuple[Call, ...] = ()
    raw: tuple[dict[str, Any], ...] = ()

    @classmethod
    def call(cls, name: str, input: dict[str, Any], text: str = "") -> Turn:
        return cls(text=text, calls=(Call(name, input),))


@dataclass
class Request:
    """One request the fake received."""

    at: float
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    turn: int | None = None  # the step of the main conversation it asked for; None: a side call


@dataclass
class Script:
    turns: list[Turn]
    before_turn: Callable[[int], None] | None = None
    # Side calls are answered with this text.
    side_text: str = "OK"
    gated: set[int] = field(default_factory=set)

    def answer(self, turn: int) -> Turn:
        if turn >= len(self.turns):
            return Turn(text="All done.")
        if self.before_turn is not None and turn not in self.gated:
            self.gated.add(turn)
            self.before_turn(turn)
        return self.turns[turn]


class FakeModelServer:
    """A threaded HTTP server; subclasses implement `handle(request, reply)`."""

    def __init__(self, script: Script):
        self.script = script
        self.requests: list[Request] = []
        self.errors: list[str] = []
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet: the log is `requests`
                pass

            def do_GET(self) -> None:
                server.dispatch(self, "GET")

            def do_POST(self) -> None:
                server.dispatch(self, "POST")

            def do_HEAD(self) -> None:
                server.dispatch(self, "HEAD")

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> FakeModelServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def dispatch(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        if handler.headers.get("Transfer-Encoding", "").lower() == "chunked":
            raw = read_chunked(handler.rfile)
        else:
            length = int(handler.headers.get("Content-Length") or 0)
            raw = handler.rfile.read(length) if length else b""
        if handler.headers.get("Content-Encoding"):
            raw = decompress(raw, handler.headers["Content-Encoding"])
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode(errors="replace")
        request = Request(time.time(), method, handler.path, dict(handler.headers.items()), body)
        with self.lock:
            self.requests.append(request)
        reply = Reply(handler)
        try:
            self.handle(request, reply)
        except Exception as error:  # a bug in the fake: tell the test, and the CLI
            self.errors.append(f"{method} {handler.path}: {error!r}")
            if not reply.started:
                reply.json({"error": {"type": "fake_server_error", "message": repr(error)}}, status=500)
            raise

    def handle(self, request: Request, reply: Reply) -> None:
        raise NotImplementedError

    # What the tests read.

    def turns(self) -> list[Request]:
        """The main conversation's requests, in order (retries included)."""
        return [r for r in self.requests if r.turn is not None]

    def log(self) -> str:
        """Every request, one line each, for failure messages."""
        lines = []
        for r in self.requests:
            size = len(json.dumps(r.body)) if r.body is not None else 0
            lines.append(f"{r.method} {r.path} turn={r.turn} body={size}B")
        return "\n".join(lines + [f"ERROR {e}" for e in self.errors])


class Reply:
    """Writes one answer: JSON, or server-sent events in chunked encoding."""

    def __init__(self, handler: BaseHTTPRequestHandler):
        self.handler = handler
        self.started = False

    def json(self, payload: Any, *, status: int = 200, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.start(status, {"Content-Type": "application/json", "Content-Length": str(len(data))} | (headers or {}))
        self.handler.wfile.write(data)
        self.handler.wfile.flush()

    def empty(self, status: int = 404) -> None:
        self.json({"error": {"type": "not_found", "message": "not served by the fake"}}, status=status)

    def events(self, events: list[tuple[str | None, Any]], *, headers: dict[str, str] | None = None) -> None:
        """Server-sent events `event: <name>` / `data: <json>`, one chunk each."""
        self.start(
            200,
            {"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "Transfer-Encoding": "chunked"}
            | (headers or {}),
        )
        for name, data in events:
            text = (
                f"event: {name}\n" if name else ""
            ) + f"data: {data if isinstance(data, str) else json.dumps(data)}\n\n"
            self.chunk(text.encode())
        self.chunk(b"")

    def chunk(self, data: bytes) -> None:
        self.handler.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.handler.wfile.flush()

    def start(self, status: int, headers: dict[str, str]) -> None:
        self.started = True
        self.handler.send_response(status)
        for name, value in headers.items():
            self.handler.send_header(name, value)
        self.handler.send_header("Connection", "close")
        self.handler.end_headers()
        self.handler.close_connection = True


def read_chunked(stream: Any) -> bytes:
    body = b""
    while True:
        size = int(stream.readline().split(b";")[0].strip() or b"0", 16)
        if size == 0:
            while stream.readline() not in (b"\r\n", b"\n", b""):  # trailers
                pass
            return body
        body += stream.read(size)
        stream.readline()  # the CRLF after each chunk


def decompress(raw: bytes, encoding: str) -> bytes:
    import gzip
    import zlib

    if encoding == "gzip":
        return gzip.decompress(raw)
    if encoding == "deflate":
        return zlib.decompress(raw)
    raise ValueError(f"cannot decode {encoding} request bodies")
