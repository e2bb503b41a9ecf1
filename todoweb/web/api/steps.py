"""The fleet's steps: every current step of the token's project, across its sessions."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from django.db.models import Q
from django.http import HttpRequest
from django.utils import timezone
from ninja import Field, Query, Router, Schema

from todoweb.calls.errors import InvalidInput
from todoweb.models import Step
from todoweb.reads import session_summary, step_data
from todoweb.web.api.cursors import newest_first

router = Router(tags=["steps"])

Status = Literal["pending", "in_progress", "completed", "failed", "blocked", "cancelled"]


class StepsQuery(Schema):
    status: list[Status] = Field(default_factory=list, description="repeatable: any of these statuses")
    q: str | None = Field(None, max_length=200, pattern=r"^[^\x00]*$", description="text in the content or active form")
    since: str | None = Field(
        None,
        max_length=40,
        description="changed at or after this time (ISO 8601, with a zone)",
        json_schema_extra={"format": "date-time"},
    )
    limit: int = Field(100, ge=1, le=500)
    cursor: str | None = None


@router.get("/steps", summary="The project's current steps across its sessions, latest change first")
def list_steps(request: HttpRequest, query: Query[StepsQuery]) -> dict[str, Any]:
    steps = Step.objects.filter(
        session__project=request.auth.project, session__archived_at__isnull=True
    ).select_related("session__project", "session__parent")
    if query.status:
        steps = steps.filter(status__in=query.status)
    if query.q:
        steps = steps.filter(Q(content__icontains=query.q) | Q(active_form__icontains=query.q))
    if query.since is not None:
        steps = steps.filter(updated_at__gte=moment(query.since, "since"))
    page, next_cursor = newest_first(steps, query.cursor, query.limit)
    now = timezone.now()
    summaries: dict[int, dict[str, Any]] = {}
    items = []
    for step in page:
        if step.session_id not in summaries:
            summaries[step.session_id] = session_summary(step.session, now=now)
        items.append(step_data(step) | {"session": summaries[step.session_id]})
    return {"steps": items, "next_cursor": next_cursor}


def moment(text: str, name: str) -> datetime:
    """A time the query gives, as ISO 8601 with a zone (a 422 otherwise)."""
    try:
        found = datetime.fromisoformat(text.upper())  # RFC 3339 allows a lower-case t and z
    except ValueError:
        found = None
    if found is None or found.tzinfo is None:
        raise InvalidInput(f"{name}: give a time as ISO 8601 with a zone, e.g. 2026-11-29T10:00:00Z")
    return found
