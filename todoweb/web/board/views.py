"""Browser pages: the dashboard, a session's panel, its history and exports.

Pages render the current data on the server (no empty flash), then the page's
script opens the websocket and applies events. Access: a logged-in member of the
session's project (staff: any), or anyone holding a valid share link
(`?share=<token>`), read-only.
"""

from __future__ import annotations

import json
import math
from datetime import datetime
from functools import wraps
from typing import Any

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import redirect_to_login
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.middleware.csrf import get_token
from django.shortcuts import render
from django.utils import timezone
from django.utils.cache import patch_vary_headers
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from todoweb import plan
from todoweb.live.access import session_for_viewer
from todoweb.models import MAX_REVISION, Question, Revision, Session
from todoweb.plan.steps import MARKERS
from todoweb.reads import (
    DASHBOARD_LIMIT,
    current_data,
    dashboard_dialects,
    dashboard_summaries,
    dashboard_totals,
    dropped_ledger,
    may_edit,
    messages_data,
    questions_data,
    revision_data,
    session_summary,
    visible_projects,
)
from todoweb.web.board.actions import action_urls, active_share_links


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


# Cards the dashboard renders first, and adds per "Show more".
DASHBOARD_PAGE = 100
# The totals at the top of the dashboard, in the order a person scans them.
TOTALS_ORDER = ["active", "idle", "failed", "completed", "empty", "closed"]
GROUPINGS = {"project": "By project", "dialect": "By dialect"}


@login_required
@require_GET
# Plans are private (a share link's too): no cache, a proxy's or the browser's, keeps one.
@never_cache
def dashboard(request: HttpRequest) -> HttpResponse:
    """Every session the user may see, newest activity first, a page at a time; the
    totals by state count them all. Filters come from the query (bookmarkable) and
    apply in the database, to the first render too. The page's script asks this view
    for JSON (`Accept: application/json`) for older pages and fresh counts."""
    filters = dashboard_filters(request)
    if request.headers.get("Accept", "").startswith("application/json"):
        response = dashboard_json(request, filters)
    else:
        response = dashboard_page(request, filters)
    patch_vary_headers(response, ["Accept"])
    return response


def dashboard_filters(request: HttpRequest) -> dict[str, str]:
    state = request.GET.get("state", "")
    return {
        "project": request.GET.get("project", ""),
        "dialect": request.GET.get("dialect", ""),
        "state": state if state in Session.State.values else "",
        "q": request.GET.get("q", "").strip(),
    }


