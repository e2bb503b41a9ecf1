"""The webhook worker: a thread in every server process that queues the first task of
each new delivery (delivery.queue_new) and runs the webhooks queue with
django-tasks-db's own worker (`db_worker`'s `Worker`, one task at a time while any is
due). Started once per process, lazily, by the ASGI application's first call
(asgi.py), however the application is served; TODOWEB_WEBHOOK_WORKER=0 turns it off
where `manage.py webhook_worker` runs the same loop apart.

Between batches it checks for work once a second (two indexed reads), or at once when a
write of this process made a delivery (`wake`).

Deliveries give way to agents' writes: before each piece of work (queueing a few tasks,
or claiming and running one), while requests wait for this process's database threads
(it is saturated), the worker waits long enough that its work takes at most SHARE of
the process's CPU. Under a burst of writes deliveries slow down and catch up once it
passes; the writes keep their pace (bench/webhooks.py). A process that is busy but not
saturated delivers at once. On SQLite its writes queue on the process's write lock with the
agents' writes (rather than meeting them in SQLite's sleep-and-retry).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from asgiref.sync import markcoroutinefunction
from django.conf import settings
from django.db import DatabaseError, close_old_connections, connection
from django.db.models import QuerySet
from django.utils.crypto import get_random_string

from todoweb.logs import ThrottledLogger
from todoweb.store.database import calls_in_flight, write_lock

if TYPE_CHECKING:
    from django_tasks_db.management.commands.db_worker import Worker

logger = logging.getLogger(__name__)
# The database out of reach (a restart, a dropped connection): one line a minute, no traceback.
database_down_logger = ThrottledLogger(__name__, every=60)

POLL_SECONDS = 1.0
# While this process has database work of requests under way (in its database threads
# or waiting for them), the worker's pieces of work take at most SHARE of its CPU: each
# waits for what the last one took × (1/SHARE − 1), MAX_GIVE_WAY seconds at most. (Giving
# way only while requests queued for the threads cost a saturated process 6-7% of its
# writes once a write took 2 ms: between two writes the worker took its turns whole.)
SHARE = 0.005
MAX_GIVE_WAY = 2.0
# New deliveries given their task per piece of work.
QUEUE_BATCH = 1

_wake = threading.Event()
_started = False
_start_lock = threading.Lock()
_stop = threading.Event()


def wake() -> None:
    """A task was queued: look now rather than at the next poll."""
    _wake.set()


class Turns:
    """The worker's pieces of work, each after giving way to this process's writes."""

    def __init__(self) -> None:
        self.spent = 0.0  # the CPU seconds the last piece took

    @contextmanager
    def turn(self) -> Iterator[None]:
        if calls_in_flight():
            # One sleep, not a poll: each wake-up takes the GIL from the writers.
            time.sleep(min(self.spent * (1 / SHARE - 1), MAX_GIVE_WAY))
        started = time.thread_time()
        try:
            yield
        finally:
            self.spent = time.thread_time() - started


def ready() -> QuerySet:
    """The webhooks queue's tasks due now."""
    from django_tasks_db.models import DBTaskResult

    from todoweb.webhooks.delivery import QUEUE

    return DBTaskResult.objects.ready().filter(queue_name=QUEUE, backend_name="default")


def due() -> bool:
    return ready().exists()


def work(runner: Worker, turns: Turns) -> bool:
    """Queue the task of a new delivery (QUEUE_BATCH of them), then claim and run one
    due task, each in a turn (and, on SQLite, holding the process's write lock while it
    writes). False when there was nothing to do."""
    from django_tasks_db.utils import exclusive_transaction

    from todoweb.webhooks.delivery import queue_new

    with turns.turn():
        queued = queue_new(QUEUE_BATCH) > 0
    if not due():
        return queued
    with turns.turn():
        with write_lock(), exclusive_transaction():
            task = ready().get_locked()  # skips rows another process holds (PostgreSQL)
            if task is not None:
                task.claim(runner.worker_id)
        if task is not None:
            runner.run_task(task)
    return queued or task is not None


def task_runner(worker_id: str) -> Worker:
    """django-tasks-db's worker over the webhooks queue, for running a claimed task as
    its own loop does."""
    from django_tasks_db.management.commands.db_worker import Worker

    from todoweb.webhooks.delivery import QUEUE

    return Worker(
        queue_names=[QUEUE],
        interval=0,
        batch=True,
        backend_name="default",
        startup_delay=False,
        max_tasks=None,
        worker_id=worker_id,
        excluded_queue_names=[],
    )


def run() -> None:
    from todoweb.webhooks import idle

    runner = task_runner("todoweb-" + get_random_string(16))
    turns = Turns()
    idle_scheduled = False
    while not _stop.is_set():
        try:
            if not idle_scheduled:
                idle.ensure()  # until it succeeds: the database may be down at start
                idle_scheduled = True
            while not _stop.is_set() and work(runner, turns):
                pass
        except DatabaseError as exc:
            database_down_logger.warning("Webhook deliveries wait for the database", error=exc)
            connection.close()  # a broken connection is not used again
        except Exception:
            logger.exception("The webhook worker failed; it goes on")
        finally:
            close_old_connections()
        _wake.wait(POLL_SECONDS)
        _wake.clear()
    connection.close()


def stop() -> None:
    """End the worker's loop after its current piece of work."""
    _stop.set()
    _wake.set()


def start() -> bool:
    """Start this process's worker thread, once (False: it is off, or started already)."""
    global _started
    if _started or not settings.TODOWEB_WEBHOOK_WORKER:
        return False
    with _start_lock:
        if _started:
            return False
        _started = True
    threading.Thread(target=run, name="todoweb-webhooks", daemon=True).start()
    return True


def started_by(application):
    """The ASGI application, starting the worker on its first call. It returns the
    application's coroutine rather than awaiting it: a websocket keeps no frame of it
    for its life. It is marked a coroutine function, as servers tell an ASGI 3
    application by that."""

    @markcoroutinefunction
    def app(scope, receive, send):
        if not _started:
            start()
        return application(scope, receive, send)

    return app
