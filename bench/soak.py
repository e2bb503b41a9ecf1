"""Soak: many agents writing for minutes while people watch; nothing lost or doubled,
and the server's memory flat.

N agents (default 50) each write a TodoWrite of 5 steps to a session of their own
every --interval seconds (1) for --minutes (10), each call with a new call id, while
W watchers (default 200) follow the sessions through share links (spread evenly).
Agents and watchers run in a client process of their own (bench/watchers.py). With
--topology two (PostgreSQL + Redis, two processes) agents write to both processes and
watchers watch on the other one.

At the end it checks:
- zero lost or doubled revisions: each session's stored revisions (read back through
  GET /api/v1/sessions/{key}/revisions) are exactly 1..k, where k is the number of its
  writes answered 200, and no two answers carry the same revision;
- every watcher shows its session's last revision (after at most 12 s);
- the server's RSS at the end is within 10% of its RSS after the warm-up (the first
  fifth of the run, at most a minute). The baseline is that warm-up figure.

    .venv/bin/python bench/soak.py [--minutes 10] [--agents 50] [--watchers 200] [--interval 1]
        [--topology one|two]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
from dataclasses import dataclass, field
from typing import Any

import httpx
from harness import create_token, load_average, percentile, rss_mb, run_client, topology, verdict
from watchers import Watcher, api_client, connect_watchers, now, todo_write, wait_until_shown

ITEMS = 5
SETTLE_TIMEOUT = 12.0  # longer than the hub's 5 s reconciliation
SAMPLE_EVERY = 10.0  # seconds between two readings of the server's RSS
PROGRESS_EVERY = 6  # readings between two progress lines


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--minutes", type=float, default=10)
    parser.add_argument("--agents", type=int, default=50)
    parser.add_argument("--watchers", type=int, default=200)
    parser.add_argument("--interval", type=float, default=1.0, help="seconds between one agent's writes")
    parser.add_argument("--topology", choices=["one", "two"], default="one")
    args = parser.parse_args()

    with topology(args.topology, "soak") as (env, servers):
        token = create_token(env)
        urls = [s.url for s in servers]
        keys = [f"soak-{i}" for i in range(args.agents)]
        sessions = [open_session(urls[i % len(urls)], token, key) for i, key in enumerate(keys)]
        spec = {
            "seconds": args.minutes * 60,
            "interval": args.interval,
            "token": token,
            "agents": [{"key": key, "url": urls[i % len(urls)]} for i, key in enumerate(keys)],
            "watchers": [
                {"session": i % args.agents, "url": ws_url(urls[(i + 1) % len(urls)], *sessions[i % args.agents])}
                for i in range(args.watchers)
            ],
            "server_pids": [s.pids() for s in servers],
        }
        result = run_client("soak.py", spec)
        stored = {key: stored_revisions(urls[0], token, key) for key in keys}
    report(args, result, stored)


def open_session(url: str, token: str, key: str) -> tuple[str, str]:
    """The session's first write (revision 1) and a share link: its id and the link's token."""
    headers = {"Authorization": f"Bearer {token}"}
    answer = httpx.post(f"{url}/api/v1/sessions/{key}/tool", json=todo_write(f"{key}-0", 0, ITEMS), headers=headers)
    answer.raise_for_status()
    share = httpx.post(f"{url}/api/v1/sessions/{key}/share", json={"expires_in": 86400}, headers=headers)
    share.raise_for_status()
    return answer.json()["data"]["session"]["id"], share.json()["token"]


def ws_url(url: str, session_id: str, share: str) -> str:
    return url.replace("http://", "ws://") + f"/ws/sessions/{session_id}/?share={share}"


def stored_revisions(url: str, token: str, key: str) -> list[int]:
    """Every revision number of the session, oldest first, through the API's pages."""
    numbers: list[int] = []
    after: str | None = "0"
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=60) as api:
        while after is not None:
            page = api.get(f"/api/v1/sessions/{key}/revisions", params={"after": after, "limit": 200})
            page.raise_for_status()
            numbers += [revision["revision"] for revision in page.json()["revisions"]]
            after = page.json()["next_cursor"]
    return numbers


