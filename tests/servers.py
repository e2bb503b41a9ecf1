"""Real todoweb servers in their own processes, started the way the README says, for
tests of what only a running deployment shows: logs, several processes, faults."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

import httpx
import psycopg
import pytest
import redis

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
SECRET_KEY = "system-tests-only-secret-key-0123456789-abcdefghijklmnopqrstuvwxyz"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def base_env(**extra: str) -> dict[str, str]:
    """The environment of a fresh deployment: nothing of the test process's own settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TODOWEB_", "DJANGO_", "REDIS_", "DATABASE_"))}
    return env | {"SECRET_KEY": SECRET_KEY, "PYTHONUNBUFFERED": "1"} | extra


def manage(env: dict[str, str], *args: str) -> str:
    """Run a management command to completion; its output."""
    result = subprocess.run(
        [PY, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def create_token(env: dict[str, str], project: str = "demo") -> str:
    return manage(env, "createtoken", project).strip().splitlines()[-1]


class Server:
    """One server process; everything it prints goes to `log` (stdout and stderr)."""

    def __init__(self, args: list[str], env: dict[str, str], *, port: int, log: Path):
        self.args = args
        self.env = env
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.log_path = log
        self.process: subprocess.Popen | None = None
        self.log_file: IO[bytes] | None = None

    @classmethod
    def serve(cls, env: dict[str, str], log: Path, *, workers: int = 1, port: int | None = None) -> Server:
        """The production command of the README."""
        port = port or free_port()
        args = [PY, "manage.py", "serve", "--port", str(port), "--workers", str(workers)]
        return cls(args, env, port=port, log=log)

    def start(self, timeout: float = 30) -> Server:
        self.log_file = self.log_path.open("ab")
        self.process = subprocess.Popen(
            self.args, cwd=ROOT, env=self.env, stdout=self.log_file, stderr=subprocess.STDOUT
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"server exited with {self.process.returncode}:\n{self.output()}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"server did not answer within {timeout} s:\n{self.output()}")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.log_file is not None:
            self.log_file.close()

    def kill(self) -> None:
        """SIGKILL: the process dies mid-whatever, as in a crash."""
        assert self.process is not None
        self.process.kill()
        self.process.wait()
        if self.log_file is not None:
            self.log_file.close()

    def output(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def __enter__(self) -> Server:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


PG_TEST_URL = os.environ.get("PG_TEST_URL", "postgres://postgres@127.0.0.1:5432/todoweb")
IN_CI = os.environ.get("CI", "").lower() == "true"


def require(available: bool, what: str) -> None:
    """Skip a test whose service is missing on a developer's machine; under CI=true, fail it."""
    if available:
        return
    if IN_CI:
        pytest.fail(f"CI=true but {what}")
    pytest.skip(what)


def postgres_admin_url() -> str:
    return PG_TEST_URL.rsplit("/", 1)[0] + "/postgres"


def postgres_up() -> bool:
    try:
        psycopg.connect(postgres_admin_url(), connect_timeout=3).close()
        return True
    except psycopg.Error:
        return False


@contextmanager
def postgres_database(prefix: str = "todoweb_system") -> Iterator[str]:
    """A fresh, empty PostgreSQL database on the test server; dropped afterwards."""
    name = f"{prefix}_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(postgres_admin_url(), autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield PG_TEST_URL.rsplit("/", 1)[0] + "/" + name
    finally:
        with psycopg.connect(postgres_admin_url(), autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def redis_server_installed() -> bool:
    return shutil.which("redis-server") is not None


class RedisServer:
    """A private redis-server on a port of its own, to stop and restart at will."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen | None = None

    def start(self) -> RedisServer:
        args = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        self.process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        client = redis.Redis(port=self.port, socket_connect_timeout=1)
        for _ in range(100):
            try:
                if client.ping():
                    return self
            except redis.ConnectionError:
                time.sleep(0.05)
        raise RuntimeError("redis-server did not start")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()
