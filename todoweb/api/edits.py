"""People's edits of a plan: `POST sessions/{key}/edits` with `If-Match` (SPEC §7)."""

from __future__ import annotations

from django.http import HttpRequest, JsonResponse
from django.utils.http import parse_etags
from ninja import Router

from ..auth import require_write
from ..dialects.base import inline_refs
from ..edits import PlanEdit
from ..errors import ApiError
from ..services import session_edit
from .body import json_body, validated
from .lookups import get_session

router = Router(tags=["sessions"])

EDIT_BODY = {
    "parameters": [
        {
            "in": "header",
            "name": "If-Match",
            "required": True,
            "schema": {"type": "string", "pattern": r'^(W/"[0-9]{1,10}"|"[0-9]{1,10}"|[0-9]{1,10})$'},
            "description": 'The revision the edit was made on ("3" or 3, the resume endpoint\'s ETag)',
        }
    ],
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {
                "schema": inline_refs(PlanEdit.model_json_schema(), PlanEdit.model_json_schema()["$defs"]),
                "example": {
                    "todos": [
                        {"id": "1", "content": "Write the migration", "status": "completed"},
                        {"content": "Add a test for the empty list", "status": "pending"},
                    ],
                    "note": "Test the empty list before going on",
                },
            }
        },
    },
}


@router.post(
    "/sessions/{session_key}/edits",
    openapi_extra=EDIT_BODY,
    summary="A person edits the plan; the agent is told on its next call",
)
def post_edit(request: HttpRequest, session_key: str) -> JsonResponse:
    require_write(request.auth)
    if_match = revision_in(request.headers.get("If-Match"))
    payload = validated(PlanEdit, json_body(request))
    session = get_session(request.auth, session_key)
    todos = [step.model_dump(exclude_none=True) for step in payload.todos]
    data = session_edit(session, todos=todos, note=payload.note, if_match=if_match, user=None)
    response = JsonResponse(data)
    response["ETag"] = f'"{data["revision"]}"'  # the If-Match of the next edit
    return response


def revision_in(if_match: str | None) -> int:
    """The revision an If-Match header names: `"3"` (an ETag), `W/"3"` or `3`."""
    if not if_match:
        raise ApiError(
            428,
            "precondition_required",
            "Send 'If-Match: <revision>', the revision the edit was made on, so that a write of the agent's "
            "in between is not overwritten",
        )
    tags = parse_etags(if_match) if '"' in if_match else [if_match.strip()]
    text = tags[0].removeprefix("W/").strip('"') if len(tags) == 1 else ""
    if not text.isdigit() or len(text) > 10:
        raise ApiError(400, "invalid_if_match", f'If-Match must name one revision number, like "3"; got {if_match!r}')
    return int(text)
