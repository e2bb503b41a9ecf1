"""The HTTP API under /api/v1/: one NinjaAPI, its error answers, and its routers."""

from __future__ import annotations

import logging
import re
from typing import Any, Literal

from django.core.exceptions import RequestDataTooBig
from django.db import InterfaceError, OperationalError
from django.http import Http404, HttpRequest, JsonResponse
from ninja import NinjaAPI
from ninja.errors import HttpError, ValidationError
from pydantic import BaseModel, Field

from .. import dialects
from ..auth import TokenAuth
from ..errors import (
    ApiError,
    IdempotencyConflict,
    InvalidInput,
    InvalidJson,
    NotFound,
    RevisionConflict,
    TodowebError,
    UnknownTool,
)
from .lookups import SESSION_KEY

logger = logging.getLogger(__name__)


class ErrorDetail(BaseModel):
    code: str = Field(description="Stable code: invalid_json, unauthorized, forbidden, not_found, …")
    message: str = Field(description="What went wrong, worded for whoever must fix the call")
    details: dict[str, Any]


class ErrorAnswer(BaseModel):
    ok: Literal[False]
    error: ErrorDetail
    data: dict[str, Any] | None = Field(None, description="The current session data (409)")
    reply: dict[str, Any] | None = Field(None, description="The error as a tool result, in the call's own form")


def parameter_schemas() -> dict[str, dict[str, Any]]:
    """What the views check by hand, written into the schema: the session key's
    alphabet, the dialect names, the cursor's encoding."""
    names = "|".join(re.escape(name) for name in dialects.dialects())
    return {
        "session_key": {"pattern": f"^{SESSION_KEY.pattern}$", "minLength": 1, "maxLength": 200},
        "dialects": {
            "description": "Comma-separated dialect names (none: each tool name once). Two dialects "
            "that share a tool name (e.g. gemini and langchain) cannot be asked for together",
            "pattern": f"^(({names})(,({names}))*)?$",
        },
        "dialect": {
            "description": "Force this dialect where several share the tool's name",
            "enum": list(dialects.dialects()),
        },
        "cursor": {"description": "The next_cursor of the previous page (opaque)", "pattern": "^[A-Za-z0-9_=-]*$"},
    }


class TodowebAPI(NinjaAPI):
    def get_openapi_schema(self, **kwargs: Any) -> dict[str, Any]:
        """Every operation answers errors in one documented shape (SPEC §4)."""
        schema = super().get_openapi_schema(**kwargs)
        schema["components"].setdefault("schemas", {})["ErrorAnswer"] = ErrorAnswer.model_json_schema(
            ref_template="#/components/schemas/{model}"
        )
        schema["components"]["schemas"] |= schema["components"]["schemas"]["ErrorAnswer"].pop("$defs", {})
        error = {
            "description": 'Any error: `{"ok": false, "error": {"code", "message", "details"}}`',
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorAnswer"}}},
        }
        parameters = parameter_schemas()
        for operations in schema["paths"].values():
            for operation in operations.values():
                operation["responses"].setdefault("default", error)
                for parameter in operation.get("parameters", []):
                    parameter["schema"] |= parameters.get(parameter["name"], {})
        return schema


api = TodowebAPI(
    title="todoweb",
    version="1",
    description="Live board for AI agents' todo lists: post each todo tool call, get the reply for the model.",
    auth=TokenAuth(),
    urls_namespace="api",
)


# Where each domain error lands in HTTP (the one place that decides it).
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


def error_response(request: HttpRequest, error: TodowebError) -> JsonResponse:
    """`{"ok": false, "error": …}`, plus the reply for the model once the request's tool
    call is known (views set `request.tool_call` as soon as they have read it)."""
    body: dict = {"ok": False, "error": {"code": error.code, "message": error.message, "details": error.details}}
    if error.data is not None:
        body["data"] = error.data
    call = getattr(request, "tool_call", None)
    if call is not None:
        body["reply"] = call.reply(error.message, is_error=True)
    response = JsonResponse(body, status=status_of(error))
    for name, value in getattr(error, "headers", {}).items():
        response[name] = value
    return response


@api.exception_handler(TodowebError)
def on_error(request: HttpRequest, exc: TodowebError) -> JsonResponse:
    return error_response(request, exc)


@api.exception_handler(ValidationError)
def on_validation_error(request: HttpRequest, exc: ValidationError) -> JsonResponse:
    first = exc.errors[0] if exc.errors else {}
    where = ".".join(str(part) for part in first.get("loc", ()) if part not in ("body", "payload", "query", "path"))
    message = f"{where}: {first.get('msg', 'invalid value')}" if where else first.get("msg", "Invalid request")
    return error_response(request, InvalidInput(message, details={"errors": exc.errors[:10]}))


@api.exception_handler(HttpError)
def on_http_error(request: HttpRequest, exc: HttpError) -> JsonResponse:
    codes = {400: "invalid_json", 401: "unauthorized", 403: "forbidden", 404: "not_found", 429: "rate_limited"}
    code = codes.get(exc.status_code, "error")
    message = str(exc) if exc.status_code != 400 else "The body is not valid JSON"
    return error_response(request, ApiError(exc.status_code, code, message))


@api.exception_handler(Http404)
def on_not_found(request: HttpRequest, exc: Http404) -> JsonResponse:
    return error_response(request, NotFound(str(exc) or "Not found"))


@api.exception_handler(RequestDataTooBig)
def on_too_big(request: HttpRequest, exc: RequestDataTooBig) -> JsonResponse:
    from django.conf import settings

    limit = settings.TODOWEB_MAX_BODY_BYTES
    return error_response(request, ApiError(413, "payload_too_large", f"The body is larger than {limit} bytes"))


# How long a client should wait before it tries again when the database is out of reach.
RETRY_AFTER_SECONDS = 1


@api.exception_handler(OperationalError)
@api.exception_handler(InterfaceError)
def on_database_unavailable(request: HttpRequest, exc: Exception) -> JsonResponse:
    """The database dropped the connection, restarted or is locked: nothing was
    written (the transaction did not commit), so the call can simply be sent again."""
    logger.warning("Database unavailable on %s: %s", request.path, exc)
    message = "The database is unavailable; nothing was written. Try again shortly."
    headers = {"Retry-After": str(RETRY_AFTER_SECONDS)}
    return error_response(request, ApiError(503, "unavailable", message, headers=headers))


@api.exception_handler(Exception)
def on_unexpected(request: HttpRequest, exc: Exception) -> JsonResponse:
    logger.exception("Unexpected error on %s", request.path)
    return error_response(request, ApiError(500, "internal_error", "Internal error; nothing was written"))


from . import agent, edits, hooks, sessions, share, tools  # noqa: E402

api.add_router("", tools.router)
api.add_router("", hooks.router)
api.add_router("", sessions.router)
api.add_router("", agent.router)
api.add_router("", share.router)
api.add_router("", edits.router)
