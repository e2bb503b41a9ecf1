"""The HTTP client deliveries use: 5 s timeouts, no redirects, no proxies from the
environment, and no connection to a private, loopback or link-local address (unless
TODOWEB_WEBHOOKS_ALLOW_PRIVATE=1). The check is made where the connection is opened,
on every address the name resolves to, so a name cannot resolve to a public address
when checked and a private one when used.

Imported by the first delivery (httpx costs a process 6 MB, which a deployment with no
endpoints need not pay)."""

from __future__ import annotations

import socket
import ssl
import threading
from functools import cache
from typing import Any

import httpcore
import httpx
from django.conf import settings

from todoweb.webhooks.addresses import RefusedAddress, refused

TIMEOUT = 5.0


class GuardedBackend(httpcore.SyncBackend):
    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Any = None,
    ) -> httpcore.NetworkStream:
        if settings.TODOWEB_WEBHOOKS_ALLOW_PRIVATE:
            return super().connect_tcp(host, port, timeout, local_address, socket_options)
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError as exc:
            raise httpcore.ConnectError(f"cannot resolve {host}: {exc}") from exc
        addresses = list(dict.fromkeys(info[4][0] for info in infos))
        bad = [address for address in addresses if refused(address)]
        if bad:
            raise RefusedAddress(f"{host} resolves to {bad[0]}, a private, loopback or link-local address")
        error: Exception | None = None
        for address in addresses:
            try:
                return super().connect_tcp(address, port, timeout, local_address, socket_options)
            except httpcore.ConnectError as exc:
                error = exc
        raise error or httpcore.ConnectError(f"cannot connect to {host}")


_clients = threading.local()


@cache
def tls_context() -> ssl.SSLContext:
    """Loading the CA bundle is most of the cost of a new client (~20 ms): once per process."""
    return httpx.create_ssl_context()


def client() -> httpx.Client:
    """This thread's client, kept: connections to an endpoint are reused between
    deliveries (each was checked when it was opened)."""
    kept = getattr(_clients, "client", None)
    if kept is None or kept.is_closed:
        transport = httpx.HTTPTransport(verify=tls_context(), trust_env=False)
        transport._pool._network_backend = GuardedBackend()  # type: ignore[attr-defined]
        kept = _clients.client = httpx.Client(
            transport=transport, timeout=TIMEOUT, follow_redirects=False, trust_env=False
        )
    return kept
