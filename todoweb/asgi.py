"""ASGI entry point: HTTP through Django (the API without the browser's middleware,
see handlers.py), websockets through Channels."""

from __future__ import annotations

import gc
import os
import sys

from django.core.asgi import get_asgi_application

# The event loop (HTTP, websocket fan-out) and the database thread share the GIL. A
# thread that wants it waits out the holder's switch interval (5 ms by default) at
# each hand-over, and a write hands over several times: with 1,000 watchers on the
# loop, 1 ms cut the write answers' p99 from 165-169 ms to 120-142 ms (bench/fanout.py).
sys.setswitchinterval(0.001)

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "todoweb.settings")
# Django must be set up before the consumers (and their models) are imported.
django_asgi_app = get_asgi_application()

from django.conf import settings  # noqa: E402
from django.core.exceptions import ImproperlyConfigured  # noqa: E402

if not settings.DEBUG and settings.SECRET_KEY == settings.DEVELOPMENT_SECRET_KEY:
    # Anyone can read the repository's key, and with it forge session cookies.
    raise ImproperlyConfigured(
        "SECRET_KEY is not set. todoweb will not serve with the development key from its repository "
        "unless DEBUG=1. Set SECRET_KEY to a long random value, e.g. the output of "
        "python -c 'import secrets; print(secrets.token_urlsafe(50))' "
        "(`make run` keeps one in .run/secret-key)."
    )

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402

from .handlers import http_application  # noqa: E402
from .routing import websocket_urlpatterns  # noqa: E402
from .viewers import ViewerMiddleware  # noqa: E402

# What the server loaded to start (Django, the apps, the URL resolvers: 165,000
# objects) lives as long as the process: keep it out of the garbage collector's full
# collections, which otherwise re-examine it every time and stop the process for
# ~90 ms more on a 2-core machine (with 1,000 sockets open, 300 ms instead of 200 ms).
gc.freeze()

application = ProtocolTypeRouter(
    {
        "http": http_application(django_asgi_app),
        "websocket": AllowedHostsOriginValidator(ViewerMiddleware(URLRouter(websocket_urlpatterns))),
    }
)
