"""start: everything `make run` needs — migrate, an admin login, a token, the server, a demo agent."""

from __future__ import annotations

import os
import secrets
import socket
import threading

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command, get_commands
from django.core.management.base import BaseCommand, CommandError, CommandParser

from todoweb.models import ApiToken, digest
from todoweb.serve.server import serve
from todoweb.writes.tokens import token_create

PASSWORD_FILE = settings.BASE_DIR / ".run" / "admin-password"
TOKEN_FILE = settings.BASE_DIR / ".run" / "demo-token"
# With the demo on, its waiting agent shows as idle after a minute, not ten.
DEMO_IDLE_AFTER = 60


class Command(BaseCommand):
    help = "Migrate, create an admin login and a demo token, then serve todoweb (and a demo agent) with uvicorn."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
        parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", 8000)))
        parser.add_argument(
            "--no-demo",
            action="store_true",
            default=os.environ.get("DEMO", "1") == "0",
            help="do not start the demo agent (also DEMO=0)",
        )

    def handle(self, *args, host: str, port: int, no_demo: bool, **options) -> None:
        check_free(host, port)
        call_command("migrate", interactive=False, verbosity=0)
        username, password = self.ensure_admin()
        raw_token = self.demo_token()
        url = f"http://{host}:{port}"
        self.stdout.write(
            "\n".join(
                [
                    "",
                    f"todoweb is starting on {url}/",
                    f"  board:  {url}/   (log in as {username} / {password})",
                    f"  admin:  {url}/admin/",
                    f"  API:    {url}/api/v1/docs",
                    f"  token for project 'demo' (write scope): {raw_token}",
                    "",
                    "Try it:",
                    f"  curl -s {url}/api/v1/sessions/hello/tool -H 'Authorization: Bearer {raw_token}' \\",
                    "    -H 'Content-Type: application/json' \\",
                    """    -d '{"type":"tool_use","id":"toolu_1","name":"TodoWrite","input":{"todos":"""
                    """[{"content":"Say hello","status":"in_progress","activeForm":"Saying hello"}]}}'""",
                    "",
                ]
            )
        )
        if not no_demo and "demo" in get_commands():
            self.shorten_idle()
            threading.Thread(
                target=call_command, args=("demo",), kwargs={"url": url, "token": raw_token}, daemon=True
            ).start()
            self.stdout.write("Demo agents keep a fixed set of sessions (demo-*) moving; watch them on the board.\n")
        serve(host=host, port=port, log_level="warning")

    def shorten_idle(self) -> None:
        """The server runs in this process: its settings are read on each use. An
        explicit TODOWEB_IDLE_AFTER wins."""
        if "TODOWEB_IDLE_AFTER" not in os.environ:
            settings.TODOWEB_IDLE_AFTER = DEMO_IDLE_AFTER

    def demo_token(self) -> str:
        """The project 'demo' token of `make run`: made once, kept in .run/ (gitignored)
        and used again as long as it is valid, so each run does not add another."""
        if TOKEN_FILE.exists():
            raw = TOKEN_FILE.read_text().strip()
            token = ApiToken.objects.filter(digest=digest(raw)).first()
            if token is not None and token.is_active:
                return raw
        _, raw, _ = token_create(project_slug="demo", name="make run")
        TOKEN_FILE.parent.mkdir(exist_ok=True)
        TOKEN_FILE.write_text(raw + "\n")
        return raw

    def ensure_admin(self) -> tuple[str, str]:
        """The local admin login: created once, its password kept in .run/ (gitignored)."""
        username = os.environ.get("DJANGO_SUPERUSER_USERNAME", "admin")
        user_model = get_user_model()
        if user_model.objects.filter(username=username).exists():
            password = PASSWORD_FILE.read_text().strip() if PASSWORD_FILE.exists() else "(unchanged)"
            return username, password
        password = os.environ.get("DJANGO_SUPERUSER_PASSWORD") or secrets.token_urlsafe(9)
        user_model.objects.create_superuser(username=username, email="", password=password)
        PASSWORD_FILE.parent.mkdir(exist_ok=True)
        PASSWORD_FILE.write_text(password + "\n")
        return username, password


def check_free(host: str, port: int) -> None:
    """Refuse an address another server holds before anything says todoweb is starting."""
    try:
        with socket.create_server((host, port)):  # with SO_REUSEADDR, as the server binds
            pass
    except OSError as error:
        raise CommandError(
            f"Cannot listen on {host}:{port}: {error.strerror}. Is todoweb running there already?"
            f" Start it on another port: make run PORT={port + 1}"
        ) from error
