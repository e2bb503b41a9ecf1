"""Where `in_database_thread` runs its work: under the server, in asgiref's one thread
for thread-sensitive code, by the shortest way there; under a synchronous caller (a
test's, through async_to_sync), in that caller's thread, as asgiref decides."""

from __future__ import annotations

import contextvars
import threading

import pytest
from asgiref.sync import SyncToAsync, async_to_sync

from todoweb.runtime import database

# The work gives its thread's connection back as any database work does, which may
# touch the database.
pytestmark = pytest.mark.django_db

color: contextvars.ContextVar[str] = contextvars.ContextVar("color", default="none")


def where() -> tuple[int, str]:
    return threading.get_ident(), color.get()


def thread_of_asgiref() -> int:
    return SyncToAsync.single_thread_executor.submit(threading.get_ident).result()


def repaint() -> str:
    color.set("green")
    return color.get()


def fail() -> None:
    raise LookupError("nothing here")


@pytest.fixture(autouse=True)
def one_thread(settings):
    settings.TODOWEB_DB_THREADS = 1


async def test_under_the_server_it_runs_in_asgiref_s_one_thread_with_the_task_s_context():
    assert database.asgiref_uses_its_one_thread()
    color.set("blue")
    thread, seen = await database.in_database_thread(where)
    assert (thread, seen) == (thread_of_asgiref(), "blue")
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