# --- the client process -------------------------------------------------------------


async def client(spec: dict[str, Any]) -> dict[str, Any]:
    pids = spec["server_pids"]
    watchers = await join(spec)
    progress(f"{len(watchers)} watchers joined; RSS {rss_line(pids)}")
    seconds = spec["seconds"]
    warmup = min(60.0, seconds / 5)
    tallies = [Tally() for _ in spec["agents"]]
    async with api_client(spec["agents"][0]["url"], spec["token"]) as api:
        start = now()
        agents = [
            asyncio.ensure_future(agent(api, a["url"], a["key"], spec["interval"], start + seconds, tally))
            for a, tally in zip(spec["agents"], tallies, strict=True)
        ]
        await asyncio.sleep(warmup)
        rss_warm, load_warm = [rss_mb(p) for p in pids], load_average()
        progress(f"warm-up done after {warmup:.0f} s; RSS {rss_line(pids)}")
        samples = [rss_warm]
        while not all(task.done() for task in agents):
            await asyncio.sleep(min(SAMPLE_EVERY, max(0.1, start + seconds - now())))
            samples.append([rss_mb(p) for p in pids])
            if len(samples) % PROGRESS_EVERY == 0:
                answered = sum(len(t.answered) for t in tallies)
                progress(f"{now() - start:.0f} s: {answered} revisions answered; RSS {rss_line(pids)}")
        await asyncio.gather(*agents)
    last = [max(tally.answered) for tally in tallies]
    sessions = [m["session"] for m in spec["watchers"]]
    for i in range(len(tallies)):
        watching = [w for w, session in zip(watchers, sessions, strict=True) if session == i]
        await wait_until_shown(watching, last[i], SETTLE_TIMEOUT)
    shown = [w.seen[-1][0] if w.seen else 0 for w in watchers]
    latencies = [ms for tally in tallies for ms in tally.latencies_ms]
    result = {
        "answers": [tally.answered for tally in tallies],
        "failures": [failure for tally in tallies for failure in tally.failures],
        "answer_p50_ms": percentile(latencies, 50),
        "answer_p99_ms": percentile(latencies, 99),
        "watchers_on_last": sum(1 for s, i in zip(shown, sessions, strict=True) if s >= last[i]),
        "watchers_closed": sum(1 for w in watchers if w.closed),
        "backwards": sum(went_backwards(w) for w in watchers),
        "frames": sum(len(w.seen) for w in watchers),
        "rss_warm_mb": rss_warm,
        "load_warm": load_warm,
        "rss_end_mb": [rss_mb(p) for p in pids],
        "rss_max_mb": [max(column) for column in zip(*samples, strict=True)],
        "load": load_average(),
    }
    for watcher in watchers:
        watcher.close()
    return result


