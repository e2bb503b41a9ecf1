"""Live-update benchmark: page weight, and the time from an agent's POST to the DOM.

Starts todoweb (uvicorn, one process, in-memory channel layer) on a throwaway
SQLite database, opens a session's panel in Debian's Chromium, then 50 times:
POSTs a TodoWrite that moves one step and times until the panel shows the new
revision. The baseline, measured in the same run, is the POST's own round trip
(the write path): the ratio says what live delivery adds on top of it.

Run: .venv/bin/python bench/live_update.py [--n 50]
"""

from __future__ import annotations

import argparse
import gzip
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
CHROMIUM = "/usr/bin/chromium"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def manage(env: dict[str, str], *args: str) -> str:
    result = subprocess.run([PY, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    return result.stdout


def page_weight(client: httpx.Client, path: str) -> tuple[int, int, list[str]]:
    """Bytes of the HTML and every script and stylesheet it loads (raw and gzipped)."""
    seen: dict[str, bytes] = {}
    html = client.get(path).content
    queue = [
        *re.findall(rb'<script[^>]+src="([^"]+)"', html),
        *re.findall(rb'<link[^>]+rel="stylesheet"[^>]+href="([^"]+)"', html),
    ]
    queue = [q.decode() for q in queue]
    while queue:
        url = queue.pop()
        if url in seen:
            continue
        body = client.get(url).content
        seen[url] = body
        if url.endswith(".js"):
            base = url.rsplit("/", 1)[0]
            for module in re.findall(rb'from\s+"\./([^"]+)"', body):
                queue.append(f"{base}/{module.decode()}")
    files = [html, *seen.values()]
    return sum(map(len, files)), sum(len(gzip.compress(f)) for f in files), sorted(seen)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=50, help="POSTs to time")
    options = parser.parse_args()
    if not os.path.exists(CHROMIUM):
        sys.exit(f"Chromium not found at {CHROMIUM}")

    workdir = tempfile.mkdtemp(prefix="todoweb-bench-")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = os.environ | {
        "DATABASE_URL": f"sqlite:///{workdir}/bench.sqlite3",
        "DJANGO_SUPERUSER_USERNAME": "bench",
        "DJANGO_SUPERUSER_PASSWORD": "bench-password",
        "DJANGO_SUPERUSER_EMAIL": "bench@example.com",
        "TODOWEB_RATE_LIMIT": "0",
    }
    env.pop("REDIS_URL", None)
    manage(env, "migrate", "--noinput")
    manage(env, "createsuperuser", "--noinput")
    token = manage(env, "createtoken", "bench").strip().splitlines()[-1]
    server = subprocess.Popen(
        [PY, "-m", "uvicorn", "todoweb.asgi:application", "--port", str(port), "--log-level", "warning"],
        cwd=ROOT,
        env=env,
    )
    try:
        run(base, token, options.n)
    finally:
        server.terminate()
        server.wait(timeout=10)


def run(base: str, token: str, n: int) -> None:
    from playwright.sync_api import sync_playwright

    api = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=10)
    deadline = time.monotonic() + 30
    while True:
        try:
            if api.get("/healthz").status_code == 200:
                break
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            sys.exit("server did not start")
        time.sleep(0.1)

    steps = 10

    def todos(done: int) -> dict:
        return {
            "tool": "TodoWrite",
            "input": {
                "todos": [
                    {
                        "content": f"Step {i + 1} of the benchmark plan",
                        "status": "completed" if i < done else ("in_progress" if i == done else "pending"),
                        "activeForm": f"Working on step {i + 1}",
                    }
                    for i in range(steps)
                ]
            },
        }

    first = api.post("/api/v1/sessions/bench/tool", json=todos(0)).json()
    panel = first["data"]["session"]["url"]

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        page = browser.new_page(base_url=base)
        page.goto("/accounts/login/")
        page.fill("#id_username", "bench")
        page.fill("#id_password", "bench-password")
        page.click("button[type=submit]")
        page.wait_for_url(f"{base}/")

        cookies = {c["name"]: c["value"] for c in page.context.cookies()}
        browser_client = httpx.Client(base_url=base, cookies=cookies)
        weights = {
            "dashboard": page_weight(browser_client, "/"),
            "panel": page_weight(browser_client, panel),
        }

        page.goto(panel)
        page.wait_for_function("window.todowebReady === true")
        # Record when each revision reaches the DOM (wall clock, same machine as the POSTs).
        page.evaluate(
            """() => {
              window.seen = {};
              const node = document.getElementById('revision');
              new MutationObserver(() => { window.seen[node.textContent] = Date.now(); })
                .observe(node, {childList: true, characterData: true, subtree: true});
            }"""
        )
        starts, round_trips = {}, []
        for i in range(1, n + 1):
            body = todos(i % (steps + 1))
            started = time.time()
            response = api.post("/api/v1/sessions/bench/tool", json=body)
            round_trips.append((time.time() - started) * 1000)
            revision = response.json()["data"]["revision"]
            starts[revision] = started * 1000
            page.wait_for_function("r => window.seen[r] !== undefined", arg=str(revision), polling="raf")
        seen = page.evaluate("window.seen")
        browser.close()

    latencies = [seen[str(r)] - t for r, t in starts.items()]
    dom_median, dom_worst = statistics.median(latencies), max(latencies)
    rtt_median, rtt_worst = statistics.median(round_trips), max(round_trips)
    print(f"todoweb live-update benchmark ({n} POSTs, one uvicorn process, SQLite, in-memory layer)")
    for name, (raw, gz, files) in weights.items():
        print(f"  page weight {name:9}: {raw:7,} B HTML+JS+CSS ({gz:,} B gzipped) — {len(files) + 1} files")
    print(f"  POST round trip (baseline): median {rtt_median:6.1f} ms, worst {rtt_worst:6.1f} ms")
    print(f"  POST -> DOM update        : median {dom_median:6.1f} ms, worst {dom_worst:6.1f} ms")
    print(f"  ratio POST->DOM / POST RTT: median {dom_median / rtt_median:.2f}x, worst {dom_worst / rtt_worst:.2f}x")


if __name__ == "__main__":
    main()
