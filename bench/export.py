"""Exports of a large project: `GET /api/v1/export/steps.csv` and `steps.jsonl` must
stream a million step rows at >= 50,000 rows/s with the server's RSS within +50 MB.

A fresh SQLite deployment gets one project and --sessions sessions of --steps step rows
in all (20 each by default), inserted straight into the database by a setup process
(`--setup`: sessions with the ORM's bulk_create, steps with executemany), not through
the API. One `manage.py serve` process then answers each export to a streaming client
that counts lines and keeps none; the server's RSS (VmRSS) is read every 0.2 s during
the download. Figures: rows, seconds, rows/s, RSS max - RSS before.

Baselines measured in the same run: the rows/s of reading the same rows (the step
joined with its session, in id order) with sqlite3 in this process, which is what the
export is made of before any Python per row; and, for scale, the project's steps
through the paged list API (`GET /api/v1/steps?limit=500`, --pages pages).

    .venv/bin/python bench/export.py [--steps 1000000] [--sessions 50000] [--pages 4]
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
from harness import PY, ROOT, create_token, deployment, load_average, rss_mb, server, verdict

RATE = 50_000  # rows/s, at least
GROWTH = 50.0  # MB of RSS, at most
SAMPLE_S = 0.2


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=1_000_000)
    parser.add_argument("--sessions", type=int, default=50_000)
    parser.add_argument("--pages", type=int, default=4, help="pages of 500 read through /api/v1/steps")
    parser.add_argument("--setup", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.setup:
        fill(args.steps, args.sessions)
        return
    with deployment() as env:
        token = create_token(env)
        started = time.monotonic()
        subprocess.run(
            [PY, str(Path(__file__).resolve()), "--setup", f"--steps={args.steps}", f"--sessions={args.sessions}"],
            cwd=ROOT,
            env=env,
            check=True,
        )
        path = env["DATABASE_URL"].removeprefix("sqlite:///")
        print(
            f"export: {args.steps:,} steps in {args.sessions:,} sessions inserted in "
            f"{time.monotonic() - started:.1f} s ({os.path.getsize(path) / 2**20:.0f} MB of SQLite) ({load_average()})"
        )
        base = sqlite_read(path)
        with server(env) as one:
            headers = {"Authorization": f"Bearer {token}"}
            api = paged_api(one.url, headers, args.pages)
            results = [download(one.url, headers, name, one.pids()) for name in ("steps.csv", "steps.jsonl")]
    report(args, base, api, results)


# The setup process: django.setup() on the deployment's environment.


def fill(steps: int, sessions: int) -> None:
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "todoweb.settings")
    import django

    django.setup()
    from datetime import UTC, datetime, timedelta

    from django.db import connection, transaction

    from todoweb.models import Project, Session, Step

    project = Project.objects.get(slug="bench")
    per = max(1, steps // sessions)
    start = datetime(2026, 11, 1, tzinfo=UTC)
    statuses = ["completed"] * 8 + ["in_progress"] * 2 + ["pending"] * 8 + ["cancelled", "failed"]
    with transaction.atomic():
        made = Session.objects.bulk_create(
            [
                Session(
                    project=project,
                    key=f"session-{n:06d}",
                    title=f"Refactor the export module, part {n}",
                    dialect="claude-code",
                    revision=3,
                    total_steps=per,
                    completed_steps=per * 8 // 20,
                    open_steps=per - per * 10 // 20,
                    working_steps=per - per * 10 // 20,
                    current_text="Running the test suite",
                    workdir="/home/dev/todoweb",
                    branch="main",
                    created_at=start + timedelta(seconds=n),
                    updated_at=start + timedelta(seconds=n + 600),
                )
                for n in range(sessions)
            ],
            batch_size=2000,
        )
    ids = [s.pk for s in made] if made[0].pk else list(Session.objects.order_by("pk").values_list("pk", flat=True))
    adapt = connection.ops.adapt_datetimefield_value
    columns = [f.column for f in Step._meta.concrete_fields if f.column != "id"]
    sql = f"INSERT INTO {Step._meta.db_table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"

    def row(n: int) -> dict:
        session = n // per % len(ids)
        status = statuses[n % per % len(statuses)]
        seen = start + timedelta(seconds=session, milliseconds=n % per * 137)
        began = seen + timedelta(seconds=30) if status in ("in_progress", "completed", "failed") else None
        done = began + timedelta(seconds=95, milliseconds=n % 1000) if began and status != "in_progress" else None
        return {
            "session_id": ids[session],
            "step_id": str(n % per + 1),
            "position": n % per,
            "content": f"Update the export tests for case number {n:08d}",
            "active_form": "Updating the export tests" if status == "in_progress" else "",
            "notes": "",
            "status": status,
            "priority": ("high", "medium", "low", "")[n % 4],
            "owner": "",
            "blocked_by": "[]",
            "first_seen_at": adapt(seen),
            "started_at": adapt(began) if began else None,
            "completed_at": adapt(done) if done else None,
            "duration_s": (done - began).total_seconds() if done else None,
            "reopened": int(n % 97 == 0),
            "updated_at": adapt(done or began or seen),
        }

    with transaction.atomic(), connection.cursor() as cursor:
        for first in range(0, steps, 50_000):
            rows = (row(n) for n in range(first, min(first + 50_000, steps)))
            cursor.executemany(sql, [tuple(r[c] for c in columns) for r in rows])


# The baselines.


def sqlite_read(path: str) -> dict:
    """The export's rows read with sqlite3 in this process: the step joined with its
    session, in id order, every column fetched."""
    db = sqlite3.connect(path)
    started = time.monotonic()
    rows = 0
    cursor = db.execute(
        "SELECT s.key, s.title, s.dialect, t.* FROM todoweb_step t JOIN todoweb_session s ON s.id = t.session_id "
        "WHERE s.archived_at IS NULL ORDER BY t.id"
    )
    while page := cursor.fetchmany(2000):
        rows += len(page)
    seconds = time.monotonic() - started
    db.close()
    return {"rows": rows, "seconds": seconds, "rate": rows / seconds, "load": load_average()}


def paged_api(url: str, headers: dict[str, str], pages: int) -> dict:
    """--pages pages of 500 steps through the list API, following its cursor."""
    rows, cursor = 0, None
    with httpx.Client(base_url=url, headers=headers, timeout=60) as client:
        started = time.monotonic()
        for _ in range(pages):
            answer = client.get("/api/v1/steps", params={"limit": 500} | ({"cursor": cursor} if cursor else {}))
            answer.raise_for_status()
            body = answer.json()
            rows += len(body["steps"])
            cursor = body["next_cursor"]
            if not cursor:
                break
        seconds = time.monotonic() - started
    return {"rows": rows, "seconds": seconds, "rate": rows / seconds, "load": load_average()}


# The exports.


def download(url: str, headers: dict[str, str], name: str, pids: list[int]) -> dict:
    """One export, streamed and counted (never kept), the server's RSS sampled meanwhile."""
    before = rss_mb(pids)
    samples = [before]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(SAMPLE_S):
            samples.append(rss_mb(pids))

    sampler = threading.Thread(target=sample, daemon=True)
    lines, size = 0, 0
    with httpx.Client(base_url=url, headers=headers, timeout=120) as client:
        sampler.start()
        started = time.monotonic()
        with client.stream("GET", f"/api/v1/export/{name}") as answer:
            answer.raise_for_status()
            first = None
            for chunk in answer.iter_raw():
                if first is None:
                    first = time.monotonic() - started
                lines += chunk.count(b"\n")
                size += len(chunk)
        seconds = time.monotonic() - started
    done.set()
    sampler.join()
    samples.append(rss_mb(pids))
    rows = lines - 1 if name.endswith(".csv") else lines  # the CSV's header row
    return {
        "name": name,
        "rows": rows,
        "seconds": seconds,
        "first_byte": first or 0.0,
        "rate": rows / seconds,
        "mb": size / 2**20,
        "before": before,
        "max": max(samples),
        "after": samples[-1],
        "load": load_average(),
    }


