"""The screenshots in docs/screenshots/: the dashboard with 30 sessions, the panel of
a long run, and the phone view, in light and dark, taken from a real server in
Debian's Chromium.

    .venv/bin/python scripts/screenshots.py [--out docs/screenshots]

A throwaway SQLite database is filled with three projects' agents over the last two
hours (the clock is moved back while they write, so steps have real durations and
the idle ones are idle), then `manage.py serve` serves it and Playwright logs in and
takes each picture.
"""

from __future__ import annotations

import argparse
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from unittest import mock

import httpx

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
USER, PASSWORD = "ada", "screenshots-only"

# Each agent: project, key, dialect, title, steps, how far it got, minutes ago it
# started and minutes per step; "fail" ends a step failed, "idle" stops mid-run.
AGENTS = [
    ("shop", "checkout-rounding", "claude", "Fix rounding in checkout", 6, 4, 40, 6, None),
    ("shop", "cart-tests", "claude", "Cover the cart with tests", 5, 5, 70, 8, None),
    ("shop", "coupon-expiry", "kimi", "Coupons expire at midnight UTC", 4, 2, 25, 7, None),
    ("shop", "search-speed", "codex", "Speed up product search", 7, 3, 30, 6, None),
    ("shop", "stripe-webhooks", "gemini", "Retry failed Stripe webhooks", 6, 4, 90, 9, "fail"),
    ("shop", "image-resize", "langchain", "Resize product images on upload", 5, 1, 8, 4, None),
    ("shop", "tax-rules", "weknora", "Update EU tax rules", 6, 6, 110, 10, None),
    ("shop", "order-export", "roo", "CSV export of orders", 4, 2, 75, 9, "idle"),
    ("shop", "inventory-sync", "claude", "Sync inventory every 5 minutes", 8, 5, 50, 5, None),
    ("shop", "refund-flow", "codex", "Partial refunds", 6, 6, 100, 12, None),
    ("shop", "gift-cards", "kimi", "Gift card balance page", 5, 2, 15, 5, None),
    ("shop", "price-history", "gemini", "Chart price history", 4, 0, 2, 3, None),
    ("docs-site", "api-reference", "claude", "Generate the API reference", 6, 3, 35, 8, None),
    ("docs-site", "broken-links", "roo", "Fix broken links", 5, 5, 60, 6, None),
    ("docs-site", "search-index", "langchain", "Rebuild the search index", 4, 3, 20, 5, None),
    ("docs-site", "translations", "weknora", "Sync the Chinese translation", 7, 4, 95, 10, "fail"),
    ("docs-site", "dark-theme", "kimi", "Dark theme for code blocks", 5, 1, 85, 12, "idle"),
    ("docs-site", "changelog", "codex", "Changelog for 2.4", 3, 3, 45, 7, None),
    ("docs-site", "tutorial-video", "gemini", "Embed the tutorial videos", 4, 2, 12, 4, None),
    ("docs-site", "sitemap", "claude", "Sitemap and robots.txt", 4, 4, 30, 4, None),
    ("infra", "schema-migration", "claude", "Move sessions to the new schema", 9, 6, 80, 8, None),
    ("infra", "redis-tls", "codex", "Redis over TLS", 5, 3, 28, 7, None),
    ("infra", "backup-restore", "weknora", "Test restoring last night's backup", 6, 4, 115, 13, "fail"),
    ("infra", "ci-cache", "gemini", "Cache dependencies in CI", 5, 5, 55, 7, None),
    ("infra", "cert-renewal", "roo", "Automate certificate renewal", 4, 2, 90, 15, "idle"),
    ("infra", "log-retention", "langchain", "30-day log retention", 4, 1, 6, 4, None),
    ("infra", "k8s-probes", "kimi", "Readiness probes for every service", 6, 4, 32, 6, None),
    ("infra", "cost-report", "claude", "Weekly cloud cost report", 5, 2, 18, 6, None),
]
STEPS = [
    "Read the code around it",
    "Reproduce the problem with a failing test",
    "Write the fix",
    "Run the whole test suite",
    "Check the edge cases: empty, huge, unicode",
    "Update the documentation",
    "Ask for a review",
    "Address the review comments",
    "Deploy to staging and watch the logs",
]


def step_texts(title: str, count: int) -> list[str]:
    return [
        STEPS[i % len(STEPS)] if i else f"Find where {title[0].lower() + title[1:]} is handled" for i in range(count)
    ]


