"""Websocket URLs: the consumer for each path, made with the path's arguments."""

from __future__ import annotations

import re
from typing import Any

from todoweb.live import consumers

ROUTES = [
    (re.compile(r"ws/sessions/(?P<public_id>[^/]+)/"), consumers.SessionConsumer),
    (re.compile(r"ws/dashboard/"), consumers.DashboardConsumer),
]


def live_sockets(scope: dict[str, Any], receive: Any, send: Any) -> Any:
    """The ASGI application of the board's websockets: the consumer's own, for its path.

    A function that returns the consumer's coroutine, not a coroutine of its own, and
    the scope as the server made it: a socket keeps no frame or copy of the scope for
    its life (Channels' origin validator, auth middleware, URL router and consumer
    factory each kept a frame, and three a copy: 2.7 KB a socket). The consumers check
    the origin and read the viewer when the socket connects."""
    path = scope["path"][len(scope.get("root_path", "")) :].lstrip("/")
    for pattern, consumer in ROUTES:
        if match := pattern.fullmatch(path):
            return consumer(**match.groupdict())(scope, receive, send)
    raise ValueError(f"No route found for path {scope['path']!r}.")
