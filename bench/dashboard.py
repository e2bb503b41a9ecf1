"""Dashboard: first paint and a live update with 5,000 sessions, against the same with 50.

For each size (50, then 5,000) a fresh deployment (one `manage.py serve` process,
SQLite, in-memory layer) gets that many sessions over the HTTP API: five projects,
three dialects (TodoWrite, SetTodoList, todo_write), a mix of states (active,
completed, failed, empty). Every session's progress-over-time line is then filled to
its 32 points (the most a summary carries), so summaries have the size of long-running
agents' without 160,000 writes. A staff user, who sees every session, opens `/` in
Debian's Chromium (headless, through Playwright, 1440×900, a new browser context per
load), measured on the page's clock:

- HTML: time to the first byte of `/` (the server renders the first page of cards and
  counts every session by state), and its size;
- first contentful paint, and DOMContentLoaded (the server-rendered cards are in the
  page and its script has run);
- live: the socket's snapshot (the most recently active sessions, up to 500) applied;
- live update: the page itself posts a write to a session shown further down the grid
  (fetch, Bearer token) and waits until that card shows it at the top of the grid
  (the DOM updated); the write's own answer time is printed beside it.

Each figure is the median over the loads (or updates), printed for 5,000 and 50
sessions with the ratio, and the load average beside.

    .venv/bin/python bench/dashboard.py [--sizes 50,5000] [--loads 5] [--updates 20]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from typing import Any

from fanout import staff_cookie
from harness import create_token, deployment, load_average, manage, server
from watchers import api_client

CHROMIUM = "/usr/bin/chromium"
PROJECTS = 5
CONCURRENT_WRITES = 8

# The page notes when its script says it is live (the socket's snapshot applied).
NOTE_LIVE = """
let ready = false;
Object.defineProperty(window, "todowebReady", {
  get: () => ready,
  set(value) {
    if (value && window.liveAt === undefined) window.liveAt = performance.now();
    ready = value;
  },
});
"""

LOAD_FIGURES = """() => {
  const nav = performance.getEntriesByType("navigation")[0];
  const paint = performance.getEntriesByName("first-contentful-paint")[0];
  return {
    ttfb: nav.responseStart - nav.requestStart,
    html_kb: nav.decodedBodySize / 1024,
    fcp: paint ? paint.startTime : NaN,
    dcl: nav.domContentLoadedEventEnd,
    live: window.liveAt,
    cards: document.querySelectorAll("#sessions > .card").length,
  };
}"""

# Posts a write to the session of the card at `index` and waits until its card, updated,
# is first in the grid. Resolves to [write answered, card updated] in ms since the post.
UPDATE = """async ({ index, tokens, body }) => {
  const list = document.getElementById("sessions");
  const card = list.querySelectorAll(":scope > .card")[index];
  const key = card.dataset.key, before = card.dataset.updated;
  const shown = new Promise((resolve) => {
    const check = () => {
      if (list.firstElementChild === card && card.dataset.updated !== before) {
        observer.disconnect();
        resolve(performance.now());
      }
    };
    const observer = new MutationObserver(check);
    observer.observe(list, { subtree: true, childList: true, attributes: true });
  });
  const start = performance.now();
  const response = await fetch(`/api/v1/sessions/${encodeURIComponent(key)}/tool`, {
    method: "POST",
    headers: { Authorization: `Bearer ${tokens[card.dataset.project]}`, "Content-Type": "application/json" },
    body,
  });
  const answered = performance.now();
  if (!response.ok) throw new Error(`write: ${response.status}`);
  return [answered - start, (await shown) - start, key];
}"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--sizes", default="50,5000", help="session counts, comma-separated (the first is the baseline)"
    )
    parser.add_argument("--loads", type=int, default=5, help="page loads per size")
    parser.add_argument("--updates", type=int, default=20, help="live updates per size")
    args = parser.parse_args()
    sizes = [int(n) for n in args.sizes.split(",")]

    results: dict[int, dict[str, float]] = {}
    for size in sizes:
        with deployment() as env, server(env) as srv:
            tokens = {f"project-{p}": create_token(env, f"project-{p}") for p in range(PROJECTS)}
            started = time.perf_counter()
            asyncio.run(populate(srv.url, list(tokens.values()), size))
            fill_trends(env)
            print(f"  ... {size} sessions written in {time.perf_counter() - started:.1f} s", file=sys.stderr)
            cookie = staff_cookie(env, srv.url)
            results[size] = measure(srv.url, cookie, tokens, loads=args.loads, updates=args.updates)
            results[size]["load"] = load_average()
    report(sizes, results, args)


# --- the sessions -------------------------------------------------------------------


