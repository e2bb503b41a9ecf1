"""Which addresses deliveries may reach: no private, loopback or link-local address
(unless TODOWEB_WEBHOOKS_ALLOW_PRIVATE=1), checked when an endpoint is saved (its
host as written) and at every connection (each address its name resolves to, see
network.py)."""

from __future__ import annotations

import ipaddress

from django.conf import settings


class RefusedAddress(Exception):
    """The endpoint's host is, or resolves to, an address deliveries may not reach."""


def refused(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return not ip.is_global or ip.is_multicast


def check_host(host: str) -> None:
    """Refuse a host given as a private address, or named `localhost` (the rest is
    checked at each connection, after resolving)."""
    if settings.TODOWEB_WEBHOOKS_ALLOW_PRIVATE:
        return
    name = host.strip("[]").lower().rstrip(".")
    if name == "localhost" or name.endswith(".localhost"):
        raise RefusedAddress(f"{host} is a loopback address")
    try:
        if refused(name):
            raise RefusedAddress(f"{host} is a private, loopback or link-local address")
    except ValueError:
        pass  # a name
