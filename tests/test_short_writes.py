"""On SQLite, an agent's tool call is written on the event loop's own thread, the
calls of one turn of the loop in one transaction that holds the write lock from its
start and commits once (runtime.loop_writes), when nothing else writes; with another
writer at work, of this process or another, it is written in the database thread as
before; a failing call is rolled back alone, and nothing is written twice."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from typing import Any

import httpx
import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import IntegrityError, OperationalError, connections, transaction
from django.db.transaction import TransactionManagementError

from tests.conftest import fast_path
from todoweb.live.events import session_group
from todoweb.models import Revision, Session
from todoweb.store import loop_writes
from todoweb.store.database import in_database_thread, write_lock
from todoweb.store.loop_writes import TURN, short_write
from todoweb.writes import revisions

pytestmark = [
    fast_path,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connections["default"].vendor != "sqlite", reason="writes on the event loop are SQLite's"),
]


def todo_write(session: str, call_id: str, status: str = "in_progress") -> dict[str, Any]:
    todos = [{"content": "Fix <b>it</b> 修复 🐛", "status": status, "activeForm": "Fixing"}]
    return {
        "session_id": session,
        "hook_event_name": "PostToolUse",
        "tool_name": "TodoWrite",
        "tool_use_id": call_id,
        "tool_input": {"todos": todos},
    }


class Hops:
    """Counts the calls handed to the database thread (`count`), and the waits there
    for what it had queued before them (`waits`)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = self.waits = 0

        async def counted(func, *args, **kwargs):  # noqa: ANN001, ANN202
            if func is loop_writes.nothing:
                self.waits += 1
            else:
                self.count += 1
            return await in_database_thread(func, *args, **kwargs)

        monkeypatch.setattr(loop_writes, "in_database_thread", counted)

    async def until(self, count: int) -> None:
        """Until that many writes have been handed over (each waits there)."""
        while self.count < count:
            await asyncio.sleep(0)


@pytest.fixture
def hops(monkeypatch) -> Hops:
    return Hops(monkeypatch)


async def post(agents_client: httpx.AsyncClient, token: str, body: dict[str, Any]) -> httpx.Response:
    return await agents_client.post(
        "/api/v1/hooks/claude-code", json=body, headers={"Authorization": f"Bearer {token}"}
    )


async def revisions_of(key: str) -> list[int]:
    return await in_database_thread(
        lambda: list(Revision.objects.filter(session__key=key).order_by("number").values_list("number", flat=True))
    )


async def test_a_tool_call_is_written_on_the_event_loop_and_shown_to_watchers(agents_client, token, hops):
    first = await post(agents_client, token, todo_write("loop", "toolu_1"))
    assert (first.status_code, hops.count) == (200, 0)
    assert await revisions_of("loop") == [1]  # committed: the database thread's connection sees it
    public_id = first.json()["data"]["session"]["id"]
    layer = get_channel_layer()
    channel = await layer.new_channel()
    await layer.group_add(session_group(public_id), channel)
    second = await post(agents_client, token, todo_write("loop", "toolu_2", "completed"))
    assert (second.status_code, hops.count) == (200, 0)
    frame = await layer.receive(channel)
    assert '"revision":2' in frame["text"] and "Fix <b>it</b> 修复 🐛" in frame["text"]


async def test_a_repeated_call_on_the_loop_is_answered_from_the_first(agents_client, token, hops):
    first = await post(agents_client, token, todo_write("again", "toolu_1"))
    again = await post(agents_client, token, todo_write("again", "toolu_1"))
    assert (again.status_code, again.headers["Idempotent-Replayed"], again.content) == (200, "true", first.content)
    assert (await revisions_of("again"), hops.count) == ([1], 0)


async def test_a_refused_call_on_the_loop_writes_nothing_and_is_answered_as_the_thread_answers(
    agents_client, token, hops, monkeypatch
):
    bad = todo_write("refused", "toolu_1", status="bogus")
    on_the_loop = await post(agents_client, token, bad)
    monkeypatch.setattr(loop_writes, "loop_may_use_database", lambda: False)
    in_the_thread = await post(agents_client, token, bad)
    assert on_the_loop.status_code == 422 and hops.count == 1
    assert (on_the_loop.headers, on_the_loop.content) == (in_the_thread.headers, in_the_thread.content)
    assert not await in_database_thread(Session.objects.filter(key="refused").exists)


async def test_a_call_failing_after_its_revision_is_rolled_back_whole(agents_client, token, monkeypatch):
    await post(agents_client, token, todo_write("rolled", "toolu_1"))
    append = revisions.append

    def append_then_fail(new):  # noqa: ANN001, ANN202
        append(new)
        raise RuntimeError("after the revision")

    monkeypatch.setattr(revisions, "append", append_then_fail)
    failed = await post(agents_client, token, todo_write("rolled", "toolu_2", "completed"))
    assert failed.status_code == 500
    assert await revisions_of("rolled") == [1]
    assert await in_database_thread(lambda: Session.objects.get(key="rolled").revision) == 1


