"""Exports of the token's project (and, on the board, of a member's projects): the
current steps (CSV or JSON Lines) and the sessions (CSV), changed between `since` and
`until`, streamed.

A page of rows at a time is read in the database thread (keyset order, by id) and
written out before the next is read, so an export of a million rows holds one page
in memory, and no thread waits on the client while it reads.
"""

from __future__ import annotations

import csv
import io
from collections.abc import AsyncIterator, Callable, Iterable
from datetime import datetime
from typing import Any

import orjson
from django.http import HttpRequest, StreamingHttpResponse
from django.utils import timezone
from ninja import Field, Query, Router, Schema

from todoweb import plan
from todoweb.models import Session, Step
from todoweb.reads import step_data
from todoweb.store import run
from todoweb.web.api.steps import moment
from todoweb.web.auth import token_auth

router = Router(tags=["export"])

PAGE = 2000
# Steps are read for up to this many sessions at a time (and about PAGE steps), in
# session and plan order: by the index of a session's steps, with no sort of the whole
# table per page (paging the steps by their own id sorted every remaining row on each
# page: 2,000 rows a second).
SESSIONS_PER_PAGE = 200

STEP_COLUMNS = [
    "session_key",
    "session_title",
    "dialect",
    "id",
    "position",
    "content",
    "active_form",
    "notes",
    "status",
    "priority",
    "owner",
    "blocked_by",
    "first_seen_at",
    "started_at",
    "completed_at",
    "duration_s",
    "reopened",
    "updated_at",
]
SESSION_COLUMNS = [
    "key",
    "title",
    "dialect",
    "state",
    "revision",
    "total",
    "completed",
    "progress",
    "current",
    "parent_key",
    "workdir",
    "branch",
    "created_at",
    "updated_at",
    "closed_at",
    "url",
]


class Period(Schema):
    since: str | None = Field(
        None,
        max_length=40,
        description="changed at or after (ISO 8601, with a zone)",
        json_schema_extra={"format": "date-time"},
    )
    until: str | None = Field(
        None,
        max_length=40,
        description="changed before (ISO 8601, with a zone)",
        json_schema_extra={"format": "date-time"},
    )


def period_filter(query: Period) -> dict[str, datetime]:
    found = {}
    if query.since is not None:
        found["updated_at__gte"] = moment(query.since, "since")
    if query.until is not None:
        found["updated_at__lt"] = moment(query.until, "until")
    return found


EXPORT = {"auth": None, "openapi_extra": {"security": [{"TokenAuth": []}]}}


@router.get("/export/steps.csv", summary="The project's current steps as CSV", **EXPORT)
async def steps_csv(request: HttpRequest, query: Query[Period]) -> StreamingHttpResponse:
    token, period = await run(token_auth, request), period_filter(query)
    return steps_csv_download([token.project_id], period)


@router.get("/export/steps.jsonl", summary="The project's current steps as JSON Lines", **EXPORT)
async def steps_jsonl(request: HttpRequest, query: Query[Period]) -> StreamingHttpResponse:
    token, period = await run(token_auth, request), period_filter(query)
    return steps_jsonl_download([token.project_id], period)


@router.get("/export/sessions.csv", summary="The project's sessions as CSV", **EXPORT)
async def sessions_csv(request: HttpRequest, query: Query[Period]) -> StreamingHttpResponse:
    token, period = await run(token_auth, request), period_filter(query)
    return sessions_csv_download([token.project_id], period)


# The downloads, for these projects (the API's token's, or a member's on the board).


def steps_csv_download(projects: list[int], period: dict[str, datetime]) -> StreamingHttpResponse:
    rows = step_rows(projects, period)
    csv_rows = as_csv(STEP_COLUMNS, (step_row(step) async for step in rows))
    return download(csv_rows, "steps.csv", "text/csv; charset=utf-8")


def steps_jsonl_download(projects: list[int], period: dict[str, datetime]) -> StreamingHttpResponse:
    rows = step_rows(projects, period)
    lines = (orjson.dumps(step_json(step)) + b"\n" async for step in rows)
    return download(batched_bytes(lines), "steps.jsonl", "application/jsonl; charset=utf-8")


