"""The webhook worker: a thread in every server process that claims due tasks of the
webhooks queue (queueing a new delivery's first task as it claims it) and hands each
to a small pool of threads (TODOWEB_WEBHOOK_CONCURRENCY) that runs it as
django-tasks-db's own worker does (`db_worker`'s `Worker.run_task`). Started once per
process, lazily, by the ASGI application's first call (asgi.py), however the
application is served; TODOWEB_WEBHOOK_WORKER=0 turns it off where `manage.py
webhook_worker` runs the same loop apart.

No receiver can hold up another's deliveries: each attempt ends within its deadline
(network.py), and the claimer starts one only where there is room: at most one
attempt in flight per endpoint (so an endpoint gets a session's events in order) and
at most half the pool per project. It picks the earliest due delivery whose endpoint
and project have room (in SQL, the busy ones excluded) and claims that delivery's
task; a slow, silent or dripping receiver holds its own endpoint's slot, and a
project with many such endpoints half the pool at most.

Between batches it checks for work once a second, or at once when a write of this
process made a delivery or an attempt ended (`wake`).

Deliveries give way to agents' writes: while requests wait for this process's
database threads, the claimer waits before each piece of work (queueing a task,
claiming one) long enough that the piece takes at most SHARE of the process's CPU,
and each thread of the pool, after an attempt, as long again for the attempt's CPU
before giving back its slot (so that pause holds up only that endpoint and its
project). Under a burst of writes deliveries slow down and catch up once it passes; the
writes keep their pace (bench/webhooks.py). A process that is busy but not saturated
delivers at once. On SQLite its writes queue on the process's write lock with the
agents' writes (rather than meeting them in SQLite's sleep-and-retry).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from asgiref.sync import markcoroutinefunction
from django.conf import settings
from django.db import DatabaseError, close_old_connections, connection
from django.db.models import QuerySet
from django.utils import timezone
from django.utils.crypto import get_random_string

from todoweb import store
from todoweb.logs import ThrottledLogger

if TYPE_CHECKING:
    from django_tasks_db.management.commands.db_worker import Worker
    from django_tasks_db.models import DBTaskResult

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
# Due deliveries looked at per claim (the earliest of each endpoint that has room).
CANDIDATES = 50

_wake = threading.Event()
_started = False
_start_lock = threading.Lock()
_stop = threading.Event()


def wake() -> None:
    """A task was queued: look now rather than at the next poll."""
    _wake.set()


class Turns:
    """The claimer's pieces of work, each after giving way to this process's writes."""

    def __init__(self) -> None:
        self.spent = 0.0  # the CPU seconds the last piece took

    @contextmanager
    def turn(self) -> Iterator[None]:
        if store.busy():
            # One sleep, not a poll: each wake-up takes the GIL from the writers.
            time.sleep(give_way(self.spent))
        started = time.thread_time()
        try:
            yield
        finally:
            self.spent = time.thread_time() - started


def give_way(spent: float) -> float:
    return min(spent * (1 / SHARE - 1), MAX_GIVE_WAY)


def ready() -> QuerySet:
    """The webhooks queue's tasks due now."""
    from django_tasks_db.models import DBTaskResult

    from todoweb.webhooks.delivery import QUEUE

    return DBTaskResult.objects.ready().filter(queue_name=QUEUE, backend_name="default")


def due() -> bool:
    """A task due, or a delivery not queued yet (both read from indexes)."""
    from todoweb.models import WebhookDelivery

    return ready().exists() or WebhookDelivery.objects.filter(task_id="").exists()


@dataclass(frozen=True)
class Job:
    """A claimed task and what it holds: its delivery's endpoint and project (None for
    the idle check, or a task with no delivery to make)."""

    task: DBTaskResult
    endpoint_id: int | None = None
    project_id: int | None = None


