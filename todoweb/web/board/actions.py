"""The board's write actions for members: rename, close, reopen, archive,
share links and plan edits, posted as JSON by the session panel's script.

The API under /api/v1/ takes tokens and skips the browser's middleware, so a browser
cannot use it: these are plain Django views behind the login session, with Django's
CSRF check (the script sends the X-CSRFToken header). Each action calls the service
the API's own endpoint calls. Only editors and admins of the session's project (staff:
anyone) may act: a logged-out viewer, a share link's holder included, gets 403, and so
does a member whose role is viewer; a logged-in non-member gets 404, as for the panel
itself. Errors have the API's shape.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import path, reverse
from django.utils import timezone
from django.views.decorators.http import require_POST
from pydantic import BaseModel, ConfigDict, Field
from pydantic import ValidationError as PydanticError

from todoweb import plan
from todoweb.calls.errors import ApiError, NotFound, TodowebError, first_problem
from todoweb.models import Session, ShareLink
from todoweb.plan.edits import PlanEdit
from todoweb.reads import current_data, may_edit, message_data, visible_sessions
from todoweb.web.api.body import StrictJson
from todoweb.web.api.errors import error_response
from todoweb.web.api.people import Note
from todoweb.web.api.preconditions import if_match_revision
from todoweb.web.api.questions import Answer, answer_question
from todoweb.writes import people
from todoweb.writes.revisions import TITLE_MAX_CHARS
from todoweb.writes.sharing import NewShareLink, share_create, share_revoke_all, share_url

Model = TypeVar("Model", bound=BaseModel)


def member_session(request: HttpRequest, public_id: str) -> Session:
    """The session, if the logged-in user may change it. A share link grants nothing here,
    and a viewer's membership only lets them watch."""
    if not request.user.is_authenticated:
        raise ApiError(403, "forbidden", "Log in as a member of this session's project to change it")
    session = visible_sessions(request.user).with_current().filter(public_id=public_id).first()
    if session is None:
        raise NotFound("No such session")
    if not may_edit(request.user, session.project_id):
        raise ApiError(
            403,
            "forbidden",
            "You are a viewer of this project: you can watch its sessions; an editor or admin changes them",
        )
    return session


def member_action(view: Callable[[HttpRequest, Session], HttpResponse]) -> Callable[..., HttpResponse]:
    """Runs `view(request, session)` for a member's POST; any domain error becomes the
    API's JSON error answer (the panel's script reads both alike)."""

    @require_POST
    @wraps(view)
    def wrapper(request: HttpRequest, public_id: str) -> HttpResponse:
        try:
            return view(request, member_session(request, public_id))
        except TodowebError as error:
            return error_response(request, error)

    return wrapper


def payload(model: type[Model], request: HttpRequest) -> Model:
    """The JSON body as `model` (an empty body: the model's defaults), read as the API
    reads its bodies, or a 4xx naming the first problem."""
    try:
        return model.model_validate(StrictJson().parse_body(request))
    except PydanticError as exc:
        raise first_problem(exc.errors(include_url=False)) from None


class Rename(BaseModel):
    model_config = ConfigDict(extra="forbid")

    title: str = Field(max_length=TITLE_MAX_CHARS)


@member_action
def rename(request: HttpRequest, session: Session) -> HttpResponse:
    # A blank title shows the session key again, as in the API.
    title = " ".join(payload(Rename, request).title.split())
    return JsonResponse(current_data(people.session_change(session, title=title)))


@member_action
def close(request: HttpRequest, session: Session) -> HttpResponse:
    return JsonResponse(current_data(people.session_change(session, closed=True)))


@member_action
def reopen(request: HttpRequest, session: Session) -> HttpResponse:
    return JsonResponse(current_data(people.session_change(session, closed=False)))


@member_action
def archive(request: HttpRequest, session: Session) -> HttpResponse:
    people.session_archive(session)
    # The panel of an archived session is gone: the script goes back to the dashboard.
    return JsonResponse({"archived": True, "dashboard": reverse("dashboard")})


@member_action
def share(request: HttpRequest, session: Session) -> HttpResponse:
    expires_in = payload(NewShareLink, request).expires_in
    link, raw = share_create(session=session, expires_in=expires_in)
    body = {
        "url": request.build_absolute_uri(share_url(session, raw)),
        "token": raw,
        "expires_at": plan.iso(link.expires_at),
        "active_links": active_share_links(session),
    }
    return JsonResponse(body, status=201)


@member_action
def revoke_shares(request: HttpRequest, session: Session) -> HttpResponse:
    revoked = share_revoke_all(session=session)
    return JsonResponse({"revoked": revoked, "active_links": 0})


@member_action
def edit_plan(request: HttpRequest, session: Session) -> HttpResponse:
    """The person's whole list, made on the revision named by If-Match (409 with the
    current data when the agent wrote in between)."""
    if_match = if_match_revision(request.headers.get("If-Match"), required=True)
    edit = payload(PlanEdit, request)
    data = people.session_edit(session, edit, if_match=if_match, user=request.user)
    return JsonResponse(data)


@member_action
def note(request: HttpRequest, session: Session) -> HttpResponse:
    """A note for the agent, told on its next call, with no change to the plan."""
    message = people.session_note(session, payload(Note, request).text, user=request.user)
    return JsonResponse(message_data(message), status=201)


class QuestionAnswer(Answer):
    question: int


@member_action
def answer(request: HttpRequest, session: Session) -> HttpResponse:
    """A member's answer to the agent's question (approve its plan, allow a tool)."""
    given = payload(QuestionAnswer, request)
    return JsonResponse(answer_question(session, given.question, given, by=request.user.get_username()))


def active_share_links(session: Session) -> int:
    """Links of the session that still open it (their raw tokens are not kept: only counted)."""
    return ShareLink.objects.filter(session=session, revoked_at__isnull=True, expires_at__gt=timezone.now()).count()


# Mounted under the panel's URL, /s/<public_id>/actions/ (todoweb/urls.py).
urlpatterns = [
    path("rename", rename, name="session-rename"),
    path("close", close, name="session-close"),
    path("reopen", reopen, name="session-reopen"),
    path("archive", archive, name="session-archive"),
    path("share", share, name="session-share"),
    path("share/revoke", revoke_shares, name="session-share-revoke"),
    path("edits", edit_plan, name="session-edits"),
    path("note", note, name="session-note"),
    path("answer", answer, name="session-answer"),
]


def action_urls(session: Session) -> dict[str, Any]:
    """The URL of each action for this session, for the panel's script (by URL name, minus `session-`)."""
    return {
        pattern.name.removeprefix("session-"): reverse(pattern.name, args=[session.public_id])
        for pattern in urlpatterns
    }
