"""Steering's costs, each against a baseline measured on the same server in the same run.

One `manage.py serve` process (SQLite unless --database postgres), 64 sessions with a
10-step plan each.

1. A hook that fires after every tool (Claude Code's PostToolUse with matcher `*`),
   for a Bash call with nothing to tell, against the tool endpoint's no-op read
   (a TodoRead call): wrk, one connection (the latency an agent waits per tool call)
   and 16 (throughput). Target: the hook adds at most 3 ms to a tool call (p50 with
   one connection), and answers at least 0.8x the read's requests per second.
2. An agent's whole-list write that must be merged with a person's edit it had not
   seen, against the same write with no edit to merge: sequential calls from one
   client, each timed (the edit before each merged write is not timed). No target: a
   merge happens once per edit a person makes, and also marks the edit told and
   publishes where it stands; the ratio is printed so that a regression shows.

    .venv/bin/python bench/steering.py [--database sqlite|postgres] [--seconds 10] [--writes 200]
"""

from __future__ import annotations

import argparse
import statistics
import time

import httpx
from harness import create_token, deployment, fresh_postgres, load_average, percentile, server, verdict, wrk

SESSIONS = 64
ITEMS = 10
HOOK_ADDS_MS = 3.0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--database", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--writes", type=int, default=200)
    args = parser.parse_args()

    database = fresh_postgres("todoweb_bench_steering") if args.database == "postgres" else None
    with deployment(database) as env, server(env) as srv:
        token = create_token(env)
        headers = {"Authorization": f"Bearer {token}"}
        with httpx.Client(base_url=srv.url, headers=headers, timeout=30) as http:
            for n in range(SESSIONS):
                write(http, f"steer-{n}", plan(done=0), f"setup-{n}")
            print(f"steering on {args.database} ({load_average()})")
            hook_against_read(srv.url, token, args.seconds)
            merge_against_write(http, args.writes)


def hook_against_read(url: str, token: str, seconds: int) -> None:
    env = {"TODOWEB_TOKEN": token, "SESSIONS": str(SESSIONS), "RUN": "steer"}
    wrk(url, seconds=2, script="hook_any_tool.lua", env=env)  # warm-up
    wrk(url, seconds=2, script="todoread.lua", env=env)
    print("1. a PostToolUse hook on a Bash call (nothing to tell) against a TodoRead call")
    for connections in (1, 16):
        threads = 1 if connections == 1 else 2
        read = wrk(url, seconds=seconds, connections=connections, threads=threads, script="todoread.lua", env=env)
        hook = wrk(url, seconds=seconds, connections=connections, threads=threads, script="hook_any_tool.lua", env=env)
        print(read.line(f"TodoRead, {connections} conn"))
        print(hook.line(f"hook, {connections} conn"))
        ratio = hook.requests_per_s / read.requests_per_s
        if connections == 1:
            added = hook.p50_ms - read.p50_ms
            print(
                f"  the hook adds {added:+.2f} ms (p50) to a tool call; {ratio:.2f}x the read's rate"
                f"  [{verdict(added <= HOOK_ADDS_MS)}: <= {HOOK_ADDS_MS:.0f} ms]"
            )
        else:
            print(f"  hook / read throughput: {ratio:.2f}x  [{verdict(ratio >= 0.8)}: >= 0.8x]")
        assert read.errors == 0 and hook.errors == 0, "the server answered errors"


def merge_against_write(http: httpx.Client, writes: int) -> None:
    plain, merged = [], []
    for n in range(writes):
        key = f"merge-{n % SESSIONS}"
        # Plain: the agent's next list, nothing waiting.
        write(http, f"plain-{n % SESSIONS}", plan(done=n % ITEMS), f"p{n}")
        started = time.perf_counter()
        write(http, f"plain-{n % SESSIONS}", plan(done=n % ITEMS + 1), f"p{n}b")
        plain.append(time.perf_counter() - started)
        # Merged: a person rewords a step and adds one; the agent, not having seen it,
        # writes its own next list from the revision before.
        seen = write(http, key, plan(done=n % ITEMS), f"m{n}")
        edited = [
            {"id": step["id"], "content": step["content"] + (" (reworded)" if i == 3 else ""), "status": step["status"]}
            for i, step in enumerate(seen["todos"])
        ]
        edit = http.post(
            f"/api/v1/sessions/{key}/edits",
            json={"todos": [*edited, {"content": "A step the person added", "status": "pending"}]},
            headers={"If-Match": f'"{seen["revision"]}"'},
        )
        assert edit.status_code == 200, edit.text
        started = time.perf_counter()
        write(http, key, plan(done=n % ITEMS + 1), f"m{n}b")
        merged.append(time.perf_counter() - started)
    state = http.get(f"/api/v1/sessions/merge-{(writes - 1) % SESSIONS}").json()
    assert any(step["content"] == "A step the person added" for step in state["todos"]), "the edit was not kept"
    plain_ms, merged_ms = statistics.median(plain) * 1000, statistics.median(merged) * 1000
    ratio = merged_ms / plain_ms
    print(f"2. a whole-list write merged with an unseen edit against a plain write ({writes} each, sequential)")
    print(f"  plain write   p50 {plain_ms:6.2f} ms  p90 {percentile(plain, 90) * 1000:6.2f} ms")
    print(f"  merged write  p50 {merged_ms:6.2f} ms  p90 {percentile(merged, 90) * 1000:6.2f} ms")
    print(f"  merge / plain: {ratio:.2f}x, {merged_ms - plain_ms:+.2f} ms  ({load_average()})")


def plan(done: int) -> list[dict[str, str]]:
    statuses = ["completed" if k < done else "in_progress" if k == done else "pending" for k in range(ITEMS)]
    return [
        {"content": f"Step {k} of the plan", "status": status, "activeForm": f"Doing step {k}"}
        for k, status in enumerate(statuses)
    ]


def write(http: httpx.Client, key: str, todos: list[dict[str, str]], call_id: str) -> dict:
    """The agent's TodoWrite; the plan's data shape after it."""
    body = {"tool": "TodoWrite", "id": call_id, "input": {"todos": todos}}
    answer = http.post(f"/api/v1/sessions/{key}/tool", json=body)
    assert answer.status_code == 200, answer.text
    return answer.json()["data"]


if __name__ == "__main__":
    main()
