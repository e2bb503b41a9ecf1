"""Share links: a read-only, expiring link to one session's panel and websocket."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from ninja import Body, Router, Schema, Status

from todoweb import plan
from todoweb.web.api.lookups import get_session
from todoweb.web.auth import require_write
from todoweb.writes.sharing import NewShareLink, share_create, share_revoke_all, share_url

router = Router(tags=["share"])


# A POST without a body takes these.
DEFAULTS = NewShareLink()


class ShareOut(Schema):
    url: str
    token: str
    expires_at: str


@router.post(
    "/sessions/{session_key}/share",
    response={201: ShareOut},
    summary='Create a read-only share link (body optional: {"expires_in": seconds}, default 7 days)',
)
def create_share(request: HttpRequest, session_key: str, payload: NewShareLink = Body(DEFAULTS)) -> Status:
    require_write(request.auth)
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
