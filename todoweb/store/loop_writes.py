"""On SQLite, the agents' calls written on the event loop's own thread, those of one
turn of the loop in one transaction (group commit): `short_write`.

An agent's tool call costs ~0.6 ms of CPU, most of it Python under the interpreter's
lock whichever thread runs it; sending it to the database thread and back cost ~80 us
more (two thread wake-ups, and under load the lock handed back and forth). So on
SQLite a call is written where its request is served, when nothing else writes:

- The first call of a turn of the loop opens a transaction that takes the process's
  write lock without blocking and SQLite's without waiting (BEGIN IMMEDIATE with the
  busy timeout off). If either is held, the call waits for the database thread to
  finish what is queued there (the usual holder) and tries again; held still (by the
  webhook worker, another process), it goes to the database thread, as on PostgreSQL.
- The calls of the same turn (requests that arrived together) join it, each in a
  savepoint of its own: a call that fails is rolled back alone.
- At the loop's next turn the transaction commits once for all of them, and only
  then is each call answered: BEGIN and COMMIT (~110 us, most of it the WAL's page
  writes) are paid once per turn, not once per call (6.6 calls a commit on average
  under 16 clients). If the commit fails, every call of the turn fails with its error,
  nothing of them written. A call that comes alone (more than GROUPING_WINDOW after
  the last commit) commits at once: waiting a turn would only delay its answer.

Django refuses its database API on a thread that runs an event loop
(SynchronousOnlyOperation), a guard against blocking the loop by mistake. Here it is
meant: a call holds the loop for its own CPU time only (~5 ms for the largest call
accepted, 100 steps in a 256 KB body), never for a lock. The guard looks for a running
loop in the thread; the loop is hidden from it while a call runs.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import sqlite3
from asyncio import events
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, ParamSpec, TypeVar

from django.db import DEFAULT_DB_ALIAS, OperationalError, connections, transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.transaction import TransactionManagementError

from todoweb.store.database import SQLITE_WRITER, in_database_thread, loop_may_use_database

logger = logging.getLogger(__name__)

P = ParamSpec("P")
R = TypeVar("R")


async def short_write(func: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
    """`func(*args, **kwargs)`, a write of a fraction of a millisecond (an agent's tool
    call), once committed: on SQLite on the event loop's thread when nothing else
    writes, in the turn's transaction; else in a database thread."""
    if loop_may_use_database():
        for attempt in range(2):
            if (committed := TURN.join()) is not None:
                try:
                    written = TURN.run(func, *args, **kwargs)
                finally:
                    if not TURN.grouping:
                        TURN.commit()  # a call that came alone, written or rolled back
                # Shielded: a caller that goes away does not cancel the other calls' commit.
                await asyncio.shield(committed)
                return written
            if attempt == 0:
                # Another writer holds the lock, most often the database thread: wait
                # behind its work, then try again, rather than add to it (calls sent
                # there because it was busy kept it busy, and every call after them).
                await in_database_thread(nothing)
    return await in_database_thread(func, *args, **kwargs)


def nothing() -> None:
    """Run in the database thread, to wait for what is queued there before it."""


# A turn opened this soon after the last commit (calls coming in quick succession) waits
# for the loop's next turn, for the calls that came with it; one opened later commits
# its call at once, adding no wait (a lone writer, a loop busy sending to watchers).
GROUPING_WINDOW = 0.002


