"""Write-path throughput: TodoWrite POSTs against /healthz on the same server, same run.

Starts uvicorn on a throwaway SQLite database (or DATABASE_URL), then fires requests
from a thread pool and prints requests/s and latency percentiles, each as a ratio to
the /healthz baseline (Django's request path without the database).

    .venv/bin/python bench/write_path.py [--requests 400] [--concurrency 8] [--items 10]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable


def start_server(port: int, env: dict[str, str]) -> subprocess.Popen:
    subprocess.run([PY, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    server = subprocess.Popen(
        [
            PY,
            "-m",
            "uvicorn",
            "todoweb.asgi:application",
            "--port",
            str(port),
            "--log-level",
            "warning",
            "--lifespan",
            "off",
        ],
        cwd=ROOT,
        env=env,
    )
    for _ in range(100):
        try:
            httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1)
            return server
        except httpx.HTTPError:
            time.sleep(0.1)
    server.kill()
    raise SystemExit("server did not start")


def fire(url: str, n: int, concurrency: int, make_request) -> tuple[float, list[float]]:
    latencies: list[float] = []
    local = threading.local()  # one keep-alive connection per worker

    def one(i: int) -> None:
        if not hasattr(local, "client"):
            local.client = httpx.Client(timeout=30)
        t0 = time.perf_counter()
        r = make_request(local.client, i)
        latencies.append(time.perf_counter() - t0)
        assert r.status_code == 200, r.text

    t0 = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(one, range(n)))
    return n / (time.perf_counter() - t0), latencies


def pct(values: list[float], q: float) -> float:
    return sorted(values)[min(len(values) - 1, int(q * len(values)))] * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--items", type=int, default=10)
    parser.add_argument("--port", type=int, default=8931)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        env = os.environ | {"DJANGO_SETTINGS_MODULE": "todoweb.settings", "TODOWEB_RATE_LIMIT": "0"}
        env.setdefault("DATABASE_URL", f"sqlite:///{tmp}/bench.sqlite3")
        server = start_server(args.port, env)
        try:
            raw = (
                subprocess.run(
                    [PY, "manage.py", "createtoken", "bench"],
                    cwd=ROOT,
                    env=env,
                    check=True,
                    capture_output=True,
                    text=True,
                )
                .stdout.strip()
                .splitlines()[-1]
            )
            base = f"http://127.0.0.1:{args.port}"
            headers = {"Authorization": f"Bearer {raw}"}

            def health(client: httpx.Client, i: int) -> httpx.Response:
                return client.get(f"{base}/healthz")

            def write(client: httpx.Client, i: int) -> httpx.Response:
                todos = [
                    {
                        "content": f"step {k}",
                        "status": "completed" if k < i % args.items else "pending",
                        "activeForm": f"doing {k}",
                    }
                    for k in range(args.items)
                ]
                body = {"type": "tool_use", "id": f"toolu_{i}", "name": "TodoWrite", "input": {"todos": todos}}
                return client.post(f"{base}/api/v1/sessions/bench-{i % 4}/tool", json=body, headers=headers)

            fire(base, 50, args.concurrency, health)  # warm-up
            base_rps, base_lat = fire(base, args.requests, args.concurrency, health)
            rps, lat = fire(base, args.requests, args.concurrency, write)
        finally:
            server.terminate()
            server.wait()

    db = env["DATABASE_URL"].split(":")[0]
    print(f"write path on {db}, {args.requests} requests, {args.concurrency} concurrent, {args.items} items each")
    print(
        f"  baseline /healthz : {base_rps:7.1f} req/s  p50 {pct(base_lat, 0.5):6.1f} ms  p99 {pct(base_lat, 0.99):6.1f} ms"
    )
    print(f"  TodoWrite         : {rps:7.1f} req/s  p50 {pct(lat, 0.5):6.1f} ms  p99 {pct(lat, 0.99):6.1f} ms")
    print(
        f"  ratio write/baseline: throughput {rps / base_rps:.2f}x, "
        f"p50 {pct(lat, 0.5) / pct(base_lat, 0.5):.2f}x, median {statistics.median(lat) * 1000:.1f} ms"
    )


if __name__ == "__main__":
    main()