def report(args: argparse.Namespace, base: dict, api: dict, results: list[dict]) -> None:
    print(
        f"baseline, sqlite3 in the bench process (step JOIN session, id order): {base['rows']:,} rows in "
        f"{base['seconds']:.2f} s, {base['rate']:,.0f} rows/s ({base['load']})"
    )
    print(
        f"for scale, GET /api/v1/steps?limit=500, {api['rows'] // 500} pages: {api['rows']:,} rows in "
        f"{api['seconds']:.2f} s, {api['rate']:,.0f} rows/s ({api['load']})"
    )
    for r in results:
        growth = r["max"] - r["before"]
        print(
            f"{r['name']:<12} {r['rows']:,} rows ({r['mb']:.0f} MB) in {r['seconds']:.1f} s (first byte "
            f"{r['first_byte'] * 1000:.0f} ms): {r['rate']:,.0f} rows/s, {r['rate'] / base['rate']:.3f}x sqlite3, "
            f"{r['rate'] / api['rate']:.1f}x the list API; target >= {RATE:,} rows/s: {verdict(r['rate'] >= RATE)}"
            f" ({r['load']})"
        )
        print(
            f"{'':<12} RSS {r['before']:.1f} MB before, {r['max']:.1f} max, {r['after']:.1f} after: "
            f"+{growth:.1f} MB; target <= +{GROWTH:.0f} MB: {verdict(growth <= GROWTH)}"
        )
    if any(r["rows"] != args.steps for r in results):
        print("rows missing: " + json.dumps({r["name"]: r["rows"] for r in results}) + f", expected {args.steps:,}")


if __name__ == "__main__":
    main()
