"""One delivery attempt, as a queued task (django-tasks, on django-tasks-db's database
queue): post the event, record the answer, and either mark it delivered, queue the
next attempt (`run_after`: exponential backoff, for TODOWEB_WEBHOOK_RETRY_FOR after
the event), or give up. An endpoint whose every delivery failed for
TODOWEB_WEBHOOK_DISABLE_AFTER is disabled, with the reason.

A write makes its deliveries without tasks; the worker queues each one's first task
when it claims it (worker.first_task; `queue_new` queues them in bulk), and each
attempt that fails queues the next.

Each delivery names the one task allowed to attempt it (`task_id`): the worker claims
a task once (a row lock on PostgreSQL, an exclusive transaction on SQLite), and a stray
copy (see idle.recover) finds it is not that task and does nothing. A delivery is sent
twice only when a process dies between the receiver's answer and its record: the
receiver sees the same webhook-id again.
"""

from __future__ import annotations

import logging
import random
import time
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from todoweb import store
from todoweb.models import WebhookDelivery, WebhookEndpoint
from todoweb.webhooks import addresses, events, formats
from todoweb.webhooks.compat import TaskContext, task

logger = logging.getLogger(__name__)

QUEUE = "webhooks"
# The task's path in the queue's rows (the worker tells attempts from the idle check by it).
DELIVER_PATH = "todoweb.webhooks.delivery.deliver"
# What the log keeps of an answer.
ANSWER_CHARS = 1000
READ_BYTES = 64 * 1024
# Retries are at most this far apart.
MAX_DELAY = 6 * 3600


@dataclass(frozen=True)
class Outcome:
    ok: bool
    status: int | None = None
    answer: str = ""
    latency_ms: int | None = None
    error: str = ""
    # No attempt could ever succeed (the URL cannot be sent): no retry.
    final: bool = False


def send(url: str, body: bytes, headers: dict[str, str]) -> Outcome:
    """One POST, over by network.TIMEOUT whatever the receiver does (resolving,
    connecting, sending, the answer's headers and body all count); never raises."""
    import httpcore  # with the connections (network.py), on the first delivery
    import httpx

    from todoweb.webhooks import network

    started = time.monotonic()

    def took() -> int:
        return int((time.monotonic() - started) * 1000)

    try:
        addresses.usable(url)
    except addresses.UnusableURL as exc:
        return Outcome(False, error=f"cannot be delivered: {exc}"[:500], final=True)
    try:
        request = {"content": body, "headers": list(headers.items()), "extensions": {"timeout": network.timeouts()}}
        with (
            network.deadline(network.TIMEOUT),
            network.pool().stream("POST", network.target(url), **request) as response,
        ):
            received = b""
            for chunk in response.iter_stream():
                received += chunk
                if len(received) >= READ_BYTES:
                    break
            answer = received[: ANSWER_CHARS * 4].decode("utf-8", "replace")[:ANSWER_CHARS]
            ok = 200 <= response.status < 300
            redirect = " (redirects are not followed)" if response.status in network.REDIRECTS else ""
            return Outcome(ok, response.status, answer, took(), "" if ok else f"HTTP {response.status}{redirect}")
    except addresses.RefusedAddress as exc:
        return Outcome(False, error=f"refused: {exc}"[:500])
    except httpcore.TimeoutException:
        return Outcome(False, latency_ms=took(), error=f"timed out: no whole answer within {network.TIMEOUT:g} s")
    except (httpx.InvalidURL, httpcore.UnsupportedProtocol) as exc:
        return Outcome(False, error=f"cannot be delivered: {exc}"[:500], final=True)
    except (httpcore.NetworkError, httpcore.ProtocolError, OSError, ValueError) as exc:
        return Outcome(False, latency_ms=took(), error=(f"{type(exc).__name__}: {exc}")[:500])


def retry_delay(attempts: int) -> float:
    """Seconds before attempt `attempts` + 1: TODOWEB_WEBHOOK_RETRY_BASE, doubling, at
    most 6 hours, with ±10% jitter so that a receiver back from an outage is not hit
    by every retry at once."""
    delay = min(settings.TODOWEB_WEBHOOK_RETRY_BASE * 2 ** (attempts - 1), MAX_DELAY)
    return delay * random.uniform(0.9, 1.1)  # noqa: S311


