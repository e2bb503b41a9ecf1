"""POST a tool call, and GET the tool definitions to give the model."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, ClassVar, Literal

from django.http import HttpRequest, HttpResponse
from ninja import Field, Query, Router, Schema

from todoweb import dialects
from todoweb.calls import titles
from todoweb.calls.answers import Answered
from todoweb.calls.envelopes import parse_call, with_title
from todoweb.calls.errors import ApiError, InvalidInput
from todoweb.web.api.body import json_body, oversized_call
from todoweb.web.api.errors import CallFailed, error_response
from todoweb.web.api.lookups import check_key
from todoweb.web.api.preconditions import if_match_revision
from todoweb.web.auth import digest_of
from todoweb.web.recording import record_call
from todoweb.writes.record import CallRequest

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
                            "title": "LangChain tool_call",
                            "type": "object",
                            "required": ["type", "name", "args"],
                            "properties": {
                                "type": {"const": "tool_call"},
                                "id": {"type": ["string", "integer", "null"]},
                                "name": TOOL_NAME,
                                "args": {"type": "object"},
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
                                "title": {
                                    "type": ["string", "null"],
                                    "maxLength": titles.TITLE_MAX_CHARS,
                                    "description": "The session's title (wins over the "
                                    f"{titles.HEADER} header and ?title=)",
                                },
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


TITLE_DESCRIPTION = (
    f"The session's title, set by this write (at most {titles.TITLE_MAX_CHARS} characters; control characters and"
    " runs of whitespace become one space). The plain form's `title` field wins over the header, the header over"
    " the query parameter."
)
TITLE_PARAMETERS = {
    "parameters": [
        {
            "in": "header",
            "name": titles.HEADER,
            "required": False,
            "description": TITLE_DESCRIPTION + " UTF-8, or RFC 8187's `UTF-8''` followed by percent-escapes.",
            "schema": {"type": "string", "maxLength": titles.TITLE_MAX_CHARS},
        },
        {
            "in": "query",
            "name": "title",
            "required": False,
            "description": TITLE_DESCRIPTION,
            "schema": {"type": "string", "maxLength": titles.TITLE_MAX_CHARS},
        },
    ]
}


@router.post(
    "/sessions/{session_key}/tool",
    # The token is checked in the view, once the call is read, so that a 401 or 429
    # still carries the reply for the model; the docs show the bearer scheme all the same.
    auth=None,
    openapi_extra=TOOL_CALL_BODY | TITLE_PARAMETERS | {"security": [{"TokenAuth": []}]},
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
    `dialect` forces a dialect where several share the tool's name; a title (the plain
    form's field, the X-Todoweb-Title header or `title`) names the session."""
    try:
        body = json_body(request)
    except Exception as error:
        # A body over the limit may still carry a call: the model is told its list is too large.
        call = oversized_call(request) if isinstance(error, ApiError) and error.status == 413 else None
        return error_response(request, error, call=call)
    try:
        posted = ToolPost.of(
            body, reply=reply, dialect=dialect, title=request.GET.get("title"), header=request.headers.get
        )
        answered = await record_tool(session_key, posted)
    except CallFailed as failed:
        return error_response(request, failed.error, call=failed.call)
    return answered.response()


@dataclass(frozen=True)
class ToolPost:
    """A tool call as posted: its body as read, the query's choices and the headers the
    endpoint reads (as sent)."""

    body: Any
    reply: str | None = None  # "checklist" or "native": the reply's form
    dialect: str | None = None  # ?dialect=
    title: str | None = None  # ?title=
    title_header: str | None = None
    idempotency_key: str = ""
    if_match: str | None = None
    authorization: str = ""
    api_key: str = ""

    # The headers the endpoint reads (lower case), by whichever route reads them.
    HEADERS: ClassVar[tuple[str, ...]] = (
        "content-type",
        "authorization",
        "x-api-key",
        titles.HEADER.lower(),
        "idempotency-key",
        "if-match",
    )

    @classmethod
    def of(
        cls,
        body: Any,
        *,
        reply: str | None,
        dialect: str | None,
        title: str | None,
        header: Callable[[str], str | None],
    ) -> ToolPost:
        """The call posted, its headers read by `header` (a name of HEADERS: its value, or None)."""
        return cls(
            body,
            reply,
            dialect,
            title,
            header(titles.HEADER.lower()),
            header("idempotency-key") or "",
            header("if-match"),
            header("authorization") or "",
            header("x-api-key") or "",
        )


