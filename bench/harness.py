"""What the benchmarks share: a throwaway deployment, its server processes, wrk, what
the server processes cost (RSS, CPU seconds, read from /proc), and the machine's load
beside every figure."""

from __future__ import annotations

import json
import math
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
from typing import Any

import httpx

POSTGRES_ADMIN = "postgres://postgres@127.0.0.1:5432/postgres"
# The benchmarks' own Redis database (the tests use 0); pub/sub ignores the number,
# so every deployment also gets its own TODOWEB_CHANNEL_PREFIX.
REDIS = "redis://127.0.0.1:6379/5"

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


def fresh_postgres(name: str = "todoweb_bench") -> str:
    """An empty PostgreSQL database of this name (dropped first if it exists); its URL."""
    import psycopg

    with psycopg.connect(POSTGRES_ADMIN, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    return POSTGRES_ADMIN.rsplit("/", 1)[0] + "/" + name


@dataclass
class Server:
    url: str
    pid: int

    def pids(self) -> list[int]:
        """The server process and its children (uvicorn's workers with --workers > 1)."""
        return process_tree(self.pid)


def wait_until_up(url: str, what: str) -> None:
    """Return once `url` answers (any status); exit after 10 s."""
    for _ in range(200):
        try:
            httpx.get(url, timeout=1)
            return
        except httpx.HTTPError:
            time.sleep(0.05)
    raise SystemExit(f"{what} did not start")


@contextmanager
def server(env: dict[str, str], *, workers: int = 1, port: int | None = None) -> Iterator[Server]:
    """`manage.py serve` (the production command), access log off."""
    port = port or free_port()
    args = [PY, "manage.py", "serve", "--port", str(port), "--workers", str(workers), "--log-level", "warning"]
    process = subprocess.Popen(args, cwd=ROOT, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(f"{url}/healthz", "the server")
        yield Server(url, process.pid)
    finally:
        process.terminate()
        process.wait()


@contextmanager
def topology(kind: str, name: str) -> Iterator[tuple[dict[str, str], list[Server]]]:
    """`one`: one process on SQLite with the in-memory layer. `two`: two processes on a
    fresh PostgreSQL database sharing Redis (the layer and the cache). Yields the
    deployment's environment and its servers."""
    if kind == "one":
        with deployment() as env, server(env) as one:
            yield env, [one]
        return
    prefix = f"todoweb-bench-{name}-{os.getpid()}"
    database = fresh_postgres(f"todoweb_bench_{name}")
    with deployment(database, REDIS, TODOWEB_CHANNEL_PREFIX=prefix) as env, server(env) as a, server(env) as b:
        yield env, [a, b]


def process_tree(pid: int) -> list[int]:
    """`pid` and every process descended from it."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    tree, queue = [], [pid]
    while queue:
        tree.append(queue.pop())
        queue += children.get(tree[-1], [])
    return tree


def rss_mb(pids: list[int]) -> float:
    """Resident memory of these processes (VmRSS in /proc/PID/status), in MB."""
    total_kb = 0
    for pid in pids:
        status = Path(f"/proc/{pid}/status").read_text()
        total_kb += int(re.search(r"^VmRSS:\s+(\d+) kB", status, re.M).group(1))
    return total_kb / 1024


def cpu_seconds(pids: list[int]) -> float:
    """CPU time (user + system) these processes have used so far."""
    ticks = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        ticks += int(fields[11]) + int(fields[12])  # utime, stime: fields 14 and 15 of stat
    return ticks / os.sysconf("SC_CLK_TCK")


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0..100) by nearest rank; NaN for no values."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


def verdict(met: bool) -> str:
    return "met" if met else "MISSED"


def run_client(script: str, spec: dict[str, Any]) -> dict[str, Any]:
    """Run the client half of a benchmark (`script --client`) in its own process, so that
    its work is not the server's: it reads `spec` as JSON on stdin, answers JSON on
    stdout and may report progress on stderr."""
    args = [PY, str(Path(__file__).resolve().parent / script), "--client"]
    result = subprocess.run(args, input=json.dumps(spec), stdout=subprocess.PIPE, text=True, cwd=ROOT)
    if result.returncode != 0:
        raise SystemExit(f"the client of {script} failed (exit {result.returncode})")
    return json.loads(result.stdout)


@dataclass
class WrkResult:
    requests: int
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


def wrk(
    url: str,
    *,
    seconds: int = 10,
    connections: int = 16,
    threads: int = 2,
    script: str | None = None,
    env: dict[str, str] | None = None,
) -> WrkResult:
    args = ["wrk", f"-t{threads}", f"-c{connections}", f"-d{seconds}s", "--latency"]
    if script:
        args += ["-s", str(WRK_SCRIPTS / script)]
    out = subprocess.run(
        args + [url], capture_output=True, text=True, env=(os.environ | (env or {})), check=True
    ).stdout
    errors = sum(int(n) for n in re.findall(r"Non-2xx or 3xx responses: (\d+)", out))
    errors += sum(int(n) for n in re.findall(r"(?:connect|read|write|timeout) (\d+)", out))
    return WrkResult(
        requests=int(re.search(r"(\d+) requests in", out).group(1)),
        requests_per_s=float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)),
        p50_ms=latency_ms(out, "50"),
        p99_ms=latency_ms(out, "99"),
        errors=errors,
        load=load_average(),
    )


def latency_ms(out: str, percentile: str) -> float:
    value, unit = re.search(rf"^\s+{percentile}%\s+([\d.]+)(us|ms|s)\s*$", out, re.M).groups()
    return float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]