def call_for(dialect: str, title: str, texts: list[str], statuses: list[str]) -> tuple[str, dict]:
    """The dialect's own tool call for a list of (text, canonical status)."""
    pairs = list(zip(texts, statuses, strict=True))
    match dialect:
        case "claude":
            todos = [{"content": t, "status": s, "activeForm": f"Working on: {t.lower()}"} for t, s in pairs]
            return "TodoWrite", {"todos": todos}
        case "kimi":
            words = {"completed": "done"}
            return "SetTodoList", {"todos": [{"title": t, "status": words.get(s, s)} for t, s in pairs]}
        case "codex":
            return "update_plan", {"explanation": title, "plan": [{"step": t, "status": s} for t, s in pairs]}
        case "gemini":
            words = {"failed": "blocked"}
            return "write_todos", {"todos": [{"description": t, "status": words.get(s, s)} for t, s in pairs]}
        case "langchain":
            return "write_todos", {"todos": [{"content": t, "status": s} for t, s in pairs]}
        case "weknora":
            words = {"cancelled": "skipped"}
            steps = [{"id": str(n), "description": t, "status": words.get(s, s)} for n, (t, s) in enumerate(pairs, 1)]
            return "todo_write", {"task": title, "steps": steps}
        case "roo":
            marks = {"completed": "[x]", "in_progress": "[-]", "pending": "[ ]"}
            return "update_todo_list", {"todos": "\n".join(f"{marks[s]} {t}" for t, s in pairs)}
    raise ValueError(dialect)


def seed() -> str:
    """Fill the database; returns the public id of the long run for the panel picture."""
    from django.contrib.auth.models import User
    from django.utils import timezone

    from todoweb.calls.envelopes import ToolCall
    from todoweb.models import Project, Session
    from todoweb.writes.people import session_change
    from todoweb.writes.record import CallRequest, record_and_publish

    user = User.objects.create_user(USER, password=PASSWORD, is_staff=True, is_superuser=True)
    projects = {}
    for slug in ("shop", "docs-site", "infra"):
        projects[slug] = Project.objects.create(name=slug, slug=slug)
        projects[slug].members.add(user)
    real_now = timezone.now()

    def write(project, key, dialect, title, texts, statuses, at, parent=None):
        tool, args = call_for(dialect, title, texts, statuses)
        with mock.patch("django.utils.timezone.now", return_value=at):
            call = ToolCall("plain", tool, None, args, dialect=dialect)
            record_and_publish(project, CallRequest(key, call, reply_style="checklist", parent_key=parent))

    for slug, key, dialect, title, count, done, started, per_step, ending in AGENTS:
        texts = step_texts(title, count)
        at = real_now - timedelta(minutes=started)
        statuses = ["pending"] * count
        write(projects[slug], key, dialect, title, texts, statuses, at)
        for n in range(done):
            statuses[n] = "in_progress"
            at += timedelta(minutes=per_step * 0.3)
            write(projects[slug], key, dialect, title, texts, statuses, at)
            statuses[n] = "completed"
            at += timedelta(minutes=per_step * 0.7)
            if ending == "fail" and n == done - 1:
                statuses[n] = "failed"
                statuses[n + 1 :] = ["cancelled"] * (count - n - 1)
            write(projects[slug], key, dialect, title, texts, statuses, min(at, real_now))
        if done < count and ending != "fail":
            statuses[done] = "in_progress"
            # Working agents wrote in the last few minutes; the idle ones stopped long ago.
            recent = real_now - timedelta(minutes=1 + len(key) % 8)
            write(projects[slug], key, dialect, title, texts, statuses, min(at, recent) if ending else recent)
        session = Session.objects.get(project=projects[slug], key=key)
        if dialect not in ("weknora", "codex"):
            session_change(session, title=title)
    # Two subagents under the schema migration.
    parent = Session.objects.get(key="schema-migration")
    for name, title, done in (("explore", "Explore the schema", 3), ("migrate", "Migrate the data", 1)):
        texts = step_texts(title, 3)
        statuses = (["completed"] * done + ["in_progress"] + ["pending"] * 2)[:3]
        key = f"schema-migration:{name}"
        write(parent.project, key, "claude", title, texts, statuses, real_now - timedelta(minutes=2), parent.key)
        session_change(Session.objects.get(key=key), title=title)
    session_change(Session.objects.get(key="sitemap"), closed=True)
    return long_run(projects["infra"], real_now, write)


