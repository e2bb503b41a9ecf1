"""Reads: the data shape (docs/api.md), session summaries, and who may see what."""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models import Count, OuterRef, Q, QuerySet, Subquery
from django.utils import timezone

from todoweb import plan
from todoweb.dialects import kimi
from todoweb.models import Membership, Message, Project, Question, Revision, Session, Step
from todoweb.plan.steps import FINISHED


def session_info(session: Session, *, now: datetime | None = None) -> dict[str, Any]:
    return {
        "id": session.public_id,
        "key": session.key,
        "project": session.project.slug,
        "title": session.title,
        "dialect": session.dialect or None,
        "state": session.state_at(now or timezone.now()),
        "url": session.get_absolute_url(),
        "parent": session.parent.public_id if session.parent else None,
        "created_at": plan.iso(session.created_at),
        "updated_at": plan.iso(session.updated_at),
    }


def session_summary(session: Session, *, now: datetime | None = None) -> dict[str, Any]:
    """A session in lists and on the dashboard: no steps, just where it stands."""
    return session_info(session, now=now) | {
        "revision": session.revision,
        "total": session.total_steps,
        "completed": session.completed_steps,
        "progress": session.progress,
        "current": session.current_text,
        "trend": session.trend,
        "workdir": session.workdir,
        "branch": session.branch,
    }


def plan_data(session: Session, revision: Revision | None, *, now: datetime | None = None) -> dict[str, Any]:
    """The one shape shared by tool answers, GET session, revisions and live snapshots."""
    todos = revision.todos if revision else []
    return {
        "session": session_info(session, now=now),
        "revision": revision.number if revision else 0,
        "todos": todos,
        "counts": plan.counts(todos),
        "progress": plan.progress(todos),
        "current": plan.current_ids(todos),
        "changes": revision.changes if revision else [],
        "dropped": revision.dropped if revision else [],
        "dropped_count": revision.dropped_count if revision else 0,
        "warnings": revision.warnings if revision else [],
        "author": revision.author if revision else Revision.Author.AGENT,
        "display": kimi.display_block(todos),
    }


def revision_data(session: Session, row: Revision, *, now: datetime | None = None) -> dict[str, Any]:
    """The plan as of revision `row`: its steps, and the session as it stood then."""
    data = plan_data(session, row, now=now)
    todos = row.todos
    data["session"] |= {
        "title": row.title or data["session"]["title"],
        "dialect": row.dialect,
        "state": "empty" if not todos else "completed" if all(t["status"] in FINISHED for t in todos) else "active",
        "updated_at": plan.iso(row.created_at),
    }
    return data | {
        "written": {
            "tool": row.tool,
            "dialect": row.dialect,
            "call_id": row.call_id or None,
            "title": row.title or None,
            "at": plan.iso(row.created_at),
            "input": row.raw_input,
        }
    }


def dropped_ledger(session: Session) -> list[dict[str, Any]]:
    """Every unfinished step the session's plan dropped and did not take back, oldest
    first, read back from the revisions kept (each keeps the steps it dropped; the
    data shape carries only the newest few)."""
    ledger: dict[str, dict[str, Any]] = {}
    rows = Revision.objects.filter(session=session).order_by("number").values_list("todos", "dropped_here")
    for todos, dropped_here in rows.iterator(chunk_size=100):
        for step in todos:
            ledger.pop(step["id"], None)  # back in the plan
        for step in dropped_here:
            ledger.pop(step["id"], None)
            ledger[step["id"]] = step
    return list(ledger.values())


# The messages a panel shows: the newest.
MESSAGES_SHOWN = 20