async def test_with_another_writer_of_the_process_at_work_it_is_written_in_the_database_thread(
    agents_client, token, hops
):
    held, release = threading.Event(), threading.Event()

    def hold_the_write_lock() -> None:
        with write_lock():
            held.set()
            release.wait()

    holder = threading.Thread(target=hold_the_write_lock)
    holder.start()
    await asyncio.to_thread(held.wait)
    posting = asyncio.create_task(post(agents_client, token, todo_write("queued", "toolu_1")))
    await hops.until(1)  # handed to the database thread, which waits for the lock
    release.set()
    assert (await posting).status_code == 200
    holder.join()
    assert (await revisions_of("queued"), hops.count, hops.waits) == ([1], 1, 1)


async def test_with_the_database_thread_writing_it_waits_behind_it_and_is_written_on_the_loop(project, hops):
    writing, done = threading.Event(), threading.Event()

    def a_long_write() -> None:
        with write_lock():
            writing.set()
            done.wait()

    long_write = asyncio.create_task(in_database_thread(a_long_write))
    await asyncio.to_thread(writing.wait)
    posting = asyncio.create_task(short_write(lambda: Session.objects.create(project=project, key="after").key))
    while hops.waits < 1:
        await asyncio.sleep(0)  # it waits for the database thread's work...
    done.set()
    await long_write
    assert (await posting, hops.count) == ("after", 0)  # ...and is written on the loop


