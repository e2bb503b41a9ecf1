"""The Docker recipe (Dockerfile, compose.yaml). Docker cannot run on the machines the
tests run on (no daemon, no registry but PyPI, Debian and npm), so this checks what
can be checked without it: the compose file wires the stack the README describes, and
the image's own command — migrate, then serve with several workers — brings up a
working server when run as it is, outside a container."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import yaml

from tests.servers import ROOT, base_env, free_port

COMPOSE_TEXT = (ROOT / "compose.yaml").read_text()
COMPOSE = yaml.safe_load(COMPOSE_TEXT)
DOCKERFILE = (ROOT / "Dockerfile").read_text()
ENV_EXAMPLE = (ROOT / ".env.example").read_text()


def default(value: str) -> str:
    """The default of a `${NAME:-default}` compose variable."""
    match = re.fullmatch(r"\$\{\w+:-(.*)\}", str(value))
    return match.group(1) if match else str(value)


def test_compose_runs_the_app_on_several_workers_with_postgres_redis_and_a_daily_prune():
    services = COMPOSE["services"]
    assert set(services) == {"app", "worker", "prune", "db", "redis"}
    # Webhooks: delivered by django-tasks-db's worker, not by the web processes.
    assert services["app"]["environment"]["TODOWEB_WEBHOOK_WORKER"] == "0"
    assert "manage.py webhook_worker" in " ".join(services["worker"]["command"])
    app, prune = services["app"], services["prune"]
    assert int(default(app["environment"]["WORKERS"])) >= 2
    for service in (app, prune):
        assert service["environment"]["DATABASE_URL"].startswith("postgres://todoweb:todoweb@db:5432/")
        assert service["environment"]["REDIS_URL"] == "redis://redis:6379/0"
        assert service["environment"]["SECRET_KEY"].startswith("${SECRET_KEY:?")  # never a default key
    assert app["depends_on"]["db"]["condition"] == "service_healthy"
    assert "/readyz" in " ".join(app["healthcheck"]["test"])
    assert "manage.py prune" in " ".join(prune["command"]) and "sleep 86400" in " ".join(prune["command"])
    assert services["db"]["image"].startswith("postgres:") and services["redis"]["image"].startswith("redis:")


def env_file(text: str) -> dict[str, str]:
    """The settings of a `.env` file as compose reads them (KEY=VALUE lines; # comments)."""
    pairs = (line.split("=", 1) for line in text.splitlines() if line.strip() and not line.startswith("#"))
    return {key.strip(): value.strip() for key, value in pairs}


def make_env_command() -> str:
    """The command .env.example gives to make `.env` from it."""
    [command] = [line.removeprefix("#").strip() for line in ENV_EXAMPLE.splitlines() if "> .env" in line]
    return command


def test_the_secret_key_comes_from_env_and_nothing_starts_without_one():
    # compose reads `.env` beside compose.yaml for ${…}; `:?` refuses an unset or empty key.
    for name, service in COMPOSE["services"].items():
        if name in {"db", "redis"}:
            continue
        key = service["environment"]["SECRET_KEY"]
        assert re.fullmatch(r"\$\{SECRET_KEY:\?[^}]*\.env[^}]*\}", key), (name, key)
    # The example holds no key to reuse: a copy left as it is does not start.
    assert env_file(ENV_EXAMPLE) == {"SECRET_KEY": ""}
    assert "secrets.token_urlsafe(50)" in ENV_EXAMPLE


def test_every_line_of_env_reaches_todoweb_and_the_port_inside_stays_the_images():
    # Any setting (TODOWEB_HTTPS behind TLS, TODOWEB_RETENTION_DAYS, …), not only those
    # compose.yaml names; `required: false` for a key given in the shell instead.
    for name in ("app", "worker", "prune"):
        assert COMPOSE["services"][name]["env_file"] == [{"path": ".env", "required": False}], name
    app = COMPOSE["services"]["app"]
    # PORT in .env is the port on this machine; inside, the image's command listens on 8000.
    assert app["environment"]["PORT"] == "8000"
    assert app["ports"] == ["${PORT:-8000}:8000"]


def test_every_setting_compose_takes_is_in_the_example_with_its_default():
    taken = dict(re.findall(r"\$\{(\w+)(?::-([^}]*))?", COMPOSE_TEXT))
    assert set(taken) == {
        "SECRET_KEY",
        "ALLOWED_HOSTS",
        "CSRF_TRUSTED_ORIGINS",
        "WORKERS",
        "FORWARDED_ALLOW_IPS",
        "PORT",
    }
    example = env_file("\n".join(line.removeprefix("#") for line in ENV_EXAMPLE.splitlines() if "=" in line))
    for name, fallback in taken.items():
        assert name in example, name
        if fallback:
            assert example[name] == fallback, (name, example[name], fallback)


def test_the_examples_command_makes_a_key_once_and_keeps_it(tmp_path):
    (tmp_path / ".env.example").write_text(ENV_EXAMPLE)

    def make_env() -> dict[str, str]:
        run = subprocess.run(["sh", "-c", make_env_command()], cwd=tmp_path, capture_output=True, text=True)
        assert run.returncode == 0, run.stderr
        return env_file((tmp_path / ".env").read_text())

    first = make_env()
    assert re.fullmatch(r"[\w-]{60,}", first["SECRET_KEY"]), first
    assert make_env() == first  # run again (an upgrade, a restart): the same key
    (tmp_path / ".env").unlink()
    assert make_env()["SECRET_KEY"] != first["SECRET_KEY"]  # a new .env gets a new key


def test_the_image_runs_as_a_user_with_static_files_collected_at_build():
    assert re.search(r"^USER (?!root)\w+", DOCKERFILE, re.M)
    assert "collectstatic --noinput" in DOCKERFILE


def image_command() -> list[str]:
    return json.loads(re.search(r"^CMD (\[.*\])$", DOCKERFILE, re.M).group(1))


def worker_count(pid: int) -> int:
    """uvicorn's worker processes under `pid` (multiprocessing's resource tracker aside)."""
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    commands = [Path(f"/proc/{child}/cmdline").read_bytes().replace(b"\0", b" ") for child in children]
    return sum(b"resource_tracker" not in command for command in commands)


def test_the_images_command_migrates_and_serves_with_several_workers(tmp_path):
    port = free_port()
    env = base_env(
        DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}",
        PORT=str(port),
        WORKERS="2",
        # The image's `python` is the interpreter running these tests.
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
    )
    log = (tmp_path / "server.log").open("wb")
    process = subprocess.Popen(image_command(), cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, (tmp_path / "server.log").read_text()
            try:
                if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, (tmp_path / "server.log").read_text()
            time.sleep(0.2)
        assert worker_count(process.pid) == 2
        prune = subprocess.run(
            [sys.executable, "manage.py", "prune"], cwd=ROOT, env=env, capture_output=True, timeout=60
        )
        assert prune.returncode == 0, prune.stderr
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
        log.close()