def messages_data(session: Session) -> list[dict[str, Any]]:
    """People's newest messages to the agent, oldest first, each with where it stands:
    `waiting`, `told` (when, by which route) or, an edit, `kept` in the agent's first
    revision after it (a write the agent made without seeing it is merged with it)."""
    kept_in = Revision.objects.filter(
        session=session, author=Revision.Author.AGENT, number__gt=OuterRef("revision")
    ).order_by("number")
    rows = list(
        Message.objects.filter(session=session)
        .annotate(kept_in=Subquery(kept_in.values("number")[:1]))
        .order_by("-id")[:MESSAGES_SHOWN]
    )
    return [message_data(message) for message in reversed(rows)]


def message_data(message: Message) -> dict[str, Any]:
    # The agent's first revision after an edit (annotated by messages_data).
    kept_in = getattr(message, "kept_in", None) if message.kind == Message.Kind.EDIT else None
    if kept_in is not None:
        state = "kept"
    elif message.told_at is not None:
        state = "told"
    else:
        state = "waiting"
    return {
        "id": message.pk,
        "kind": message.kind,
        "revision": message.revision,
        "text": message.text,
        "at": plan.iso(message.created_at),
        "state": state,
        "told_at": plan.iso(message.told_at),
        "told_via": message.told_via or None,
        "kept_in": kept_in,
    }


# The questions a panel shows: the open ones and the newest answered.
QUESTIONS_SHOWN = 10


def questions_data(session: Session, *, now: datetime | None = None) -> list[dict[str, Any]]:
    """The agent's newest questions to people, oldest first: `open` (until it stops
    waiting), `allowed`, `denied`, `expired` (its own prompt asked instead) or
    `abandoned` (every request waiting for the answer hung up before it came)."""
    rows = list(Question.objects.filter(session=session).order_by("-id")[:QUESTIONS_SHOWN])
    return [question_data(question, now=now or timezone.now()) for question in reversed(rows)]


def question_data(question: Question, *, now: datetime) -> dict[str, Any]:
    if question.decision:
        state = "allowed" if question.decision == Question.Decision.ALLOW else "denied"
    elif question.abandoned_at is not None:
        state = "abandoned"
    else:
        state = "open" if question.expires_at > now else "expired"
    return {
        "id": question.pk,
        "kind": question.kind,
        "tool": question.tool_name or None,
        "text": question.text,
        "detail": question.detail,
        "at": plan.iso(question.created_at),
        "expires_at": plan.iso(question.expires_at),
        "state": state,
        "feedback": question.feedback,
        "decided_at": plan.iso(question.decided_at),
        "abandoned_at": plan.iso(question.abandoned_at),
    }


def current_data(session: Session) -> dict[str, Any]:
    """The session's current plan (read the session with `Session.objects.with_current()`)."""
    return plan_data(session, session.current)


def state_filter(state: str, now: datetime) -> Q:
    """Sessions in a derived state, as a database filter (the state_at rules, in SQL)."""
    idle_since = now - timedelta(seconds=settings.TODOWEB_IDLE_AFTER)
    open_ = Q(closed_at__isnull=True)
    return {
        "closed": Q(closed_at__isnull=False),
        "empty": open_ & Q(total_steps=0),
        "completed": open_ & Q(total_steps__gt=0, open_steps=0),
        "failed": open_ & Q(open_steps__gt=0, working_steps=0),
        "idle": open_ & Q(working_steps__gt=0, updated_at__lte=idle_since),
        "active": open_ & Q(working_steps__gt=0, updated_at__gt=idle_since),
    }[state]


def visible_projects(user) -> QuerySet[Project]:
    if user.is_staff:
        return Project.objects.all()
    return Project.objects.filter(members=user)


def project_role(user, project: Project | int) -> str | None:
    """What the user is in the project: "admin", "editor", "viewer" (None: not a member).
    Staff are admins of every project."""
    if not user.is_authenticated or not user.is_active:
        return None
    if user.is_staff:
        return Membership.Role.ADMIN
    project_id = project if isinstance(project, int) else project.pk
    return Membership.objects.filter(project_id=project_id, user=user).values_list("role", flat=True).first()


