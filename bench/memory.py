"""Memory over many sessions: the server's RSS must not grow with the sessions it has
seen, only with what it holds open.

Sessions are made by writes through the tool endpoint, --batch (500) at a time, each
with a share link; after each batch a round of --batch websocket watchers connects,
one to each of the batch's sessions, reads its snapshot and leaves. The server's RSS
is read after each round. After --warm-up rounds (3: the third fills what the garbage collector may leave
frozen, serve.long_lived), the slope of RSS against the
sessions made (least squares) is printed in MB per 1,000 sessions; target <= 1 MB.
As a baseline, the same slope is printed for the warm-up rounds (the process filling
its caches and pools), and RSS at the end against RSS after the warm-up.

    .venv/bin/python bench/memory.py [--sessions 5000] [--batch 500] [--database postgres]

With --database postgres the one server runs on a fresh PostgreSQL database with Redis
as its channel layer and cache.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
from harness import REDIS, create_token, deployment, fresh_postgres, load_average, rss_mb, server
from watchers import Watcher, todo_write

CONCURRENCY = 16  # writes in flight
WATCHERS_AT_ONCE = 100  # websocket handshakes in flight


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=5000)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--warm-up", type=int, default=3, help="rounds before the slope is measured")
    parser.add_argument("--database", choices=["sqlite", "postgres"], default="sqlite")
    args = parser.parse_args()
    with deployed(args.database) as (env, running):
        token = create_token(env)
        samples = asyncio.run(soak(running.url, token, running.pids(), args))
    report(args, samples)


@contextmanager
def deployed(database: str) -> Iterator[tuple[dict[str, str], object]]:
    if database == "sqlite":
        with deployment() as env, server(env) as one:
            yield env, one
        return
    prefix = f"todoweb-bench-memory-{os.getpid()}"
    with (
        deployment(fresh_postgres("todoweb_bench_memory"), REDIS, TODOWEB_CHANNEL_PREFIX=prefix) as env,
        server(env) as one,
    ):
        yield env, one


async def soak(url: str, token: str, pids: list[int], args: argparse.Namespace) -> list[tuple[int, float]]:
    """(sessions made, RSS in MB) after each round."""
    samples = [(0, rss_mb(pids))]
    headers = {"Authorization": f"Bearer {token}"}
    limits = httpx.Limits(max_connections=CONCURRENCY)
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=60, limits=limits) as api:
        made = 0
        while made < args.sessions:
            keys = [f"memory-{n}" for n in range(made, min(made + args.batch, args.sessions))]
            shared = await gathered([open_session(api, key) for key in keys], CONCURRENCY)
            await watch_once(url, shared)
            made += len(keys)
            samples.append((made, rss_mb(pids)))
            print(f"{made} sessions: RSS {samples[-1][1]:.1f} MB ({load_average()})", file=sys.stderr)
    return samples


async def gathered(coroutines: list, limit: int) -> list:
    gate = asyncio.Semaphore(limit)

    async def one(coroutine):
        async with gate:
            return await coroutine

    return list(await asyncio.gather(*(one(c) for c in coroutines)))


async def open_session(api: httpx.AsyncClient, key: str) -> tuple[str, str]:
    """A session made by a write through the tool endpoint, and a share link to it."""
    answer = await api.post(f"/api/v1/sessions/{key}/tool", json=todo_write(f"{key}-0", 0))
    answer.raise_for_status()
    share = await api.post(f"/api/v1/sessions/{key}/share", json={"expires_in": 86400})
    share.raise_for_status()
    return answer.json()["data"]["session"]["id"], share.json()["token"]


async def watch_once(url: str, shared: list[tuple[str, str]]) -> None:
    """A watcher per session: they connect, read their snapshots, and leave together."""
    loop = asyncio.get_running_loop()
    base = url.replace("http://", "ws://")
    host, port = url.removeprefix("http://").split(":")

    async def one(session_id: str, share: str) -> Watcher:
        watcher: Watcher
        _, watcher = await loop.create_connection(
            lambda: Watcher(f"{base}/ws/sessions/{session_id}/?share={share}", session_id=session_id), host, int(port)
        )
        await asyncio.wait_for(watcher.joined, 120)
        return watcher

    watchers = await gathered([one(session_id, share) for session_id, share in shared], WATCHERS_AT_ONCE)
    for watcher in watchers:
        watcher.close()
    await asyncio.sleep(0)


def slope(points: list[tuple[int, float]]) -> float:
    """Least-squares MB per 1,000 sessions."""
    if len(points) < 2:
        return float("nan")
    xs, ys = [x / 1000 for x, _ in points], [y for _, y in points]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum((x - mx) ** 2 for x in xs)


def report(args: argparse.Namespace, samples: list[tuple[int, float]]) -> None:
    warm, measured = samples[: args.warm_up + 1], samples[args.warm_up :]
    per_thousand = slope(measured)
    print(f"memory ({args.database}): {args.sessions} sessions, rounds of {args.batch} watchers ({load_average()})")
    print("RSS after each round: " + ", ".join(f"{n}: {mb:.1f}" for n, mb in samples))
    print(f"warm-up (baseline): {slope(warm):.2f} MB per 1,000 sessions")
    print(
        f"after warm-up: {per_thousand:.2f} MB per 1,000 sessions; RSS {measured[0][1]:.1f} -> {samples[-1][1]:.1f} MB "
        f"({samples[-1][1] / measured[0][1]:.2f}x): target <= 1 MB per 1,000 sessions: "
        + ("met" if per_thousand <= 1.0 else "MISSED")
    )


if __name__ == "__main__":
    main()
