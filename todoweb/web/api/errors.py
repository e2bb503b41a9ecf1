"""Where every error lands in HTTP: one map from what went wrong to the answer
`{"ok": false, "error": {"code", "message", "details"}}`, with the reply for the model
when the request carried a tool call. The API, the agents' hooks and the board's
actions answer with it."""

from __future__ import annotations

import logging
from typing import Any, Literal

from django.core.exceptions import DisallowedHost, RequestDataTooBig
from django.db import InterfaceError, OperationalError
from django.http import Http404, HttpRequest, JsonResponse
from ninja.errors import AuthenticationError, HttpError, ValidationError
from pydantic import BaseModel, Field

from todoweb.calls.envelopes import ToolCall
from todoweb.calls.errors import (
    ApiError,
    IdempotencyConflict,
    InvalidInput,
    InvalidJson,
    NotFound,
    RevisionConflict,
    TodowebError,
    UnknownTool,
    first_problem,
)
from todoweb.web.api.body import content_length, too_large
from todoweb.web.protected_resource import challenge

logger = logging.getLogger(__name__)

# How long a client should wait before it tries again when the database is out of reach.
RETRY_AFTER_SECONDS = 1


class ErrorDetail(BaseModel):
    code: str = Field(description="Stable code: invalid_json, unauthorized, forbidden, not_found, …")
    message: str = Field(description="What went wrong, worded for whoever must fix the call")
    details: dict[str, Any]


class ErrorAnswer(BaseModel):
    ok: Literal[False]
    error: ErrorDetail
    data: dict[str, Any] | None = Field(None, description="The current session data (409)")
    reply: dict[str, Any] | None = Field(None, description="The error as a tool result, in the call's own form")


class CallFailed(Exception):
    """A tool call or hook event answered with an error: the error, and the tool call
    as read (once the call is read, the error's answer carries the reply for the model)."""

    def __init__(self, error: Exception, call: ToolCall | None) -> None:
        super().__init__(str(error))
        self.error = error
        self.call = call


# Where each domain error lands in HTTP.
HTTP_STATUS: dict[type[TodowebError], int] = {
    InvalidJson: 400,
    NotFound: 404,
    RevisionConflict: 409,
    InvalidInput: 422,
    UnknownTool: 422,
    IdempotencyConflict: 422,
}


def status_of(error: TodowebError) -> int:
    if isinstance(error, ApiError):
        return error.status
    return next(status for kind, status in HTTP_STATUS.items() if isinstance(error, kind))


def as_error(request: HttpRequest, exc: Exception) -> TodowebError:
    """What went wrong, as one of todoweb's errors."""
    if isinstance(exc, HttpError) and isinstance(exc.__cause__, TodowebError):
        # ninja wraps whatever its body parser raised (jsonio's 400s, a 413, a 415).
        return exc.__cause__
    match exc:
        case TodowebError():
            return exc
        case ValidationError():
            return first_problem(exc.errors)
        case AuthenticationError():
            return ApiError(401, "unauthorized", "Missing API token: send 'Authorization: Bearer <token>'")
        case HttpError():
            codes = {400: "invalid_json", 401: "unauthorized", 403: "forbidden", 404: "not_found", 429: "rate_limited"}
            message = str(exc) if exc.status_code != 400 else "The body is not valid JSON"
            return ApiError(exc.status_code, codes.get(exc.status_code, "error"), message)
        case Http404():
            return NotFound(str(exc) or "Not found")
        case RequestDataTooBig():
            return too_large(content_length(request))
        case DisallowedHost():
            # A Host outside ALLOWED_HOSTS, found once a view asked for it (to build a link).
            host = request.META.get("HTTP_HOST", "")[:200]
            message = f"The Host header {host!r} is not one this server answers to (ALLOWED_HOSTS)"
            return ApiError(400, "disallowed_host", message)
        case OperationalError() | InterfaceError():
            # The database dropped the connection, restarted or is locked: nothing was
            # written (the transaction did not commit), so the call can simply be sent again.
            logger.warning("Database unavailable on %s: %s", request.path, exc)
            message = "The database is unavailable; nothing was written. Try again shortly."
            return ApiError(503, "unavailable", message, headers={"Retry-After": str(RETRY_AFTER_SECONDS)})
    logger.exception("Unexpected error on %s", request.path, exc_info=exc)
    return ApiError(500, "internal_error", "Internal error; nothing was written")


def error_response(request: HttpRequest, exc: Exception, *, call: ToolCall | None = None) -> JsonResponse:
    """The answer for `exc`; with the reply for the model when the request's tool call
    was read (`call`), so that a backend can hand even a 401 or a 429 to its model."""
    error = as_error(request, exc)
    body: dict[str, Any] = {
        "ok": False,
        "error": {"code": error.code, "message": error.message, "details": error.details},
    }
    if error.data is not None:
        body["data"] = error.data
    if call is not None:
        body["reply"] = call.reply(error.message, is_error=True)
    response = JsonResponse(body, status=status_of(error))
    for name, value in getattr(error, "headers", {}).items():
        response[name] = value
    if response.status_code == 401:
        response["WWW-Authenticate"] = challenge(request, error.message)
    return response
