"""todoweb beside the hook dashboard many Claude Code users run instead: disler's
claude-code-hooks-multi-agent-observability (Bun + SQLite + websocket; it stores raw
events, with no auth and no plan state). Same machine, same client, same payload,
interleaved.

The payload is Claude Code's PostToolUse hook event for a TodoWrite of 10 steps, each
with a new tool call id, over 64 sessions (bench/wrk/hook_todowrite.lua): posted to
todoweb's hook endpoint as the agent's http hook sends it, and to the peer's /events
wrapped as its send_event.py wraps it. todoweb's tool endpoint gets the same
TodoWrite as a tool call (bench/wrk/todowrite.lua). Rows, each todoweb's figure, the
peer's and the ratio:

- ingest with 16 connections (events/s), p50 / p99, and the server's CPU per event
  (utime + stime of its process tree, from /proc), alternating the three loads
  --rounds times;
- a hook with nothing to tell (Claude Code's PostToolUse for a Bash call, as a
  matcher of `*` sends after every tool; bench/wrk/hook_any_tool.lua): events/s, p50
  and the server's CPU per event, in the same rounds;
- 1,000 watchers of one session while an agent's hook posts 20 TodoWrite events a
  second to it: from each POST to each watcher's receipt of what it wrote, p50 and
  p99 (todoweb: a share link's socket of the session, which sends its newest
  revision; the peer: its /stream, which sends every event); the watchers run in a
  process of their own (bench/watchers.py), the writes in another;
- RSS when idle (after a warm-up of a few hundred events), and after the rounds
  (at least --events events in all);
- memory per idle websocket: the RSS a thousand idle sockets add, divided by 1,000
  (todoweb: a session's panel through a share link; the peer: its /stream);
- stored per event: what the database files grow by (the WAL checkpointed), per
  event;
- what the agent waits for its hook: the README's command hook (one curl) against the
  peer's own hook script (`send_event.py`, with its dependencies anthropic and
  python-dotenv in a virtualenv of its own), each run 30 times one after another.

Without --peer it prints todoweb's side alone. The peer is not fetched: point --peer
at a checkout of https://github.com/disler/claude-code-hooks-multi-agent-observability.
It runs with Bun, installed from the npm registry (package `bun`) into .cache/bench,
and its hook script with the packages it names, from PyPI, in .cache/bench too.

    .venv/bin/python bench/peer.py [--peer PATH] [--seconds 10] [--rounds 2]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import uvloop
from harness import (
    ROOT,
    cpu_seconds,
    create_token,
    deployment,
    free_port,
    load_average,
    percentile,
    rss_mb,
    run_client,
    server,
    wait_until_up,
    wrk,
)
from watchers import connect_watchers, now

BUN_VERSION = "1.4.5"
BUN_HOME = ROOT / ".cache" / "bench" / "bun"
# What the peer's hook script imports (its `uv run` script header names them).
PEER_HOOK_PACKAGES = ["anthropic==2.13.0", "python-dotenv==1.2.4"]
PEER_PYTHON_HOME = ROOT / ".cache" / "bench" / "peer-hook-venv"
IDLE_SOCKETS = 1000
HOOK_RUNS = 30
WATCHERS, WATCHED_RATE, WATCHED_SECONDS = 1000, 20, 10
# The peer's broadcast of an event the watched agent posted, and its number.
PEER_EVENT = re.compile(rb'^\{"type":"event".*?"tool_use_id":"toolu_watched_(\d+)"')
HOOK_EVENT = {
    "session_id": "hook-time",
    "transcript_path": "/tmp/hook-time.jsonl",
    "cwd": "/work/shop",
    "permission_mode": "default",
    "hook_event_name": "PostToolUse",
    "tool_name": "TodoWrite",
    "tool_use_id": "toolu_hook_time",
    "tool_input": {
        "todos": [
            {"content": f"Step {k} of the plan", "status": "pending", "activeForm": f"Doing step {k}"}
            for k in range(10)
        ]
    },
    "tool_response": {},
}


def hook_event(session: str, call_id: str, done: int) -> dict:
    """Claude Code's PostToolUse event of a TodoWrite of 10 steps, `done` of them completed."""
    todos = [
        {
            "content": f"Step {k} of the plan",
            "status": "completed" if k < done else "in_progress" if k == done else "pending",
            "activeForm": f"Doing step {k}",
        }
        for k in range(10)
    ]
    return HOOK_EVENT | {"session_id": session, "tool_use_id": call_id, "tool_input": {"todos": todos}}


