"""A crash loses nothing it confirmed (issue 9, faults): the server process is killed
with SIGKILL in the middle of a burst of concurrent writes, on the SQLite file
deployment (`make run`'s) and on PostgreSQL, then started again.

After the restart, an agent that was answered 200 finds its write where the answer
said (same revision number, same list); every session's history is 1..n with no gap
and no half-written revision; and the session's current plan is its last revision.
Writes still in flight when the process died may or may not be there, but if one is,
it is whole.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import psycopg
import pytest

from tests.servers import Server, base_env, create_token, manage
from tests.system.ledger import Ledger, check_history, stored_history

SESSIONS = 4
WRITERS = 12  # three agents per session, so that writers to one session race
KILL_AFTER = 60  # revisions stored before the kill
HTTP_TIMEOUT = 60.0
BURST_WITHIN = 300.0  # a deadline, generous: the machine is shared


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'db.sqlite3'}"
    else:
        yield request.getfixturevalue("postgres_url")


@contextmanager
def revision_counter(database_url: str) -> Iterator[Callable[[], int]]:
    """How many revisions the database holds, read beside the server (a second reader)."""
    sql = "SELECT count(*) FROM todoweb_revision"
    if database_url.startswith("sqlite"):
        db = sqlite3.connect(database_url.removeprefix("sqlite:///"), timeout=30, check_same_thread=False)
        try:
            yield lambda: db.execute(sql).fetchone()[0]
        finally:
            db.close()
    else:
        with psycopg.connect(database_url, autocommit=True) as pg:
            yield lambda: pg.execute(sql).fetchone()[0]


class Burst:
    """WRITERS agents writing in a loop until the server dies under them. It is killed
    as soon as the database holds KILL_AFTER revisions: right after a commit, when the
    writes just committed may not have been answered yet."""

    def __init__(self, server: Server, token: str, ledger: Ledger, count: Callable[[], int]) -> None:
        self.server = server
        self.token = token
        self.ledger = ledger
        self.count = count
        self.in_flight = 0
        self.in_flight_at_kill: int | None = None
        self.lost_in_flight: list[str] = []  # calls whose answer never came
        self.stopped = False

    async def run(self) -> None:
        limits = httpx.Limits(max_connections=WRITERS, max_keepalive_connections=WRITERS)
        headers = {"Authorization": f"Bearer {self.token}"}
        async with httpx.AsyncClient(
            base_url=self.server.url, headers=headers, timeout=HTTP_TIMEOUT, limits=limits
        ) as http:
            killer = asyncio.get_running_loop().run_in_executor(None, self.kill_when_stored)
            try:
                await asyncio.gather(killer, *(self.writer(http, f"crash-{n % SESSIONS}") for n in range(WRITERS)))
            finally:
                self.stopped = True  # a writer failed: the killer thread gives up

    def kill_when_stored(self) -> None:
        while self.count() < KILL_AFTER:
            if self.stopped:
                return
            assert self.server.process is not None and self.server.process.poll() is None, "the server died"
            time.sleep(0.001)  # polling: leave the writers the CPU
        self.in_flight_at_kill = self.in_flight
        self.server.kill()

    async def writer(self, http: httpx.AsyncClient, session: str) -> None:
        while True:
            write = self.ledger.new(session)
            self.in_flight += 1
            try:
                answer = await http.post(f"/api/v1/sessions/{session}/tool", json=write.body())
            except httpx.TransportError:
                # The server died with this call in flight: its fate is unknown.
                assert self.in_flight_at_kill is not None, f"{write.call_id} failed before the kill"
                self.lost_in_flight.append(write.call_id)
                return
            finally:
                self.in_flight -= 1
            assert answer.status_code == 200, (write.call_id, answer.status_code, answer.text)
            self.ledger.answered(write, answer.json())


def check_sqlite_file(url: str) -> None:
    """The file the crash left is a sound SQLite database."""
    with sqlite3.connect(url.removeprefix("sqlite:///")) as db:
        assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]


def test_writes_answered_before_a_sigkill_survive_it(database_url: str, tmp_path: Path) -> None:
    """Kill -9 the server mid-burst, start it again, read every session back through the
    API. Fails as: a write answered 200 that is missing or holds another list, a gap
    or a duplicate in the revision numbers, a revision with part of its list, or a
    session whose current plan is not its last revision."""
    env = base_env(DATABASE_URL=database_url, TODOWEB_RATE_LIMIT="100000")
    manage(env, "migrate")
    token = create_token(env)
    ledger = Ledger("crash")

    before = Server.serve(env, tmp_path / "before.log").start()
    try:
        with revision_counter(database_url) as count:
            burst = Burst(before, token, ledger, count)
            try:
                asyncio.run(asyncio.wait_for(burst.run(), BURST_WITHIN))
            except TimeoutError:
                raise AssertionError(f"the burst did not end within {BURST_WITHIN} s (a hang?)") from None
    finally:
        before.stop()  # if the test failed before the kill
    assert burst.in_flight_at_kill, "the kill hit no write in flight: not a kill mid-burst"
    if database_url.startswith("sqlite"):
        check_sqlite_file(database_url)

    with Server.serve(env, tmp_path / "after.log") as server:
        with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {token}"}, timeout=60) as http:
            histories = {f"crash-{n}": stored_history(http, f"crash-{n}") for n in range(SESSIONS)}
    for session, (current, revisions) in histories.items():
        check_history(ledger, session, current, revisions, all_stored=False)

    stored = sum(len(revisions) for _, revisions in histories.values())
    answered = len(ledger.answered_writes())
    print(
        f"\nSIGKILL on {database_url.split(':')[0]}: {answered} writes answered 200 before the kill, "
        f"{len(burst.lost_in_flight)} in flight, {stored - answered} of those stored"
    )
    assert stored >= KILL_AFTER
    assert answered <= stored <= answered + len(burst.lost_in_flight)
    assert "Traceback" not in server.output(), server.output()[-5000:]