async def join(spec: dict[str, Any]) -> list[Watcher]:
    """The watchers, in the order of spec["watchers"]."""
    by_url: dict[str, int] = {}
    for watcher in spec["watchers"]:
        by_url[watcher["url"]] = by_url.get(watcher["url"], 0) + 1
    groups = await asyncio.gather(
        *(connect_watchers(url, n, concurrency=max(1, 50 // len(by_url))) for url, n in by_url.items())
    )
    pools = {url: list(group) for url, group in zip(by_url, groups, strict=True)}
    return [pools[w["url"]].pop() for w in spec["watchers"]]


@dataclass
class Tally:
    """One agent's writes: the revisions answered (revision 1 was the benchmark's own
    first write), the failures, the answer times."""

    answered: list[int] = field(default_factory=lambda: [1])
    failures: list[str] = field(default_factory=list)
    latencies_ms: list[float] = field(default_factory=list)


async def agent(api: httpx.AsyncClient, url: str, key: str, interval: float, deadline: float, tally: Tally) -> None:
    """One agent: a write every `interval` seconds (or right after a slow one) until `deadline`."""
    await asyncio.sleep(random.uniform(0, interval))
    n = 1
    while now() < deadline:
        due = now() + interval
        sent = now()
        try:
            answer = await api.post(f"{url}/api/v1/sessions/{key}/tool", json=todo_write(f"{key}-{n}", n, ITEMS))
            tally.latencies_ms.append((now() - sent) * 1000)
            if answer.status_code == 200:
                tally.answered.append(answer.json()["data"]["revision"])
            else:
                tally.failures.append(f"{key}: HTTP {answer.status_code} {answer.text[:200]}")
        except httpx.HTTPError as exc:
            tally.failures.append(f"{key}: {type(exc).__name__} {exc}")
        n += 1
        await asyncio.sleep(max(0.0, min(due, deadline) - now()))


def went_backwards(watcher: Watcher) -> int:
    return sum(1 for (a, _), (b, _) in zip(watcher.seen, watcher.seen[1:], strict=False) if b <= a)


def rss_line(pids: list[list[int]]) -> str:
    return ", ".join(f"{rss_mb(p):.0f} MB" for p in pids)


def progress(text: str) -> None:
    print(f"  ... {text} ({load_average()})", file=sys.stderr, flush=True)


# --- the report ---------------------------------------------------------------------


def report(args: argparse.Namespace, result: dict[str, Any], stored: dict[str, list[int]]) -> None:
    where = "one process, SQLite" if args.topology == "one" else "PostgreSQL + Redis, two processes"
    print(
        f"soak ({where}): {args.agents} agents writing every {args.interval:g} s for {args.minutes:g} min,"
        f" {args.watchers} share-link watchers"
    )
    answered = sum(map(len, result["answers"])) - args.agents  # without each session's first write
    lost = doubled = extra = 0
    for answers, numbers in zip(result["answers"], stored.values(), strict=True):
        k = len(answers)
        lost += len(set(range(1, k + 1)) - set(numbers))
        doubled += (len(answers) - len(set(answers))) + (len(numbers) - len(set(numbers)))
        extra += len({n for n in numbers if n > k})
    print(
        f"  writes answered {answered} ({answered / (args.minutes * 60):.1f}/s; and each session's first),"
        f" failed {len(result['failures'])};"
        f" answer p50 {result['answer_p50_ms']:.1f} ms, p99 {result['answer_p99_ms']:.1f} ms ({result['load']})"
    )
    for failure in result["failures"][:5]:
        print(f"    {failure}")
    print(f"  revisions stored {sum(map(len, stored.values()))}: lost {lost}, doubled {doubled}, unanswered {extra}")
    print(
        f"  watchers on their session's last revision: {result['watchers_on_last']}/{args.watchers}"
        f" (closed {result['watchers_closed']}, went backwards {result['backwards']}, frames {result['frames']})"
    )
    ok_revisions = lost == 0 and doubled == 0 and extra == 0
    print(f"  target: zero lost or doubled revisions {verdict(ok_revisions)}")
    memory = zip(result["rss_warm_mb"], result["rss_end_mb"], result["rss_max_mb"], strict=True)
    for n, (warm, end, peak) in enumerate(memory):
        ratio = end / warm
        print(
            f"  target: server {'AB'[n]} RSS at the end within 10% of after warm-up {verdict(abs(ratio - 1) <= 0.10)}"
            f" ({warm:.0f} MB after warm-up ({result['load_warm']}), {end:.0f} MB at the end ({result['load']}),"
            f" {ratio:.2f}x; peak {peak:.0f} MB)"
        )


if __name__ == "__main__":
    if "--client" in sys.argv:
        print(json.dumps(asyncio.run(client(json.load(sys.stdin)))))
    else:
        main()
