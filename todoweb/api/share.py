"""Share links (§7): a read-only, expiring link to one session's panel and websocket."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from ninja import Field, Router, Schema, Status
from pydantic import ConfigDict

from .. import plan
from ..auth import require_write
from ..sharing import DEFAULT_EXPIRES_IN, MAX_EXPIRES_IN, MIN_EXPIRES_IN, share_create, share_revoke_all, share_url
from .body import json_body, validated
from .lookups import get_session

router = Router(tags=["share"])


class ShareIn(Schema):
    model_config = ConfigDict(extra="forbid")

    expires_in: int = Field(DEFAULT_EXPIRES_IN, ge=MIN_EXPIRES_IN, le=MAX_EXPIRES_IN, description="Seconds")


class ShareOut(Schema):
    url: str
    token: str
    expires_at: str


def share_input(request: HttpRequest) -> ShareIn:
    # The body is optional (an empty POST takes the default), so it is read here
    # rather than declared: ninja would answer 422 for a missing body.
    return validated(ShareIn, json_body(request) if request.body.strip() else {})


@router.post(
    "/sessions/{session_key}/share",
    response={201: ShareOut},
    summary='Create a read-only share link (body optional: {"expires_in": seconds}, default 7 days)',
    openapi_extra={
        "requestBody": {
            "required": False,
            "content": {"application/json": {"schema": ShareIn.model_json_schema()}},
        }
    },
)
def create_share(request: HttpRequest, session_key: str) -> Status:
    require_write(request.auth)
    payload = share_input(request)
    session = get_session(request.auth, session_key)
    link, raw = share_create(session=session, expires_in=payload.expires_in)
    return Status(
        201,
        {
            "url": request.build_absolute_uri(share_url(session, raw)),
            "token": raw,
            "expires_at": plan.iso(link.expires_at),
        },
    )


@router.delete("/sessions/{session_key}/share", response={204: None}, summary="Revoke every share link of a session")
def revoke_shares(request: HttpRequest, session_key: str) -> HttpResponse:
    require_write(request.auth)
    share_revoke_all(session=get_session(request.auth, session_key))
    return HttpResponse(status=204)