def peer_event(event: dict) -> dict:
    """The peer's /events body for a hook event, as its send_event.py wraps it."""
    return {
        "source_app": "bench",
        "session_id": event["session_id"],
        "hook_event_type": event["hook_event_name"],
        "payload": event,
        "timestamp": int(time.time() * 1000),
        "model_name": "",
        "tool_name": event["tool_name"],
        "tool_use_id": event["tool_use_id"],
    }


@dataclass
class Side:
    """One server under test: how to reach it and what it costs."""

    name: str
    url: str
    pids: Callable[[], list[int]]
    databases: list[Path]
    socket_url: str = ""
    loads: dict[str, list] = field(default_factory=dict)  # load name -> [(WrkResult, cpu ms per event)]

    def stored_bytes(self) -> int:
        total = 0
        for path in self.databases:
            with sqlite3.connect(path) as db:
                db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            total += path.stat().st_size
        return total

    def run(self, load: str, script: str, env: dict[str, str], seconds: int) -> None:
        before = cpu_seconds(self.pids())
        result = wrk(self.url, seconds=seconds, connections=16, script=script, env=env)
        cpu_ms = (cpu_seconds(self.pids()) - before) * 1000 / max(result.requests, 1)
        self.loads.setdefault(load, []).append((result, cpu_ms))

    def events(self) -> int:
        return sum(result.requests for runs in self.loads.values() for result, _ in runs)

    def watched(self, token: str) -> dict:
        """Receipts of WATCHERS watchers of one session while its agent writes WATCHED_RATE
        times a second (ms from each POST to each receipt; the client's own process)."""
        spec = {"side": self.name, "url": self.url, "socket_url": self.socket_url, "token": token}
        return run_client("peer.py", spec)


def peer_python() -> Path:
    """A Python with the peer's hook script's dependencies, from PyPI."""
    python = PEER_PYTHON_HOME / "bin" / "python"
    if not python.exists():
        subprocess.run(["python3", "-m", "venv", str(PEER_PYTHON_HOME)], check=True)
        subprocess.run(
            [str(python), "-m", "pip", "install", "-q", *PEER_HOOK_PACKAGES], check=True, stderr=subprocess.DEVNULL
        )
    return python


def bun() -> Path:
    """Bun from the npm registry (its package carries the binary for this platform)."""
    binary = BUN_HOME / "node_modules" / ".bin" / "bun"
    if not binary.exists():
        BUN_HOME.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["npm", "install", "--no-audit", "--no-fund", "--prefix", str(BUN_HOME), f"bun@{BUN_VERSION}"],
            check=True,
            stdout=subprocess.DEVNULL,
        )
    return binary


