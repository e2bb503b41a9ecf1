"""Who is watching: the Django user of a websocket, from its session cookie.

Channels' AuthMiddlewareStack does the same, but also wraps `send` to save the
session after every message; the board's sockets never change the session, and with
a thousand watchers that check was an eighth of the cost of sending a frame.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from channels.auth import get_user
from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.http.cookie import parse_cookie


class ViewerMiddleware:
    """Sets `scope["user"]` (AnonymousUser without a valid session) and, for a logged-in
    user, `scope["todoweb.login"]`, the key of their login session, which the hub checks
    again while the socket stays open (todoweb.access). Passes `send` on unwrapped."""

    def __init__(self, inner: Any):
        self.inner = inner
        self.session_store = import_module(settings.SESSION_ENGINE).SessionStore

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        cookies = parse_cookie(dict(scope.get("headers", ())).get(b"cookie", b"").decode("latin-1"))
        session_key = cookies.get(settings.SESSION_COOKIE_NAME)
        user = await get_user({"session": self.session_store(session_key)}) if session_key else AnonymousUser()
        login = session_key if user.is_authenticated else None
        return await self.inner(dict(scope, user=user, **{"todoweb.login": login}), receive, send)