async def record_tool(session_key: str, posted: ToolPost) -> Answered:
    """The answer to a tool call posted to the session `session_key` (CallFailed: the
    error to answer). No Django request is needed: the agents' route answers tool calls
    without making one."""
    call = None
    try:
        call = parse_call(posted.body, dialect=posted.dialect)
        call = with_title(call, posted.body, header=posted.title_header, query=posted.title)
        # Before the key reaches a query: PostgreSQL refuses text with a NUL in it.
        check_key(session_key)
        write = CallRequest(
            session_key=session_key,
            call=call,
            reply_style=posted.reply,
            idempotency_key=idempotency_key(posted.idempotency_key),
            expected_revision=expected_revision(posted.if_match, posted.body),
            route="tool endpoint",
        )
        answer = (await record_call(digest_of(posted.authorization, posted.api_key), write)).answer
    except Exception as error:
        # Once the call is read, every error answer carries the reply for the model.
        raise CallFailed(error, call) from error
    return Answered(answer.content(), answer.replayed)


def idempotency_key(header: str) -> str | None:
    key = header.strip()
    if len(key) > 255:
        raise InvalidInput("Idempotency-Key is longer than 255 characters")
    return key or None


def expected_revision(if_match: str | None, body: dict[str, Any]) -> int | None:
    revision = if_match_revision(if_match, required=False)
    if revision is not None:
        return revision
    value = body.get("expected_revision")
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise InvalidInput("expected_revision must be a non-negative integer")
    return value


# What some APIs take at most in a tool's description.
SHORT_DESCRIPTION_CHARS = 1024


class ToolsQuery(Schema):
    format: Literal["anthropic", "openai", "responses"] = "anthropic"
    dialects: str | None = None
    descriptions: Literal["full", "short"] = Field(
        "full", description=f"short: the first paragraph, at most {SHORT_DESCRIPTION_CHARS} characters"
    )


@router.get("/tools", summary="Tool definitions to give the model")
def list_tools(request: HttpRequest, query: Query[ToolsQuery]) -> dict[str, Any]:
    """The tools of the dialects asked for (default: every tool name once, from the
    first dialect in routing order), as Anthropic `tools`, OpenAI Chat `tools` or
    Responses `tools`. `descriptions=short` suits APIs that cap a description's
    length (1,024 characters)."""
    definitions = tool_definitions(query.dialects)
    if query.descriptions == "short":
        definitions = [replace(d, description=short_description(d.description)) for d in definitions]
    return {"tools": [tool_format(d, query.format) for d in definitions], "next_cursor": None}


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


def short_description(text: str) -> str:
    """The description's first paragraph on one line, cut at a word within the limit."""
    first = " ".join(re.split(r"\n\s*\n|\n#", text, maxsplit=1)[0].split())
    if len(first) <= SHORT_DESCRIPTION_CHARS:
        return first
    return first[: SHORT_DESCRIPTION_CHARS - 1].rsplit(" ", 1)[0] + "…"


def tool_format(definition: dialects.base.ToolDefinition, fmt: str) -> dict[str, Any]:
    # "strict": false, said outright: the Responses API now takes a function without
    # it as strict, which makes every optional field required.
    if fmt == "openai":
        return {
            "type": "function",
            "function": {
                "name": definition.name,
                "description": definition.description,
                "parameters": definition.input_schema,
                "strict": False,
            },
        }
    if fmt == "responses":
        return {
            "type": "function",
            "name": definition.name,
            "description": definition.description,
            "parameters": definition.input_schema,
            "strict": False,
        }
    return {"name": definition.name, "description": definition.description, "input_schema": definition.input_schema}
