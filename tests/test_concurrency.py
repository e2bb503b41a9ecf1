"""Writers to one session are serialised: revisions 1..N, no gaps, no duplicates."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connection

from tests.conftest import Api
from todoweb.dialects import claude
from todoweb.models import Revision, Session
from todoweb.writes.tokens import token_create

WRITERS = 40


def write(token: str, n: int, key: str = "busy") -> int:
    try:
        todos = [{"content": f"step {n}", "status": "in_progress", "activeForm": f"doing {n}"}]
        return Api(token).call(key, "TodoWrite", {"todos": todos}, call_id=f"toolu_{n}").status_code
    finally:
        connection.close()


@pytest.mark.django_db(transaction=True)
def test_it_numbers_revisions_without_gaps_under_concurrent_writers(token):
    with ThreadPoolExecutor(max_workers=WRITERS) as pool:
        statuses = list(pool.map(lambda n: write(token, n), range(WRITERS)))
    assert statuses == [200] * WRITERS
    numbers = sorted(Revision.objects.values_list("number", flat=True))
    assert numbers == list(range(1, WRITERS + 1))
    session = Session.objects.with_current().get(key="busy")
    assert session.revision == WRITERS
    assert session.current == Revision.objects.get(number=WRITERS)


@pytest.mark.django_db(transaction=True)
def test_it_writes_a_repeated_call_once_under_concurrency(token):
    def same(_: int) -> int:
        try:
            todos = [{"content": "once", "status": "pending", "activeForm": "once"}]
            return Api(token).call("dup", "TodoWrite", {"todos": todos}, call_id="toolu_same").status_code
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=10) as pool:
        statuses = list(pool.map(same, range(10)))
    assert statuses == [200] * 10
    assert Revision.objects.count() == 1


@pytest.mark.django_db(transaction=True)
def test_it_creates_a_new_session_once_under_concurrent_first_writes(token):
    with ThreadPoolExecutor(max_workers=10) as pool:
        statuses = list(pool.map(lambda n: write(token, n, key="born"), range(10)))
    assert statuses == [200] * 10
    assert Session.objects.filter(key="born").count() == 1
    assert sorted(Revision.objects.values_list("number", flat=True)) == list(range(1, 11))


@pytest.mark.django_db(transaction=True)
def test_it_writes_another_projects_session_while_a_slow_call_runs(token, monkeypatch):
    """The dialect runs outside the write lock: on SQLite, where one writer at a time
    has the database, a slow call must not hold up anyone else's writes."""
    started, release = threading.Event(), threading.Event()
    real_call = claude.call

    def slow_call(tool, args, *rest, **options):
        if args.get("todos") and args["todos"][0]["content"] == "slow":
            started.set()
            assert release.wait(10)
        return real_call(tool, args, *rest, **options)

    monkeypatch.setattr(claude, "call", slow_call)
    _, other_token, _ = token_create(project_slug="other")

    def write_slow() -> int:
        try:
            todos = [{"content": "slow", "status": "pending", "activeForm": "slowly"}]
            return Api(token).call("slow", "TodoWrite", {"todos": todos}).status_code
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=1) as pool:
        slow = pool.submit(write_slow)
        assert started.wait(10)
        assert write(other_token, 1, key="quick") == 200
        assert not slow.done()
        release.set()
        assert slow.result(timeout=10) == 200
    assert Session.objects.get(key="quick").revision == 1
    assert Session.objects.get(key="slow").revision == 1


@pytest.mark.django_db(transaction=True)
def test_writes_run_in_the_database_threads_and_give_their_connections_back(token, settings, monkeypatch):
    """With TODOWEB_DB_THREADS > 1 a write runs in one of those threads, and its
    connection goes back to the pool (PostgreSQL) when the write is done."""
    from todoweb.web import recording

    settings.TODOWEB_DB_THREADS = 3
    threads = set()
    real = recording.record

    def spy(*args):
        threads.add(threading.current_thread().name)
        return real(*args)

    monkeypatch.setattr(recording, "record", spy)
    with ThreadPoolExecutor(max_workers=6) as pool:
        statuses = list(pool.map(lambda n: write(token, n, key=f"s{n % 3}"), range(12)))
    assert statuses == [200] * 12
    assert threads and all(name.startswith("todoweb-db") for name in threads)
    assert sorted(Revision.objects.values_list("number", flat=True)) == sorted([*range(1, 5)] * 3)
    if getattr(connection, "pool", None) is not None:
        stats = connection.pool.get_stats()
        # Only this test's own connection is out of the pool.
        assert stats["pool_size"] - stats["pool_available"] <= 1, stats


@pytest.mark.django_db(transaction=True)
def test_a_persons_edit_is_told_to_exactly_one_of_concurrent_agent_calls(token):
    """Reads and writes racing right after an edit: one of them tells the agent."""
    agent = Api(token)
    todos = [{"content": "Write the fix", "status": "in_progress", "activeForm": "Writing the fix"}]
    assert agent.call("told", "TodoWrite", {"todos": todos}).status_code == 200

    def call(n: int) -> str:
        try:
            if n % 2:
                answer = Api(token).call("told", "TodoRead", {})
            else:
                answer = Api(token).call("told", "TodoWrite", {"todos": todos}, call_id=f"toolu_{n}-{round_}")
            assert answer.status_code == 200, answer.content
            return answer.json()["reply"]["content"]
        finally:
            connection.close()

    for round_ in range(5):
        revision = agent.revision("told")
        note = f"Note {round_}"
        edited = agent.post(
            "/api/v1/sessions/told/edits",
            {"todos": [{"content": "Write the fix", "status": "in_progress"}], "note": note},
            headers={"If-Match": str(revision)},
        )
        assert edited.status_code == 200, edited.content
        with ThreadPoolExecutor(max_workers=6) as pool:
            replies = list(pool.map(call, range(6)))
        assert sum(f"The user's note: {note}" in reply for reply in replies) == 1, replies
