"""PostgreSQL dropping the server's connections is not an outage (issue 9, faults): while
agents write, every backend of the server's database is terminated, a few times, as a
PostgreSQL restart or failover, or an idle-connection reaper, would do.

An agent is never answered 500: each call is answered 200, or 503 with Retry-After
("nothing was written, try again"); it sends the same call again (same call id) after
that wait. Once the drops stop, writes succeed again, and every write is stored
exactly once: none lost, none doubled by the retries.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psycopg

from tests.servers import Server, base_env, create_token, manage
from tests.system.ledger import Ledger, check_history, stored_history

SESSIONS = 3
WRITERS = 6
DROPS = 5
DROP_EVERY = 15  # answers 200 between two drops
# After the last drop, each writer stops after this many writes in a row answered 200
# at the first try: the server is healthy again.
HEALTHY_STREAK = 10
HTTP_TIMEOUT = 60.0
STREAM_WITHIN = 300.0  # a deadline for the whole stream, generous: the machine is shared
RETRY_AFTER_CAP = 1.0  # seconds: honour Retry-After, but never wait long in a test


TERMINATE = """
    SELECT pg_terminate_backend(pid) FROM pg_stat_activity
    WHERE datname = current_database() AND pid <> pg_backend_pid()
"""
# A backend of the server in the middle of a statement or a transaction: the moment to drop.
BUSY = """
    SELECT count(*) FROM pg_stat_activity
    WHERE datname = current_database() AND pid <> pg_backend_pid()
      AND state IN ('active', 'idle in transaction')
"""
# How long a drop waits for a backend caught mid-write before dropping them all anyway.
BUSY_WITHIN = 5.0


@dataclass
class Stream:
    """Agents writing while the database connections are dropped under them."""

    server: Server
    token: str
    database_url: str
    ledger: Ledger
    statuses: Counter = field(default_factory=Counter)
    answered: int = 0
    replayed: int = 0
    terminated: list[int] = field(default_factory=list)  # backends killed by each drop
    drops_done: asyncio.Event = field(default_factory=asyncio.Event)

    async def run(self) -> None:
        headers = {"Authorization": f"Bearer {self.token}"}
        async with httpx.AsyncClient(base_url=self.server.url, headers=headers, timeout=HTTP_TIMEOUT) as http:
            await asyncio.gather(
                self.drop_connections(),
                *(self.writer(http, f"drop-{n % SESSIONS}") for n in range(WRITERS)),
            )

    async def drop_connections(self) -> None:
        async with await psycopg.AsyncConnection.connect(self.database_url, autocommit=True) as admin:
            for drop in range(1, DROPS + 1):
                while self.answered < drop * DROP_EVERY:
                    await asyncio.sleep(0.01)
                # Preferably while a write is under way, not between two.
                deadline = asyncio.get_running_loop().time() + BUSY_WITHIN
                while asyncio.get_running_loop().time() < deadline:
                    if (await (await admin.execute(BUSY)).fetchone())[0]:
                        break
                rows = await (await admin.execute(TERMINATE)).fetchall()
                self.terminated.append(sum(1 for (done,) in rows if done))
        self.drops_done.set()

    async def writer(self, http: httpx.AsyncClient, session: str) -> None:
        streak = 0
        while streak < HEALTHY_STREAK:
            write = self.ledger.new(session)
            after_drops = self.drops_done.is_set()
            attempts = 0
            while True:
                attempts += 1
                try:
                    answer = await http.post(f"/api/v1/sessions/{session}/tool", json=write.body())
                except httpx.TransportError as exc:
                    raise AssertionError(f"{write.call_id}: no answer at all ({exc!r})") from exc
                self.statuses[answer.status_code] += 1
                if answer.status_code != 503:
                    break
                assert "Retry-After" in answer.headers, f"{write.call_id}: 503 without Retry-After"
                assert answer.json()["error"]["code"] == "unavailable", answer.text
                await asyncio.sleep(min(float(answer.headers["Retry-After"]), RETRY_AFTER_CAP))
            assert answer.status_code == 200, (write.call_id, answer.status_code, answer.text)
            self.ledger.answered(write, answer.json())
            self.answered += 1
            self.replayed += answer.headers.get("Idempotent-Replayed") == "true"
            streak = streak + 1 if after_drops and attempts == 1 else 0


def test_dropped_database_connections_answer_503_never_500_and_lose_nothing(postgres_url: str, tmp_path: Path) -> None:
    """Terminate the server's PostgreSQL backends five times during a stream of writes.
    Fails as: a 500 (or a connection closed without an answer), a 503 without
    Retry-After, writes that keep failing after the drops stopped (the pool keeps dead
    connections), or a write lost or stored twice."""
    env = base_env(DATABASE_URL=postgres_url, TODOWEB_RATE_LIMIT="100000")
    manage(env, "migrate")
    token = create_token(env)
    ledger = Ledger("drop")

    with Server.serve(env, tmp_path / "server.log", workers=2) as server:
        stream = Stream(server, token, postgres_url, ledger)
        try:
            asyncio.run(asyncio.wait_for(stream.run(), STREAM_WITHIN))
        except TimeoutError:
            raise AssertionError(
                f"the writers were not all healthy again within {STREAM_WITHIN} s: "
                f"answers {dict(stream.statuses)}, drops {stream.terminated}"
            ) from None
        with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {token}"}, timeout=60) as http:
            histories = {f"drop-{n}": stored_history(http, f"drop-{n}") for n in range(SESSIONS)}

    print(
        f"\nPostgreSQL drops: backends terminated {stream.terminated}; answers {dict(stream.statuses)}; "
        f"{stream.replayed} retries replayed a write that had been stored"
    )
    assert len(stream.terminated) == DROPS and all(stream.terminated), stream.terminated
    assert set(stream.statuses) <= {200, 503}, stream.statuses
    for session, (current, revisions) in histories.items():
        check_history(ledger, session, current, revisions, all_stored=True)
    assert sum(len(revisions) for _, revisions in histories.values()) == len(ledger.sent)
    log = server.output()
    assert " 500 " not in log and "Traceback" not in log, log[-5000:]
