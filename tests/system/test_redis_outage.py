"""A Redis blip is not an outage: two server processes on PostgreSQL share a private
Redis, which is stopped and restarted while an agent writes. Writes go on succeeding
throughout (the rate limit fails open, events that cannot be published are dropped),
and every watcher shows the latest revision within seconds of Redis returning. A
share link revoked on one process while Redis is down closes the link's sockets on
the other all the same, and they are sent nothing written after the revocation."""

from __future__ import annotations

import asyncio
import json
import time

import httpx
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from tests.servers import Server, base_env, create_token, manage

WATCHERS = 10
# Revisions 1-10 are written with Redis up, 11-20 with Redis down (their events are
# lost), then Redis comes back and no write follows: only reconciliation can tell
# the watchers. Revision 21 is written after that.
STOP_AFTER, OUTAGE_WRITES = 10, 10
# The hub reconciles every 5 s; a watcher must be current within this after Redis returns.
CONVERGE_WITHIN = 10.0
# ... and checks its sockets' access as often: a revoked link's sockets close within this.
HANG_UP_WITHIN = 20.0


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


class Viewer:
    """A share-link viewer's socket that records everything until the server closes it."""

    def __init__(self, server: Server, share_url: str):
        path, _, query = share_url.partition("?")
        public_id = path.rstrip("/").rsplit("/", 1)[-1]
        self.url = f"ws://127.0.0.1:{server.port}/ws/sessions/{public_id}/?{query}"
        self.origin = server.url
        self.events: list[dict] = []
        self.close_code: int | None = None
        self.task = asyncio.ensure_future(self.run())

    def revisions(self) -> list[int]:
        return [event["revision"] for event in self.events if event["type"] == "session.snapshot"]

    async def run(self) -> None:
        async with connect(self.url, origin=self.origin) as ws:
            try:
                async for text in ws:
                    self.events.append(json.loads(text))
            except ConnectionClosed:
                pass
            self.close_code = ws.close_code


async def revoke_while_redis_is_down(a: Server, b: Server, token: str, redis) -> Viewer:
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=a.url, headers=headers, timeout=10) as http:

        async def write(n: int) -> None:
            todos = [{"content": f"step {i}", "status": "completed" if i < n else "pending"} for i in range(3)]
            body = {"tool": "TodoWrite", "id": f"r{n}", "input": {"todos": [t | {"activeForm": "x"} for t in todos]}}
            answer = await http.post("/api/v1/sessions/revoked/tool", json=body)
            assert answer.status_code == 200, (n, answer.text)

        await write(0)
        share = (await http.post("/api/v1/sessions/revoked/share")).json()["url"]
        viewer = Viewer(b, share)
        started = time.monotonic()
        while viewer.revisions() != [1]:
            assert not viewer.task.done(), viewer.events
            assert time.monotonic() - started < HANG_UP_WITHIN, "the viewer never saw revision 1"
            await asyncio.sleep(0.05)

        redis.stop()
        # A's event saying so is lost with Redis: only B's own check can find out.
        assert (await http.delete("/api/v1/sessions/revoked/share")).status_code == 204
        revoked_at = time.monotonic()
        for n in (1, 2, 3):
            await write(n)
        redis.start()
        await write(4)
        try:
            await asyncio.wait_for(viewer.task, HANG_UP_WITHIN - (time.monotonic() - revoked_at))
        except TimeoutError:
            raise AssertionError(f"the socket stayed open; it was shown revisions {viewer.revisions()}") from None
        return viewer


def test_a_link_revoked_while_redis_is_down_closes_its_sockets_on_the_other_process(two_servers, private_redis):
    """Fails as: B's viewer goes on receiving revisions 2-5 once Redis returns (the
    revocation's event was lost), and its socket stays open."""
    env, a, b = two_servers
    token = create_token(env)
    viewer = asyncio.run(revoke_while_redis_is_down(a, b, token, private_redis))
    assert viewer.revisions() == [1]
    assert viewer.events[-1]["type"] == "share.ended"
    assert viewer.close_code == 4410
