"""Sessions: list, read, rename/close, archive, and their revision history."""

from __future__ import annotations

from typing import Any, Literal

from django.db.models import Q
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from ninja import Field, Query, Router, Schema
from pydantic import BaseModel, ConfigDict

from todoweb.calls.errors import NotFound
from todoweb.models import MAX_REVISION, Revision, Session
from todoweb.reads import current_data, dropped_ledger, revision_data, session_summary, state_filter
from todoweb.web.api.cursors import newest_first
from todoweb.web.api.lookups import get_session
from todoweb.web.auth import require_write
from todoweb.writes.people import session_archive, session_change

router = Router(tags=["sessions"])


class SessionsQuery(Schema):
    state: Literal["empty", "active", "idle", "completed", "failed", "closed"] | None = None
    q: str | None = Field(None, max_length=200, pattern=r"^[^\x00]*$")
    limit: int = Field(50, ge=1, le=200)
    cursor: str | None = None


@router.get("/sessions", summary="List sessions, newest activity first")
def list_sessions(request: HttpRequest, query: Query[SessionsQuery]) -> dict[str, Any]:
    sessions = Session.objects.filter(project=request.auth.project, archived_at__isnull=True).select_related(
        "project", "parent"
    )
    if query.state:
        sessions = sessions.filter(state_filter(query.state, timezone.now()))
    if query.q:
        sessions = sessions.filter(Q(title__icontains=query.q) | Q(key__icontains=query.q))
    page, next_cursor = newest_first(sessions, query.cursor, query.limit)
    now = timezone.now()
    return {"sessions": [session_summary(s, now=now) for s in page], "next_cursor": next_cursor}


@router.get("/sessions/{session_key}", summary="A session's current plan (TodoRead for any dialect)")
def get_session_data(request: HttpRequest, session_key: str) -> dict[str, Any]:
    return current_data(get_session(request.auth, session_key))


class SessionPatch(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [{"closed": True}]})

    title: str | None = Field(None, max_length=500)
    closed: bool | None = None


@router.patch("/sessions/{session_key}", summary="Rename, close or reopen a session")
def patch_session(request: HttpRequest, session_key: str, patch: SessionPatch) -> dict[str, Any]:
    require_write(request.auth)
    session = get_session(request.auth, session_key)
    session = session_change(session, title=patch.title, closed=patch.closed)
    return current_data(session)


@router.delete("/sessions/{session_key}", summary="Archive a session (hidden, kept until pruned)")
def delete_session(request: HttpRequest, session_key: str) -> HttpResponse:
    require_write(request.auth)
    session_archive(get_session(request.auth, session_key))
    return HttpResponse(status=204)


class RevisionsQuery(Schema):
    after: int = Field(0, ge=0, le=MAX_REVISION)
    limit: int = Field(50, ge=1, le=200)


@router.get("/sessions/{session_key}/revisions", summary="A session's history, oldest first")
def list_revisions(request: HttpRequest, session_key: str, query: Query[RevisionsQuery]) -> dict[str, Any]:
    session = get_session(request.auth, session_key)
    rows = list(Revision.objects.filter(session=session, number__gt=query.after).order_by("number")[: query.limit + 1])
    more = len(rows) > query.limit
    rows = rows[: query.limit]
    now = timezone.now()
    return {
        "revisions": [revision_data(session, row, now=now) for row in rows],
        "next_cursor": str(rows[-1].number) if more else None,
    }


@router.get("/sessions/{session_key}/dropped", summary="Every unfinished step the plan dropped")
def list_dropped(request: HttpRequest, session_key: str) -> dict[str, Any]:
    """The whole ledger of steps dropped while unfinished and not taken back, oldest
    first (a session's data carries the newest few and `dropped_count`)."""
    session = get_session(request.auth, session_key)
    return {"dropped": dropped_ledger(session), "next_cursor": None}


@router.get("/sessions/{session_key}/revisions/{number}", summary="The plan as of one revision")
def get_revision(request: HttpRequest, session_key: str, number: int) -> dict[str, Any]:
    session = get_session(request.auth, session_key)
    row = Revision.objects.filter(session=session, number=number).first() if 0 < number <= MAX_REVISION else None
    if row is None:
        raise NotFound(f"Session '{session_key}' has no revision {number}")
    return revision_data(session, row)
