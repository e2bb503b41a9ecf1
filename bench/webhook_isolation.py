"""Webhook isolation: how long a healthy endpoint waits for its events (from the
write's request to the receiver's receipt) on its own, then with 20 bad endpoints of
another project beside it (half at a black hole that never completes a connection,
half at a receiver that drips its answer a byte every 0.5 s), on one `manage.py
serve` process delivering from its in-process worker, same run. The bad project has
a backlog of 400 deliveries to its 20 endpoints (each attempt taking its whole 5 s
deadline: far longer than the measure); with `--busy` an agent of it also writes a new
session every 0.5 s during the measure (20 more deliveries each), whose writes the
worker gives way to (see worker.py: while a request has database work under way, the
worker pauses for up to 2 s), which the healthy endpoint then waits out too.

Prints p50/p99 of each and the ratio of the p99s (target: within 2x; the bad
receivers hold their own endpoints' slots and half the pool at most).

    .venv/bin/python bench/webhook_isolation.py [--database sqlite|postgres] [--events 40]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
from harness import create_token, deployment, fresh_postgres, load_average, percentile, server, verdict

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.webhook_receiver import BlackHole, Dripping  # noqa: E402

PLAN = [{"content": "Step", "status": "in_progress", "activeForm": "Stepping"}]


class Timed:
    """Notes when each session's session.created arrives."""

    def __init__(self) -> None:
        self.arrived: dict[str, float] = {}
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                at = time.monotonic()
                key = json.loads(body)["data"]["session"]["key"]
                with receiver.lock:
                    receiver.arrived.setdefault(key, at)
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/in"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def wait_for(self, key: str, within: float = 60) -> float:
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            with self.lock:
                if key in self.arrived:
                    return self.arrived[key]
            time.sleep(0.002)
        raise SystemExit(f"{key} not delivered within {within:g} s")


def measure(client: httpx.Client, receiver: Timed, prefix: str, events: int) -> list[float]:
    """Event-to-receipt latencies (ms) of `events` new sessions, one at a time."""
    waited = []
    for n in range(events):
        key = f"{prefix}-{n}"
        sent = time.monotonic()
        response = client.post(f"/api/v1/sessions/{key}/tool", json={"tool": "TodoWrite", "input": {"todos": PLAN}})
        assert response.status_code == 200, response.text
        waited.append((receiver.wait_for(key) - sent) * 1000)
        time.sleep(0.1)
    return waited


def summary(label: str, waited: list[float]) -> str:
    return (
        f"{label:<32} p50 {statistics.median(waited):7.1f} ms   p99 {percentile(waited, 99):7.1f} ms"
        f"   max {max(waited):7.1f} ms   ({len(waited)} events; {load_average()})"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--database", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--events", type=int, default=40)
    parser.add_argument("--busy", action="store_true", help="the bad project's agent writes every 0.5 s meanwhile")
    args = parser.parse_args()
    database = fresh_postgres("todoweb_bench_webhook_isolation") if args.database == "postgres" else None
    receiver = Timed()
    with (
        BlackHole() as hole,
        Dripping(every=0.5, part="headers", length=10_000) as dripping,
        deployment(database, TODOWEB_WEBHOOKS_ALLOW_PRIVATE="1") as env,
        server(env) as srv,
    ):
        healthy, bad = create_token(env, "healthy"), create_token(env, "bad")
        good = httpx.Client(base_url=srv.url, headers={"Authorization": f"Bearer {healthy}"}, timeout=30)
        noisy = httpx.Client(base_url=srv.url, headers={"Authorization": f"Bearer {bad}"}, timeout=30)
        made = good.post("/api/v1/webhooks", json={"url": receiver.url, "events": ["session.created"]})
        assert made.status_code == 201, made.text
        measure(good, receiver, "warm", 5)
        alone = measure(good, receiver, "alone", args.events)
        print(summary("healthy endpoint alone", alone))

        for n in range(20):
            url = f"{hole.url}/{n}" if n % 2 else f"{dripping.url}/{n}"
            made = noisy.post("/api/v1/webhooks", json={"url": url, "events": ["session.created"]})
            assert made.status_code == 201, made.text
        for n in range(20):  # a backlog: 400 deliveries, each attempt 5 s
            noisy.post(f"/api/v1/sessions/backlog-{n}/tool", json={"tool": "TodoWrite", "input": {"todos": PLAN}})
        stop = threading.Event()

        def keep_busy() -> None:
            n = 0
            with httpx.Client(base_url=srv.url, headers={"Authorization": f"Bearer {bad}"}, timeout=30) as client:
                while not stop.wait(0.5):
                    client.post(f"/api/v1/sessions/busy-{n}/tool", json={"tool": "TodoWrite", "input": {"todos": PLAN}})
                    n += 1

        busy = threading.Thread(target=keep_busy, daemon=True)
        if args.busy:
            busy.start()
        time.sleep(2)  # the bad endpoints' attempts under way
        beside = measure(good, receiver, "beside", args.events)
        stop.set()
        if args.busy:
            busy.join()
        print(summary("beside 20 bad endpoints" + (", busy" if args.busy else ""), beside))
        ratio = percentile(beside, 99) / percentile(alone, 99)
        print(
            f"p99 ratio {ratio:.2f}x (target <= 2x: {verdict(ratio <= 2)}); "
            f"p50 ratio {statistics.median(beside) / statistics.median(alone):.2f}x; "
            f"dripping receiver connections: {dripping.connections}"
        )


if __name__ == "__main__":
    main()
