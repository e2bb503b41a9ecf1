"""API token authentication: `Authorization: Bearer <token>` or `X-Api-Key: <token>`."""

from __future__ import annotations

import time
from datetime import timedelta

from django.conf import settings
from django.core.cache import cache
from django.http import HttpRequest
from django.utils import timezone
from ninja.security import HttpBearer

from .errors import ApiError
from .models import ApiToken, digest

# last_used_at is informative; writing it once a minute spares a write per call.
LAST_USED_RESOLUTION = timedelta(seconds=60)


def raw_token(request: HttpRequest) -> str | None:
    header = request.headers.get("Authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()
    return request.headers.get("X-Api-Key", "").strip() or None


def token_auth(request: HttpRequest) -> ApiToken:
    raw = raw_token(request)
    if raw is None:
        raise ApiError(401, "unauthorized", "Missing API token: send 'Authorization: Bearer <token>' or 'X-Api-Key'")
    token = ApiToken.objects.select_related("project").filter(digest=digest(raw)).first()
    if token is None or not token.is_active:
        raise ApiError(401, "unauthorized", "Unknown or revoked API token")
    check_rate(token)
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at > LAST_USED_RESOLUTION:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
    return token


class TokenAuth(HttpBearer):
    """django-ninja's bearer scheme, so the OpenAPI docs offer an Authorize button;
    `X-Api-Key` is accepted too, and failures carry todoweb's own messages."""

    def __call__(self, request: HttpRequest) -> ApiToken:
        return token_auth(request)

    def authenticate(self, request: HttpRequest, token: str) -> ApiToken:  # required by HttpBearer
        return token_auth(request)


def check_rate(token: ApiToken) -> None:
    """A fixed one-minute window per token, counted in the cache (Redis when scaled out)."""
    limit = settings.TODOWEB_RATE_LIMIT
    if limit <= 0:
        return
    now = time.time()
    window = int(now // 60)
    key = f"todoweb:rate:{token.pk}:{window}"
    cache.add(key, 0, timeout=70)
    try:
        count = cache.incr(key)
    except ValueError:  # expired between add and incr
        cache.set(key, 1, timeout=70)
        count = 1
    if count > limit:
        retry = max(1, int(60 - now % 60))
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