@contextmanager
def peer_server(checkout: Path) -> Iterator[Side]:
    """The peer's server (apps/server) from a copy of the checkout, its database in the copy."""
    with tempfile.TemporaryDirectory() as tmp:
        app = Path(tmp) / "server"
        shutil.copytree(checkout / "apps" / "server", app, ignore=shutil.ignore_patterns("node_modules", "*.db*"))
        port = free_port()
        env = os.environ | {"SERVER_PORT": str(port), "DO_NOT_TRACK": "1"}
        process = subprocess.Popen(
            [str(bun()), "src/index.ts"], cwd=app, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        url = f"http://127.0.0.1:{port}"
        try:
            wait_until_up(f"{url}/events/recent", "the peer's server")
            yield Side("peer", url, lambda: [process.pid], [app / "events.db"], socket_url=f"{url}/stream")
        finally:
            process.terminate()
            process.wait()


def share_socket(url: str, token: str) -> str:
    """A share link's websocket of a session with a 10-step plan."""
    headers = {"Authorization": f"Bearer {token}"}
    written = httpx.post(
        f"{url}/api/v1/sessions/watched/tool",
        json={"tool": "TodoWrite", "input": HOOK_EVENT["tool_input"]},
        headers=headers,
    )
    written.raise_for_status()
    session_id = written.json()["data"]["session"]["id"]
    share = httpx.post(f"{url}/api/v1/sessions/watched/share", json={"expires_in": 3600}, headers=headers)
    share.raise_for_status()
    return f"{url}/ws/sessions/{session_id}/?share={share.json()['token']}"


def per_idle_socket_kb(side: Side) -> float:
    """What IDLE_SOCKETS idle websockets add to the server's RSS, per socket."""

    async def measure() -> float:
        # One socket first, so that what serving any socket starts once (todoweb's
        # database thread, which a server whose writes run on its event loop has not
        # needed yet) is not counted as the sockets'.
        for watcher in await connect_watchers(side.socket_url, 1, any_message=side.name == "peer"):
            watcher.close()
        await asyncio.sleep(1)
        before = rss_mb(side.pids())
        watchers = await connect_watchers(side.socket_url, IDLE_SOCKETS, any_message=side.name == "peer")
        await asyncio.sleep(2)  # let the server settle
        after = rss_mb(side.pids())
        for watcher in watchers:
            watcher.close()
        return (after - before) * 1024 / IDLE_SOCKETS

    return asyncio.run(measure())


def hook_wait_ms(command: list[str], cwd: Path | None = None) -> float:
    """p50 of HOOK_RUNS runs of a command hook given the hook event on stdin."""
    event = json.dumps(HOOK_EVENT).encode()
    times = []
    for _ in range(HOOK_RUNS):
        started = time.perf_counter()
        subprocess.run(command, input=event, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def row(label: str, ours: float, theirs: float | None, unit: str, fmt: str = ".1f") -> None:
    mine = f"{ours:{fmt}} {unit}"
    peer = f"{theirs:{fmt}} {unit}" if theirs is not None else "—"
    ratio = f"{ours / theirs:.2f}x" if theirs else ""
    print(f"  {label:<44} {mine:<19} {peer:<19} {ratio}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--peer", type=Path, help="a checkout of disler/claude-code-hooks-multi-agent-observability")
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    if args.peer and not (args.peer / "apps" / "server" / "src" / "index.ts").exists():
        raise SystemExit(f"{args.peer} is not a checkout of the peer (no apps/server/src/index.ts)")

    with deployment() as env, server(env) as ours_server:
        token = create_token(env, "bench")
        database = Path(env["DATABASE_URL"].removeprefix("sqlite:///"))
        ours = Side(
            "todoweb",
            ours_server.url,
            ours_server.pids,
            [database],
            socket_url=share_socket(ours_server.url, token),
        )
        with peer_server(args.peer) if args.peer else nullside() as peer:
            sides = [side for side in (ours, peer) if side is not None]
            hook_env = {"TODOWEB_TOKEN": token, "ITEMS": "10", "SESSIONS": "64"}
            for side in sides:  # warm-up
                wrk(side.url, seconds=2, connections=4, script="hook_todowrite.lua", env=hook_env | peer_env(side, "w"))
            idle = {side.name: rss_mb(side.pids()) for side in sides}
            sockets = {side.name: per_idle_socket_kb(side) for side in sides}
            stored_before = {side.name: (side.stored_bytes(), side.events()) for side in sides}
            for n in range(args.rounds):
                ours.run("hook", "hook_todowrite.lua", hook_env | {"RUN": f"h{n}"}, args.seconds)
                ours.run("tool", "todowrite.lua", hook_env | {"RUN": f"t{n}"}, args.seconds)
                if peer:
                    peer.run("hook", "hook_todowrite.lua", hook_env | {"RUN": f"p{n}", "PEER": "1"}, args.seconds)
            after = {side.name: rss_mb(side.pids()) for side in sides}
            events = {side.name: side.events() for side in sides}
            stored = {
                side.name: (side.stored_bytes() - stored_before[side.name][0])
                / max(side.events() - stored_before[side.name][1], 1)
                for side in sides
            }
            # After `stored`, which is of the TodoWrite events alone: these write too.
            for n in range(args.rounds):
                for side in sides:
                    quiet_env = hook_env | {"RUN": f"q{n}", "PEER": "1" if side is peer else "0"}
                    side.run("quiet hook", "hook_any_tool.lua", quiet_env, args.seconds)
            receipts = {side.name: side.watched(token) for side in sides}
            curl = [
                "curl", "-s", "-o", "/dev/null", "-X", "POST", f"{ours.url}/api/v1/hooks/claude-code",
                "-H", f"Authorization: Bearer {token}", "-H", "Content-Type: application/json", "--data-binary", "@-",
            ]  # fmt: skip
            waits = {"todoweb": hook_wait_ms(curl)}
            if peer:
                hooks = args.peer / ".claude" / "hooks"
                script = [str(peer_python()), "send_event.py", "--source-app", "bench", "--event-type", "PostToolUse"]
                script += ["--server-url", f"{peer.url}/events"]
                waits["peer"] = hook_wait_ms(script, cwd=hooks)

    print(f"todoweb {'against the peer (' + str(args.peer) + ')' if peer else 'alone (no --peer given)'}, ", end="")
    print(f"{args.rounds} rounds of {args.seconds} s, 16 connections ({load_average()})")
    print(f"  {'':<44} {'todoweb':<19} {'the peer':<19} todoweb / peer")

    def median(side: Side | None, load: str, pick: Callable) -> float | None:
        if side is None or load not in side.loads:
            return None
        return statistics.median(pick(result, cpu) for result, cpu in side.loads[load])

    for load in ("hook", "tool"):
        what = "hook" if load == "hook" else "tool call"
        row(
            f"ingest, 16 connections ({what})",
            median(ours, load, lambda r, c: r.requests_per_s),
            median(peer, "hook", lambda r, c: r.requests_per_s),
            "events/s",
            ".0f",
        )
        row(
            f"server CPU per event ({what})",
            median(ours, load, lambda r, c: c),
            median(peer, "hook", lambda r, c: c),
            "ms",
            ".3f",
        )
        row(
            f"ingest p50 ({what})",
            median(ours, load, lambda r, c: r.p50_ms),
            median(peer, "hook", lambda r, c: r.p50_ms),
            "ms",
        )
        row(
            f"ingest p99 ({what})",
            median(ours, load, lambda r, c: r.p99_ms),
            median(peer, "hook", lambda r, c: r.p99_ms),
            "ms",
        )
    row(
        "hook with nothing to tell (events/s)",
        median(ours, "quiet hook", lambda r, c: r.requests_per_s),
        median(peer, "quiet hook", lambda r, c: r.requests_per_s),
        "events/s",
        ".0f",
    )
    row(
        "server CPU per hook with nothing to tell",
        median(ours, "quiet hook", lambda r, c: c),
        median(peer, "quiet hook", lambda r, c: c),
        "ms",
        ".3f",
    )
    row(
        "its p50",
        median(ours, "quiet hook", lambda r, c: r.p50_ms),
        median(peer, "quiet hook", lambda r, c: r.p50_ms),
        "ms",
    )
    watched = f"{WATCHERS:,} watchers x {WATCHED_RATE} events/s"
    for q in (50, 99):
        theirs = receipts["peer"][f"p{q}"] if peer else None
        row(f"{watched}: POST -> receipt p{q}", receipts["todoweb"][f"p{q}"], theirs, "ms")
    print(
        f"  ({watched}: todoweb's watchers saw {receipts['todoweb']['per_watcher']:.0f} of"
        f" {receipts['todoweb']['written']} revisions each"
        + (
            f", the peer's {receipts['peer']['per_watcher']:.0f} of {receipts['peer']['written']} events"
            if peer
            else ""
        )
        + ")"
    )
    row("RSS idle (after the warm-up)", idle["todoweb"], idle.get("peer"), "MB")
    row(
        f"RSS after {events['todoweb']:,} events (peer {events.get('peer', 0):,})",
        after["todoweb"],
        after.get("peer"),
        "MB",
    )
    row(f"per idle websocket ({IDLE_SOCKETS:,} sockets)", sockets["todoweb"], sockets.get("peer"), "KB")
    row("stored per event", stored["todoweb"] / 1024, stored["peer"] / 1024 if peer else None, "KB", ".2f")
    row("what the agent waits for its hook (p50)", waits["todoweb"], waits.get("peer"), "ms")


def peer_env(side: Side, run: str) -> dict[str, str]:
    return {"RUN": run, "PEER": "1" if side.name == "peer" else "0"}


@contextmanager
def nullside() -> Iterator[None]:
    yield None


# --- the watchers' process, and the writer's ---------------------------------------


async def watch(spec: dict) -> dict:
    marker = PEER_EVENT if spec["side"] == "peer" else None
    watchers = await connect_watchers(spec["socket_url"], WATCHERS, any_message=spec["side"] == "peer", marker=marker)
    job = json.dumps(spec).encode()
    process = await asyncio.create_subprocess_exec(
        sys.executable, __file__, "--writer", stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
    )
    out, _ = await process.communicate(job)
    sent_at = {int(number): at for number, at in json.loads(out)}
    deadline = now() + 5
    while now() < deadline and any(not w.seen or w.seen[-1][0] < max(sent_at) for w in watchers):
        await asyncio.sleep(0.01)
    receipts = [(at - sent_at[number]) * 1000 for w in watchers for number, at in w.seen if number in sent_at]
    for watcher in watchers:
        watcher.close()
    return {
        "p50": percentile(receipts, 50),
        "p99": percentile(receipts, 99),
        "per_watcher": len(receipts) / WATCHERS,
        "written": len(sent_at),
    }


async def write(spec: dict) -> list[tuple[int, float]]:
    """The watched agent's hook at WATCHED_RATE events/s: (the number a watcher will see,
    when its POST was sent) for each answered one."""
    peer = spec["side"] == "peer"
    headers = {} if peer else {"Authorization": f"Bearer {spec['token']}"}
    sent = []
    async with httpx.AsyncClient(base_url=spec["url"], headers=headers, timeout=30) as client:
        start = now()
        for n in range(WATCHED_RATE * WATCHED_SECONDS):
            await asyncio.sleep(max(0.0, start + n / WATCHED_RATE - now()))
            event = hook_event("watched", f"toolu_watched_{n}", done=n % 11)
            at = now()
            if peer:
                answer = await client.post("/events", json=peer_event(event))
                number = n
            else:
                answer = await client.post("/api/v1/hooks/claude-code", json=event)
                number = answer.json()["data"]["revision"] if answer.status_code == 200 else None
            if answer.status_code == 200 and number is not None:
                sent.append((number, at))
    return sent


if __name__ == "__main__":
    if "--client" in sys.argv:
        print(json.dumps(uvloop.run(watch(json.load(sys.stdin)))))
    elif "--writer" in sys.argv:
        print(json.dumps(uvloop.run(write(json.load(sys.stdin)))))
    else:
        main()
