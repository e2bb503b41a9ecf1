"""Cost per write: database queries per tool call, and bytes per watcher per revision.

In-process (Django's test client on a throwaway database, no server):

- Queries (CaptureQueriesContext) of TodoWrite calls of 1, 10 and 100 steps: the
  session's first write, a later one, and a replay of the later one (same call id).
  The baseline is a read of the same session (GET /api/v1/sessions/{key}: the token,
  the session, its current revision). Targets: a write <= 5 queries, a replay <= 2.
  Django (since 4.2) also logs BEGIN and COMMIT; they are round trips too, so both
  counts are printed, the targets judged on the SQL queries.
- Bytes: an agent takes a 10-step plan from start to finish (11 writes). Per write,
  the answer's body against the live frames it makes: the session snapshot every
  share-link watcher receives and the dashboard summary, raw and compressed as a
  browser's socket gets them (permessage-deflate, each message compressed on its
  own, as the server sends it), plus the websocket frame header. And what a watcher downloads
  once: the dashboard's and the panel's HTML with every script and stylesheet they
  load, raw and gzipped.
- Stored (SQLite only): what the database file grows by per revision over 64 sessions
  written 10 times each (10-step plans, each call with an id, so its answer is kept
  for replays), the WAL checkpointed before and after, against the calls' own request
  bodies (what a dashboard that stores raw events keeps at least). Target: <= 5 KB
  per revision.

    .venv/bin/python bench/cost.py [--database sqlite|postgres]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import statistics
import sys
import tempfile
from collections.abc import Callable
from typing import Any

from harness import ROOT, SECRET_KEY, fresh_postgres, load_average, verdict

TARGET_WRITE, TARGET_REPLAY = 5, 2


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--database", choices=["sqlite", "postgres"], default="sqlite")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        database = (
            fresh_postgres("todoweb_bench_cost") if args.database == "postgres" else f"sqlite:///{tmp}/cost.sqlite3"
        )
        api = setup_django(database)
        print(f"cost per write on {args.database} (in-process, Django's test client; {load_average()})")
        queries(api)
        panel = wire_bytes(api)
        page_weights(panel)
        if args.database == "sqlite":
            stored(api, f"{tmp}/cost.sqlite3")
        close_databases()


def setup_django(database: str) -> Api:
    for name in list(os.environ):
        if name.startswith(("TODOWEB_", "DATABASE_", "REDIS_")):
            del os.environ[name]
    os.environ |= {
        "DJANGO_SETTINGS_MODULE": "todoweb.settings",
        "DATABASE_URL": database,
        "SECRET_KEY": SECRET_KEY,
        "TODOWEB_RATE_LIMIT": "0",
    }
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    return Api()


class Api:
    """The tool endpoint and the session read, through Django's test client."""

    def __init__(self) -> None:
        from django.test import Client

        from todoweb.writes.tokens import token_create

        _, raw, _ = token_create(project_slug="bench")
        self.client = Client(headers={"Authorization": f"Bearer {raw}"})

    def write(self, key: str, call_id: str, items: int, step: int) -> Any:
        body = todo_write(call_id, items, step)
        answer = self.client.post(f"/api/v1/sessions/{key}/tool", json.dumps(body), content_type="application/json")
        assert answer.status_code == 200, answer.content
        return answer

    def read(self, key: str) -> Any:
        answer = self.client.get(f"/api/v1/sessions/{key}")
        assert answer.status_code == 200, answer.content
        return answer


def todo_write(call_id: str, items: int, step: int) -> dict[str, Any]:
    """A TodoWrite of `items` steps with the first `step` completed and the next in progress."""
    todos = [
        {
            "content": f"Step {k + 1}: change the module that handles part {k + 1} of the feature",
            "status": "completed" if k < step else "in_progress" if k == step else "pending",
            "activeForm": f"Changing the module for part {k + 1}",
        }
        for k in range(items)
    ]
    return {"type": "tool_use", "id": call_id, "name": "TodoWrite", "input": {"todos": todos}}


# --- queries ------------------------------------------------------------------------


def queries(api: Api) -> None:
    from todoweb.models import Project

    Project.objects.filter(slug="bench").update(max_items=100)
    api.write("warm", "warm-0", 3, 0)  # the token's last_used_at is written once a minute: not here
    baseline = count(api.read, "warm")
    print(f"  queries per call (baseline: a read of the session, {len(sql(baseline))} queries: {kinds(baseline)})")
    for items in (1, 10, 100):
        key = f"q{items}"
        first = count(api.write, key, f"{key}-1", items, 0)
        later = count(api.write, key, f"{key}-2", items, 1)
        replay = count(api.write, key, f"{key}-2", items, 1)
        line(f"{items:>3} steps, first write", first, baseline, TARGET_WRITE)
        line(f"{items:>3} steps, later write", later, baseline, TARGET_WRITE)
        line(f"{items:>3} steps, replay", replay, baseline, TARGET_REPLAY)