def query_time(request: HttpRequest, name: str) -> datetime | None:
    try:
        moment = plan.parse_iso(request.GET.get(name, "").replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment is None or moment.tzinfo else None


def matching_page(
    request: HttpRequest, filters: dict[str, str], before: datetime | None
) -> tuple[list[dict[str, Any]], bool]:
    """A page of the sessions that match, newest first, and whether older ones match too."""
    page = dashboard_summaries(request.user, **filters, before=before, limit=DASHBOARD_PAGE + 1)
    return page[:DASHBOARD_PAGE], len(page) > DASHBOARD_PAGE


def with_parents(request: HttpRequest, page: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The page and the parents of its subagents: a parent shows while one of them does."""
    ids = {s["id"] for s in page}
    parents = {s["parent"] for s in page if s["parent"] and s["parent"] not in ids}
    return page + (dashboard_summaries(request.user, ids=parents) if parents else [])


def dashboard_json(request: HttpRequest, filters: dict[str, str]) -> JsonResponse:
    """`before=<time>`: the next page of matching sessions last active before then (empty:
    the first page), and `next`, where the page after it starts (null: there is none).
    `count_before=<time>`: how many sessions (any state) matching the other filters were
    last active before then, by state (the page counts the newer ones it holds itself)."""
    body: dict[str, Any] = {}
    if "before" in request.GET:
        page, more = matching_page(request, filters, query_time(request, "before"))
        body |= {"sessions": with_parents(request, page), "next": page[-1]["updated_at"] if more else None}
    count_before = query_time(request, "count_before")
    if count_before is not None:
        base = {k: v for k, v in filters.items() if k != "state"}
        body["counts"] = dashboard_totals(request.user, **base, before=count_before)
    return JsonResponse(body)


def dashboard_page(request: HttpRequest, filters: dict[str, str]) -> HttpResponse:
    group = request.GET.get("group", "")
    group = group if group in GROUPINGS else ""
    page, more = matching_page(request, filters, query_time(request, "before"))
    shown = with_parents(request, page)
    totals = dashboard_totals(request.user, **{k: v for k, v in filters.items() if k != "state"})
    families = family_order([card(summary) for summary in shown])
    return render(
        request,
        "dashboard.html",
        {
            "groups": grouped(families, group),
            "totals": totals_links(request, totals, filters["state"]),
            "all_count": sum(totals.values()),
            "shown_count": len(shown),
            "matching_count": totals[filters["state"]] if filters["state"] else sum(totals.values()),
            "more_href": older_href(request, page) if more else "",
            "tab_title": tab_title(totals),
            "projects": list(visible_projects(request.user).values_list("slug", flat=True)),
            "dialects": dashboard_dialects(request.user),
            "groupings": GROUPINGS,
            "filters": filters | {"group": group},
            "config": {
                "ws": "/ws/dashboard/",
                "idleAfter": settings.TODOWEB_IDLE_AFTER,
                "page": DASHBOARD_PAGE,
                "snapshotLimit": DASHBOARD_LIMIT,
                "states": TOTALS_ORDER,
                # Their sparklines are drawn above: the script gets the summaries without.
                "sessions": [{k: v for k, v in s.items() if k != "trend"} for s in shown],
                "next": page[-1]["updated_at"] if more else None,
                "totals": totals,
            },
        },
    )


def card(summary: dict[str, Any]) -> dict[str, Any]:
    """What a card shows beyond the summary: times, the bar's percentage, the sparkline,
    the last folder of where the agent works."""
    return with_times(summary) | {
        "spark": sparkline_points(summary.get("trend"), summary["progress"]),
        "spark_label": sparkline_label(summary.get("trend"), summary["progress"]),
        "folder": last_folder(summary.get("workdir") or ""),
    }


def last_folder(path: str) -> str:
    """`/home/me/shop/` → `shop` (and `C:\\work\\shop` → `shop`); dashboard.js does the same."""
    parts = [part for part in path.replace("\\", "/").split("/") if part]
    return parts[-1] if parts else ""


# The sparkline's viewBox is 100 × 20; dashboard.js draws it the same way from live data.
def sparkline_points(trend: list[list[float]] | None, progress: float) -> str:
    """Progress over time as SVG polyline points: x by time (by revision when they share
    a second), y by progress; without history, a flat line at the current progress."""
    points = trend or [[0, progress]]
    if len(points) == 1:
        points = [[0, points[0][1]], [1, points[0][1]]]
    start, span = points[0][0], points[-1][0] - points[0][0]
    last = len(points) - 1
    coords = []
    for index, (moment, value) in enumerate(points):
        x = (moment - start) / span * 100 if span > 0 else index / last * 100
        coords.append(f"{round(x, 1):g},{round(19 - value * 18, 1):g}")
    return " ".join(coords)


def sparkline_label(trend: list[list[float]] | None, progress: float) -> str:
    first = round((trend[0][1] if trend else progress) * 100)
    return f"Progress over time: from {first}% to {round(progress * 100)}%"


def grouped(families: list[dict[str, Any]], group: str) -> list[dict[str, Any]]:
    """Families in sections by project or dialect, the section with the newest activity first."""
    if not group:
        return [{"name": "", "families": families}]
    sections: dict[str, list[dict[str, Any]]] = {}
    for family in families:
        sections.setdefault(family[group] or "no dialect", []).append(family)
    return [{"name": name, "families": members, "alerts": alerts(members)} for name, members in sections.items()]


def alerts(families: list[dict[str, Any]]) -> str:
    """What a section's header says needs a look: '1 failed · 2 idle'."""
    states = []
    for family in families:
        states += [family["state"]] + [child["state"] for child in family["children"]]
    return " · ".join(f"{states.count(state)} {state}" for state in ("failed", "idle") if state in states)


def totals_links(request: HttpRequest, totals: dict[str, int], current: str) -> list[dict[str, Any]]:
    """The totals by state, each a link to the dashboard filtered to that state (again: all)."""
    links = []
    for state in ["", *TOTALS_ORDER]:
        query = request.GET.copy()
        query.pop("before", None)
        query.pop("state", None)
        if state and state != current:
            query["state"] = state
        links.append(
            {
                "state": state,
                "count": totals[state] if state else sum(totals.values()),
                "href": f"?{query.urlencode()}" if query else "?",
                "current": state == current,
            }
        )
    return links


def older_href(request: HttpRequest, page: list[dict[str, Any]]) -> str:
    """The next page without JavaScript: sessions last active before the oldest shown."""
    query = request.GET.copy()
    query["before"] = page[-1]["updated_at"]
    return f"?{query.urlencode()}"


def tab_title(totals: dict[str, int]) -> str:
    """What needs a look first, in the tab's title: '2 failed · 3 idle · 12 active · …'."""
    counts = [f"{totals[state]} {state}" for state in ("failed", "idle", "active") if totals[state]]
    return " · ".join([*counts, "Sessions · todoweb"])


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
@never_cache
@for_viewer
def session_panel(request: HttpRequest, session: Session, share: str | None) -> HttpResponse:
    """The panel; asked for JSON (`Accept: application/json`), people's messages to the
    agent and its questions as they stand (the page reads them again after a reconnect)."""
    # Members see who decided; editors and admins act from the panel; a share link's
    # holder and a viewer only watch.
    member = share is None
    messages, questions = messages_data(session), questions_data(session)
    deciders = question_deciders(request, session, questions) if member else {}
    if request.headers.get("Accept", "").startswith("application/json"):
        response: HttpResponse = JsonResponse({"messages": messages, "questions": questions, "deciders": deciders})
    else:
        response = panel_page(request, session, share, messages, questions, deciders)
    patch_vary_headers(response, ["Accept"])
    # The share token is in the URL: keep it out of Referer headers.
    response["Referrer-Policy"] = "no-referrer"
    return response


def question_deciders(request: HttpRequest, session: Session, questions: list[dict[str, Any]]) -> dict[str, str]:
    """Who answered each decided question ("you": this user), for members only: a share
    link's holder sees no member's name."""
    decided = [q["id"] for q in questions if q["state"] in ("allowed", "denied")]
    rows = Question.objects.filter(session=session, pk__in=decided).exclude(decided_by="")
    me = request.user.get_username()
    return {str(pk): "you" if by == me else by for pk, by in rows.values_list("pk", "decided_by")}


def message_view(message: dict[str, Any], now: datetime) -> dict[str, Any]:
    """A message with the times its partial shows as "… ago"."""
    return message | {"at_ago": time_ago(message["at"], now), "told_ago": time_ago(message["told_at"], now)}


def time_ago(iso: str | None, now: datetime) -> str:
    """'just now', '12s ago', '3 min ago', '2 h ago', '4 d ago': as live.js's timeAgo says it."""
    moment = parse_time(iso)
    if moment is None:
        return ""
    seconds = max(0, round((now - moment).total_seconds()))
    if seconds < 10:
        return "just now"
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds // size} {unit} ago"
    return f"{seconds}s ago"


def question_view(question: dict[str, Any], by: str, now: datetime) -> dict[str, Any]:
    """A question with the words its partial shows (panel_steering.js says the same)."""
    expires = parse_time(question["expires_at"])
    state = "expired" if question["state"] == "open" and expires is not None and expires <= now else question["state"]
    allowed = "approved" if question["kind"] == "plan" else "allowed"
    who = f" by {by}" if by else ""
    left = f" · {countdown((expires - now).total_seconds())} left to answer" if state == "open" and expires else ""
    return question | {
        "shown_state": state,
        "at_ago": time_ago(question["at"], now),
        "title": "The agent asks you to approve its plan"
        if question["kind"] == "plan"
        else f"The agent asks to use {question['tool'] or 'a tool'}",
        "badge": {"open": "waiting for an answer", "allowed": allowed}.get(state, state),
        "outcome": {
            "allowed": f"{allowed.capitalize()}{who}.",
            "denied": f"Denied{who}.",
            "expired": "No answer in time: the agent's own prompt asked instead.",
        }.get(state, ""),
        "left": left,
    }


def countdown(seconds: float) -> str:
    """'4:05', '1:02:03': what is left (never below 0:00)."""
    total = max(0, math.ceil(seconds))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def parse_time(iso: str | None) -> datetime | None:
    return plan.parse_iso(iso.replace("Z", "+00:00")) if iso else None


def panel_page(
    request: HttpRequest,
    session: Session,
    share: str | None,
    messages: list[dict[str, Any]],
    questions: list[dict[str, Any]],
    deciders: dict[str, str],
) -> HttpResponse:
    data = current_data(session)
    base = session.get_absolute_url()
    query = share_query(share)
    can_act = share is None and may_edit(request.user, session.project_id)
    for_members = {"deciders": deciders} if share is None else {}
    if can_act:
        for_members |= {"actions": action_urls(session), "csrfToken": get_token(request)}
    now = timezone.now()
    return render(
        request,
        "session.html",
        {
            "session": session,
            "data": data,
            "info": with_times(session_summary(session) | {"progress": data["progress"]}),
            "todos": decorate(data["todos"]),
            # The pills under the bar: the statuses that have steps, as words ("in progress").
            "pills": [(k, n, k.replace("_", " ")) for k, n in data["counts"].items() if k != "total" and n],
            "dropped": decorate(data["dropped"]),
            "shared": share is not None,
            "can_act": can_act,
            "share_links": active_share_links(session) if can_act else 0,
            "export_json": f"{base}export.json{query}",
            "export_md": f"{base}export.md{query}",
            "children": [session_summary(c) for c in session.children.filter(archived_at__isnull=True)],
            # People's messages to the agent and its questions to them (each also live).
            "messages": [message_view(m, now) for m in messages],
            # Newest first: the question waiting for an answer is on top.
            "questions": [question_view(q, deciders.get(str(q["id"]), ""), now) for q in reversed(questions)],
            "config": {
                "ws": f"/ws/sessions/{session.public_id}/{query}",
                "revisionUrl": f"{base}revisions/{{n}}.json{query}",
                "historyUrl": f"{base}history.json{query}",
                "droppedUrl": f"{base}dropped.json{query}",
                "exportJson": f"{base}export.json{query}",
                "exportMd": f"{base}export.md{query}",
                "idleAfter": settings.TODOWEB_IDLE_AFTER,
                "initial": data,
                "messages": messages,
                "questions": questions,
                "steeringUrl": f"{base}{query}",
            }
            | for_members,
        },
    )


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
@never_cache
def revision_json(request: HttpRequest, public_id: str, number: int) -> HttpResponse:
    """The plan as of one revision, for the panel's timeline (browser session or share link)."""
    found = viewer_session(request, public_id)
    if isinstance(found, HttpResponse):
        # A script asked: answer JSON, not the login page.
        return JsonResponse({"ok": False, "error": {"code": "forbidden", "message": "No access"}}, status=403)
    session, share = found
    row = Revision.objects.filter(session=session, number=number).first() if number <= MAX_REVISION else None
    if row is None:
        raise Http404("No such revision")
    data = revision_data(session, row)
    if share is not None:
        data["written"]["input"] = anonymous_input(row)
    return JsonResponse(data | {"at": plan.iso(row.created_at), "tool": row.tool})


def anonymous_input(row: Revision) -> Any:
    """A revision's input as a share link's holder may see it: a person's edit without
    the name of the member who made it (members see it; a link is for outsiders)."""
    if row.author == Revision.Author.USER and isinstance(row.raw_input, dict):
        return {key: value for key, value in row.raw_input.items() if key != "user"}
    return row.raw_input


@require_GET
@never_cache
def history_json(request: HttpRequest, public_id: str) -> HttpResponse:
    """Progress over time, for the panel's timeline chart (browser session or share link)."""
    found = viewer_session(request, public_id)
    if isinstance(found, HttpResponse):
        return JsonResponse({"ok": False, "error": {"code": "forbidden", "message": "No access"}}, status=403)
    session, _ = found
    return JsonResponse(progress_history(session))


@require_GET
@never_cache
def dropped_json(request: HttpRequest, public_id: str) -> HttpResponse:
    """Every unfinished step the plan dropped, for the panel's "all N" link (browser
    session or share link): the data carries only the newest few."""
    found = viewer_session(request, public_id)
    if isinstance(found, HttpResponse):
        return JsonResponse({"ok": False, "error": {"code": "forbidden", "message": "No access"}}, status=403)
    session, _ = found
    return JsonResponse({"dropped": dropped_ledger(session)})


def progress_history(session: Session) -> dict[str, list[list[Any]]]:
    """Per revision `[number, at, completed, total, author]`, and every status change
    `[number, step id, from, to]` (`from` None: the step appeared; `to` None: it left).

    Counted from each revision's `changes` rather than its steps: one query that
    reads a few changes per revision instead of every revision's whole list."""
    revisions: list[list[Any]] = []
    changes: list[list[Any]] = []
    completed = total = 0
    rows = Revision.objects.filter(session=session).order_by("number")
    for number, created_at, moved, author in rows.values_list("number", "created_at", "changes", "author"):
        for change in moved:
            before, after = change["from"], change["to"]
            total += (after is not None) - (before is not None)
            completed += (after == "completed") - (before == "completed")
            changes.append([number, change["id"], before, after])
        revisions.append([number, plan.iso(created_at), completed, total, author])
    return {"revisions": revisions, "changes": changes}


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
@never_cache
@for_viewer
def export_json(request: HttpRequest, session: Session, share: str | None) -> HttpResponse:
    body = current_data(session) | {
        "dropped_ledger": dropped_ledger(session),
        "revisions": revisions_for_export(session),
    }
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
@never_cache
@for_viewer
def export_md(request: HttpRequest, session: Session, share: str | None) -> HttpResponse:
    response = HttpResponse(render_markdown(current_data(session)), content_type="text/markdown; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="todoweb-{session.public_id}.md"'
    return response
