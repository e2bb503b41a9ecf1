"""A proven multi-process deployment (issue 9): two server processes, A and B, on one
PostgreSQL database and one Redis, as the README's production setup runs them.

- A person watching a session through a share link served by B sees each revision an
  agent writes through A.
- 40 agents' writes to one session, spread over A and B at once, all succeed and
  become revisions 1..40: none lost, none doubled, none out of place.
- Staff watching the dashboard on B see a session appear that an agent started on A.

Each process also re-reads the database every few seconds (todoweb.live's
reconciliation), which would hide a broken Redis path from a watcher; so the live
tests also check, on the Redis itself, that A published the frame on a channel B
listens to.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
import redis.asyncio
from websockets.asyncio.client import ClientConnection, connect

from tests.servers import (
    RedisServer,
    Server,
    base_env,
    create_token,
    manage,
    postgres_database,
    postgres_up,
    redis_server_installed,
    require,
)
from tests.system.ledger import Ledger, check_history, stored_history

PASSWORD = "a long password for the multi-process test"
WRITERS = 40
# Deadlines, not expectations: generous, as the machine is shared.
LIVE_WITHIN = 30.0
HTTP_TIMEOUT = 60.0


@dataclass
class TwoServers:
    a: Server
    b: Server
    token: str
    redis_url: str
    prefix: str

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


@pytest.fixture(scope="module")
def two_servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TwoServers]:
    """A and B, started once for this module's tests (each test uses sessions of its own)."""
    require(postgres_up(), "PostgreSQL is not reachable at PG_TEST_URL")
    require(redis_server_installed(), "redis-server is not installed")
    logs = tmp_path_factory.mktemp("multi_process")
    prefix = f"todoweb.multi.{uuid.uuid4().hex[:8]}"
    with ExitStack() as stack:
        private_redis = RedisServer().start()
        stack.callback(private_redis.stop)
        env = base_env(
            DATABASE_URL=stack.enter_context(postgres_database()),
            REDIS_URL=private_redis.url,
            TODOWEB_CHANNEL_PREFIX=prefix,
            # These tests are about writes and delivery, not the rate limit.
            TODOWEB_RATE_LIMIT="100000",
            # As behind a proxy on this machine: the logins' addresses are forwarded.
            FORWARDED_ALLOW_IPS="127.0.0.1",
            DJANGO_SUPERUSER_USERNAME="staff",
            DJANGO_SUPERUSER_PASSWORD=PASSWORD,
            DJANGO_SUPERUSER_EMAIL="staff@example.com",
        )
        manage(env, "migrate")
        manage(env, "createsuperuser", "--noinput")
        token = create_token(env)
        a = stack.enter_context(Server.serve(env, logs / "a.log"))
        b = stack.enter_context(Server.serve(env, logs / "b.log"))
        yield TwoServers(a, b, token, private_redis.url, prefix)
    output = a.output() + b.output()
    assert " 500 " not in output and "Traceback" not in output, output[-5000:]


class RedisTap:
    """Listens to every message published on the deployment's Redis (pattern `*`)."""

    def __init__(self, url: str) -> None:
        self.client = redis.asyncio.Redis.from_url(url)
        self.pubsub = self.client.pubsub()
        self.published: list[str] = []  # channel names, in order
        self.task: asyncio.Task | None = None

    async def __aenter__(self) -> RedisTap:
        await self.pubsub.psubscribe("*")
        # Subscribed once Redis confirms it: nothing published after this is missed.
        confirmation = await self.pubsub.get_message(timeout=10)
        assert confirmation is not None and confirmation["type"] == "psubscribe", confirmation
        self.task = asyncio.ensure_future(self.listen())
        return self

    async def listen(self) -> None:
        async for message in self.pubsub.listen():
            if message["type"] == "pmessage":
                self.published.append(message["channel"].decode())

    async def __aexit__(self, *exc: object) -> None:
        assert self.task is not None
        self.task.cancel()
        await self.pubsub.aclose()
        await self.client.aclose()

    async def crossed(self, needle: str, *, within: float = LIVE_WITHIN) -> str:
        """A channel whose name contains `needle` that something was published on and
        that someone subscribes to: a frame that went through Redis to a listener."""
        deadline = asyncio.get_running_loop().time() + within
        while True:
            for channel in dict.fromkeys(self.published):
                if needle in channel and (await self.client.pubsub_numsub(channel))[0][1] > 0:
                    return channel
            assert asyncio.get_running_loop().time() < deadline, (
                f"nothing published on a subscribed channel naming {needle!r}; published: {self.published}"
            )
            await asyncio.sleep(0.05)