def long_run(project, now, write) -> str:
    """A two-hour run: twelve steps, one reopened after a failing check, one dropped
    when the plan was rewritten."""
    from todoweb.models import Session

    texts = [
        "Read the release notes of PostgreSQL 16 and 17",
        "Inventory extensions and their versions",
        "Take a full backup and test the restore",
        "Build the new cluster next to the old one",
        "Run pg_upgrade --check",
        "Fix the two incompatible extensions",
        "Run pg_upgrade with --link",
        "Analyse every database",
        "Switch the application to the new cluster",
        "Watch errors and latency for an hour",
        "Remove the old cluster",
        "Write the runbook for next time",
    ]
    key, title = "pg-upgrade", "Upgrade PostgreSQL 15 → 17"
    at = now - timedelta(minutes=125)
    statuses = ["pending"] * len(texts)
    write(project, key, "claude", title, texts, statuses, at)
    minutes = [6, 9, 17, 12, 3, 14, 8, 5, 4, 0, 0, 0]
    for n, spent in enumerate(minutes[:9]):
        statuses[n] = "in_progress"
        write(project, key, "claude", title, texts, statuses, at)
        at += timedelta(minutes=spent)
        statuses[n] = "completed"
        write(project, key, "claude", title, texts, statuses, at)
        if n == 4:  # the check failed after the extensions were "fixed": reopen it
            statuses[4] = "in_progress"
            at += timedelta(minutes=2)
            write(project, key, "claude", title, texts, statuses, at)
            at += timedelta(minutes=4)
            statuses[4] = "completed"
            write(project, key, "claude", title, texts, statuses, at)
        if n == 6:  # the rewritten plan drops the runbook for now
            texts, statuses = texts[:11], statuses[:11]
    statuses[9] = "in_progress"
    write(project, key, "claude", title, texts, statuses, now - timedelta(minutes=3))
    session = Session.objects.get(project=project, key=key)
    from todoweb.writes.people import session_change

    session_change(session, title=title)
    return session.public_id


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def shoot(base: str, panel_id: str, out: Path) -> list[Path]:
    from playwright.sync_api import sync_playwright

    shots = [
        ("dashboard-light.png", "/", 1440, 900, "light"),
        ("dashboard-dark.png", "/", 1440, 900, "dark"),
        ("dashboard-wall-light.png", "/", 2560, 1440, "light"),
        ("dashboard-wall-dark.png", "/", 2560, 1440, "dark"),
        ("dashboard-phone-light.png", "/", 390, 844, "light"),
        ("dashboard-phone-dark.png", "/", 390, 844, "dark"),
        ("panel-light.png", f"/s/{panel_id}/", 1440, 900, "light"),
        ("panel-dark.png", f"/s/{panel_id}/", 1440, 900, "dark"),
        ("panel-wall-light.png", f"/s/{panel_id}/", 2560, 1440, "light"),
        ("panel-wall-dark.png", f"/s/{panel_id}/", 2560, 1440, "dark"),
        ("panel-phone-light.png", f"/s/{panel_id}/", 390, 844, "light"),
        ("panel-phone-dark.png", f"/s/{panel_id}/", 390, 844, "dark"),
    ]
    taken = []
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        for name, path, width, height, scheme in shots:
            context = browser.new_context(
                viewport={"width": width, "height": height}, color_scheme=scheme, device_scale_factor=1
            )
            page = context.new_page()
            page.goto(f"{base}/accounts/login/")
            page.fill("input[name=username]", USER)
            page.fill("input[name=password]", PASSWORD)
            page.click("button[type=submit], input[type=submit]")
            page.goto(base + path)
            page.wait_for_selector("[data-connection=live]", state="attached", timeout=10_000)
            page.wait_for_load_state("networkidle")
            page.screenshot(path=out / name)
            taken.append(out / name)
            context.close()
        browser.close()
    return taken


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("TODOWEB_", "DATABASE_", "REDIS_"))}
        env |= {
            "DATABASE_URL": f"sqlite:///{tmp}/screens.sqlite3",
            "DJANGO_SETTINGS_MODULE": "todoweb.settings",
            "SECRET_KEY": secrets.token_urlsafe(50),
        }
        os.environ.update(env)
        sys.path.insert(0, str(ROOT))
        import django
        from django.core.management import call_command

        django.setup()
        call_command("migrate", verbosity=0)
        panel_id = seed()
        port = free_port()
        server = subprocess.Popen(
            [sys.executable, "manage.py", "serve", "--port", str(port), "--log-level", "warning"], cwd=ROOT, env=env
        )
        try:
            base = f"http://127.0.0.1:{port}"
            for _ in range(100):
                try:
                    if httpx.get(f"{base}/healthz").status_code == 200:
                        break
                except httpx.TransportError:
                    time.sleep(0.1)
            for path in shoot(base, panel_id, args.out):
                print(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)
        finally:
            server.terminate()
            server.wait()


if __name__ == "__main__":
    main()
