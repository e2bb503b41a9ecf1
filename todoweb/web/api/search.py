"""`GET /api/v1/search`: the project's sessions whose title, key or any current step
says every word asked (in any order, any case), each with the steps that say one."""

from __future__ import annotations

from functools import reduce
from operator import or_
from typing import Any

from django.db.models import Exists, OuterRef, Q
from django.http import HttpRequest
from django.utils import timezone
from ninja import Field, Query, Router, Schema

from todoweb.models import Session, Step
from todoweb.reads import session_summary, step_data
from todoweb.web.api.cursors import newest_first

router = Router(tags=["steps"])

MAX_WORDS = 10


class SearchQuery(Schema):
    q: str = Field(
        ..., min_length=1, max_length=200, pattern=r"^[^\x00]*[^\x00\s][^\x00]*$", description="words, any order"
    )
    limit: int = Field(20, ge=1, le=100)
    cursor: str | None = None


def says(word: str) -> Q:
    """A step whose text holds `word`."""
    return Q(content__icontains=word) | Q(active_form__icontains=word)


@router.get("/search", summary="Sessions whose title, key or steps say every word, latest activity first")
def search(request: HttpRequest, query: Query[SearchQuery]) -> dict[str, Any]:
    words = query.q.split()[:MAX_WORDS]
    sessions = Session.objects.filter(project=request.auth.project, archived_at__isnull=True)
    for word in words:
        step_says = Exists(Step.objects.filter(says(word), session=OuterRef("pk")))
        sessions = sessions.filter(Q(title__icontains=word) | Q(key__icontains=word) | step_says)
    page, next_cursor = newest_first(sessions.select_related("project", "parent"), query.cursor, query.limit)
    found: dict[int, list[dict[str, Any]]] = {session.pk: [] for session in page}
    matching = Step.objects.filter(reduce(or_, (says(word) for word in words)), session_id__in=found)
    for step in matching.order_by("session_id", "position"):
        found[step.session_id].append(step_data(step))
    now = timezone.now()
    results = [{"session": session_summary(session, now=now), "steps": found[session.pk]} for session in page]
    return {"results": results, "next": next_cursor}
