"""A websocket handshake too large to parse (a 10,000-character `?share=`) is answered
414 by the production server, instead of leaving the client waiting on an open
connection (issue: "a websocket URL with a 10,000-character ?share= is never answered")."""

from __future__ import annotations

import socket

import pytest

from tests.servers import Server, base_env, manage


@pytest.fixture
def server(tmp_path):
    env = base_env(DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}")
    manage(env, "migrate")
    running = Server.serve(env, tmp_path / "server.log").start()
    yield running
    running.stop()


def handshake(port: int, path: str) -> bytes:
    request = (
        f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
        f"Origin: http://127.0.0.1:{port}\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(request.encode())
        answer = b""
        while b"\r\n" not in answer:
            chunk = sock.recv(4096)  # times out (the test fails) if the server never answers
            if not chunk:
                break
            answer += chunk
    return answer


@pytest.mark.parametrize("length", [10_000, 100_000])
def test_an_oversized_handshake_is_answered_414(server, length):
    answer = handshake(server.port, f"/ws/sessions/abc/?share={'x' * length}")
    assert answer.startswith(b"HTTP/1.1 414"), answer[:200]


def test_a_handshake_of_ordinary_size_is_still_served(server):
    # An unknown session: the consumer refuses it, after a complete handshake.
    answer = handshake(server.port, f"/ws/sessions/abc/?share={'x' * 100}")
    assert answer.startswith((b"HTTP/1.1 101", b"HTTP/1.1 403")), answer[:200]