def may_edit(user, project: Project | int) -> bool:
    """Whether the user may act on the project's sessions (edit plans, leave notes,
    answer questions, rename, close, archive, share): editors, admins and staff."""
    return project_role(user, project) in (Membership.Role.EDITOR, Membership.Role.ADMIN)


def administered_projects(user) -> QuerySet[Project]:
    """The projects the user runs from the board (staff: every project)."""
    if not user.is_authenticated or not user.is_active:
        return Project.objects.none()
    if user.is_staff:
        return Project.objects.all()
    return Project.objects.filter(memberships__user=user, memberships__role=Membership.Role.ADMIN)


def visible_sessions(user) -> QuerySet[Session]:
    sessions = Session.objects.filter(archived_at__isnull=True).select_related("project", "parent")
    if user.is_staff:
        return sessions
    return sessions.filter(project__members=user)


# The dashboard's socket sends the most recently active sessions, up to this many;
# the page asks for older ones a page at a time and counts every session by state.
DASHBOARD_LIMIT = 500


def dashboard_sessions(user, *, project: str = "", dialect: str = "", q: str = "") -> QuerySet[Session]:
    """The sessions a user may see, narrowed by project, dialect and a search of title or key."""
    sessions = visible_sessions(user)
    if project:
        sessions = sessions.filter(project__slug=project)
    if dialect:
        sessions = sessions.filter(dialect=dialect)
    if q:
        sessions = sessions.filter(Q(title__icontains=q) | Q(key__icontains=q))
    return sessions


def dashboard_summaries(
    user,
    *,
    project: str = "",
    dialect: str = "",
    state: str = "",
    q: str = "",
    before: datetime | None = None,
    ids: Collection[str] | None = None,
    limit: int | None = None,
) -> list[dict[str, Any]]:
    """The summaries of the sessions a user may see, newest activity first: all of them
    up to DASHBOARD_LIMIT, or those that match, last active before `before`."""
    now = timezone.now()
    sessions = dashboard_sessions(user, project=project, dialect=dialect, q=q)
    if state:
        sessions = sessions.filter(state_filter(state, now))
    if before is not None:
        sessions = sessions.filter(updated_at__lt=before)
    if ids is not None:
        sessions = sessions.filter(public_id__in=ids)
    sessions = sessions.order_by("-updated_at", "-pk")[: limit or DASHBOARD_LIMIT]
    return [session_summary(session, now=now) for session in sessions]


def dashboard_totals(
    user, *, project: str = "", dialect: str = "", q: str = "", before: datetime | None = None
) -> dict[str, int]:
    """How many of the sessions a user may see (that match, last active before `before`)
    are in each state: one aggregate query, whatever their number."""
    now = timezone.now()
    sessions = dashboard_sessions(user, project=project, dialect=dialect, q=q)
    if before is not None:
        sessions = sessions.filter(updated_at__lt=before)
    counts = {state: Count("pk", filter=state_filter(state, now)) for state in Session.State.values}
    return sessions.aggregate(**counts)


def dashboard_dialects(user) -> list[str]:
    """The dialects the user's sessions were written in, for the dashboard's filter."""
    dialects = visible_sessions(user).exclude(dialect="").order_by("dialect").values_list("dialect", flat=True)
    return list(dialects.distinct())


def step_data(step: Step) -> dict[str, Any]:
    """A step row in the data shape's form (as in a revision's `todos`)."""
    return {
        "id": step.step_id,
        "content": step.content,
        "active_form": step.active_form or None,
        "notes": step.notes or None,
        "status": step.status,
        "priority": step.priority or None,
        "owner": step.owner or None,
        "blocked_by": step.blocked_by,
        "position": step.position,
        "first_seen_at": plan.iso(step.first_seen_at),
        "started_at": plan.iso(step.started_at),
        "completed_at": plan.iso(step.completed_at),
        "duration_s": step.duration_s,
        "reopened": step.reopened,
    }
