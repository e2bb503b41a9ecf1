"""Which addresses deliveries may reach, and the one check of an endpoint's URL.

`check_url` is used when an endpoint is saved (the API, the team page, the admin) and
before every attempt. It reads the URL as the HTTP client does (httpx's parser: IDNA
names to their ASCII form, `。` as a dot, IPv6 literals) and then reads the host the way
the resolver would (every IPv4 notation the C library accepts: decimal `2130706433`,
hex `0x7f000001`, octal `0177.0.0.1`, short forms `127.1` and `0`), so what is checked is
what would be connected to. A URL the client cannot send, a host no resolver could
look up (a space, a percent sign, any character a host name cannot hold) or an IPv4
address written other than as four decimal numbers is refused outright (`UnusableURL`):
such an endpoint could never be delivered to, or would say one address and reach
another.

No private, loopback or link-local address (unless TODOWEB_WEBHOOKS_ALLOW_PRIVATE=1):
the host as written is checked here (`RefusedAddress`), and each address a name
resolves to at every connection (network.py).
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.conf import settings

URL_MAX_CHARS = 2000
# What a host name may hold once in its ASCII (IDNA) form: letters, digits, `-`, `_`, dots.
NAME = re.compile(r"^[a-z0-9_-]+(\.[a-z0-9_-]+)*\.?$")
NAT64 = ipaddress.ip_network("64:ff9b::/96")


class RefusedAddress(Exception):
    """The endpoint's host is, or resolves to, an address deliveries may not reach."""


class UnusableURL(ValueError):
    """The URL cannot be delivered to at all; the message says why."""


@dataclass(frozen=True)
class Target:
    """A checked URL: its host in the form the client connects to, and the address when
    the host is one."""

    url: str
    host: str
    ip: ipaddress.IPv4Address | ipaddress.IPv6Address | None
    # False for an IPv4 address not written as four decimal numbers (`127.1`).
    plain: bool = True


def embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one carries (mapped, compatible, 6to4, NAT64), if any:
    `::ffff:127.0.0.1`, `::127.0.0.1` and `64:ff9b::7f00:1` reach 127.0.0.1."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    packed = int(ip)
    if packed >> 32 == 0 and packed > 1:  # IPv4-compatible (::a.b.c.d), not :: or ::1
        return ipaddress.IPv4Address(packed & 0xFFFFFFFF)
    if ip in NAT64:
        return ipaddress.IPv4Address(packed & 0xFFFFFFFF)
    return None


def refused(address: str | ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    ip = address if not isinstance(address, str) else ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address):
        inner = embedded_ipv4(ip)
        if inner is not None:
            ip = inner
    return not ip.is_global or ip.is_multicast


def ipv4_number(part: str) -> int | None:
    """One part of an IPv4 address as inet_aton reads it (0x hex, leading-0 octal,
    decimal); None when it is not a number."""
    try:
        if part[:2] in ("0x", "0X"):
            return int(part[2:] or "0", 16)
        if len(part) > 1 and part[0] == "0":
            return int(part[1:], 8)
        return int(part, 10) if part.isdigit() else None
    except ValueError:
        return None


def parse_ipv4(host: str) -> ipaddress.IPv4Address | None:
    """The IPv4 address a host in any of inet_aton's notations stands for (`127.1`,
    `2130706433`, `0x7f.0.0.1`, `0177.0.0.1`, `0`); None when it is a name. Raises
    UnusableURL for what looks like an address and is none (`1.2.3.4.5`, `256.1.1.1`)."""
    parts = host.rstrip(".").split(".")
    numbers = [ipv4_number(part) for part in parts]
    if parts[-1] == "" or numbers[-1] is None:
        return None  # a name (its last label is not a number)
    if None in numbers or len(parts) > 4:
        raise UnusableURL(f"{host} is neither a host name nor an IPv4 address")
    *leading, last = numbers
    if any(n > 255 for n in leading) or last >= 256 ** (5 - len(parts)):
        raise UnusableURL(f"{host} is neither a host name nor an IPv4 address (a number is out of range)")
    value = last
    for index, number in enumerate(leading):
        value += number << (8 * (3 - index))
    return ipaddress.IPv4Address(value)


