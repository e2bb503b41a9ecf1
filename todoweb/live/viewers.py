"""Who is watching, and from where: a websocket's Django user, from its session
cookie, and whether its Origin is one of the site's own.

Channels' AuthMiddlewareStack reads the user too, but also wraps `send` to save the
session after every message; the board's sockets never change the session, and with
a thousand watchers that check was an eighth of the cost of sending a frame. The user
is read as Django reads a request's, in the database thread.
"""

from __future__ import annotations

from functools import cache
from importlib import import_module
from types import SimpleNamespace
from typing import Any
from urllib.parse import urlparse

from channels.security.websocket import AllowedHostsOriginValidator, OriginValidator
from django.conf import settings
from django.contrib import auth
from django.contrib.auth.models import AnonymousUser
from django.http.cookie import parse_cookie

from todoweb.store.database import in_database_thread

# AnonymousUser keeps nothing of its own: one serves every socket without a login.
ANONYMOUS = AnonymousUser()


async def viewer_of(scope: dict[str, Any]) -> tuple[Any, str | None]:
    """The socket's user (AnonymousUser without a valid session) and, for a logged-in
    user, the key of their login session, which the hub checks again while the socket
    stays open (todoweb.live.access)."""
    cookies = parse_cookie(scope_header(scope, b"cookie") or "")
    session_key = cookies.get(settings.SESSION_COOKIE_NAME)
    if not session_key:
        return ANONYMOUS, None
    user = await in_database_thread(user_of, session_key)
    return user, session_key if user.is_authenticated else None


def user_of(session_key: str) -> Any:
    """The user of a login session, as Django reads a request's (AnonymousUser if it
    is not a valid one)."""
    store = import_module(settings.SESSION_ENGINE).SessionStore
    return auth.get_user(SimpleNamespace(session=store(session_key)))  # type: ignore[arg-type]


@cache
def origins() -> OriginValidator:
    # Channels' check of the Origin header against ALLOWED_HOSTS (with DEBUG and no
    # ALLOWED_HOSTS, localhost's); only its check is used, not its application.
    return AllowedHostsOriginValidator(None)


def allowed_origin(scope: dict[str, Any]) -> bool:
    """Whether the socket's Origin is the site's own, as Channels' origin validator
    decides (a socket without one is refused)."""
    origin = scope_header(scope, b"origin")
    return origins().valid_origin(urlparse(origin) if origin is not None else None)


def scope_header(scope: dict[str, Any], name: bytes) -> str | None:
    """The first value of the request's header `name` (lower case), as text."""
    return next((value.decode("latin-1") for key, value in scope["headers"] if key == name), None)
