"""Where `in_database_thread` runs its work: under the server, in the process's
database thread, by the shortest way there; under a synchronous caller (a test's,
through async_to_sync), or with asgiref's fence shut, where asgiref decides."""

from __future__ import annotations

import asyncio
import contextvars
import threading

import pytest
from asgiref.sync import async_to_sync, sync_to_async

from tests.conftest import fast_path
from todoweb.store import database

# The work gives its thread's connection back as any database work does, which may
# touch the database.
pytestmark = pytest.mark.django_db

color: contextvars.ContextVar[str] = contextvars.ContextVar("color", default="none")


def where() -> tuple[int, str]:
    return threading.get_ident(), color.get()


def repaint() -> str:
    color.set("green")
    return color.get()


def fail() -> None:
    raise LookupError("nothing here")


@pytest.fixture(autouse=True)
def one_thread(settings):
    settings.TODOWEB_DB_THREADS = 1


@fast_path
async def test_under_the_server_it_runs_in_the_database_thread_with_the_task_s_context():
    assert database.asgiref_uses_its_one_thread()
    color.set("blue")
    thread, seen = await database.in_database_thread(where)
    assert (thread, seen) == (database.DATABASE_THREAD.thread.ident, "blue")
    assert await database.in_database_thread(repaint) == "green"
    assert color.get() == "blue"  # what the work set stays with it
    with pytest.raises(LookupError, match="nothing here"):
        await database.in_database_thread(fail)
    assert database.calls_in_flight() == 0


def test_under_a_synchronous_caller_it_runs_in_the_caller_s_thread():
    async def from_the_loop():
        return database.asgiref_uses_its_one_thread(), await database.in_database_thread(where)

    plain, (thread, _) = async_to_sync(from_the_loop)()
    assert not plain
    assert thread == threading.get_ident()


async def test_with_asgiref_s_fence_shut_it_goes_asgiref_s_own_way(settings):
    settings.TODOWEB_FAST_PATHS = False
    assert not database.asgiref_uses_its_one_thread()
    thread, _ = await database.in_database_thread(where)
    assert thread == await sync_to_async(threading.get_ident)()  # asgiref's thread-sensitive way
    assert thread != getattr(database.DATABASE_THREAD.thread, "ident", None)


async def test_work_whose_caller_was_cancelled_before_it_ran_is_not_run():
    ran: list[str] = []
    gate = threading.Event()
    blocking = asyncio.ensure_future(database.in_database_thread(gate.wait))  # the thread is busy
    await asyncio.sleep(0)
    waiting = asyncio.ensure_future(database.in_database_thread(ran.append, "late"))
    await asyncio.sleep(0)
    waiting.cancel()
    gate.set()
    assert await blocking is True
    assert await database.in_database_thread(ran.append, "next") is None
    assert ran == ["next"]


def test_the_thread_outlives_a_caller_whose_loop_closed():
    started, gate = threading.Event(), threading.Event()

    def blocked() -> bool:
        started.set()
        return gate.wait()

    async def call() -> bool:
        return await database.DATABASE_THREAD.call(blocked)

    loop = asyncio.new_event_loop()
    task = loop.create_task(call())
    loop.run_until_complete(asyncio.sleep(0))  # the task hands the call over
    assert started.wait(5)  # and the thread runs it
    task.cancel()
    loop.run_until_complete(asyncio.sleep(0))
    loop.close()
    gate.set()  # its answer has no loop to go to
    thread = database.DATABASE_THREAD.thread
    assert database.DATABASE_THREAD.submit(threading.get_ident).result(timeout=5) == thread.ident
