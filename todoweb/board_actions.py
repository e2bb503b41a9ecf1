"""The board's write actions for members (SPEC §9): rename, close, reopen, archive,
share links and plan edits, posted as JSON by the session panel's script.

The API under /api/v1/ takes tokens and skips the browser's middleware, so a browser
cannot use it: these are plain Django views behind the login session, with Django's
CSRF check (the script sends the X-CSRFToken header). Each action calls the service
the API's own endpoint calls. Only members of the session's project (staff: anyone)
may act: a logged-out viewer, a share link's holder included, gets 403; a logged-in
non-member gets 404, as for the panel itself. Errors have the API's shape.
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

from . import plan, services
from .api import error_response
from .api.body import json_body
from .api.edits import revision_in
from .dialects.base import pydantic_errors
from .edits import PlanEdit
from .errors import ApiError, InvalidInput, NotFound, TodowebError
from .models import Session, ShareLink
from .selectors import current_data, visible_sessions
from .sharing import DEFAULT_EXPIRES_IN, MAX_EXPIRES_IN, MIN_EXPIRES_IN, share_create, share_revoke_all, share_url

Model = TypeVar("Model", bound=BaseModel)


def member_session(request: HttpRequest, public_id: str) -> Session:
    """The session, if the logged-in user may change it. A share link grants nothing here."""
    if not request.user.is_authenticated:
        raise ApiError(403, "forbidden", "Log in as a member of this session's project to change it")
    session = visible_sessions(request.user).with_current().filter(public_id=public_id).first()
    if session is None:
        raise NotFound("No such session")
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
    """The JSON body as `model` (an empty body: the model's defaults), or a 4xx naming the first problem."""
    body = json_body(request) if request.body.strip() else {}
    if not isinstance(body, dict):
        raise InvalidInput("The body must be a JSON object")
    try:
        return model.model_validate(body)
    except PydanticError as exc:
        # One line a person can act on, like the API's: where, then what.
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(part) for part in first["loc"])
        message = f"{where}: {first['msg']}" if where else first["msg"]
        raise InvalidInput(message, details=pydantic_errors(exc)) from None


class Rename(BaseModel):
    model_config = ConfigDict(extra="forbid")

    title: str = Field(max_length=services.TITLE_MAX_CHARS)


class NewShareLink(BaseModel):
    model_config = ConfigDict(extra="forbid")

    expires_in: int = Field(DEFAULT_EXPIRES_IN, ge=MIN_EXPIRES_IN, le=MAX_EXPIRES_IN, description="Seconds")


@member_action
def rename(request: HttpRequest, session: Session) -> HttpResponse:
    # A blank title shows the session key again, as in the API.
    title = " ".join(payload(Rename, request).title.split())
    return JsonResponse(current_data(services.session_change(session, title=title)))


@member_action
def close(request: HttpRequest, session: Session) -> HttpResponse:
    return JsonResponse(current_data(services.session_change(session, closed=True)))


@member_action
def reopen(request: HttpRequest, session: Session) -> HttpResponse:
    return JsonResponse(current_data(services.session_change(session, closed=False)))


@member_action
def archive(request: HttpRequest, session: Session) -> HttpResponse:
    services.session_archive(session)
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
    if_match = revision_in(request.headers.get("If-Match"))
    edit = payload(PlanEdit, request)
    todos = [step.model_dump(exclude_none=True) for step in edit.todos]
    data = services.session_edit(session, todos=todos, note=edit.note, if_match=if_match, user=request.user)
    return JsonResponse(data)


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
]


def action_urls(session: Session) -> dict[str, Any]:
    """The URL of each action for this session, for the panel's script (by URL name, minus `session-`)."""
    return {
        pattern.name.removeprefix("session-"): reverse(pattern.name, args=[session.public_id])
        for pattern in urlpatterns
    }
