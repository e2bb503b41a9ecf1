"""The only code that touches the database's connections, cursors, transactions and threads: the
process's database threads (database.py), the write path's own SQL (sql.py) and, on SQLite, the agents'
calls written on the event loop's thread (loop_writes.py).

The rest of todoweb asks it for three things: `run` (synchronous database work from async code, in the
process's database thread), `write` (an agent's call written as one short transaction: on SQLite on the
event loop's thread when it can, committed with the turn's other calls), and `atomic_write` (a write
transaction from synchronous code). How each is done on SQLite or PostgreSQL stays in here.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.db import transaction

from todoweb.store.database import calls_in_flight as busy
from todoweb.store.database import in_database_thread as run
from todoweb.store.database import write_lock
from todoweb.store.loop_writes import in_a_turn
from todoweb.store.loop_writes import short_write as write

__all__ = ["atomic_write", "busy", "run", "write"]


@contextmanager
def atomic_write(*, exclusive: bool = False) -> Iterator[None]:
    """A write transaction. On SQLite it holds the process's write lock, so that writers
    queue in order rather than meet in SQLite's sleep-and-retry; `exclusive` begins it
    with SQLite's lock taken too (BEGIN EXCLUSIVE: a read that decides a write, such as
    claiming a queued task, then sees no other process's write before its own). Inside
    a call written on the event loop it adds no savepoint: that call's transaction holds
    SQLite's write lock from its start and the call has a savepoint of its own, where
    whatever fails rolls back the whole call."""
    if exclusive:
        from django_tasks_db.utils import exclusive_transaction

        with write_lock(), exclusive_transaction():
            yield
        return
    with write_lock(), transaction.atomic(savepoint=not in_a_turn()):
        yield
