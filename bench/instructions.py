"""Instructions the application runs per request, counted by valgrind: the same
figure on every run, where CPU time on a shared 2-core machine varies by 20-50% from
one minute to the next. For changes to the hot path too small for wall-clock
benchmarks to see (a few percent), alternated with another revision of todoweb.

Each request goes through the whole ASGI application in one process (routing, the
agents' route or Django's handler, the database thread, SQLite, the answer), with no
sockets and no HTTP parsing: what todoweb's own code and its libraries cost, not the
server's or the kernel's. Kinds:

- hook: Claude Code's PostToolUse TodoWrite hook event (10 steps, 64 sessions);
- quiet hook: a PostToolUse hook on a Bash call (nothing to tell);
- tool call: the same TodoWrite call to the tool endpoint (its plain form);
- healthz: GET /healthz, the baseline (Django's handler, no database).

Each figure is valgrind's instruction count of N requests less that of none (the
same process set-up, warm-up included), divided by N, with Python's hash seed fixed
and no cyclic garbage collection while counting. `--against REF` counts a git
revision of this checkout (a temporary worktree) too, made by this client, each kind
alternately, and prints the ratio. Needs valgrind (`apt-get install
valgrind`); a run of the three kinds takes 2-4 minutes, twice that with --against.

    .venv/bin/python bench/instructions.py [--against REF] [--requests 300]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from harness import ROOT, SECRET_KEY
from peer import hook_event

KINDS = ("hook", "quiet hook", "tool call", "healthz")
WARM_UP = 100


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--against", help="a git revision to count too (e.g. HEAD~1, main)")
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--client", nargs=2, metavar=("KIND", "N"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.client:
        client(args.client[0], int(args.client[1]))
        return
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (apt-get install valgrind)")
    with worktree(args.against) if args.against else nothing() as other:
        print(f"instructions per request, {args.requests} requests each (valgrind; this checkout at {revision(ROOT)})")
        counts: dict[str, dict[str, int]] = {"this": {}, "other": {}}
        for kind in KINDS:
            counts["this"][kind] = per_request(ROOT, kind, args.requests)
            if other:
                counts["other"][kind] = per_request(other, kind, args.requests)
        baseline = counts["this"]["healthz"]
        header = f"  {'':<12} {'this':>12} {'/ healthz':>10}"
        if other:
            header += f" {args.against:>14} {'this / ' + args.against:>16}"
        print(header)
        for kind in KINDS:
            ours = counts["this"][kind]
            line = f"  {kind:<12} {ours:>12,} {ours / baseline:>9.2f}x"
            if other:
                theirs = counts["other"][kind]
                line += f" {theirs:>14,} {ours / theirs:>15.3f}x"
            print(line)


def per_request(checkout: Path, kind: str, requests: int) -> int:
    return (instructions(checkout, kind, requests) - instructions(checkout, kind, 0)) // requests


def instructions(checkout: Path, kind: str, requests: int) -> int:
    """valgrind's count of the instructions of a client process making `requests` requests."""
    args = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null"]
    # This client, whatever the checkout: the same requests made the same way.
    args += [sys.executable, str(Path(__file__).resolve()), "--client", kind, str(requests)]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TODOWEB_", "DATABASE_", "REDIS_"))}
    env |= {"PYTHONHASHSEED": "0", "PYTHONPATH": str(checkout)}
    result = subprocess.run(args, cwd=checkout, env=env, capture_output=True, text=True)
    found = re.search(r"I\s+refs:\s+([\d,]+)", result.stderr)
    if result.returncode != 0 or found is None:
        raise SystemExit(f"the {kind} client failed in {checkout}:\n{result.stdout}{result.stderr[-3000:]}")
    return int(found.group(1).replace(",", ""))


@contextmanager
def worktree(ref: str) -> Iterator[Path]:
    """A temporary checkout of `ref`, sharing this checkout's virtualenv."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "checkout"
        subprocess.run(["git", "worktree", "add", "--detach", "-q", str(path), ref], cwd=ROOT, check=True)
        try:
            (path / ".venv").symlink_to(ROOT / ".venv")
            if not (path / "bench" / "instructions.py").exists():
                shutil.copy(__file__, path / "bench" / "instructions.py")  # a revision from before this script
            yield path
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(path)], cwd=ROOT, check=True)


@contextmanager
def nothing() -> Iterator[None]:
    yield None


def revision(checkout: Path) -> str:
    described = subprocess.run(["git", "describe", "--always", "--dirty"], cwd=checkout, capture_output=True, text=True)
    return described.stdout.strip() or "?"


def client(kind: str, requests: int) -> None:
    """Set up a fresh deployment in this process and make `requests` requests of `kind`
    to the ASGI application, after a warm-up of its own."""
    tmp = tempfile.mkdtemp()
    os.environ |= {
        "DJANGO_SETTINGS_MODULE": "todoweb.settings",
        "SECRET_KEY": SECRET_KEY,
        "DATABASE_URL": f"sqlite:///{tmp}/bench.sqlite3",
        "TODOWEB_RATE_LIMIT": "0",
        "TODOWEB_WEBHOOK_WORKER": "0",
    }
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    out = io.StringIO()
    call_command("createtoken", "bench", stdout=out)
    token = out.getvalue().strip().splitlines()[-1]
    try:
        from todoweb.serve.server import tuned_application
    except ImportError:  # a checkout from before the server moved to serve/
        from todoweb.runtime.server import tuned_application  # type: ignore[no-redef]

    application = tuned_application()
    import uvloop

    async def run() -> None:
        for n in range(WARM_UP):
            await request(application, kind, token, n)
        # No cyclic garbage collection while counting: when it runs depends on all
        # the process allocated before, so the same code checked out at two paths
        # counted 2.7-7% apart with it (0.4% without).
        gc.collect()
        gc.freeze()
        gc.disable()
        for n in range(WARM_UP, WARM_UP + requests):
            await request(application, kind, token, n)

    uvloop.run(run())
    shutil.rmtree(tmp)


async def request(application, kind: str, token: str, n: int) -> None:  # noqa: ANN001
    if kind == "healthz":
        method, path, body = "GET", "/healthz", b""
    elif kind == "tool call":
        hook = event("hook", n)
        call = {"tool": "TodoWrite", "id": hook["tool_use_id"], "input": hook["tool_input"]}
        method, path, body = "POST", f"/api/v1/sessions/{hook['session_id']}/tool", json.dumps(call).encode()
    else:
        method, path, body = "POST", "/api/v1/hooks/claude-code", json.dumps(event(kind, n)).encode()
    headers = [(b"host", b"127.0.0.1:8000"), (b"authorization", f"Bearer {token}".encode())]
    headers += [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": headers,
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
        "state": {},
    }
    sent: list[dict] = []
    received = False

    async def receive() -> dict:
        nonlocal received
        if received:  # Django listens for the client going away until it has answered
            await asyncio.Event().wait()
        received = True
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict) -> None:
        sent.append(message)

    await application(scope, receive, send)
    if sent[0]["status"] != 200:
        raise SystemExit(f"{kind}: {sent[0]['status']} {sent[-1].get('body', b'')[:500]!r}")


def event(kind: str, n: int) -> dict:
    """The n-th hook event of a kind: 64 sessions, each working through its plan."""
    todo_write = hook_event(f"bench-{n % 64}", f"toolu_{n}", done=(n // 64) % 11)
    if kind == "quiet hook":
        return todo_write | {"tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_response": {"stdout": "a\n"}}
    return todo_write


if __name__ == "__main__":
    main()