async def next_event(ws: ClientConnection, wanted, *, within: float = LIVE_WITHIN) -> dict[str, Any]:
    """The first event the socket receives for which `wanted(event)` is true."""
    seen: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        async for text in ws:
            event = json.loads(text)
            if wanted(event):
                return event
            seen.append(event)
        raise AssertionError(f"the socket closed ({ws.close_code}) after {seen}")

    try:
        return await asyncio.wait_for(receive(), within)
    except TimeoutError:
        raise AssertionError(f"no such event within {within} s; received {seen}") from None


def todo_call(call_id: str, *contents: str) -> dict[str, Any]:
    todos = [{"content": content, "status": "pending", "activeForm": f"Doing {content}"} for content in contents]
    return {"tool": "TodoWrite", "id": call_id, "input": {"todos": todos}}


async def watch_share_link_on_b(servers: TwoServers) -> dict[str, Any]:
    a, b = servers.a, servers.b
    async with httpx.AsyncClient(base_url=a.url, headers=servers.headers(), timeout=HTTP_TIMEOUT) as http:
        first = await http.post("/api/v1/sessions/watched/tool", json=todo_call("w1", "Read the code"))
        assert first.status_code == 200, first.text
        share = await http.post("/api/v1/sessions/watched/share")
        assert share.status_code == 201, share.text
        path, _, query = share.json()["url"].partition("?")
        public_id = path.rstrip("/").rsplit("/", 1)[-1]

        async with (
            RedisTap(servers.redis_url) as tap,
            connect(f"ws://127.0.0.1:{b.port}/ws/sessions/{public_id}/?{query}", origin=b.url) as ws,
        ):
            snapshot = await next_event(ws, lambda e: e["type"] == "session.snapshot")
            assert snapshot["revision"] == 1

            second = await http.post("/api/v1/sessions/watched/tool", json=todo_call("w2", "Read the code", "Fix it"))
            assert second.status_code == 200, second.text
            assert second.json()["data"]["revision"] == 2

            shown = await next_event(ws, lambda e: e["type"] == "session.snapshot" and e["revision"] >= 2)
            channel = await tap.crossed(public_id)
        return {"shown": shown, "channel": channel}


def test_a_share_link_watcher_on_b_sees_the_revision_written_through_a(two_servers: TwoServers) -> None:
    """A person with a share link open on B sees revision 2 that the agent wrote through
    A, and it came through Redis. Fails as: the panel on B stays at revision 1 (or
    catches up only from the database, nothing crossing Redis)."""
    result = asyncio.run(watch_share_link_on_b(two_servers))
    shown = result["shown"]
    assert shown["revision"] == 2
    assert [todo["content"] for todo in shown["todos"]] == ["Read the code", "Fix it"]
    assert shown["session"]["key"] == "watched"
    assert result["channel"].startswith(two_servers.prefix)


async def concurrent_writes(servers: TwoServers, ledger: Ledger) -> list[int]:
    # One connection per writer, so that all 40 calls are in flight at once.
    limits = httpx.Limits(max_connections=WRITERS, max_keepalive_connections=WRITERS)
    clients = [
        httpx.AsyncClient(base_url=server.url, headers=servers.headers(), timeout=HTTP_TIMEOUT, limits=limits)
        for server in (servers.a, servers.b)
    ]
    writes = [ledger.new("crowded") for _ in range(WRITERS)]
    try:
        answers = await asyncio.gather(
            *(clients[n % 2].post("/api/v1/sessions/crowded/tool", json=write.body()) for n, write in enumerate(writes))
        )
    finally:
        for client in clients:
            await client.aclose()
    for write, answer in zip(writes, answers, strict=True):
        assert answer.status_code == 200, (write.call_id, answer.status_code, answer.text)
        ledger.answered(write, answer.json())
    return sorted(write.revision for write in writes)


