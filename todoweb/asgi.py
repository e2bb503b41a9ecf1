"""ASGI entry point: HTTP through Django (the API without the browser's middleware,
see handlers.py), websockets to the board's consumers (Channels' consumers, todoweb's
routing: live/routing.py)."""

from __future__ import annotations

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "todoweb.settings")
# Django must be set up before the consumers (and their models) are imported.
django_asgi_app = get_asgi_application()

from todoweb.serve.secret_key import refuse_the_development_key  # noqa: E402

refuse_the_development_key()

from todoweb.live.routing import live_sockets  # noqa: E402
from todoweb.serve.handlers import by_protocol, http_application, without_nul  # noqa: E402
from todoweb.webhooks.worker import started_by  # noqa: E402

# Every process that serves the application delivers webhooks from a thread of its own
# (started on its first call, once; TODOWEB_WEBHOOK_WORKER=0: not in this process).
application = started_by(without_nul(by_protocol(http=http_application(django_asgi_app), websocket=live_sockets)))
