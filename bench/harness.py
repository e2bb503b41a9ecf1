"""What the benchmarks share: a throwaway deployment, its server processes, wrk, and
the machine's load beside every figure."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
WRK_SCRIPTS = Path(__file__).resolve().parent / "wrk"
SECRET_KEY = "benchmarks-only-secret-key-0123456789-abcdefghijklmnopqrstuvwxyz"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def load_average() -> str:
    return "load {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


@contextmanager
def deployment(database_url: str | None = None, redis_url: str | None = None, **extra: str) -> Iterator[dict[str, str]]:
    """The environment of a fresh deployment (its own SQLite file unless given a database), migrated."""
    with tempfile.TemporaryDirectory() as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("TODOWEB_", "DATABASE_", "REDIS_"))}
        env |= {"SECRET_KEY": SECRET_KEY, "TODOWEB_RATE_LIMIT": "0", "PYTHONUNBUFFERED": "1"} | extra
        env["DATABASE_URL"] = database_url or f"sqlite:///{tmp}/bench.sqlite3"
        if redis_url:
            env["REDIS_URL"] = redis_url
        manage(env, "migrate")
        yield env


def manage(env: dict[str, str], *args: str) -> str:
    result = subprocess.run([PY, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(result.stdout + result.stderr)
    return result.stdout


def create_token(env: dict[str, str], project: str = "bench") -> str:
    return manage(env, "createtoken", project).strip().splitlines()[-1]


@contextmanager
def server(env: dict[str, str], *, workers: int = 1, port: int | None = None) -> Iterator[str]:
    """`manage.py serve` (the production command), access log off; yields its URL."""
    port = port or free_port()
    args = [PY, "manage.py", "serve", "--port", str(port), "--workers", str(workers), "--log-level", "warning"]
    process = subprocess.Popen(args, cwd=ROOT, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(200):
            try:
                httpx.get(f"{url}/healthz", timeout=1)
                break
            except httpx.HTTPError:
                time.sleep(0.05)
        else:
            raise SystemExit("server did not start")
        yield url
    finally:
        process.terminate()
        process.wait()


@dataclass
class WrkResult:
    requests_per_s: float
    p50_ms: float
    p99_ms: float
    errors: int
    load: str

    def line(self, label: str) -> str:
        return (
            f"  {label:<28} {self.requests_per_s:8.1f} req/s  p50 {self.p50_ms:7.1f} ms  p99 {self.p99_ms:7.1f} ms"
            f"  errors {self.errors}  ({self.load})"
        )


def wrk(url: str, *, seconds: int = 10, connections: int = 16, threads: int = 2, script: str | None = None,
        env: dict[str, str] | None = None) -> WrkResult:
    args = ["wrk", f"-t{threads}", f"-c{connections}", f"-d{seconds}s", "--latency"]
    if script:
        args += ["-s", str(WRK_SCRIPTS / script)]
    out = subprocess.run(args + [url], capture_output=True, text=True, env=(os.environ | (env or {})), check=True).stdout
    errors = sum(int(n) for n in re.findall(r"Non-2xx or 3xx responses: (\d+)", out))
    errors += sum(int(n) for n in re.findall(r"(?:connect|read|write|timeout) (\d+)", out))
    return WrkResult(
        requests_per_s=float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)),
        p50_ms=latency_ms(out, "50"),
        p99_ms=latency_ms(out, "99"),
        errors=errors,
        load=load_average(),
    )


def latency_ms(out: str, percentile: str) -> float:
    value, unit = re.search(rf"^\s+{percentile}%\s+([\d.]+)(us|ms|s)\s*$", out, re.M).groups()
    return float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]