class Pool:
    """The threads attempts run in, and what is in flight: at most one attempt per
    endpoint, at most `per_project` per project, `size` in all."""

    def __init__(self, size: int) -> None:
        self.size = max(1, size)
        self.per_project = max(1, self.size // 2)
        self.lock = threading.Lock()
        self.in_flight: dict[str, Job] = {}
        self.executor: ThreadPoolExecutor | None = None

    def room(self) -> bool:
        with self.lock:
            return len(self.in_flight) < self.size

    def busy(self) -> tuple[set[int], set[int]]:
        """The endpoints with an attempt in flight, and the projects with no room left."""
        with self.lock:
            jobs = list(self.in_flight.values())
        endpoints = {job.endpoint_id for job in jobs if job.endpoint_id is not None}
        projects = Counter(job.project_id for job in jobs if job.project_id is not None)
        return endpoints, {project for project, count in projects.items() if count >= self.per_project}

    def claim(self, worker_id: str) -> Job | None:
        """Claim the next task there is room for: the idle check (or a task whose
        delivery is gone) first, then the earliest due delivery whose endpoint and
        project have room. What to claim is read without a lock; each claim holds the
        process's write lock (SQLite) and a row lock (PostgreSQL, skipping rows another
        process holds) for its own two statements only, so that agents' writes do not
        wait while the worker looks."""
        from todoweb.models import WebhookDelivery
        from todoweb.webhooks.delivery import DELIVER_PATH

        if ready().exclude(task_path=DELIVER_PATH).exists():
            job = self.locked(worker_id, lambda: ready().exclude(task_path=DELIVER_PATH).get_locked())
            if job is not None:
                return job
        busy_endpoints, full_projects = self.busy()
        due = (
            WebhookDelivery.objects.filter(status=WebhookDelivery.Status.PENDING, next_attempt_at__lte=timezone.now())
            .exclude(endpoint_id__in=busy_endpoints)
            .exclude(endpoint__project_id__in=full_projects)
            .order_by("next_attempt_at", "id")
            .values_list("pk", "message_id", "task_id", "endpoint_id", "endpoint__project_id")[:CANDIDATES]
        )
        tried: set[int] = set()
        for pk, message_id, task_id, endpoint_id, project_id in due:
            if endpoint_id in tried:
                continue  # its earlier delivery is not ours to attempt now: keep the order
            tried.add(endpoint_id)
            if task_id:
                job = self.locked(worker_id, lambda task_id=task_id: ready().filter(id=task_id).get_locked())
            else:
                job = self.locked(worker_id, lambda pk=pk, message_id=message_id: first_task(pk, message_id))
            if job is not None:
                return Job(job.task, endpoint_id, project_id)
        # A delivery's task that no pending delivery names (its endpoint deleted, a
        # stray copy): it runs, finds nothing to do, and leaves the queue.
        waiting = [str(pk) for pk in ready().filter(task_path=DELIVER_PATH).values_list("id", flat=True)[:CANDIDATES]]
        if waiting:
            named = set(
                WebhookDelivery.objects.filter(status=WebhookDelivery.Status.PENDING, task_id__in=waiting).values_list(
                    "task_id", flat=True
                )
            )
            for task_id in waiting:
                if task_id not in named:
                    job = self.locked(worker_id, lambda task_id=task_id: ready().filter(id=task_id).get_locked())
                    if job is not None:
                        return job
        return None

    @staticmethod
    def locked(worker_id: str, find: Callable[[], DBTaskResult | None]) -> Job | None:
        """The task `find` returns, claimed in a transaction of its own (None: another
        worker took it meanwhile)."""
        with store.atomic_write(exclusive=True):
            task = find()
            if task is None:
                return None
            task.claim(worker_id)
        return Job(task)

    def start(self, runner: Worker, job: Job) -> None:
        with self.lock:
            self.in_flight[str(job.task.id)] = job
            if self.executor is None:
                self.executor = ThreadPoolExecutor(self.size, thread_name_prefix="todoweb-webhook")
        self.executor.submit(self.run, runner, job)

    def run(self, runner: Worker, job: Job) -> None:
        started = time.thread_time()
        try:
            runner.run_task(job.task)
        except DatabaseError as exc:
            database_down_logger.warning("Webhook deliveries wait for the database", error=exc)
            connection.close()
        except Exception:
            logger.exception("A webhook attempt failed; the worker goes on")
        finally:
            close_old_connections()
            if store.busy():
                # The attempt's CPU is paid for here, holding its own endpoint's and
                # project's slot: a busy endpoint's pauses hold up no other endpoint.
                time.sleep(give_way(time.thread_time() - started))
            with self.lock:
                self.in_flight.pop(str(job.task.id), None)
            wake()  # room for the next

    def shutdown(self) -> None:
        """Wait for the attempts in flight (each ends within its deadline)."""
        if self.executor is not None:
            self.executor.shutdown(wait=True)


def first_task(pk: int, message_id: str) -> DBTaskResult | None:
    """Queue a new delivery's first task, to be claimed at once (in the caller's
    transaction); None when another worker queued it meanwhile (it keeps that task)."""
    from django.db import transaction
    from django_tasks_db.models import DBTaskResult

    from todoweb.models import WebhookDelivery
    from todoweb.webhooks.delivery import deliver

    with transaction.atomic():
        queued = deliver.enqueue(message_id)
        if not WebhookDelivery.objects.filter(pk=pk, task_id="").update(task_id=str(queued.id)):
            transaction.set_rollback(True)
            return None
    return DBTaskResult.objects.get(id=queued.id)


def work(runner: Worker, turns: Turns, pool: Pool) -> bool:
    """Claim the next due task there is room for and start it in the pool, in a turn.
    False when there was nothing to do (or no room)."""
    if not pool.room() or not due():
        return False
    with turns.turn():
        job = pool.claim(runner.worker_id)
    if job is not None:
        pool.start(runner, job)
    return job is not None


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
    pool = Pool(settings.TODOWEB_WEBHOOK_CONCURRENCY)
    idle_scheduled = False
    while not _stop.is_set():
        try:
            if not idle_scheduled:
                idle.ensure()  # until it succeeds: the database may be down at start
                idle_scheduled = True
            while not _stop.is_set() and work(runner, turns, pool):
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
    pool.shutdown()
    connection.close()


def stop() -> None:
    """End the worker's loop after its current piece of work and the attempts in flight."""
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
