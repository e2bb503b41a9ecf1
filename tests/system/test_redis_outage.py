"""A Redis blip is not an outage: two server processes on PostgreSQL share a private
Redis, which is stopped and restarted while an agent writes. Writes go on succeeding
throughout (the rate limit fails open, events that cannot be published are dropped),
and every watcher shows the latest revision within seconds of Redis returning."""

from __future__ import annotations

import asyncio
import json
import time

import httpx
import pytest
from websockets.asyncio.client import connect

from tests.servers import Server, base_env, create_token, manage

WATCHERS = 10
# Revisions 1-10 are written with Redis up, 11-20 with Redis down (their events are
# lost), then Redis comes back and no write follows: only reconciliation can tell
# the watchers. Revision 21 is written after that.
STOP_AFTER, OUTAGE_WRITES = 10, 10
# The hub reconciles every 5 s; a watcher must be current within this after Redis returns.
CONVERGE_WITHIN = 10.0


@pytest.fixture
def two_servers(postgres_url, private_redis, tmp_path):
    env = base_env(DATABASE_URL=postgres_url, REDIS_URL=private_redis.url, TODOWEB_RATE_LIMIT="1200")
    manage(env, "migrate")
    a = Server.serve(env, tmp_path / "a.log").start()
    b = Server.serve(env, tmp_path / "b.log").start()
    yield env, a, b
    a.stop()
    b.stop()


class Watcher:
    """A share-link viewer's socket: remembers the newest revision it was shown."""

    def __init__(self, server: Server, share_url: str):
        path, _, query = share_url.partition("?")
        public_id = path.rstrip("/").rsplit("/", 1)[-1]
        self.url = f"ws://127.0.0.1:{server.port}/ws/sessions/{public_id}/?{query}"
        self.origin = server.url
        self.revision = 0
        self.task = asyncio.ensure_future(self.run())

    async def run(self) -> None:
        async with connect(self.url, origin=self.origin) as ws:
            async for text in ws:
                event = json.loads(text)
                if event["type"] == "session.snapshot":
                    self.revision = max(self.revision, event["revision"])


async def until(condition, *, within: float, what: str, watchers: list[Watcher]) -> float:
    """Wait for `condition`, failing after `within` seconds or when a watcher's socket failed."""
    started = time.monotonic()
    while not condition():
        for watcher in watchers:
            if watcher.task.done():
                watcher.task.result()  # raises what went wrong
                raise AssertionError("a watcher's socket closed")
        assert time.monotonic() - started < within, (what, [w.revision for w in watchers])
        await asyncio.sleep(0.05)
    return time.monotonic() - started


async def scenario(a: Server, b: Server, token: str, redis) -> dict[str, float]:
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=a.url, headers=headers, timeout=10) as http:

        async def write(n: int) -> int:
            todos = [
                {"content": f"step {i}", "status": "completed" if i < n else "pending", "activeForm": "x"}
                for i in range(30)
            ]
            r = await http.post(
                "/api/v1/sessions/blip/tool", json={"tool": "TodoWrite", "id": f"c{n}", "input": {"todos": todos}}
            )
            assert r.status_code == 200, (n, r.text)
            return r.json()["data"]["revision"]

        await write(0)
        share = (await http.post("/api/v1/sessions/blip/share")).json()["url"]
        watchers = [Watcher(b, share) for _ in range(WATCHERS)]
        await until(lambda: all(w.revision == 1 for w in watchers), within=10, what="joined", watchers=watchers)

        slowest_write = 0.0
        for n in range(1, STOP_AFTER + OUTAGE_WRITES):
            if n == STOP_AFTER:
                redis.stop()
            started = time.monotonic()
            assert await write(n) == n + 1
            slowest_write = max(slowest_write, time.monotonic() - started)
        last = STOP_AFTER + OUTAGE_WRITES
        redis.start()
        back_at = time.monotonic()
        await until(
            lambda: all(w.revision == last for w in watchers),
            within=CONVERGE_WITHIN,
            what="converged",
            watchers=watchers,
        )
        converged = time.monotonic() - back_at
        assert await write(last) == last + 1
        await until(
            lambda: all(w.revision == last + 1 for w in watchers),
            within=CONVERGE_WITHIN,
            what="live again",
            watchers=watchers,
        )
        for watcher in watchers:
            watcher.task.cancel()
        return {"converged_s": converged, "slowest_write_s": slowest_write}


def test_writes_go_on_and_watchers_converge_through_a_redis_outage(two_servers, private_redis):
    env, a, b = two_servers
    token = create_token(env)
    figures = asyncio.run(scenario(a, b, token, private_redis))
    print(
        f"\nRedis outage: watchers current {figures['converged_s']:.1f} s after Redis returned; "
        f"slowest write {figures['slowest_write_s'] * 1000:.0f} ms"
    )
    logs = a.output() + b.output()
    assert " 500 " not in logs and "Internal Server Error" not in logs
    assert "Rate limit skipped: the cache is unreachable" in a.output()
