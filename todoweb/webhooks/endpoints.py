"""What people do with a project's endpoints (the API, the admin, the team pages):
create (the secret is shown once), change, delete, enable again, send a test event."""

from __future__ import annotations

from collections.abc import Iterable

from django.db import transaction
from django.utils import timezone

from todoweb import plan
from todoweb.calls.errors import InvalidInput
from todoweb.models import Project, WebhookDelivery, WebhookEndpoint
from todoweb.webhooks import addresses, enqueue, events, formats, idle, worker

# Endpoints a project may have.
MAX_ENDPOINTS = 20
URL_MAX_CHARS = addresses.URL_MAX_CHARS


def check_url(url: str) -> str:
    """The URL, stripped, or InvalidInput saying why not (addresses.check_url: the
    same check every attempt makes, on the address as the client reads it)."""
    url = url.strip()
    try:
        addresses.check_url(url)
    except addresses.RefusedAddress as exc:
        raise InvalidInput(
            f"url: {exc}; deliveries go to public addresses only (TODOWEB_WEBHOOKS_ALLOW_PRIVATE=1 allows others)",
            details={"field": "url"},
        ) from None
    except addresses.UnusableURL as exc:
        raise InvalidInput(f"url: {exc}", details={"field": "url"}) from None
    return url


def check_events(wanted: Iterable[str]) -> list[str]:
    wanted = list(dict.fromkeys(wanted))
    unknown = [event for event in wanted if event not in events.EVENTS]
    if unknown or not wanted:
        raise InvalidInput(
            f"events: choose among {', '.join(events.EVENTS)}" + (f" (not {unknown[0]!r})" if unknown else ""),
            details={"field": "events", "allowed": list(events.EVENTS)},
        )
    return wanted


def create(
    project: Project, *, url: str, wanted: Iterable[str], fmt: str = "standard", site_url: str = ""
) -> WebhookEndpoint:
    """A new endpoint; its `secret` is readable on the returned object (show it once)."""
    if fmt not in WebhookEndpoint.Format.values:
        raise InvalidInput(f"format: one of {', '.join(WebhookEndpoint.Format.values)}", details={"field": "format"})
    url, wanted = check_url(url), check_events(wanted)
    with transaction.atomic():
        if WebhookEndpoint.objects.filter(project=project).count() >= MAX_ENDPOINTS:
            raise InvalidInput(
                f"A project has at most {MAX_ENDPOINTS} webhook endpoints", details={"limit": MAX_ENDPOINTS}
            )
        endpoint = WebhookEndpoint.objects.create(
            project=project, url=url, events=wanted, format=fmt, secret=formats.new_secret(), site_url=site_url[:500]
        )
        enqueue.changed(project.pk)
    if events.SESSION_IDLE in wanted:
        idle.ensure()
    return endpoint


# Why an endpoint a person turned off is off.
TURNED_OFF = "turned off by a person"


def change(
    endpoint: WebhookEndpoint,
    *,
    url: str | None = None,
    wanted: Iterable[str] | None = None,
    fmt: str | None = None,
    enabled: bool | None = None,
) -> WebhookEndpoint:
    """Change what was given; the secret and the delivery log stay. Turned on again,
    an endpoint starts afresh (no longer counted as failing); turned off, it gets no
    new deliveries (those queued find it off and settle as failed)."""
    fields: dict[str, object] = {}
    if url is not None:
        fields["url"] = check_url(url)
    if wanted is not None:
        fields["events"] = check_events(wanted)
    if fmt is not None:
        if fmt not in WebhookEndpoint.Format.values:
            raise InvalidInput(
                f"format: one of {', '.join(WebhookEndpoint.Format.values)}", details={"field": "format"}
            )
        fields["format"] = fmt
    if enabled is True and not endpoint.is_enabled:
        fields |= {"disabled_at": None, "disabled_reason": "", "failing_since": None}
    elif enabled is False and endpoint.is_enabled:
        fields |= {"disabled_at": timezone.now(), "disabled_reason": TURNED_OFF}
    if fields:
        with transaction.atomic():
            WebhookEndpoint.objects.filter(pk=endpoint.pk).update(**fields)
            enqueue.changed(endpoint.project_id)
        for name, value in fields.items():
            setattr(endpoint, name, value)
        if events.SESSION_IDLE in endpoint.events and endpoint.is_enabled:
            idle.ensure()
    return endpoint


def delete(endpoint: WebhookEndpoint) -> None:
    """The endpoint and its delivery log; its queued tasks find nothing to do."""
    with transaction.atomic():
        endpoint.delete()
        enqueue.changed(endpoint.project_id)


def enable(endpoint: WebhookEndpoint) -> None:
    with transaction.atomic():
        WebhookEndpoint.objects.filter(pk=endpoint.pk).update(disabled_at=None, disabled_reason="", failing_since=None)
        enqueue.changed(endpoint.project_id)


def send_test(endpoint: WebhookEndpoint) -> WebhookDelivery:
    """Queue a test event (`webhook.test`) to the endpoint, whatever events it wants:
    one attempt, not retried, not counted against the endpoint."""
    project = endpoint.project
    now = timezone.now()
    sample = {
        "id": "test",
        "key": "test",
        "project": project.slug,
        "title": "A test event from todoweb",
        "dialect": None,
        "state": "active",
        "url": "/",
        "parent": None,
        "created_at": plan.iso(now),
        "updated_at": plan.iso(now),
        "revision": 0,
        "total": 0,
        "completed": 0,
        "progress": 0.0,
        "current": "",
        "trend": [],
        "workdir": "",
        "branch": "",
    }
    delivery = WebhookDelivery.objects.create(
        endpoint=endpoint,
        event=events.TEST,
        message_id=enqueue.new_message_id(),
        payload=events.body(events.TEST, now, {"session": sample, "test": True}),
        created_at=now,
        next_attempt_at=now,
    )
    transaction.on_commit(worker.wake)
    return delivery
