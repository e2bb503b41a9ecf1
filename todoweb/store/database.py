"""How async code reaches the database: `in_database_thread`, for every route (the
tool endpoint, the hooks, the MCP server) and for the live sockets; on SQLite, the
agents' calls on the event loop's thread (`loop_reader` here, runtime.loop_writes).

Django runs an async view's synchronous code in one thread per process, so that
connections and transactions stay where they were opened. On PostgreSQL that one
thread is what limits the write path: two thirds of each write is spent waiting on
the database's round trips and its commit, one write at a time. With
`TODOWEB_DB_THREADS` above 1, work runs in one of that many threads, each with its
own connection from the pool, given back when the work ends, so that those waits
overlap. SQLite takes one writer at a time whatever the threads, so it keeps the one
thread.

The one thread is `DatabaseThread`, todoweb's own (Django's synchronous code called
from async code runs in asgiref's, with a connection of its own), and work goes to it
by the shortest way where asgiref would use its one thread: asgiref's own way (a shielded future,
the task's context copied to the thread and every asgiref Local copied back into the
task) was 15% of the CPU of a hook with nothing to tell, and left 0.5 KB of copied
context in every websocket's task; a ThreadPoolExecutor's future wrapped for the loop
took 110k instructions a hop, where the loop's own future resolved from the thread
takes 20k. Where asgiref would choose another thread (a synchronous caller waiting on
the loop, as a test is), or its fence is shut (todoweb.fences), asgiref's way is taken.

On SQLite, the agents' calls may skip the hop and run on the event loop's own thread
instead: the hop there and back costs ~80 us of CPU (two thread wake-ups, and the
interpreter's lock handed back and forth under load), and SQLite takes one writer at a
time, under that lock for most of its work, whichever thread writes. Their writes are
in runtime.loop_writes; here are `loop_may_use_database`, which both ask, and
`loop_reader`, for a read of a row or two by their indexes, from a read-only
connection of the loop thread's own (a hook with nothing to tell: 0.21 ms of CPU with
the hop, 0.12 ms without).

`write_lock`: on SQLite, every writer of a process (the database thread, the webhook
worker) queues on one lock before it writes.
"""

from __future__ import annotations

import asyncio
import contextvars
import queue
import sqlite3
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from contextlib import AbstractContextManager, nullcontext
from functools import cache
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from asgiref.sync import AsyncToSync, SyncToAsync, sync_to_async
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.db.backends.sqlite3.creation import DatabaseCreation

from todoweb import fences

P = ParamSpec("P")
R = TypeVar("R")


# Calls handed to the database threads and not done yet (changed on the event loop only).
_in_flight = 0


