"""Browser pages: the dashboard, a session's panel, its history and exports (SPEC §9).

Pages render the current data on the server (no empty flash), then the page's
script opens the websocket and applies events. Access: a logged-in member of the
session's project (staff: any), or anyone holding a valid share link
(`?share=<token>`), read-only.
"""

from __future__ import annotations

import json
from datetime import datetime
from functools import wraps
from typing import Any

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import redirect_to_login
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from . import plan
from .models import MAX_REVISION, Revision, Session
from .selectors import current_data, dashboard_summaries, revision_data, session_summary, visible_projects
from .sharing import session_for_viewer
from .steps import MARKERS


def with_times(summary: dict[str, Any]) -> dict[str, Any]:
    """Template helpers: datetimes for `timesince`, percentages for bars."""
    return summary | {
        "updated": plan.parse_iso(summary["updated_at"].replace("Z", "+00:00")),
        "percent": round(summary["progress"] * 100),
    }


def family_order(summaries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Top-level sessions, newest family activity first, each with its subagents under it."""
    by_id = {s["id"]: s | {"children": []} for s in summaries}
    roots = []
    for summary in by_id.values():
        parent = by_id.get(summary["parent"]) if summary["parent"] else None
        (parent["children"] if parent else roots).append(summary)
    for root in roots:
        root["children"].sort(key=lambda s: s["updated_at"], reverse=True)
        root["family_updated_at"] = max([root["updated_at"]] + [c["updated_at"] for c in root["children"]])
    roots.sort(key=lambda s: s["family_updated_at"], reverse=True)
    return roots


@login_required
@require_GET
def dashboard(request: HttpRequest) -> HttpResponse:
    project = request.GET.get("project", "")
    state = request.GET.get("state", "")
    q = request.GET.get("q", "").strip()
    summaries = [with_times(summary) for summary in dashboard_summaries(request.user)]
    # Filters apply to the first render too (and without JavaScript); the page
    # script applies the same rules to live rows.
    shown = {s["id"] for s in summaries if summary_matches(s, project=project, state=state, q=q)}
    # A parent stays visible while one of its subagents matches.
    shown |= {s["parent"] for s in summaries if s["id"] in shown and s["parent"]}
    families = family_order(summaries)
    return render(
        request,
        "dashboard.html",
        {
            "families": families,
            "shown": shown,
            "projects": list(visible_projects(request.user).values_list("slug", flat=True)),
            "states": Session.State.values,
            "filters": {"project": project, "state": state, "q": q},
            "config": {"ws": "/ws/dashboard/", "idleAfter": settings.TODOWEB_IDLE_AFTER},
            "count": len(summaries),
        },
    )


def summary_matches(summary: dict[str, Any], *, project: str, state: str, q: str) -> bool:
    if project and summary["project"] != project:
        return False
    if state and summary["state"] != state:
        return False
    if q:
        needle = q.lower()
        return needle in (summary["title"] or "").lower() or needle in summary["key"].lower()
    return True


def viewer_session(request: HttpRequest, public_id: str) -> tuple[Session, str | None] | HttpResponse:
    """The session and the share token in use, or the answer for a viewer without access."""
    share = request.GET.get("share") or None
    access = session_for_viewer(user=request.user, public_id=public_id, share=share)
    if access is not None:
        session, link = access
        return session, (share if link is not None else None)
    if share:
        return render(request, "share_ended.html", status=403)
    if not request.user.is_authenticated:
        return redirect_to_login(request.get_full_path())
    raise Http404("No such session")


def for_viewer(view):
    """Runs `view(request, session, share, …)` for a member of the session's project
    (staff: anyone) or the holder of a valid share link; others get the login page,
    the "link no longer works" page, or a 404."""

    @wraps(view)
    def wrapper(request: HttpRequest, public_id: str, *args, **kwargs) -> HttpResponse:
        found = viewer_session(request, public_id)
        if isinstance(found, HttpResponse):
            return found
        session, share = found
        return view(request, session, share, *args, **kwargs)

    return wrapper


def share_query(share: str | None) -> str:
    return f"?share={share}" if share else ""


@require_GET
@for_viewer
def session_panel(request: HttpRequest, session: Session, share: str | None) -> HttpResponse:
    data = current_data(session)
    base = session.get_absolute_url()
    query = share_query(share)
    response = render(
        request,
        "session.html",
        {
            "session": session,
            "data": data,
            "info": with_times(session_summary(session) | {"progress": data["progress"]}),
            "todos": decorate(data["todos"]),
            "dropped": decorate(data["dropped"]),
            "shared": share is not None,
            "export_json": f"{base}export.json{query}",
            "export_md": f"{base}export.md{query}",
            "children": [session_summary(c) for c in session.children.filter(archived_at__isnull=True)],
            "config": {
                "ws": f"/ws/sessions/{session.public_id}/{query}",
                "revisionUrl": f"{base}revisions/{{n}}.json{query}",
                "exportJson": f"{base}export.json{query}",
                "exportMd": f"{base}export.md{query}",
                "idleAfter": settings.TODOWEB_IDLE_AFTER,
                "initial": data,
            },
        },
    )
    # The share token is in the URL: keep it out of Referer headers.
    response["Referrer-Policy"] = "no-referrer"
    return response


def decorate(todos: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Steps with what the template shows but the data does not carry."""
    return [
        step | {"duration": format_duration(step.get("duration_s")), "label": step["status"].replace("_", " ")}
        for step in todos
    ]


def format_duration(seconds: float | None) -> str:
    if seconds is None:
        return ""
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m {seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m"


@require_GET
def revision_json(request: HttpRequest, public_id: str, number: int) -> HttpResponse:
    """The plan as of one revision, for the panel's timeline (browser session or share link)."""
    found = viewer_session(request, public_id)
    if isinstance(found, HttpResponse):
        # A script asked: answer JSON, not the login page.
        return JsonResponse({"ok": False, "error": {"code": "forbidden", "message": "No access"}}, status=403)
    session, _ = found
    row = Revision.objects.filter(session=session, number=number).first() if number <= MAX_REVISION else None
    if row is None:
        raise Http404("No such revision")
    return JsonResponse(revision_data(session, row) | {"at": plan.iso(row.created_at), "tool": row.tool})


def revisions_for_export(session: Session) -> list[dict[str, Any]]:
    return [
        {
            "revision": row.number,
            "at": plan.iso(row.created_at),
            "tool": row.tool,
            "dialect": row.dialect,
            "todos": row.todos,
            "changes": row.changes,
            "dropped": row.dropped,
            "warnings": row.warnings,
        }
        for row in Revision.objects.filter(session=session).order_by("number")
    ]


@require_GET
@for_viewer
def export_json(request: HttpRequest, session: Session, share: str | None) -> HttpResponse:
    body = current_data(session) | {"revisions": revisions_for_export(session)}
    response = HttpResponse(
        json.dumps(body, ensure_ascii=False, indent=2), content_type="application/json; charset=utf-8"
    )
    response["Content-Disposition"] = f'attachment; filename="todoweb-{session.public_id}.json"'
    return response


# `&` too: a Markdown renderer would turn an escaped entity like `&lt;` back into `<`.
MARKDOWN_SPECIALS = str.maketrans({c: "\\" + c for c in "\\`*_[]<>#|&~"})


def markdown_text(text: str | None) -> str:
    # Agent text on one line, escaped so that it renders as the text it is (no
    # HTML, links or structure sneaking into a Markdown viewer).
    return " ".join((text or "").split()).translate(MARKDOWN_SPECIALS)


def render_markdown(data: dict[str, Any], *, now: datetime | None = None) -> str:
    info = data["session"]
    counts = data["counts"]
    lines = [
        f"# {markdown_text(info['title']) or info['key']}",
        "",
        f"- Session: `{info['key']}` ({info['project']}, {info['dialect'] or 'no dialect'})",
        f"- State: {info['state']}",
        f"- Progress: {counts['completed']}/{counts['total']} completed (revision {data['revision']})",
        f"- Updated: {info['updated_at']}",
        "",
        "## Steps",
        "",
    ]
    if not data["todos"]:
        lines.append("_No steps._")
    for step in data["todos"]:
        line = f"- {MARKERS.get(step['status'], '[ ]')} {markdown_text(step['content'])}"
        if step["status"] == "in_progress" and step.get("active_form"):
            line += f" — {markdown_text(step['active_form'])}"
        if step.get("duration_s") is not None:
            line += f" ({format_duration(step['duration_s'])})"
        lines.append(line)
    if data["dropped"]:
        lines += ["", "## Dropped while unfinished", ""]
        lines += [f"- {markdown_text(step['content'])} (was {step['status']})" for step in data["dropped"]]
    if data["warnings"]:
        lines += ["", "## Warnings", ""]
        lines += [f"- {markdown_text(w.get('message'))}" for w in data["warnings"]]
    return "\n".join(lines) + "\n"


@require_GET
@for_viewer
def export_md(request: HttpRequest, session: Session, share: str | None) -> HttpResponse:
    response = HttpResponse(render_markdown(current_data(session)), content_type="text/markdown; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="todoweb-{session.public_id}.md"'
    return response
