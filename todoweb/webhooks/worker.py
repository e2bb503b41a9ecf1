"""The in-process worker: a thread in every server process that runs the webhooks
queue with django-tasks-db's own worker (`db_worker`'s `Worker`, one task at a time
while any is due). Started once per process, lazily, by the ASGI
application's first call (asgi.py), however the application is served;
TODOWEB_WEBHOOK_WORKER=0 turns it off where `manage.py db_worker --queue-name webhooks`
runs apart.

Between batches it checks for due tasks once a second (one indexed read), or at once
when a write of this process queued a delivery (`wake`).

Deliveries give way to agents' writes: before claiming each, the worker waits while this
process is writing (a write in the last QUIET seconds), for at most GIVE_WAY seconds.
Under a burst of writes deliveries slow down to about 1 / GIVE_WAY a second and catch
up once it passes; the writes keep their pace (bench/webhooks.py).
"""

from __future__ import annotations

import logging
import threading
import time

from django.conf import settings
from django.db import DatabaseError, close_old_connections, connection
from django.utils.crypto import get_random_string

from todoweb.runtime.logs import ThrottledLogger

logger = logging.getLogger(__name__)
# The database out of reach (a restart, a dropped connection): one line a minute, no traceback.
database_down_logger = ThrottledLogger(__name__, every=60)

POLL_SECONDS = 1.0
# A delivery waits while the process wrote within QUIET seconds, GIVE_WAY seconds at most.
QUIET = 0.02
GIVE_WAY = 0.25

_last_write = 0.0

_wake = threading.Event()
_started = False
_start_lock = threading.Lock()
_stop = threading.Event()


def wake() -> None:
    """A task was queued: look now rather than at the next poll."""
    _wake.set()


def wrote() -> None:
    """This process wrote an agent's revision (deliveries give way to writes)."""
    global _last_write
    _last_write = time.monotonic()


def give_way() -> None:
    deadline = time.monotonic() + GIVE_WAY
    while time.monotonic() - _last_write < QUIET and time.monotonic() < deadline:
        time.sleep(QUIET)


def due() -> bool:
    from django_tasks_db.models import DBTaskResult

    from todoweb.webhooks.delivery import QUEUE

    return DBTaskResult.objects.ready().filter(queue_name=QUEUE, backend_name="default").exists()


def run() -> None:
    from django_tasks_db.management.commands.db_worker import Worker

    from todoweb.webhooks import idle
    from todoweb.webhooks.delivery import QUEUE

    worker_id = "todoweb-" + get_random_string(16)
    idle_scheduled = False
    while not _stop.is_set():
        try:
            if not idle_scheduled:
                idle.ensure()  # until it succeeds: the database may be down at start
                idle_scheduled = True
            # One task at a time, each after giving way to this process's writes (the
            # claim itself is a write: an exclusive transaction on SQLite).
            while due() and not _stop.is_set():
                give_way()
                Worker(
                    queue_names=[QUEUE],
                    interval=0,
                    batch=True,
                    backend_name="default",
                    startup_delay=False,
                    max_tasks=1,
                    worker_id=worker_id,
                    excluded_queue_names=[],
                ).run()
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
    """The ASGI application, starting the worker on its first call."""

    async def app(scope, receive, send):
        if not _started:
            start()
        return await application(scope, receive, send)

    return app