async def test_with_the_database_locked_by_another_connection_it_is_written_in_the_database_thread(
    agents_client, token, hops
):
    other = sqlite3.connect(connections["default"].settings_dict["NAME"], isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # SQLite's write lock, held by another connection
    posting = asyncio.create_task(post(agents_client, token, todo_write("locked", "toolu_1")))
    await hops.until(1)  # the loop did not wait for the lock: the database thread does
    other.execute("COMMIT")
    other.close()
    assert (await posting).status_code == 200
    assert (await revisions_of("locked"), hops.count, hops.waits) == ([1], 1, 1)
    # The loop thread's connection waits on a lock again as configured, outside its writes.
    with loop_writes.django_on_the_loop():
        db = connections["default"]
        assert db.connection.execute("PRAGMA busy_timeout").fetchone() == (
            db.settings_dict["OPTIONS"]["timeout"] * 1000,
        )


async def test_inside_a_transaction_of_the_loop_s_thread_it_is_written_in_the_database_thread(hops):
    opened = transaction.atomic()  # as a test's data would be
    with loop_writes.django_on_the_loop():
        opened.__enter__()
    try:
        assert (await short_write(lambda: "written"), hops.count) == ("written", 1)
    finally:
        with loop_writes.django_on_the_loop():
            opened.__exit__(None, None, None)
    assert (await short_write(lambda: "written"), hops.count) == ("written", 1)


def test_under_a_synchronous_caller_it_is_written_in_the_database_thread(hops):
    assert (async_to_sync(short_write)(lambda: "written"), hops.count) == ("written", 1)


class Commits:
    """Counts the turns' commits."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        commit = loop_writes.Turn.commit

        def counted(turn: loop_writes.Turn) -> None:
            self.count += 1
            commit(turn)

        monkeypatch.setattr(loop_writes.Turn, "commit", counted)


@pytest.fixture
def grouping(monkeypatch) -> None:
    """Calls in quick succession, as under load: a turn waits for the calls that come with it."""
    monkeypatch.setattr(loop_writes, "GROUPING_WINDOW", 3600.0)


async def test_a_call_that_comes_alone_is_committed_at_once(project, monkeypatch):
    commits = Commits(monkeypatch)
    monkeypatch.setattr(loop_writes, "GROUPING_WINDOW", 0.0)
    one, two = await asyncio.gather(
        short_write(lambda: Session.objects.create(project=project, key="one").key),
        short_write(lambda: Session.objects.create(project=project, key="two").key),
    )
    assert (one, two, commits.count) == ("one", "two", 2)


async def test_the_calls_of_one_turn_are_committed_once(project, monkeypatch, grouping):
    commits = Commits(monkeypatch)
    one, two = await asyncio.gather(
        short_write(lambda: Session.objects.create(project=project, key="one").key),
        short_write(lambda: Session.objects.create(project=project, key="two").key),
    )
    assert (one, two, commits.count) == ("one", "two", 1)
    assert await in_database_thread(lambda: sorted(Session.objects.values_list("key", flat=True))) == ["one", "two"]
    assert TURN.committed is None  # and the write lock is free again
    assert write_lock().acquire(blocking=False)
    write_lock().release()


async def test_a_call_that_fails_in_its_turn_is_rolled_back_alone(project, grouping):
    def fails() -> None:
        Session.objects.create(project=project, key="failed")
        raise RuntimeError("after its write")

    failed, kept = await asyncio.gather(
        short_write(fails),
        short_write(lambda: Session.objects.create(project=project, key="kept").key),
        return_exceptions=True,
    )
    assert isinstance(failed, RuntimeError) and kept == "kept"
    assert await in_database_thread(lambda: list(Session.objects.values_list("key", flat=True))) == ["kept"]


async def test_when_the_commit_fails_every_call_of_the_turn_fails_and_nothing_is_written(project, grouping):
    def dangling() -> None:
        # A session of a project that does not exist: SQLite checks the (deferred)
        # foreign key at COMMIT.
        Session.objects.create(project_id=project.pk + 1000, key="dangling")

    results = await asyncio.gather(
        short_write(dangling),
        short_write(lambda: Session.objects.create(project=project, key="other").key),
        return_exceptions=True,
    )
    assert [type(result) for result in results] == [IntegrityError, IntegrityError]
    assert not await in_database_thread(Session.objects.exists)


async def test_a_write_that_went_on_after_an_error_in_its_transaction_is_not_committed(project):
    def swallowing_an_error() -> str:
        Session.objects.create(project=project, key="kept")
        try:
            with transaction.atomic(savepoint=False):  # joins the call's transaction
                raise IntegrityError("a failed statement")
        except IntegrityError:
            pass  # and goes on, as if what it wrote would be kept
        return "answered"

    with pytest.raises(TransactionManagementError):
        await short_write(swallowing_an_error)
    assert not await in_database_thread(Session.objects.exists)


def test_busy_is_sqlite_s_lock_held_by_another_connection_only():
    def wrapped(cause: sqlite3.Error) -> OperationalError:
        error = OperationalError(str(cause))
        error.__cause__ = cause
        return error

    locked = sqlite3.OperationalError("database is locked")
    locked.sqlite_errorcode = sqlite3.SQLITE_BUSY
    full = sqlite3.OperationalError("database or disk is full")
    full.sqlite_errorcode = sqlite3.SQLITE_FULL
    assert loop_writes.busy(wrapped(locked))
    assert not loop_writes.busy(wrapped(full))
    assert not loop_writes.busy(OperationalError("no cause"))


@pytest.mark.parametrize("alone", [True, False], ids=["alone", "grouped"])
async def test_what_a_call_asks_for_once_committed_runs_with_the_event_loop_in_view(project, monkeypatch, alone):
    # Commit callbacks (publishing a write's frames, say) may need the loop: run while
    # it is hidden from Django's guard, they would take the loop's thread for one without.
    monkeypatch.setattr(loop_writes, "GROUPING_WINDOW", 0.0 if alone else 3600.0)
    seen: list[asyncio.AbstractEventLoop | None] = []

    def loop_in_view() -> None:
        try:
            seen.append(asyncio.get_running_loop())
        except RuntimeError:
            seen.append(None)

    def writes() -> str:
        transaction.on_commit(loop_in_view)
        return Session.objects.create(project=project, key="called-back").key

    assert await short_write(writes) == "called-back"
    assert seen == [asyncio.get_running_loop()]


async def test_what_a_failed_call_asked_for_once_committed_never_runs(project, grouping):
    ran: list[str] = []

    def fails() -> None:
        transaction.on_commit(lambda: ran.append("failed"))
        raise RuntimeError("after asking")

    def kept() -> str:
        transaction.on_commit(lambda: ran.append("kept"))
        return "kept"

    await asyncio.gather(short_write(fails), short_write(kept), return_exceptions=True)
    assert ran == ["kept"]


async def test_with_the_rate_limit_counted_in_redis_a_call_is_written_in_the_database_thread(
    agents_client, token, settings, monkeypatch
):
    # Counting a call is then a round trip to Redis: on the loop, inside the turn's
    # write, a Redis outage would hold every request for the client's timeout.
    from todoweb.web import auth

    settings.TODOWEB_RATE_LIMIT = 1000
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": "redis://x"}}
    counted_on: list[int] = []

    def get_usage(*args: Any, **kwargs: Any) -> dict[str, Any]:
        counted_on.append(threading.get_ident())
        return {"should_limit": False, "count": 1, "limit": 1000, "time_left": 60}

    monkeypatch.setattr(auth, "get_usage", get_usage)
    answer = await post(agents_client, token, todo_write("counted-in-redis", "toolu_r1"))
    assert answer.status_code == 200
    other_tool = todo_write("counted-in-redis", "toolu_r2") | {"tool_name": "Bash", "tool_input": {"command": "ls"}}
    assert (await post(agents_client, token, other_tool)).status_code == 200
    assert len(counted_on) == 2 and threading.get_ident() not in counted_on
    assert await revisions_of("counted-in-redis") == [1]
