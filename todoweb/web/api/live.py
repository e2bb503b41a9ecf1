"""`GET /api/v1/events`: live events as Server-Sent Events, for programs (the Claude
Code channel, scripts, other boards). The stream itself is todoweb.live.stream."""

from __future__ import annotations

from django.http import HttpRequest, StreamingHttpResponse
from ninja import Field, Query, Router, Schema

from todoweb.live.access import Viewer
from todoweb.live.stream import open_stream, since_event
from todoweb.models import ApiToken, Session
from todoweb.store.database import in_database_thread
from todoweb.web.api.lookups import get_session
from todoweb.web.auth import token_auth

router = Router(tags=["live"])


class Follow(Schema):
    session: str | None = Field(None, description="Follow this session (its key) rather than the whole project")


@router.get(
    "/events",
    auth=None,
    openapi_extra={
        "security": [{"TokenAuth": []}],
        "responses": {200: {"description": "A stream of events", "content": {"text/event-stream": {}}}},
    },
    summary="Follow live events (Server-Sent Events)",
)
async def follow(request: HttpRequest, query: Query[Follow]) -> StreamingHttpResponse:
    """The token's project: `session.summary` each time a session moves, and
    `session.archived`. With `?session=<key>`: that session's `session.snapshot` (the
    whole plan, each revision), `session.state`, `session.messages` (people's messages
    to the agent and where each stands) and `session.questions`, starting with the
    current ones. Each event's `data` is the JSON the board's sockets get. Reconnecting
    with `Last-Event-ID` first sends what moved meanwhile; `stream.ended` says the
    token was revoked."""
    token, session = await in_database_thread(followed, request, query.session)
    viewer = Viewer(token=token.pk, project=token.project_id)
    since = since_event(request.headers.get("Last-Event-ID"))
    stream, first = await open_stream(viewer, project_id=token.project_id, session=session, since=since)
    response = StreamingHttpResponse(stream.events(first), content_type="text/event-stream")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"  # nginx: pass each event on at once
    return response


def followed(request: HttpRequest, key: str | None) -> tuple[ApiToken, Session | None]:
    token = token_auth(request)
    return token, get_session(token, key) if key is not None else None