async def in_database_thread(func: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
    """`func(*args, **kwargs)` in a database thread."""
    global _in_flight
    _in_flight += 1
    try:
        threads = settings.TODOWEB_DB_THREADS
        if threads <= 1 and asgiref_uses_its_one_thread():
            # Where asgiref would run it, without its wrapping: in a copy of this task's
            # context, and nothing copied back into the task's.
            return await DATABASE_THREAD.call(releasing(func), *args, **kwargs)
        return await runner(func, threads)(*args, **kwargs)
    finally:
        _in_flight -= 1


def asgiref_uses_its_one_thread() -> bool:
    """Whether asgiref would run thread-sensitive code on this loop in its one thread
    for the process, as under the server: no synchronous caller waits on the loop for it
    (a test's, through async_to_sync) and no request has a thread of its own (Django's
    ThreadSensitiveContext). Asked of asgiref's private executors, behind their fence:
    without it, work goes asgiref's own way."""
    return (
        fences.fast("asgiref")
        and getattr(AsyncToSync.executors, "current", None) is None
        and SyncToAsync.thread_sensitive_context.get(None) is None
        and asyncio.get_running_loop() not in AsyncToSync.loop_thread_executors
    )


class DatabaseThread(Executor):
    """One thread that runs the work it is handed, one call at a time, in order:
    `submit` as any executor (asgiref's calls), `call` for the event loop, whose own
    future the thread resolves (no concurrent.futures.Future, no wrap_future, no
    idle-worker count: a ThreadPoolExecutor's bookkeeping in Python on every call)."""

    def __init__(self) -> None:
        self.work: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self.thread: threading.Thread | None = None
        self.starting = threading.Lock()

    def submit(self, fn: Callable[..., R], /, *args: Any, **kwargs: Any) -> Future[R]:
        future: Future[R] = Future()

        def run() -> None:
            if not future.set_running_or_notify_cancel():
                return
            try:
                result = fn(*args, **kwargs)
            except BaseException as error:
                future.set_exception(error)
            else:
                future.set_result(result)

        self.put(run)
        return future

    def call(self, func: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> asyncio.Future[R]:
        """`func(*args, **kwargs)` in the thread, in a copy of the calling task's context."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[R] = loop.create_future()
        context = contextvars.copy_context()

        def run() -> None:
            if future.cancelled():
                return  # as an executor's future cancelled before it ran
            try:
                result, error = context.run(func, *args, **kwargs), None
            except BaseException as raised:
                result, error = None, raised
            try:
                loop.call_soon_threadsafe(settle, future, result, error)
            except RuntimeError:
                pass  # the loop is closed: nobody waits

        self.put(run)
        return future

    def put(self, run: Callable[[], None]) -> None:
        if self.thread is None:
            with self.starting:
                if self.thread is None:
                    self.thread = threading.Thread(target=self.serve, name="todoweb-database", daemon=True)
                    self.thread.start()
        self.work.put(run)

    def serve(self) -> None:
        while (run := self.work.get()) is not None:
            run()
            del run  # what the call holds goes now, not when the next comes

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        if self.thread is not None:
            self.work.put(None)
            if wait:
                self.thread.join()


def settle(future: asyncio.Future, result: Any, error: BaseException | None) -> None:
    if future.cancelled():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)


# The process's database thread.
DATABASE_THREAD = DatabaseThread()


def calls_in_flight() -> int:
    """How many calls are in the database threads or queued for them: above the
    number of threads, requests are waiting for the database."""
    return _in_flight


@cache
def runner(func: Callable[P, R], threads: int) -> Callable[P, Awaitable[R]]:
    # Made once per function: wrapping costs more than a thread hop.
    if threads <= 1:
        return sync_to_async(releasing(func))
    return sync_to_async(releasing(func), thread_sensitive=False, executor=executor(threads))


@cache
def executor(threads: int) -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=threads, thread_name_prefix="todoweb-db")


@cache
def releasing(func: Callable[P, R]) -> Callable[P, R]:
    """`func`, then what Django does with a connection at the end of a request: a
    pooled one goes back to the pool, a broken one is discarded. (The agents' route
    sends no request_finished, which would do it in a hop of its own.) A connection
    inside a transaction opened around the call (a test's) is left as it is."""

    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return func(*args, **kwargs)
        finally:
            db = connections[DEFAULT_DB_ALIAS]  # looked up once: `connection` looks it up on every read
            if not db.in_atomic_block:
                db.close_if_unusable_or_obsolete()

    return run


# Each event loop thread's read-only connection, and the database file it reads.
_loop_readers = threading.local()


def loop_reader() -> sqlite3.Connection | None:
    """This thread's read-only connection to the SQLite database, for a read that may
    run on the event loop: a row or two by their indexes, which never waits (WAL: a
    reader does not wait for the writer, and a busy database raises sqlite3.Error at
    once rather than blocking the loop). Each statement sees what was committed
    before it. None: reads go to the database thread (PostgreSQL, an in-memory
    database, or a caller asgiref would not send to its one thread, such as a test
    whose data is in a transaction of its own)."""
    if not loop_may_use_database():
        return None
    name = connections.settings[DEFAULT_DB_ALIAS]["NAME"]
    if getattr(_loop_readers, "name", None) != name:
        if getattr(_loop_readers, "connection", None) is not None:
            _loop_readers.connection.close()  # a test's database, gone
        _loop_readers.connection = None
        uri = Path(name).absolute().as_uri() + "?mode=ro"
        _loop_readers.connection = sqlite3.connect(uri, uri=True, timeout=0, isolation_level=None)
        _loop_readers.name = name
    return _loop_readers.connection


def loop_may_use_database() -> bool:
    """Whether the event loop's thread may read and write the database itself: a
    SQLite file (not PostgreSQL, whose round trips would hold up the loop, nor an
    in-memory database, which is one connection's own), under the server (a caller
    asgiref would not send to its one thread, such as a test whose data is in a
    transaction of its own, keeps its thread)."""
    database = connections.settings[DEFAULT_DB_ALIAS]
    return (
        database["ENGINE"] == "django.db.backends.sqlite3"
        and not DatabaseCreation.is_in_memory_db(database["NAME"])
        and fences.fast("loop_writes")
        and asgiref_uses_its_one_thread()
    )


# SQLite lets one writer in at a time and makes the others sleep-and-retry with a
# growing back-off (1, 2, 5, 10, … ms: p99 over a second under 8 writers). Queueing
# this process's writers on a lock first keeps them in order and the waits short.
# Reentrant: a writer that holds it for its whole call writes under it too.
SQLITE_WRITER = threading.RLock()


def write_lock() -> AbstractContextManager:
    """Hold it around a write transaction (nothing to hold on PostgreSQL)."""
    return SQLITE_WRITER if connection.vendor == "sqlite" else nullcontext()
