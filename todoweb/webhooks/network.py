"""The HTTP connections deliveries use (httpcore's connection pool, with a network
backend of todoweb's: the public way to have a say in how connections are opened): a 5 s
deadline for the whole attempt, no redirects, no proxies from the environment, and no
connection to a private, loopback or link-local address (unless
TODOWEB_WEBHOOKS_ALLOW_PRIVATE=1). The check is made where the connection is opened,
on every address the name resolves to, so a name cannot resolve to a public address
when checked and a private one when used.

Imported by the first delivery (httpx and httpcore cost a process 6 MB, which a
deployment with no endpoints need not pay)."""

from __future__ import annotations

import socket
import ssl
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any

import httpcore
import httpx
from django.conf import settings

from todoweb.webhooks.addresses import RefusedAddress, refused

# The whole of an attempt, from resolving the host to the answer's last byte read.
TIMEOUT = 5.0
# The first bytes of a response that decide a redirect.
REDIRECTS = frozenset([301, 302, 303, 307, 308])

_attempt = threading.local()


class DeadlinePassed(httpcore.TimeoutException):
    """The attempt's deadline passed (whatever the receiver was still sending)."""


@contextmanager
def deadline(seconds: float) -> Iterator[float]:
    """Every network wait of this thread within the block ends by `seconds` from now:
    httpx's timeouts are per read, so a receiver sending a byte now and then would
    restart them for as long as it pleased; these waits are cut to what is left."""
    at = time.monotonic() + seconds
    _attempt.deadline = at
    try:
        yield at
    finally:
        _attempt.deadline = None


def left(timeout: float | None) -> float | None:
    """The timeout of one wait: what httpx asked for, at most what is left of the
    attempt (DeadlinePassed when nothing is)."""
    at = getattr(_attempt, "deadline", None)
    if at is None:
        return timeout
    remaining = at - time.monotonic()
    if remaining <= 0:
        raise DeadlinePassed("the attempt's deadline passed")
    return remaining if timeout is None else min(timeout, remaining)


class DeadlineStream(httpcore.NetworkStream):
    """A connection whose every read, write and TLS handshake ends by the attempt's deadline."""

    def __init__(self, stream: httpcore.NetworkStream):
        self.stream = stream

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self.stream.read(max_bytes, left(timeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self.stream.write(buffer, left(timeout))

    def close(self) -> None:
        self.stream.close()

    def start_tls(
        self, ssl_context: ssl.SSLContext, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.NetworkStream:
        # CPython's handshake keeps one deadline for the whole of it (not one per read):
        # what is left of the attempt bounds it however the server drips its side.
        return DeadlineStream(self.stream.start_tls(ssl_context, server_hostname, left(timeout)))

    def get_extra_info(self, info: str) -> Any:
        return self.stream.get_extra_info(info)


def resolve(host: str, port: int, timeout: float | None) -> list[str]:
    """The addresses of `host`, waited for at most `timeout`: the C library's resolver
    cannot be interrupted, so it runs in a thread of its own that is left to finish if
    the name's servers are slower than the attempt may be."""
    found: list[Any] = []
    done = threading.Event()

    def lookup() -> None:
        try:
            found.append(socket.getaddrinfo(host, port, type=socket.SOCK_STREAM))
        except OSError as exc:
            found.append(exc)
        done.set()

    threading.Thread(target=lookup, name="todoweb-webhook-resolve", daemon=True).start()
    if not done.wait(timeout):
        raise httpcore.ConnectTimeout(f"resolving {host} took longer than the attempt may")
    if isinstance(found[0], OSError):
        raise httpcore.ConnectError(f"cannot resolve {host}: {found[0]}")
    return list(dict.fromkeys(info[4][0] for info in found[0]))


class GuardedBackend(httpcore.SyncBackend):
    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Any = None,
    ) -> httpcore.NetworkStream:
        addresses = resolve(host, port, left(timeout))
        if not settings.TODOWEB_WEBHOOKS_ALLOW_PRIVATE:
            bad = [address for address in addresses if refused(address)]
            if bad:
                raise RefusedAddress(f"{host} resolves to {bad[0]}, a private, loopback or link-local address")
        error: Exception | None = None
        for address in addresses:
            try:
                stream = super().connect_tcp(address, port, left(timeout), local_address, socket_options)
            except httpcore.ConnectError as exc:
                error = exc
            else:
                return DeadlineStream(stream)
        raise error or httpcore.ConnectError(f"cannot connect to {host}")


_pools = threading.local()


@cache
def tls_context() -> ssl.SSLContext:
    """Loading the CA bundle is most of the cost of a new client (~20 ms): once per process."""
    return httpx.create_ssl_context()


def pool() -> httpcore.ConnectionPool:
    """This thread's connection pool, kept: connections to an endpoint are reused
    between deliveries (each was checked when it was opened). httpcore follows no
    redirect and reads no proxy from the environment."""
    kept = getattr(_pools, "pool", None)
    if kept is None:
        kept = _pools.pool = httpcore.ConnectionPool(ssl_context=tls_context(), network_backend=GuardedBackend())
    return kept


def target(url: str) -> httpcore.URL:
    """The address as httpx reads it (IDNA, the checks of addresses.py), for httpcore."""
    parsed = httpx.URL(url)
    return httpcore.URL(scheme=parsed.raw_scheme, host=parsed.raw_host, port=parsed.port, target=parsed.raw_path)


def timeouts() -> dict[str, float]:
    """Each wait's own limit (the attempt's deadline bounds them all together)."""
    return {"connect": TIMEOUT, "read": TIMEOUT, "write": TIMEOUT, "pool": TIMEOUT}
