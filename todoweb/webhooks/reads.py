"""What pages and the API show of webhooks: endpoints (never their secret after
creation) and their delivery log, newest first."""

from __future__ import annotations

from typing import Any

from todoweb import plan
from todoweb.models import Project, WebhookDelivery, WebhookEndpoint


def endpoint_data(endpoint: WebhookEndpoint) -> dict[str, Any]:
    return {
        "id": endpoint.pk,
        "url": endpoint.url,
        "events": endpoint.events,
        "format": endpoint.format,
        "enabled": endpoint.is_enabled,
        "created_at": plan.iso(endpoint.created_at),
        "failing_since": plan.iso(endpoint.failing_since),
        "disabled_at": plan.iso(endpoint.disabled_at),
        "disabled_reason": endpoint.disabled_reason or None,
    }


def endpoints_data(project: Project) -> list[dict[str, Any]]:
    return [endpoint_data(endpoint) for endpoint in WebhookEndpoint.objects.filter(project=project).order_by("id")]


def delivery_data(delivery: WebhookDelivery) -> dict[str, Any]:
    return {
        "id": delivery.pk,
        "message_id": delivery.message_id,
        "event": delivery.event,
        "session": (delivery.payload.get("data", {}).get("session") or {}).get("id"),
        "status": delivery.status,
        "attempts": delivery.attempts,
        "created_at": plan.iso(delivery.created_at),
        "last_attempt_at": plan.iso(delivery.last_attempt_at),
        "next_attempt_at": plan.iso(delivery.next_attempt_at) if delivery.status == "pending" else None,
        "delivered_at": plan.iso(delivery.delivered_at),
        "response_status": delivery.response_status,
        "response_body": delivery.response_body,
        "latency_ms": delivery.latency_ms,
        "error": delivery.error or None,
    }


def deliveries_data(
    endpoint: WebhookEndpoint, *, limit: int = 50, before: int | None = None
) -> tuple[list[dict[str, Any]], int | None]:
    """The endpoint's newest deliveries (older than delivery `before`), and the id to
    pass as `before` for the next page (None: no more)."""
    rows = WebhookDelivery.objects.filter(endpoint=endpoint)
    if before is not None:
        rows = rows.filter(pk__lt=before)
    page = list(rows.order_by("-id")[: limit + 1])
    more = len(page) > limit
    page = page[:limit]
    return [delivery_data(row) for row in page], (page[-1].pk if more and page else None)