class Turn:
    """The write transaction of the calls of one turn of the event loop."""

    def __init__(self) -> None:
        self.atomic: transaction.Atomic | None = None
        self.committed: asyncio.Future[None] | None = None
        self.calls = 0
        self.grouping = False  # whether other calls may join before the commit
        self.committed_at = float("-inf")  # on the loop's clock

    def join(self) -> asyncio.Future[None] | None:
        """The open transaction's commit, to await once the call is written; opened
        (and its commit scheduled for the loop's next turn) by the turn's first call.
        None: another writer holds the write lock, or this thread's connection is in a
        transaction of its own (a test's)."""
        if self.committed is not None:
            return self.committed
        if not SQLITE_WRITER.acquire(blocking=False):
            return None
        try:
            with django_on_the_loop():
                db = connections[DEFAULT_DB_ALIAS]
                if db.in_atomic_block:
                    SQLITE_WRITER.release()
                    return None
                atomic = transaction.atomic()
                with not_waiting(db):
                    atomic.__enter__()  # BEGIN IMMEDIATE
        except OperationalError as error:
            SQLITE_WRITER.release()
            if busy(error):
                return None  # nothing begun
            raise
        except BaseException:
            SQLITE_WRITER.release()
            raise
        loop = asyncio.get_running_loop()
        self.atomic, self.committed = atomic, loop.create_future()
        self.committed.add_done_callback(retrieved)
        self.grouping = loop.time() - self.committed_at < GROUPING_WINDOW
        if self.grouping:
            loop.call_soon(self.commit)
        return self.committed

    def run(self, func: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
        """`func(*args, **kwargs)` in the open transaction, in a savepoint of its own,
        and in a copy of the task's context: rolled back alone if it raises (and if it
        went on after an error it caught in its transaction, which then raises)."""
        self.calls += 1
        savepoint = f"call{self.calls}"
        with django_on_the_loop():
            db = connections[DEFAULT_DB_ALIAS]
            db.connection.execute(f"SAVEPOINT {savepoint}")
            callbacks = len(db.run_on_commit)
            try:
                context = contextvars.copy_context()
                context.run(_in_turn.set, True)
                written = context.run(func, *args, **kwargs)
                if db.needs_rollback:
                    raise TransactionManagementError("The write failed and was rolled back")
            except BaseException:
                db.connection.execute(f"ROLLBACK TO {savepoint}")
                db.connection.execute(f"RELEASE {savepoint}")
                db.needs_rollback = False
                del db.run_on_commit[callbacks:]  # what it asked for once committed
                raise
            db.connection.execute(f"RELEASE {savepoint}")
            return written

    def commit(self) -> None:
        """COMMIT, at the loop's turn after the transaction opened (or at once, for a
        call that came alone); each call's caller goes on with its answer (or the
        commit's error)."""
        atomic, committed = self.atomic, self.committed
        assert atomic is not None and committed is not None
        self.atomic, self.committed, self.calls = None, None, 0
        callbacks: list[tuple[Any, Callable[[], object], bool]] = []
        try:
            with django_on_the_loop():
                db = connections[DEFAULT_DB_ALIAS]
                # What the calls asked for once committed runs below, with the loop in
                # view and the write lock free, not by Django while the loop is hidden.
                callbacks, db.run_on_commit = db.run_on_commit, []
                try:
                    atomic.__exit__(None, None, None)  # rolled back if COMMIT fails
                finally:
                    db.close_if_unusable_or_obsolete()
        except Exception as error:
            committed.set_exception(error)
        else:
            committed.set_result(None)
        finally:
            SQLITE_WRITER.release()
            self.committed_at = committed.get_loop().time()
        if committed.exception() is None:
            run_on_commit(callbacks)


def run_on_commit(callbacks: list[tuple[Any, Callable[[], object], bool]]) -> None:
    """A committed turn's on_commit callbacks, as Django runs them: in order, a robust
    one's error logged; here any error is logged, the commit being done."""
    for _savepoints, callback, robust in callbacks:
        try:
            callback()
        except Exception:
            logger.exception("A callback of a committed write failed (%s)", "robust" if robust else "not robust")


def retrieved(committed: asyncio.Future[None]) -> None:
    """A commit's error counts as seen even when every call of the turn failed first."""
    if not committed.cancelled():
        committed.exception()


# The event loop thread's turn (one loop per server process).
TURN = Turn()

# Set in the context of a call the turn's transaction runs.
_in_turn: contextvars.ContextVar[bool] = contextvars.ContextVar("in_turn", default=False)


def in_a_turn() -> bool:
    """Whether this code runs in a call of a turn's transaction: one that holds
    SQLite's write lock from its start, where a write needs no savepoint of its own
    (the call has one)."""
    return _in_turn.get()


@contextmanager
def django_on_the_loop() -> Iterator[None]:
    """Django's database API on the event loop's thread: the running loop hidden from
    Django's guard (in this thread only). Its connection is then the thread's own."""
    loop = events._get_running_loop()
    events._set_running_loop(None)
    try:
        yield
    finally:
        events._set_running_loop(loop)


@contextmanager
def not_waiting(db: BaseDatabaseWrapper) -> Iterator[None]:
    """SQLite's busy timeout off on this connection: a lock another connection holds is
    an error at once (`busy`), not a wait of up to the timeout."""
    db.ensure_connection()
    db.connection.execute("PRAGMA busy_timeout = 0")
    try:
        yield
    finally:
        if db.connection is not None:
            timeout = db.settings_dict["OPTIONS"].get("timeout", 5)  # sqlite3's default
            db.connection.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")


def busy(error: OperationalError) -> bool:
    """Whether SQLite refused for a lock another connection holds (SQLITE_BUSY)."""
    code = getattr(error.__cause__, "sqlite_errorcode", None)
    return code is not None and code & 0xFF == sqlite3.SQLITE_BUSY
