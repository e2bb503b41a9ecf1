"""Webhook endpoints of the token's project: list, create (the secret, once), change,
delete, send a test event, and each endpoint's delivery log (docs/webhooks.md)."""

from __future__ import annotations

from typing import Any, Literal

from django.http import HttpRequest
from ninja import Field, Query, Router, Schema
from pydantic import BaseModel, ConfigDict, StrictBool

from todoweb.calls.errors import NotFound
from todoweb.models import WebhookEndpoint
from todoweb.web.auth import require_write
from todoweb.webhooks import endpoints, reads

router = Router(tags=["webhooks"])

MAX_ID = 2**63 - 1
Event = Literal["session.created", "session.completed", "session.failed", "session.idle", "plan.edited", "step.failed"]


class NewEndpoint(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {"url": "https://example.com/hooks/todoweb", "events": ["session.completed"], "format": "standard"}
            ]
        },
    )

    url: str = Field(
        max_length=endpoints.URL_MAX_CHARS,
        pattern=r"^\s*[hH][tT][tT][pP][sS]?://",
        description="http(s)://…, a public address",
    )
    events: list[Event] = Field(min_length=1, max_length=len(Event.__args__))
    format: Literal["standard", "slack", "discord"] = "standard"


class EndpointChange(BaseModel):
    """What to change of an endpoint; what is left out stays."""

    model_config = ConfigDict(
        extra="forbid", json_schema_extra={"examples": [{"events": ["session.completed"], "enabled": True}]}
    )

    url: str | None = Field(
        None, max_length=endpoints.URL_MAX_CHARS, pattern=r"^\s*[hH][tT][tT][pP][sS]?://", description="http(s)://…"
    )
    events: list[Event] | None = Field(None, min_length=1, max_length=len(Event.__args__))
    format: Literal["standard", "slack", "discord"] | None = None
    enabled: StrictBool | None = Field(None, description="false turns the endpoint off; true turns it on again")


def endpoint_of(request: HttpRequest, webhook_id: int) -> WebhookEndpoint:
    require_write(request.auth)
    project = request.auth.project
    found = (
        WebhookEndpoint.objects.select_related("project").filter(pk=webhook_id, project_id=project.pk).first()
        if 0 < webhook_id <= MAX_ID
        else None
    )
    if found is None:
        raise NotFound(f"Webhook {webhook_id} not found in project '{project.slug}'")
    return found


@router.get("/webhooks", summary="The project's webhook endpoints")
def list_webhooks(request: HttpRequest) -> dict[str, Any]:
    require_write(request.auth)
    return {"webhooks": reads.endpoints_data(request.auth.project)}


@router.post("/webhooks", summary="Add a webhook endpoint (its secret is in this answer only)", response={201: dict})
def create_webhook(request: HttpRequest, body: NewEndpoint) -> tuple[int, dict[str, Any]]:
    require_write(request.auth)
    endpoint = endpoints.create(
        request.auth.project,
        url=body.url,
        wanted=body.events,
        fmt=body.format,
        site_url=request.build_absolute_uri("/").rstrip("/"),
    )
    return 201, reads.endpoint_data(endpoint) | {"secret": endpoint.secret}


@router.patch("/webhooks/{webhook_id}", summary="Change a webhook endpoint (its secret and log stay)")
def change_webhook(request: HttpRequest, webhook_id: int, body: EndpointChange) -> dict[str, Any]:
    endpoint = endpoints.change(
        endpoint_of(request, webhook_id), url=body.url, wanted=body.events, fmt=body.format, enabled=body.enabled
    )
    return reads.endpoint_data(endpoint)


@router.delete("/webhooks/{webhook_id}", summary="Remove a webhook endpoint and its delivery log", response={204: None})
def delete_webhook(request: HttpRequest, webhook_id: int) -> tuple[int, None]:
    endpoints.delete(endpoint_of(request, webhook_id))
    return 204, None


@router.post("/webhooks/{webhook_id}/test", summary="Send a test event (webhook.test)", response={202: dict})
def test_webhook(request: HttpRequest, webhook_id: int) -> tuple[int, dict[str, Any]]:
    delivery = endpoints.send_test(endpoint_of(request, webhook_id))
    return 202, {"delivery": reads.delivery_data(delivery)}


class DeliveriesQuery(Schema):
    limit: int = Field(50, ge=1, le=200)
    before: int | None = Field(None, ge=1, le=MAX_ID, description="The next_cursor of the previous page")


@router.get("/webhooks/{webhook_id}/deliveries", summary="An endpoint's delivery log, newest first")
def list_deliveries(request: HttpRequest, webhook_id: int, query: Query[DeliveriesQuery]) -> dict[str, Any]:
    endpoint = endpoint_of(request, webhook_id)
    rows, cursor = reads.deliveries_data(endpoint, limit=query.limit, before=query.before)
    return {"deliveries": rows, "next_cursor": cursor}