def plan_call(n: int) -> dict[str, Any]:
    """Session n's first write: its dialect and state follow from n."""
    items = 5
    done = n % (items + 1)
    if n % 20 == 7:  # failed: nothing left to do, one step failed (WeKnora)
        steps = [{"id": str(k), "description": f"Step {k}", "status": "completed"} for k in range(1, items)]
        steps.append({"id": str(items), "description": "Deploy", "status": "failed"})
        return {"tool": "todo_write", "input": {"task": f"Release {n}", "steps": steps}}
    if n % 20 == 13:  # empty
        return {"tool": "TodoWrite", "input": {"todos": []}}
    if n % 3 == 1:  # Kimi
        todos = [
            {"title": f"Step {k + 1}", "status": "done" if k < done else "in_progress" if k == done else "pending"}
            for k in range(items)
        ]
        return {"tool": "SetTodoList", "input": {"todos": todos}}
    todos = [
        {
            "content": f"Step {k + 1} of the plan",
            "status": "completed" if k < done else "in_progress" if k == done else "pending",
            "activeForm": f"Doing step {k + 1}",
        }
        for k in range(items)
    ]
    return {"tool": "TodoWrite", "input": {"todos": todos}}


async def populate(url: str, tokens: list[str], size: int) -> None:
    clients = [api_client(url, token) for token in tokens]
    gate = asyncio.Semaphore(CONCURRENT_WRITES)

    async def write(n: int) -> None:
        async with gate:
            client = clients[n % len(clients)]
            response = await client.post(f"/api/v1/sessions/agent-{n:05}/tool", json=plan_call(n))
            if response.status_code != 200:
                raise SystemExit(f"write {n}: {response.status_code} {response.text}")

    try:
        await asyncio.gather(*(write(n) for n in range(size)))
    finally:
        for client in clients:
            await client.aclose()


FILL_TRENDS = """
import time
from todoweb.models import Session
now = int(time.time())
sessions = list(Session.objects.only("id", "completed_steps", "total_steps"))
for s in sessions:
    end = s.completed_steps / s.total_steps if s.total_steps else 0.0
    s.trend = [[now - (32 - k) * 60, round(end * k / 31, 4)] for k in range(32)]
Session.objects.bulk_update(sessions, ["trend"], batch_size=500)
"""


def fill_trends(env: dict[str, str]) -> None:
    manage(env, "shell", "-c", FILL_TRENDS)


# --- the browser ----------------------------------------------------------------------


def measure(url: str, cookie: str, tokens: dict[str, str], *, loads: int, updates: int) -> dict[str, float]:
    from playwright.sync_api import sync_playwright

    name, value = cookie.split("=", 1)
    figures: dict[str, list[float]] = {}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        for attempt in range(loads + 1):  # the first load warms the server up and is not counted
            # bypass_csp: wait_for_function evaluates its predicate with eval(), which
            # the board's Content-Security-Policy forbids.
            context = browser.new_context(base_url=url, viewport={"width": 1440, "height": 900}, bypass_csp=True)
            context.add_cookies([{"name": name, "value": value, "url": url}])
            page = context.new_page()
            page.add_init_script(NOTE_LIVE)
            page.goto("/")
            page.wait_for_function("window.liveAt !== undefined", timeout=60000)
            loaded = page.evaluate(LOAD_FIGURES)
            if attempt:
                for key, figure in loaded.items():
                    figures.setdefault(key, []).append(figure)
            if attempt < loads:
                context.close()
        # Live updates, on the last page loaded: each moves a card from further down to the top.
        for n in range(updates):
            body = json.dumps(plan_call(6 * n + 4))  # 4 of 5 done: a plan that changes what the card shows
            answered, shown, _ = page.evaluate(UPDATE, {"index": 20, "tokens": tokens, "body": body})
            figures.setdefault("answered", []).append(answered)
            figures.setdefault("update", []).append(shown)
        context.close()
        browser.close()
    return {key: statistics.median(values) for key, values in figures.items()}


ROWS = [
    ("ttfb", "HTML: first byte of /", "ms"),
    ("html_kb", "HTML: size", "KB"),
    ("fcp", "first contentful paint", "ms"),
    ("dcl", "cards in the page (DOMContentLoaded)", "ms"),
    ("live", "live (socket snapshot applied)", "ms"),
    ("cards", "cards rendered", ""),
    ("answered", "live update: write answered", "ms"),
    ("update", "live update: write -> card on top", "ms"),
]


def report(sizes: list[int], results: dict[int, dict[str, float]], args: argparse.Namespace) -> None:
    base, *others = sizes
    print(
        f"dashboard with {' and '.join(f'{n:,}' for n in others)} sessions against {base:,} "
        f"(one process, SQLite; headless Chromium 1440x900; medians of {args.loads} loads, {args.updates} updates)"
    )
    for size in others:
        print(f"  {'figure':<40} {f'{base:,}':>10} {f'{size:,}':>10} {'ratio':>7}")
        for key, label, unit in ROWS:
            a, b = results[base][key], results[size][key]
            ratio = f"{b / a:6.2f}x" if a else "     -"
            print(f"  {label:<40} {a:>7.1f} {unit:<2} {b:>7.1f} {unit:<2} {ratio}")
        print(f"  ({base:,}: {results[base]['load']}; {size:,}: {results[size]['load']})")


if __name__ == "__main__":
    main()