def sessions_csv_download(projects: list[int], period: dict[str, datetime]) -> StreamingHttpResponse:
    now = timezone.now()
    rows = pages(lambda after: session_page(projects, period, after))
    csv_rows = as_csv(SESSION_COLUMNS, (session_row(session, now) async for session in rows))
    return download(csv_rows, "sessions.csv", "text/csv; charset=utf-8")


async def step_rows(projects: list[int], period: dict[str, datetime]) -> AsyncIterator[Step]:
    """Every step of these projects' sessions, a page of sessions at a time from the database thread."""
    after: int | None = 0
    while after is not None:
        steps, after = await run(step_page, projects, period, after)
        for step in steps:
            yield step


def step_page(projects: list[int], period: dict[str, datetime], after: int) -> tuple[list[Step], int | None]:
    """The steps of the sessions after session `after` (about PAGE steps, of one session
    at least), and the last of those sessions (None: there are no more)."""
    sessions = Session.objects.filter(project_id__in=projects, archived_at__isnull=True, pk__gt=after)
    ids: list[int] = []
    count = 0
    for pk, total in sessions.order_by("pk").values_list("pk", "total_steps")[:SESSIONS_PER_PAGE]:
        if ids and count + total > PAGE:
            break
        ids.append(pk)
        count += total
    if not ids:
        return [], None
    steps = Step.objects.filter(session_id__in=ids, **period).select_related("session")
    return list(steps.order_by("session_id", "position")), ids[-1]


def session_page(projects: list[int], period: dict[str, datetime], after: int) -> list[Session]:
    sessions = Session.objects.filter(project_id__in=projects, archived_at__isnull=True, pk__gt=after, **period)
    return list(sessions.select_related("parent").order_by("pk")[:PAGE])


async def pages(read: Callable[[int], list[Any]]) -> AsyncIterator[Any]:
    """Every row `read` gives, a page at a time from the database thread."""
    after = 0
    while True:
        page = await run(read, after)
        for row in page:
            yield row
        if len(page) < PAGE:
            return
        after = page[-1].pk


def step_json(step: Step) -> dict[str, Any]:
    session = step.session
    return (
        {"session": {"key": session.key, "title": session.title, "dialect": session.dialect}}
        | step_data(step)
        | {"updated_at": plan.iso(step.updated_at)}
    )


def step_row(step: Step) -> list[Any]:
    data = step_data(step)
    session = step.session
    return [
        session.key,
        session.title,
        session.dialect,
        *(data[name] for name in STEP_COLUMNS[3:11]),
        " ".join(data["blocked_by"]),
        *(data[name] for name in STEP_COLUMNS[12:17]),
        plan.iso(step.updated_at),
    ]


def session_row(session: Session, now: datetime) -> list[Any]:
    return [
        session.key,
        session.title,
        session.dialect,
        session.state_at(now),
        session.revision,
        session.total_steps,
        session.completed_steps,
        session.progress,
        session.current_text,
        session.parent.key if session.parent else "",
        session.workdir,
        session.branch,
        plan.iso(session.created_at),
        plan.iso(session.updated_at),
        plan.iso(session.closed_at),
        session.get_absolute_url(),
    ]


async def as_csv(columns: list[str], rows: AsyncIterator[list[Any]]) -> AsyncIterator[bytes]:
    """CSV (RFC 4180, UTF-8), a header row first; a cell that a spreadsheet would read as
    a formula is written with a leading apostrophe (agent text is untrusted)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(columns)
    async for row in rows:
        writer.writerow([inert(cell) for cell in row])
        if buffer.tell() >= 64 * 1024:
            yield buffer.getvalue().encode()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue().encode()


def inert(cell: Any) -> Any:
    if cell is None:
        return ""
    if isinstance(cell, str) and cell[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + cell
    return cell


async def batched_bytes(lines: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    batch: list[bytes] = []
    size = 0
    async for line in lines:
        batch.append(line)
        size += len(line)
        if size >= 64 * 1024:
            yield b"".join(batch)
            batch, size = [], 0
    yield b"".join(batch)


def download(content: AsyncIterator[bytes] | Iterable[bytes], name: str, content_type: str) -> StreamingHttpResponse:
    response = StreamingHttpResponse(content, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response
