"""The internet trap for CLIs that send every request through the proxy, NO_PROXY or
not (Qwen Code 0.15 installs undici's ProxyAgent as the global dispatcher when
HTTPS_PROXY is set, which ignores NO_PROXY). It tunnels `CONNECT` requests to this
machine's loopback addresses (todoweb and the fake model listen there) and refuses
and records everything else, as `InternetTrap` does.
"""

from __future__ import annotations

import socket
import threading

from tests.agents.harness import InternetTrap

LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")


class TunnellingTrap(InternetTrap):
    def __init__(self) -> None:
        super().__init__()
        self.tunnelled: list[str] = []  # the loopback CONNECTs it passed on
        self.errors: list[str] = []  # what went wrong in a tunnel, for failure messages

    def serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self.handle, args=(conn,), daemon=True).start()

    def handle(self, conn: socket.socket) -> None:
        conn.settimeout(10)
        try:
            head, early = read_head(conn)
        except OSError as error:
            self.errors.append(f"reading a request: {error!r}")
            conn.close()
            return
        line = head.split(b"\r\n", 1)[0].decode(errors="replace")
        method, _, target = line.partition(" ")
        target = target.split(" ", 1)[0]
        host, _, port = target.rpartition(":")
        if method == "CONNECT" and host in LOOPBACK and port.isdigit():
            self.tunnelled.append(line)
            self.tunnel(conn, "::1" if host in ("::1", "[::1]") else "127.0.0.1", int(port), early)
            return
        self.attempts.append(line or "(nothing read)")
        try:
            conn.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        except OSError:
            pass
        conn.close()

    def tunnel(self, conn: socket.socket, host: str, port: int, early: bytes) -> None:
        try:
            upstream = socket.create_connection((host, port), timeout=10)
            upstream.sendall(early)  # what the client sent after the CONNECT head, if anything
        except OSError as error:
            self.errors.append(f"connecting to {host}:{port}: {error!r}")
            conn.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            conn.close()
            return
        conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
        conn.settimeout(None)
        upstream.settimeout(None)
        back = threading.Thread(target=pipe, args=(upstream, conn, self.errors), daemon=True)
        back.start()
        pipe(conn, upstream, self.errors)
        back.join()
        upstream.close()
        conn.close()


def read_head(conn: socket.socket) -> tuple[bytes, bytes]:
    """The request head, and any bytes the client sent after it."""
    data = b""
    while b"\r\n\r\n" not in data and len(data) < 65536:
        chunk = conn.recv(4096)
        if not chunk:
            break
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    return head, rest


def pipe(source: socket.socket, target: socket.socket, errors: list[str]) -> None:
    try:
        while chunk := source.recv(65536):
            target.sendall(chunk)
    except OSError as error:
        errors.append(f"in a tunnel: {error!r}")
    finally:
        for sock, how in ((target, socket.SHUT_WR), (source, socket.SHUT_RD)):
            try:
                sock.shutdown(how)
            except OSError:
                pass
