"""Reading a JSON request body with the API's own errors (413, 415, 400, 422): for
ninja, which reads the typed bodies of most endpoints (`StrictJson`), and for the
tool endpoint, which reads its own (a refused call must still get a reply in its
caller's format, whatever its body)."""

from __future__ import annotations

from typing import Any

import orjson
from django.conf import settings
from django.http import HttpRequest
from ninja.parser import Parser

from todoweb.calls.envelopes import ToolCall, parse_call
from todoweb.calls.errors import ApiError, InvalidInput
from todoweb.calls.jsonio import loads

# How much of a body over the limit is still read to find the tool call it carries,
# so that the 413 can hand the model a reply it understands.
OVERSIZED_READ_FACTOR = 4


def too_large(size: int | None = None) -> ApiError:
    """The 413 of every route that reads a body (the API, the MCP server); `size` when
    it is known (a body cut off as it arrives is only known to be too large)."""
    limit = settings.TODOWEB_MAX_BODY_BYTES
    what = f"The body is {size:,} bytes" if size is not None else f"The body is over {limit:,} bytes"
    return ApiError(
        413,
        "payload_too_large",
        f"{what}; todoweb takes at most {limit:,} (the server's TODOWEB_MAX_BODY_BYTES)",
        details={"size": size, "max_body_bytes": limit},
    )


def content_length(request: HttpRequest) -> int:
    try:
        return int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return 0


def check_charset(charset: str | None) -> None:
    """A JSON body declared in another charset than UTF-8 is refused (415): read as
    UTF-8 regardless, UTF-16 text would be refused as bytes that are not JSON, and a
    single-byte charset's text would be stored as other characters than were sent."""
    if charset is not None and charset.strip().lower() != "utf-8":
        raise ApiError(
            415,
            "unsupported_media_type",
            f"The body is declared as charset={charset[:40]}; todoweb takes JSON in UTF-8 only: send UTF-8 text, "
            "with 'charset=utf-8' or no charset",
            details={"charset": charset[:40]},
        )


def json_body(request: HttpRequest) -> Any:
    limit = settings.TODOWEB_MAX_BODY_BYTES
    if content_length(request) > limit:
        raise too_large(content_length(request))
    if request.content_type != "application/json":
        raise ApiError(
            415, "unsupported_media_type", f"Send 'Content-Type: application/json', not '{request.content_type}'"
        )
    check_charset(request.content_params.get("charset"))
    body = request.body  # raises RequestDataTooBig past the limit, answered as 413
    if len(body) > limit:
        raise too_large(len(body))
    return loads(body, what="The body")


class StrictJson(Parser):
    """ninja's body parser with todoweb's JSON rules: no NaN or Infinity, no number
    beyond a double, no deep nesting, no text a database cannot store, the size limit.
    An empty body reads as `{}`, so that a body of defaults may be left out."""

    def parse_body(self, request: HttpRequest) -> dict[str, Any]:
        if not request.body.strip():
            return {}
        body = json_body(request)
        if not isinstance(body, dict):
            raise InvalidInput("The body must be a JSON object")
        return body


def oversized_call(request: HttpRequest) -> ToolCall | None:
    """The tool call a body over the limit carries, if it can still be read at all
    (up to a few times the limit): nothing of it is written, but its reply tells the
    model that its list is too large."""
    most = settings.TODOWEB_MAX_BODY_BYTES * OVERSIZED_READ_FACTOR
    text = request.read(most + 1)
    if len(text) > most:
        return None
    try:
        return parse_call(orjson.loads(text))
    except Exception:  # anything unreadable: the 413 goes without a reply
        return None