def parse_url(url: str) -> Target:
    """The URL as the HTTP client reads it, or UnusableURL saying why it cannot be sent."""
    import httpx  # the client's own parser (network.py imports it too)

    if len(url) > URL_MAX_CHARS:
        raise UnusableURL(f"at most {URL_MAX_CHARS} characters")
    bad = next((c for c in url if c.isspace() or ord(c) < 32 or ord(c) == 127), None)
    if bad is not None:
        shown = "a space" if bad == " " else f"the character {bad!r}"
        raise UnusableURL(f"it holds {shown}, which an address cannot (percent-encode it in the path)")
    try:
        netloc = urlsplit(url).netloc
    except ValueError:
        netloc = ""
    if not url.replace(netloc, "", 1).isascii():
        # A host may be an internationalised name (sent in its IDNA form); elsewhere
        # such a character is most often a placeholder pasted from an example.
        raise UnusableURL(
            "it holds characters an address cannot (a placeholder such as … left in?): paste the endpoint's"
            " own URL, with any other character percent-encoded"
        )
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL as exc:
        # httpx refuses some IPv4 notations (`0177.0.0.1`, `127.000.000.001`): say
        # which address it is, so that a private one is named as such.
        host = (urlsplit(url).hostname or "").lower()
        try:
            ip = parse_ipv4(host) if NAME.match(host) else None
        except UnusableURL:
            ip = None
        if ip is None:
            raise UnusableURL(f"it cannot be sent: {exc}") from None
        return Target(url, host, ip, plain=False)
    if parsed.scheme not in ("http", "https") or not parsed.raw_host:
        raise UnusableURL("an http or https address is needed")
    if parsed.userinfo:
        raise UnusableURL("no user or password in the address")
    if parsed.port is not None and not 0 < parsed.port < 65536:
        raise UnusableURL("the port is not valid")
    raw = parsed.raw_host.decode("ascii").lower()
    if ":" in raw:  # an IPv6 literal (httpx checked its form)
        if "%" in raw:
            raise UnusableURL(f"[{raw}]: a zone (%) is not allowed in an address")
        return Target(url, raw, ipaddress.IPv6Address(raw))
    if "%" in raw:
        raise UnusableURL(f"the host {raw} is percent-encoded: write the host name itself")
    if not NAME.match(raw):
        raise UnusableURL(f"the host {raw} holds a character a host name cannot")
    ip = parse_ipv4(raw)
    return Target(url, raw, ip, plain=ip is None or raw == str(ip))


def usable(url: str) -> Target:
    """What every attempt checks before connecting: `parse_url`, and an IPv4 address
    written as four decimal numbers (UnusableURL otherwise). Private addresses are
    checked at the connection, on every address the host resolves to (network.py)."""
    target = parse_url(url)
    if not target.plain:
        raise UnusableURL(
            f"the host {target.host} is the IPv4 address {target.ip} written another way: write it as {target.ip}"
        )
    return target


def check_url(url: str) -> Target:
    """The check of an endpoint's URL when it is saved: `usable`, and no private
    address (unless allowed), whatever its notation: RefusedAddress saying which."""
    target = parse_url(url)
    if not settings.TODOWEB_WEBHOOKS_ALLOW_PRIVATE:
        name = target.host.rstrip(".")
        if name == "localhost" or name.endswith(".localhost"):
            raise RefusedAddress(f"{target.host} is a loopback address")
        if target.ip is not None and refused(target.ip):
            shown = target.host if target.plain else f"{target.host} (that is {target.ip})"
            raise RefusedAddress(f"{shown} is a private, loopback or link-local address")
    return usable(url)
