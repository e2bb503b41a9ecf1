"""Reading a JSON request body by hand, with the API's own errors: 413, 415, 400, 422."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpRequest
from ninja.errors import ValidationError
from pydantic import BaseModel
from pydantic import ValidationError as PydanticError

from ..errors import ApiError, InvalidInput
from ..jsonio import loads


def json_body(request: HttpRequest) -> Any:
    limit = settings.TODOWEB_MAX_BODY_BYTES
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    if length > limit:
        raise ApiError(413, "payload_too_large", f"The body is larger than {limit} bytes")
    if request.content_type != "application/json":
        raise ApiError(
            415, "unsupported_media_type", f"Send 'Content-Type: application/json', not '{request.content_type}'"
        )
    body = request.body  # raises RequestDataTooBig past the limit, answered as 413
    if len(body) > limit:
        raise ApiError(413, "payload_too_large", f"The body is larger than {limit} bytes")
    return loads(body, what="The body")


def validated(model: type[BaseModel], body: Any) -> Any:
    """The body as `model`, or the API's usual 422 naming the first problem."""
    if not isinstance(body, dict):
        # ninja's Schema would read a list or a number as an object without attributes.
        raise InvalidInput("The body must be a JSON object")
    try:
        return model.model_validate(body)
    except PydanticError as exc:
        raise ValidationError(exc.errors(include_url=False, include_context=False)) from None
