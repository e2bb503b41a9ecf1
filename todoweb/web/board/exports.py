"""The board's exports: a member's projects (or the one chosen on the dashboard) as the
API exports a token's, for the login of the browser."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, StreamingHttpResponse

from todoweb.reads import visible_projects
from todoweb.store import run
from todoweb.web.api import export


def projects_of(user, slug: str | None) -> list[int]:
    projects = visible_projects(user)
    if slug:
        projects = projects.filter(slug=slug)
    return list(projects.values_list("pk", flat=True))


def board_export(make: Callable[[list[int], dict[str, datetime]], StreamingHttpResponse]):  # noqa: ANN201
    @login_required
    async def view(request: HttpRequest) -> StreamingHttpResponse:
        period = export.period_filter(
            export.Period(since=request.GET.get("since") or None, until=request.GET.get("until") or None)
        )
        projects = await run(projects_of, await request.auser(), request.GET.get("project"))
        if not projects:
            raise Http404("No such project")
        return make(projects, period)

    return view


steps_csv = board_export(export.steps_csv_download)
steps_jsonl = board_export(export.steps_jsonl_download)
sessions_csv = board_export(export.sessions_csv_download)
