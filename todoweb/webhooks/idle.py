"""session.idle, and the queue's upkeep, from a recurring task on the same queue.

A session is idle once TODOWEB_IDLE_AFTER has passed since its last write while work
remains: no write marks that moment, so a task checks for it. The check runs every
`every()` seconds (a tenth of the idle time, between 1 and 60 s): it finds the
sessions whose idle deadline (last write + idle time) passed since the previous check,
and queues one session.idle per endpoint for each (once per idle spell: the delivery's
key names the session's revision, and the database keeps one delivery per key).

One row (WebhookClock "idle") says when the next check is due; the task that runs
moves it on and queues its successor in one transaction, only if it is still the one
due (a compare-and-set), so however many processes start it there is one chain.
`ensure` (each worker's start, each new endpoint) starts it again if it looks dead.

The same task puts back a delivery whose task was lost (its process died while
attempting it) and prunes finished tasks and old deliveries.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from todoweb.models import Session, WebhookClock, WebhookDelivery, WebhookEndpoint
from todoweb.webhooks import enqueue, events
from todoweb.webhooks.compat import TaskResultStatus, task
from todoweb.webhooks.delivery import QUEUE, deliver

logger = logging.getLogger(__name__)

CLOCK = "idle"
# Sessions checked per run at most (the next run goes on from there).
BATCH = 500
# A write's time is taken before it commits: a check looks back this far again.
SLACK = timedelta(seconds=60)
# A task still running after this long lost its process.
STUCK_AFTER = timedelta(minutes=5)
PRUNE_EVERY = timedelta(hours=1)
# Finished tasks (the delivery log keeps what they did) are kept this long.
TASKS_KEPT = timedelta(days=1)


def every() -> timedelta:
    return timedelta(seconds=min(60, max(1, settings.TODOWEB_IDLE_AFTER / 10)))


def ensure(now: datetime | None = None) -> bool:
    """Start the chain of checks unless one is alive (its next check not long overdue)."""
    now = now or timezone.now()
    with transaction.atomic():
        clock = WebhookClock.objects.select_for_update().filter(name=CLOCK).first()
        if clock is not None and clock.due_at > now - every() - STUCK_AFTER:
            return False
        if clock is None:
            try:
                with transaction.atomic():
                    WebhookClock.objects.create(name=CLOCK, due_at=now, swept_upto=now)
            except IntegrityError:
                return False  # another process made it first
        elif not WebhookClock.objects.filter(name=CLOCK, due_at=clock.due_at).update(due_at=now):
            return False
        check.using(run_after=now).enqueue(now.isoformat())
    return True


@task(queue_name=QUEUE)
def check(due: str) -> str:
    now = timezone.now()
    following = now + every()
    with transaction.atomic():
        if not WebhookClock.objects.filter(name=CLOCK, due_at=datetime.fromisoformat(due)).update(due_at=following):
            return "superseded"  # a stray copy: the chain goes on without it
        check.using(run_after=following).enqueue(following.isoformat())
    found = idle_sessions(now)
    recover(now)
    prune(now)
    return f"{found} idle"


def idle_sessions(now: datetime) -> int:
    """Queue session.idle for each session whose idle deadline passed since the last check."""
    clock = WebhookClock.objects.get(name=CLOCK)
    endpoints = [e for e in WebhookEndpoint.objects.filter(disabled_at__isnull=True) if events.SESSION_IDLE in e.events]
    idle_for = timedelta(seconds=settings.TODOWEB_IDLE_AFTER)
    upto = now
    found = 0
    if endpoints:
        by_project: dict[int, list[enqueue.Target]] = {}
        for endpoint in endpoints:
            target = enqueue.Target(endpoint.pk, frozenset(endpoint.events), endpoint.created_at)
            by_project.setdefault(endpoint.project_id, []).append(target)
        since = (clock.swept_upto or now) - SLACK - idle_for
        sessions = list(
            Session.objects.filter(
                project_id__in=by_project,
                archived_at__isnull=True,
                closed_at__isnull=True,
                working_steps__gt=0,
                updated_at__gt=since,
                updated_at__lte=now - idle_for,
            )
            .select_related("project", "parent")
            .order_by("updated_at")[:BATCH]
        )
        if len(sessions) == BATCH:
            upto = sessions[-1].updated_at + idle_for
        for session in sessions:
            deadline = session.updated_at + idle_for
            targets = [t for t in by_project[session.project_id] if t.created_at <= deadline]
            found += notify(session, targets, now)
    WebhookClock.objects.filter(name=CLOCK).update(swept_upto=upto)
    return found


def notify(session: Session, targets: list[enqueue.Target], now: datetime) -> int:
    from todoweb.reads import session_summary

    if not targets:
        return 0
    key = f"{events.SESSION_IDLE}:{session.pk}:{session.revision}"
    done = set(WebhookDelivery.objects.filter(dedupe_key=key).values_list("endpoint_id", flat=True))
    targets = [t for t in targets if t.id not in done]
    if not targets:
        return 0
    data = enqueue.session_data(session_summary(session, now=now), session.revision)
    try:
        with transaction.atomic():
            enqueue.enqueue(session.project, session, events.SESSION_IDLE, data, dedupe_key=key, at=now, only=targets)
    except IntegrityError:
        return 0  # another check got there first
    return 1


def recover(now: datetime) -> int:
    """Queue again a pending delivery whose task was lost (its process died running it)."""
    from django_tasks_db.models import DBTaskResult

    stale = now - STUCK_AFTER
    pending = list(
        WebhookDelivery.objects.filter(status=WebhookDelivery.Status.PENDING, next_attempt_at__lt=stale)
        .exclude(task_id="")  # not queued yet: the worker queues it when there is room for it
        .order_by("next_attempt_at")
        .values_list("pk", "message_id", "task_id")[:200]
    )
    if not pending:
        return 0
    tasks = {
        str(row.id): row
        for row in DBTaskResult.objects.filter(id__in=[task_id for _, _, task_id in pending if task_id]).only(
            "id", "status", "started_at"
        )
    }
    recovered = 0
    for pk, message_id, task_id in pending:
        row = tasks.get(task_id)
        if row is not None and (
            row.status == TaskResultStatus.READY
            or (row.status == TaskResultStatus.RUNNING and row.started_at and row.started_at > stale)
        ):
            continue
        with transaction.atomic():
            new = deliver.enqueue(message_id)
            if WebhookDelivery.objects.filter(pk=pk, task_id=task_id).update(task_id=str(new.id)):
                recovered += 1
                logger.warning("Webhook delivery %s: its task was lost; queued again", message_id)
            else:
                transaction.set_rollback(True)
    return recovered


def prune(now: datetime) -> None:
    """Once an hour: finished tasks after a day, deliveries after TODOWEB_RETENTION_DAYS."""
    from django_tasks_db.models import DBTaskResult

    with transaction.atomic():
        clock = WebhookClock.objects.select_for_update().get(name=CLOCK)
        if clock.pruned_at and now - clock.pruned_at < PRUNE_EVERY:
            return
        WebhookClock.objects.filter(name=CLOCK).update(pruned_at=now)
    DBTaskResult.objects.filter(queue_name=QUEUE).finished().filter(finished_at__lt=now - TASKS_KEPT).delete()
    kept = now - timedelta(days=settings.TODOWEB_RETENTION_DAYS)
    WebhookDelivery.objects.exclude(status=WebhookDelivery.Status.PENDING).filter(created_at__lt=kept).delete()
