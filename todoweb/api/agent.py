"""Agent-loop helpers: the nag reminder's turn counter (seed 004) and the resume block."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse, HttpResponseNotModified
from django.utils.http import parse_etags
from ninja import Router, Schema
from pydantic import BaseModel, ConfigDict

from ..auth import require_write
from ..resume import resume_text
from ..rounds import reminder_for, session_record_round
from ..selectors import current_data
from .body import json_body, validated
from .lookups import check_key, get_session

router = Router(tags=["agent loop"])


class RoundIn(BaseModel):
    # Strict: a typo (`usedTodo`) or a string "false" would otherwise count a turn wrongly.
    model_config = ConfigDict(extra="forbid", strict=True)

    used_todo: bool


class RoundOut(Schema):
    rounds_since_todo: int
    reminder: str | None


ROUND_BODY = {
    "requestBody": {
        "required": True,
        "content": {"application/json": {"schema": RoundIn.model_json_schema(), "example": {"used_todo": False}}},
    }
}


@router.post(
    "/sessions/{session_key}/rounds",
    response=RoundOut,
    openapi_extra=ROUND_BODY,
    summary="Count one agent turn; get the nag reminder when due",
)
def post_round(request: HttpRequest, session_key: str) -> dict[str, Any]:
    """Call once per agent turn with whether the model used its todo tool in it.

    The counter goes back to 0 on a turn that used it (and on any todo write through
    the tool endpoint), otherwise up by one; from the third turn in a row without
    one, `reminder` holds the text to put first in the next user message. The
    session is created if it does not exist yet (state `empty`)."""
    require_write(request.auth)
    check_key(session_key)
    payload = validated(RoundIn, json_body(request))
    session = session_record_round(project=request.auth.project, session_key=session_key, used_todo=payload.used_todo)
    return {"rounds_since_todo": session.rounds_since_todo, "reminder": reminder_for(session.rounds_since_todo)}


@router.get(
    "/sessions/{session_key}/resume",
    summary="The current plan as a <system-reminder> block to re-inject",
    openapi_extra={
        "responses": {
            200: {"description": "The block", "content": {"text/plain": {"schema": {"type": "string"}}}},
            304: {"description": "Unchanged since the revision in If-None-Match"},
        }
    },
)
def get_resume(request: HttpRequest, session_key: str) -> HttpResponse:
    """Plain text, ready to re-inject after context compaction or when resuming a run.

    `ETag` is the revision; send it back in `If-None-Match` to get 304 while the
    plan is unchanged."""
    session = get_session(request.auth, session_key)
    etag = f'"{session.revision}"'
    if matches(request.headers.get("If-None-Match", ""), etag):
        response = HttpResponseNotModified()
    else:
        response = HttpResponse(resume_text(current_data(session)), content_type="text/plain; charset=utf-8")
    response["ETag"] = etag
    # Revalidate every time: the plan moves while the agent works.
    response["Cache-Control"] = "private, no-cache"
    return response


def matches(if_none_match: str, etag: str) -> bool:
    # If-None-Match compares weakly (RFC 9110 13.1.2): W/"3" matches "3". A bare
    # revision number (3, unquoted) is what a hand-written client sends: accept it.
    if if_none_match.strip().isdigit():
        if_none_match = f'"{if_none_match.strip()}"'
    tags = parse_etags(if_none_match)
    return "*" in tags or etag in (tag.removeprefix("W/") for tag in tags)
