"""API token authentication: `Authorization: Bearer <token>` or `X-Api-Key: <token>`."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from django.conf import settings
from django.http import HttpRequest
from django.utils import timezone
from django_ratelimit.core import get_usage
from ninja.security import HttpBearer

from .errors import ApiError
from .logs import ThrottledLogger
from .models import ApiToken, digest
from .queries import token_with_project

# last_used_at is informative; writing it once a minute spares a write per call.
LAST_USED_RESOLUTION = timedelta(seconds=60)
# While Redis is down every request would log the same warning: once a minute is enough.
cache_down_logger = ThrottledLogger("todoweb.auth", every=60)


def raw_token(request: HttpRequest) -> str | None:
    header = request.headers.get("Authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()
    return request.headers.get("X-Api-Key", "").strip() or None


def token_auth(request: HttpRequest, read: Callable[[str], ApiToken | None] = token_with_project) -> ApiToken:
    """The request's token, found by its digest with `read`."""
    raw = raw_token(request)
    if raw is None:
        raise ApiError(401, "unauthorized", "Missing API token: send 'Authorization: Bearer <token>' or 'X-Api-Key'")
    token = read(digest(raw))
    if token is None or not token.is_active:
        raise ApiError(401, "unauthorized", "Unknown or revoked API token")
    check_rate(request, token)
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at > LAST_USED_RESOLUTION:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
    return token


def authenticate(request: HttpRequest, read: Callable[[str], ApiToken | None] = token_with_project) -> ApiToken:
    """For views that check the token themselves (auth=None): as ninja would, sets request.auth."""
    request.auth = token_auth(request, read)
    return request.auth


class TokenAuth(HttpBearer):
    """django-ninja's bearer scheme, so the OpenAPI docs offer an Authorize button;
    `X-Api-Key` is accepted too, and failures carry todoweb's own messages."""

    def __call__(self, request: HttpRequest) -> ApiToken:
        return token_auth(request)

    def authenticate(self, request: HttpRequest, token: str) -> ApiToken:  # required by HttpBearer
        return token_auth(request)


def check_rate(request: HttpRequest, token: ApiToken) -> None:
    """A fixed one-minute window per token (django-ratelimit), counted in the cache:
    Redis when REDIS_URL is set, so every process shares the count."""
    limit = settings.TODOWEB_RATE_LIMIT
    if limit <= 0:
        return
    try:
        usage = get_usage(
            request, group="todoweb-api", key=lambda group, request: str(token.pk), rate=(limit, 60), increment=True
        )
    except Exception as exc:
        # The cache is down. The limit fails open: writes need only the database,
        # and a Redis blip must not turn into an outage of the API.
        cache_down_logger.warning("Rate limit skipped: the cache is unreachable", error=exc)
        return
    if usage is not None and usage["should_limit"]:
        retry = max(1, usage["time_left"])
        raise ApiError(
            429,
            "rate_limited",
            f"Rate limit of {limit} requests per minute exceeded; retry in {retry} s",
            details={"limit": limit, "retry_after": retry},
            headers={"Retry-After": str(retry)},
        )


def require_write(token: ApiToken) -> None:
    if token.scope != ApiToken.Scope.WRITE:
        raise ApiError(403, "forbidden", "This token is read-only; a write token is needed")
