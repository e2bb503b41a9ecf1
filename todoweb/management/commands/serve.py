"""serve: run todoweb in production (uvicorn, several worker processes)."""

from __future__ import annotations

import os

from django.core.exceptions import ImproperlyConfigured
from django.core.management.base import BaseCommand, CommandError, CommandParser

from todoweb.serve.secret_key import refuse_the_development_key
from todoweb.serve.server import serve


class Command(BaseCommand):
    help = "Serve todoweb with uvicorn: `serve --host 0.0.0.0 --port 8000 --workers 4`."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
        parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", 8000)))
        parser.add_argument("--workers", type=int, default=int(os.environ.get("WEB_CONCURRENCY", 1)))
        parser.add_argument("--log-level", default=os.environ.get("UVICORN_LOG_LEVEL", "info"))

    def handle(self, *args, host: str, port: int, workers: int, log_level: str, **options) -> None:
        try:
            # Here, before any worker starts: a worker that refuses is restarted, again and again.
            refuse_the_development_key()
        except ImproperlyConfigured as error:
            raise CommandError(str(error)) from None
        serve(host=host, port=port, workers=workers, log_level=log_level)
