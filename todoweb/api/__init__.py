"""The HTTP API under /api/v1/: one NinjaAPI, its error answers, and its routers."""

from __future__ import annotations

import logging

from django.core.exceptions import RequestDataTooBig
from django.http import Http404, HttpRequest, JsonResponse
from ninja import NinjaAPI
from ninja.errors import HttpError, ValidationError

from ..auth import TokenAuth
from ..envelopes import sniff_call
from ..errors import ApiError

logger = logging.getLogger(__name__)

api = NinjaAPI(
    title="todoweb",
    version="1",
    description="Live board for AI agents' todo lists: post each todo tool call, get the reply for the model.",
    auth=TokenAuth(),
    urls_namespace="api",
)


def error_response(request: HttpRequest, error: ApiError) -> JsonResponse:
    body = error.body()
    call = getattr(request, "tool_call", None) or error.reply_to
    if call is None and request.path.endswith("/tool"):
        try:
            call = sniff_call(request.body)
        except RequestDataTooBig:
            call = None
    if call is not None:
        body["reply"] = call.reply(error.message, is_error=True)
    response = JsonResponse(body, status=error.status)
    for name, value in error.headers.items():
        response[name] = value
    return response


@api.exception_handler(ApiError)
def on_api_error(request: HttpRequest, exc: ApiError) -> JsonResponse:
    return error_response(request, exc)


@api.exception_handler(ValidationError)
def on_validation_error(request: HttpRequest, exc: ValidationError) -> JsonResponse:
    first = exc.errors[0] if exc.errors else {}
    where = ".".join(str(part) for part in first.get("loc", ()) if part not in ("body", "payload", "query", "path"))
    message = f"{where}: {first.get('msg', 'invalid value')}" if where else first.get("msg", "Invalid request")
    return error_response(request, ApiError(422, "invalid_input", message, details={"errors": exc.errors[:10]}))


@api.exception_handler(HttpError)
def on_http_error(request: HttpRequest, exc: HttpError) -> JsonResponse:
    codes = {400: "invalid_json", 401: "unauthorized", 403: "forbidden", 404: "not_found", 429: "rate_limited"}
    code = codes.get(exc.status_code, "error")
    message = str(exc) if exc.status_code != 400 else "The body is not valid JSON"
    return error_response(request, ApiError(exc.status_code, code, message))


@api.exception_handler(Http404)
def on_not_found(request: HttpRequest, exc: Http404) -> JsonResponse:
    return error_response(request, ApiError(404, "not_found", str(exc) or "Not found"))


@api.exception_handler(RequestDataTooBig)
def on_too_big(request: HttpRequest, exc: RequestDataTooBig) -> JsonResponse:
    from django.conf import settings

    limit = settings.TODOWEB_MAX_BODY_BYTES
    return error_response(request, ApiError(413, "payload_too_large", f"The body is larger than {limit} bytes"))


@api.exception_handler(Exception)
def on_unexpected(request: HttpRequest, exc: Exception) -> JsonResponse:
    logger.exception("Unexpected error on %s", request.path)
    return error_response(request, ApiError(500, "internal_error", "Internal error; nothing was written"))


from . import agent, hooks, sessions, share, tools  # noqa: E402

api.add_router("", tools.router)
api.add_router("", hooks.router)
api.add_router("", sessions.router)
api.add_router("", agent.router)
api.add_router("", share.router)
