"""POST a tool call, and GET the tool definitions to give the model."""

from __future__ import annotations

import re
from typing import Any, Literal

from django.http import HttpRequest, HttpResponse
from ninja import Query, Router, Schema

from .. import dialects, events, queries
from ..answers import Answer
from ..auth import authenticate, require_write
from ..database_threads import in_database_thread
from ..envelopes import ToolCall, parse_call
from ..errors import InvalidInput
from ..models import ApiToken
from ..services import session_record_call
from .body import json_body
from .lookups import check_key

router = Router(tags=["tool calls"])

TOOL_NAME = {"type": "string", "enum": sorted(dialects.tool_names())}
TOOL_CALL_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {
                "schema": {
                    "oneOf": [
                        {
                            "title": "Anthropic tool_use block",
                            "type": "object",
                            "required": ["type", "name", "input"],
                            "properties": {
                                "type": {"const": "tool_use"},
                                "id": {"type": ["string", "integer", "null"]},
                                "name": TOOL_NAME,
                                "input": {"type": "object"},
                            },
                        },
                        {
                            "title": "OpenAI Chat Completions tool call",
                            "type": "object",
                            "required": ["function"],
                            "properties": {
                                "id": {"type": ["string", "integer", "null"]},
                                "type": {"const": "function"},
                                "function": {
                                    "type": "object",
                                    "properties": {
                                        "name": TOOL_NAME,
                                        "arguments": {"type": "string"},
                                    },
                                },
                            },
                        },
                        {
                            "title": "OpenAI Responses function_call",
                            "type": "object",
                            "required": ["type", "name", "arguments"],
                            "properties": {
                                "type": {"const": "function_call"},
                                "call_id": {"type": ["string", "integer", "null"]},
                                "name": TOOL_NAME,
                                "arguments": {"type": "string"},
                            },
                        },
                        {
                            "title": "Plain form",
                            "type": "object",
                            "required": ["tool"],
                            "properties": {
                                "tool": TOOL_NAME,
                                "id": {"type": ["string", "integer", "null"]},
                                "input": {},
                            },
                        },
                    ]
                },
                "example": {
                    "type": "tool_use",
                    "id": "toolu_01",
                    "name": "TodoWrite",
                    "input": {
                        "todos": [
                            {"content": "Run the tests", "status": "in_progress", "activeForm": "Running the tests"}
                        ]
                    },
                },
            }
        },
    }
}


@router.post(
    "/sessions/{session_key}/tool",
    # The token is checked in the view, once the call is read, so that a 401 or 429
    # still carries the reply for the model; the docs show the bearer scheme all the same.
    auth=None,
    openapi_extra=TOOL_CALL_BODY | {"security": [{"TokenAuth": []}]},
    summary="Run one todo tool call",
)
async def post_tool_call(
    request: HttpRequest,
    session_key: str,
    reply: Literal["checklist", "native"] | None = None,
    dialect: str | None = None,
) -> HttpResponse:
    """Validate one tool call, write a revision if it changes the plan, and answer with
    the text for the model (`output`), the reply in the caller's format and the data.
    `dialect` forces a dialect where several share the tool's name."""
    body = json_body(request)
    call = parse_call(body, dialect=dialect)
    # From here on, every error answer carries the reply for the model.
    request.tool_call = call
    with events.deferred() as frames:
        # One trip to a database thread for the token and the write.
        answer = await in_database_thread(record_tool_call, request, session_key, call, reply, body)
    await events.asend(frames)
    return answer.response()


def record_tool_call(
    request: HttpRequest, session_key: str, call: ToolCall, reply: str | None, body: dict[str, Any]
) -> Answer:
    key = idempotency_key(request)
    read = {}

    def token_and_session(digest: str) -> ApiToken | None:
        # The token and the session in one query: a round trip fewer per call.
        token, read["session"] = queries.token_and_session(digest, session_key, idempotency_key=key or call.call_id)
        return token

    token = authenticate(request, read=token_and_session)
    require_write(token)
    check_key(session_key)
    return session_record_call(
        project=token.project,
        session_key=session_key,
        call=call,
        reply_style=reply or token.project.reply_style,
        idempotency_key=key,
        expected_revision=expected_revision(request, body),
        session=read["session"],
    )


def idempotency_key(request: HttpRequest) -> str | None:
    key = request.headers.get("Idempotency-Key", "").strip()
    if len(key) > 255:
        raise InvalidInput("Idempotency-Key is longer than 255 characters")
    return key or None


def expected_revision(request: HttpRequest, body: dict[str, Any]) -> int | None:
    header = request.headers.get("If-Match", "").strip()
    if header and header != "*":
        match = re.fullmatch(r'(?:W/)?"?(\d{1,9})"?', header)
        if not match:
            raise InvalidInput("If-Match must be a revision number")
        return int(match.group(1))
    value = body.get("expected_revision")
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise InvalidInput("expected_revision must be a non-negative integer")
    return value


class ToolsQuery(Schema):
    format: Literal["anthropic", "openai", "responses"] = "anthropic"
    dialects: str | None = None


@router.get("/tools", summary="Tool definitions to give the model")
def list_tools(request: HttpRequest, query: Query[ToolsQuery]) -> dict[str, Any]:
    """The tools of the dialects asked for (default: every tool name once, from the
    first dialect in routing order), as Anthropic `tools`, OpenAI Chat `tools` or
    Responses `tools`."""
    return {"tools": [tool_format(d, query.format) for d in tool_definitions(query.dialects)], "next_cursor": None}


def tool_definitions(names: str | None) -> list[dialects.base.ToolDefinition]:
    """The definitions of the comma-separated dialects `names`; a model can be given
    each tool name once, so two dialects sharing one are refused together."""
    known = dialects.dialects()
    wanted = [name.strip() for name in (names or "").split(",") if name.strip()]
    unknown = [name for name in wanted if name not in known]
    if unknown:
        raise InvalidInput(f"Unknown dialect(s): {', '.join(unknown)}. Known: {', '.join(known)}")
    if not wanted:
        return [
            definition
            for name, module in known.items()
            for definition in module.definitions()
            if dialects.tool_names()[definition.name][0].NAME == name
        ]
    definitions, owner = [], {}
    for name in dict.fromkeys(wanted):
        for definition in known[name].definitions():
            if definition.name in owner:
                raise InvalidInput(
                    f"Dialects '{owner[definition.name]}' and '{name}' both define the tool '{definition.name}';"
                    " a model can be given only one of them",
                    details={"tool": definition.name, "dialects": [owner[definition.name], name]},
                )
            owner[definition.name] = name
            definitions.append(definition)
    return definitions


def tool_format(definition: dialects.base.ToolDefinition, fmt: str) -> dict[str, Any]:
    if fmt == "openai":
        return {
            "type": "function",
            "function": {
                "name": definition.name,
                "description": definition.description,
                "parameters": definition.input_schema,
            },
        }
    if fmt == "responses":
        return {
            "type": "function",
            "name": definition.name,
            "description": definition.description,
            "parameters": definition.input_schema,
        }
    return {"name": definition.name, "description": definition.description, "input_schema": definition.input_schema}