def count(call: Callable[..., Any], *args: Any) -> list[str]:
    """The SQL statements `call(*args)` ran."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as captured:
        call(*args)
    return [query["sql"] for query in captured]


def sql(statements: list[str]) -> list[str]:
    """The statements without transaction control (BEGIN, COMMIT, savepoints)."""
    control = ("BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE")
    return [s for s in statements if not s.upper().startswith(control)]


def kinds(statements: list[str]) -> str:
    return " ".join(statement.split(None, 1)[0] for statement in statements)


def line(label: str, found: list[str], baseline: list[str], target: int) -> None:
    queries = len(sql(found))
    print(
        f"    {label:<22} {queries:>2} queries ({queries / len(sql(baseline)):.1f}x the read),"
        f" {len(found):>2} round trips  target <= {target}: {verdict(queries <= target):<7} [{kinds(found)}]"
    )


# --- bytes --------------------------------------------------------------------------


def wire_bytes(api: Api, items: int = 10) -> str:
    """An agent works through a 10-step plan; what each write sends to whom. Returns
    the session's panel URL."""
    from todoweb.live import events

    frames: list[dict[str, Any]] = []
    publish = events.asend

    async def recording(messages: list[dict[str, Any]]) -> None:
        frames.extend(messages)
        await publish(messages)

    events.asend = recording  # see the frames the tool endpoint publishes, then publish them
    answers, snapshots, summaries = [], [], []
    for step in range(items + 1):
        frames.clear()
        answer = api.write("bytes", f"bytes-{step}", items, step)
        answers.append(len(answer.content))
        snapshots += [frame["text"].encode() for frame in frames if frame["kind"] == "session.snapshot"]
        summaries += [frame["text"].encode() for frame in frames if frame["kind"] == "session.summary"][:1]
    events.asend = publish

    mean_answer = statistics.mean(answers)
    print(f"  bytes per revision, a {items}-step plan worked through in {len(answers)} writes (means)")
    print(f"    answer body (the writer's, baseline)  {mean_answer:7.0f} B")
    for label, texts in (("session snapshot", snapshots), ("dashboard summary", summaries)):
        raw = statistics.mean(len(t) + header_bytes(len(t)) for t in texts)
        deflated = statistics.mean(deflated_sizes(texts))
        print(
            f"    {label + ' per watcher':<37} {raw:7.0f} B raw ({raw / mean_answer:.2f}x the answer),"
            f" {deflated:5.0f} B with permessage-deflate ({deflated / mean_answer:.2f}x)"
        )
    return json.loads(answer.content)["data"]["session"]["url"]


def stored(api: Api, path: str, sessions: int = 64, writes: int = 10, items: int = 10) -> None:
    from django.db import connection

    def size() -> int:
        with connection.cursor() as cursor:
            cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return os.path.getsize(path)

    before = size()
    sent = 0
    for n in range(writes):
        for k in range(sessions):
            sent += len(json.dumps(todo_write(f"stored-{k}-{n}", items, n)))
            api.write(f"stored-{k}", f"stored-{k}-{n}", items, n)
    per_revision = (size() - before) / (sessions * writes)
    per_request = sent / (sessions * writes)
    print(f"  stored per revision, {sessions} sessions x {writes} writes of a {items}-step plan")
    print(f"    request body (the raw event, baseline) {per_request:6.0f} B")
    print(
        f"    database growth per revision           {per_revision:6.0f} B ({per_revision / per_request:.2f}x the request;"
        f" target <= 5 KB: {verdict(per_revision <= 5000)})"
    )


def deflated_sizes(texts: list[bytes]) -> list[int]:
    """Each message as `manage.py serve` sends it with permessage-deflate (each message
    compressed on its own, once for every socket: todoweb.serve.server.SharedDeflate),
    header included. The first message is the snapshot a socket gets on connect."""
    from todoweb.serve.server import WINDOW_BITS, compressed

    sizes = []
    for text in texts:
        payload = compressed(text, WINDOW_BITS)
        sizes.append(len(payload) + header_bytes(len(payload)))
    return sizes


def header_bytes(length: int) -> int:
    return 2 if length < 126 else 4 if length < 65536 else 10


def page_weights(panel: str) -> None:
    """Bytes of a page and every script and stylesheet it loads (its ES modules too)."""
    from django.contrib.auth import get_user_model
    from django.test import Client

    browser = Client()
    browser.force_login(get_user_model().objects.create_superuser("bench", password="bench-password-0123"))
    print("  what a watcher downloads once (HTML + JS + CSS)")
    for name, path in (("dashboard", "/"), ("panel", panel)):
        files = [content(browser, path)]
        queue = [
            m.decode()
            for m in re.findall(rb'<(?:script|link)[^>]+(?:src|href)="(/static/[^"]+\.(?:js|css))"', files[0])
        ]
        seen: set[str] = set()
        while queue:
            url = queue.pop()
            if url in seen:
                continue
            seen.add(url)
            files.append(content(browser, url))
            if url.endswith(".js"):
                base = url.rsplit("/", 1)[0]
                queue += [f"{base}/{m.decode()}" for m in re.findall(rb'from\s+"\./([^"]+)"', files[-1])]
        raw, gz = sum(map(len, files)), sum(len(gzip.compress(f)) for f in files)
        print(f"    {name:<10} {raw:7,} B in {len(files)} files ({gz:,} B gzipped)")


def content(browser: Any, path: str) -> bytes:
    response = browser.get(path)
    assert response.status_code == 200, (path, response.status_code)
    return b"".join(response.streaming_content) if response.streaming else response.content


def close_databases() -> None:
    from django.db import connections

    for connection in connections.all():
        connection.close()
        if getattr(connection, "pool", None) is not None:
            connection.close_pool()


if __name__ == "__main__":
    main()