def test_40_concurrent_writers_over_a_and_b_get_revisions_1_to_40(two_servers: TwoServers) -> None:
    """40 agents write to one session at the same moment, half through A and half through
    B: every call is answered 200, the answers name revisions 1..40 once each, and the
    history read back holds exactly those 40 calls, each complete, in the answered order.
    Fails as: a 500 or 409 under contention, two calls on one revision number, a gap,
    or a revision whose list is not its call's."""
    ledger = Ledger("crowd")
    answered = asyncio.run(concurrent_writes(two_servers, ledger))
    assert answered == list(range(1, WRITERS + 1))
    with httpx.Client(base_url=two_servers.b.url, headers=two_servers.headers(), timeout=HTTP_TIMEOUT) as http:
        current, revisions = stored_history(http, "crowded")
    check_history(ledger, "crowded", current, revisions, all_stored=True)
    assert len(revisions) == WRITERS


def staff_cookie(server: Server) -> str:
    """Log in through Django's login form, as a browser does; the session cookie."""
    with httpx.Client(base_url=server.url, timeout=HTTP_TIMEOUT) as http:
        login = http.get("/accounts/login/")
        assert login.status_code == 200, login.text
        form = {"username": "staff", "password": PASSWORD, "csrfmiddlewaretoken": http.cookies["csrftoken"]}
        answer = http.post("/accounts/login/", data=form, headers={"Referer": str(login.url)})
        assert answer.status_code == 302, answer.text
        return http.cookies["sessionid"]


async def dashboard_on_b(servers: TwoServers, cookie: str) -> tuple[dict[str, Any], dict[str, Any], str]:
    a, b = servers.a, servers.b
    headers = {"Cookie": f"sessionid={cookie}"}
    async with (
        RedisTap(servers.redis_url) as tap,
        connect(f"ws://127.0.0.1:{b.port}/ws/dashboard/", origin=b.url, additional_headers=headers) as ws,
    ):
        snapshot = await next_event(ws, lambda e: e["type"] == "dashboard.snapshot")
        async with httpx.AsyncClient(base_url=a.url, headers=servers.headers(), timeout=HTTP_TIMEOUT) as http:
            answer = await http.post("/api/v1/sessions/started-on-a/tool", json=todo_call("d1", "Plan the work"))
            assert answer.status_code == 200, answer.text
        summary = await next_event(
            ws, lambda e: e["type"] == "session.summary" and e["session"]["key"] == "started-on-a"
        )
        channel = await tap.crossed("dashboard")
    return snapshot, summary, channel


def test_a_staff_dashboard_on_b_sees_a_session_created_on_a(two_servers: TwoServers) -> None:
    """Staff, logged in through A's login form, watch the dashboard on B; an agent starts
    a new session through A, and it appears on B's dashboard live, through Redis. Fails
    as: the login is not honoured by B (the socket is refused), or the new session never
    shows up (or only from the database)."""
    cookie = staff_cookie(two_servers.a)
    snapshot, summary, channel = asyncio.run(dashboard_on_b(two_servers, cookie))
    assert all(session["key"] != "started-on-a" for session in snapshot["sessions"])
    session = summary["session"]
    assert (session["project"], session["revision"], session["total"]) == ("demo", 1, 1)
    assert channel.startswith(two_servers.prefix)


def login_attempt(server: Server, username: str, password: str, *, address: str) -> httpx.Response:
    """A login through the form, from `address` as the proxy in front says (the servers
    trust X-Forwarded-For from 127.0.0.1, as set up behind a proxy on this machine)."""
    with httpx.Client(base_url=server.url, timeout=HTTP_TIMEOUT, headers={"X-Forwarded-For": address}) as http:
        login = http.get("/accounts/login/")
        form = {"username": username, "password": password, "csrfmiddlewaretoken": http.cookies["csrftoken"]}
        return http.post("/accounts/login/", data=form, headers={"Referer": str(login.url)})


def test_wrong_passwords_through_a_lock_the_address_out_of_b_too(two_servers: TwoServers) -> None:
    """Ten wrong passwords through A, then staff's right one through B from the same
    address: refused with the lockout page, while another address logs in. Fails as:
    every attempt answered, and the right password let in (no throttling, or a count
    each process keeps to itself)."""
    for n in range(10):
        answer = login_attempt(two_servers.a, f"guess-{n}", "wrong", address="203.0.113.50")
        assert answer.status_code in (200, 429), answer.text
    locked = login_attempt(two_servers.b, "staff", PASSWORD, address="203.0.113.50")
    assert locked.status_code == 429, locked.text
    assert "Too many failed logins" in locked.text and "Try again after" in locked.text
    assert 0 < int(locked.headers["Retry-After"]) <= 15 * 60
    assert login_attempt(two_servers.b, "staff", PASSWORD, address="203.0.113.51").status_code == 302
