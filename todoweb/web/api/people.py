"""People steer the agent: edits of the plan (`POST sessions/{key}/edits` with
`If-Match`), notes (`POST sessions/{key}/messages`), and where each stands."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, JsonResponse
from ninja import Router
from pydantic import BaseModel, ConfigDict, Field

from todoweb.plan.edits import PlanEdit
from todoweb.reads import message_data, messages_data
from todoweb.web.api.lookups import get_session
from todoweb.web.api.preconditions import IF_MATCH_PARAMETER, etag, if_match_revision
from todoweb.web.auth import require_write
from todoweb.writes.people import session_edit, session_note

router = Router(tags=["sessions"])


@router.post(
    "/sessions/{session_key}/edits",
    # If-Match is read by hand: without it the answer is a 428, not a validation error.
    openapi_extra={"parameters": [IF_MATCH_PARAMETER]},
    summary="A person edits the plan; the agent is told on its next call",
)
def post_edit(request: HttpRequest, session_key: str, edit: PlanEdit) -> JsonResponse:
    require_write(request.auth)
    revision = if_match_revision(request.headers.get("If-Match"), required=True)
    data = session_edit(get_session(request.auth, session_key), edit, if_match=revision)
    response = JsonResponse(data)
    response["ETag"] = etag(data["revision"])  # the If-Match of the next edit
    return response


class Note(BaseModel):
    """A person's message to the agent, with no change to the plan."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [{"text": "Use the staging database"}]})

    text: str = Field(min_length=1, max_length=2000, pattern=r"\S")


@router.post("/sessions/{session_key}/messages", summary="A person's note to the agent, told on its next call")
def post_note(request: HttpRequest, session_key: str, note: Note) -> JsonResponse:
    require_write(request.auth)
    message = session_note(get_session(request.auth, session_key), note.text)
    return JsonResponse(message_data(message), status=201)


@router.get("/sessions/{session_key}/messages", summary="People's edits and notes, and where each stands")
def list_messages(request: HttpRequest, session_key: str) -> dict[str, Any]:
    """The newest of people's messages to the agent, oldest first: `waiting` for the
    agent's next call, `told` (when, and by which route), or, an edit, `kept` in the
    agent's first revision after it."""
    return {"messages": messages_data(get_session(request.auth, session_key)), "next_cursor": None}
