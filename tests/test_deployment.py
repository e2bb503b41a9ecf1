"""What an operator relies on: the app refuses the repository's secret key, and two
deployments sharing one Redis server keep their events apart."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from todoweb.settings import default_channel_prefix

ROOT = Path(__file__).resolve().parent.parent


def run(code: str, **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k not in ("SECRET_KEY", "DEBUG", "TODOWEB_CHANNEL_PREFIX")}
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=clean | {"DJANGO_SETTINGS_MODULE": "todoweb.settings"} | env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_it_refuses_to_serve_with_the_repositorys_key():
    result = run("import todoweb.asgi")
    assert result.returncode != 0
    assert "SECRET_KEY is not set" in result.stderr


def test_serve_refuses_before_any_worker_starts():
    # With several workers uvicorn would restart each worker that refuses, forever.
    result = run(
        "import sys; from django.core.management import execute_from_command_line;"
        " execute_from_command_line(['manage.py', 'serve', '--workers', '2', '--port', '0'])"
    )
    assert result.returncode == 1
    assert "SECRET_KEY is not set" in result.stderr
    assert "Traceback" not in result.stderr and "Started server process" not in result.stderr


def test_it_serves_with_a_key_of_its_own_or_in_debug():
    assert run("import todoweb.asgi", SECRET_KEY="a-long-random-key-" * 3).returncode == 0
    assert run("import todoweb.asgi", DEBUG="1").returncode == 0


def test_check_deploy_warns_about_the_repositorys_key():
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy"],
        cwd=ROOT,
        env={k: v for k, v in os.environ.items() if k != "SECRET_KEY"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "security.W009" in result.stdout + result.stderr


def test_it_derives_a_channel_prefix_unique_to_the_database():
    a = default_channel_prefix({"ENGINE": "postgresql", "HOST": "db", "PORT": 5432, "NAME": "team_a"})
    b = default_channel_prefix({"ENGINE": "postgresql", "HOST": "db", "PORT": 5432, "NAME": "team_b"})
    assert a != b and a.startswith("todoweb.")
    assert a == default_channel_prefix({"ENGINE": "postgresql", "HOST": "db", "PORT": 5432, "NAME": "team_a"})


def test_it_takes_the_channel_prefix_from_the_environment():
    code = "import django; django.setup(); from django.conf import settings; print(settings.TODOWEB_CHANNEL_PREFIX)"
    assert run(code, TODOWEB_CHANNEL_PREFIX="team-a").stdout.strip() == "team-a"
    assert run(code).stdout.strip().startswith("todoweb.")


def test_the_api_handler_still_finds_the_django_internals_it_replaces():
    """The API's handler runs without middleware by setting what Django's
    BaseHandler.load_middleware sets (todoweb.serve.handlers). If a Django upgrade
    renames those internals, this fails loudly instead of the API misbehaving."""
    import inspect

    from django.core.handlers.base import BaseHandler

    from todoweb.serve.handlers import ApiHandler

    source = inspect.getsource(BaseHandler.load_middleware)
    for name in ("_view_middleware", "_template_response_middleware", "_exception_middleware", "_middleware_chain"):
        assert f"self.{name}" in source, name
    for name in ("_get_response", "_get_response_async", "get_response_async"):
        assert callable(getattr(BaseHandler, name, None)), name
    handler = ApiHandler()
    assert handler._middleware_chain is not None and handler._view_middleware == []
