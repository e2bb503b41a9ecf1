"""ASGI entry point: HTTP through Django (the API without the browser's middleware,
see handlers.py), websockets to the board's consumers (Channels' consumers, todoweb's
routing: live/routing.py)."""

from __future__ import annotations

import os

from django.core.asgi import get_asgi_application

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

from todoweb.live.routing import live_sockets  # noqa: E402
from todoweb.runtime.handlers import by_protocol, http_application, without_nul  # noqa: E402
from todoweb.webhooks.worker import started_by  # noqa: E402

# Every process that serves the application delivers webhooks from a thread of its own
# (started on its first call, once; TODOWEB_WEBHOOK_WORKER=0: not in this process).
application = started_by(without_nul(by_protocol(http=http_application(django_asgi_app), websocket=live_sockets)))
