"""Agent-loop helpers: the nag reminder's turn counter (learn-claude-code's) and the resume block."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse, HttpResponseNotModified
from ninja import Router, Schema
from pydantic import BaseModel, ConfigDict

from todoweb.plan.text import resume_text
from todoweb.reads import current_data
from todoweb.web.api.lookups import check_key, get_session
from todoweb.web.api.preconditions import etag, none_match
from todoweb.web.auth import require_write
from todoweb.writes.rounds import reminder_for, session_record_round

router = Router(tags=["agent loop"])


class RoundIn(BaseModel):
    # Strict: a typo (`usedTodo`) or a string "false" would otherwise count a turn wrongly.
    model_config = ConfigDict(extra="forbid", strict=True, json_schema_extra={"examples": [{"used_todo": False}]})

    used_todo: bool


class RoundOut(Schema):
    rounds_since_todo: int
    reminder: str | None


@router.post(
    "/sessions/{session_key}/rounds",
    response=RoundOut,
    summary="Count one agent turn; get the nag reminder when due",
)
def post_round(request: HttpRequest, session_key: str, turn: RoundIn) -> dict[str, Any]:
    """Call once per agent turn with whether the model used its todo tool in it.

    The counter goes back to 0 on a turn that used it (and on any todo write through
    the tool endpoint), otherwise up by one; from the third turn in a row without
    one, `reminder` holds the text to put first in the next user message. The
    session is created if it does not exist yet (state `empty`)."""
    require_write(request.auth)
    check_key(session_key)
    session = session_record_round(project=request.auth.project, session_key=session_key, used_todo=turn.used_todo)
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
    current = etag(session.revision)
    if none_match(request.headers.get("If-None-Match"), current):
        response = HttpResponseNotModified()
    else:
        response = HttpResponse(resume_text(current_data(session)), content_type="text/plain; charset=utf-8")
    response["ETag"] = current
    # Revalidate every time: the plan moves while the agent works.
    response["Cache-Control"] = "private, no-cache"
    return response