@task(queue_name=QUEUE, takes_context=True)
def deliver(context: TaskContext, message_id: str) -> str:
    delivery = WebhookDelivery.objects.select_related("endpoint").filter(message_id=message_id).first()
    if delivery is None:
        return "gone"  # its endpoint was deleted
    if delivery.status != WebhookDelivery.Status.PENDING or delivery.task_id != str(context.task_result.id):
        return "not mine"
    endpoint = delivery.endpoint
    test = delivery.event == events.TEST
    if not endpoint.is_enabled and not test:
        WebhookDelivery.objects.filter(pk=delivery.pk).update(
            status=WebhookDelivery.Status.FAILED, next_attempt_at=None, error="the endpoint is disabled"
        )
        return "disabled"
    timestamp = int(time.time())
    body, headers = formats.request(
        endpoint.format,
        delivery.payload,
        secret=endpoint.secret,
        message_id=delivery.message_id,
        timestamp=timestamp,
        site_url=endpoint.site_url,
    )
    outcome = send(endpoint.url, body, headers)
    record(delivery, endpoint, outcome, test=test)
    return "delivered" if outcome.ok else "failed"


def queue_new(limit: int) -> int:
    """Queue the first attempt of up to `limit` deliveries written without a task (the
    writes that make deliveries leave that to the worker); how many it queued. Each in
    a short transaction of its own; a delivery another worker queued meanwhile keeps
    that worker's task."""
    unqueued = list(WebhookDelivery.objects.filter(task_id="").order_by("id").values_list("pk", "message_id")[:limit])
    queued = 0
    for pk, message_id in unqueued:
        with store.atomic_write():
            task = deliver.enqueue(message_id)
            if WebhookDelivery.objects.filter(pk=pk, task_id="").update(task_id=str(task.id)):
                queued += 1
            else:
                transaction.set_rollback(True)
    return queued


def record(delivery: WebhookDelivery, endpoint: WebhookEndpoint, outcome: Outcome, *, test: bool) -> None:
    """The attempt's answer; the next attempt queued, or the delivery settled."""
    from todoweb.webhooks.enqueue import changed

    now = timezone.now()
    fields = {
        "attempts": delivery.attempts + 1,
        "last_attempt_at": now,
        "response_status": outcome.status,
        "response_body": outcome.answer,
        "latency_ms": outcome.latency_ms,
        "error": outcome.error,
    }
    with store.atomic_write():
        if outcome.ok:
            fields |= {"status": WebhookDelivery.Status.DELIVERED, "delivered_at": now, "next_attempt_at": None}
            if not test and endpoint.failing_since is not None:
                WebhookEndpoint.objects.filter(pk=endpoint.pk).update(failing_since=None)
        else:
            retry = (
                not test
                and not outcome.final
                and endpoint.is_enabled
                and now - delivery.created_at < timedelta(seconds=settings.TODOWEB_WEBHOOK_RETRY_FOR)
            )
            if retry:
                at = now + timedelta(seconds=retry_delay(fields["attempts"]))
                task = deliver.using(run_after=at).enqueue(delivery.message_id)
                fields |= {"next_attempt_at": at, "task_id": str(task.id)}
            else:
                fields |= {"status": WebhookDelivery.Status.FAILED, "next_attempt_at": None}
            if not test:
                failing(endpoint, now, outcome, changed)
        WebhookDelivery.objects.filter(pk=delivery.pk).update(**fields)
    if outcome.ok or fields.get("task_id"):
        from todoweb.webhooks.worker import wake

        transaction.on_commit(wake)


def failing(endpoint: WebhookEndpoint, now: datetime, outcome: Outcome, changed) -> None:
    """Note a failed delivery; disable the endpoint when it has failed for long enough."""
    WebhookEndpoint.objects.filter(pk=endpoint.pk, failing_since__isnull=True).update(failing_since=now)
    since = endpoint.failing_since or now
    if endpoint.is_enabled and now - since >= timedelta(seconds=settings.TODOWEB_WEBHOOK_DISABLE_AFTER):
        days = (now - since).total_seconds() / 86400
        reason = (
            f"Disabled {formats_time(now)}: every delivery failed for {days:.1f} days (since {formats_time(since)}); "
            f"the last: {outcome.error or 'no answer'}"
        )
        disabled = WebhookEndpoint.objects.filter(pk=endpoint.pk, disabled_at__isnull=True).update(
            disabled_at=now, disabled_reason=reason[:2000]
        )
        if disabled:
            logger.warning("Webhook endpoint %s disabled: %s", endpoint.pk, reason)
            changed(endpoint.project_id)


def formats_time(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M UTC")
