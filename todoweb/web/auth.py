"""API token authentication: `Authorization: Bearer <token>` or `X-Api-Key: <token>`."""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from django.conf import settings
from django.http import HttpRequest
from django.utils import timezone
from django_ratelimit.core import get_usage
from ninja.security import HttpBearer

from todoweb.calls.errors import ApiError
from todoweb.logs import ThrottledLogger
from todoweb.models import ApiToken, digest
from todoweb.store.sql import token_with_project

# last_used_at is informative; writing it once a minute spares a write per call.
LAST_USED_RESOLUTION = timedelta(seconds=60)
# While Redis is down every request would log the same warning: once a minute is enough.
cache_down_logger = ThrottledLogger(__name__, every=60)


HOW = "send 'Authorization: Bearer <token>' (or 'X-Api-Key: <token>')"
# A scheme name worth repeating back; anything else is not named (it may be the token).
SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9._~+-]{0,19}")


def raw_token(authorization: str, api_key: str) -> str | None:
    """The token of a request with these Authorization and X-Api-Key headers ("": none)."""
    header = authorization.strip()
    scheme, _, value = header.partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()
    api_key = api_key.strip()
    if api_key:
        return api_key
    if header and scheme.lower() != "bearer":
        raise ApiError(401, "unauthorized", wrong_form(scheme, value))
    return None


def wrong_form(scheme: str, value: str) -> str:
    """What to say of an Authorization header that is not `Bearer <token>`, without
    repeating the token it may hold."""
    if not value.strip():
        return f"The Authorization header holds a token without its scheme: {HOW}"
    if SCHEME.fullmatch(scheme):
        return f"The Authorization header uses the scheme '{scheme}': {HOW}"
    return f"The Authorization header uses another scheme than Bearer: {HOW}"


def token_digest(request: HttpRequest) -> str:
    """The digest of the request's token, by which it is looked up (401 without one)."""
    return digest_of(request.headers.get("Authorization", ""), request.headers.get("X-Api-Key", ""))


def digest_of(authorization: str, api_key: str) -> str:
    """The digest of the token in these headers (401 without one)."""
    raw = raw_token(authorization, api_key)
    if raw is None:
        raise ApiError(
            401, "unauthorized", "Missing API token: send 'Authorization: Bearer <token>' or 'X-Api-Key: <token>'"
        )
    return digest(raw)


def check_token(token: ApiToken | None, found_by: str) -> ApiToken:
    """The token looked up by the digest `found_by` (None: no such token), if it may
    be used now: not revoked, within its rate limit. Notes when it was last used."""
    if token is None or not token.is_active:
        raise ApiError(401, "unauthorized", "Unknown or revoked API token")
    check_rate(found_by)
    now = timezone.now()
    if use_to_note(token.last_used_at, now):
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
    return token


def use_to_note(last_used_at: datetime | None, now: datetime) -> bool:
    """Whether a token last used at `last_used_at` is to be noted as used `now`."""
    return last_used_at is None or now - last_used_at > LAST_USED_RESOLUTION


def token_auth(request: HttpRequest) -> ApiToken:
    """The request's token, for endpoints that need nothing else read with it."""
    return token_by_digest(token_digest(request))


def token_by_digest(found_by: str) -> ApiToken:
    """The token of digest `found_by`, checked."""
    return check_token(token_with_project(found_by), found_by)


class TokenAuth(HttpBearer):
    """django-ninja's bearer scheme, so the OpenAPI docs offer an Authorize button;
    `X-Api-Key` is accepted too, and failures carry todoweb's own messages."""

    def __call__(self, request: HttpRequest) -> ApiToken:
        return token_auth(request)

    def authenticate(self, request: HttpRequest, token: str) -> ApiToken:  # required by HttpBearer
        return token_auth(request)


def rate_counted_in_process() -> bool:
    """Whether counting a call against the rate limit stays in this process (no
    limit, or the in-memory cache): no network, so the event loop may count it."""
    return (
        settings.TODOWEB_RATE_LIMIT <= 0
        or settings.CACHES["default"]["BACKEND"] == "django.core.cache.backends.locmem.LocMemCache"
    )


def check_rate(token_digest: str) -> None:
    """A fixed one-minute window per token (django-ratelimit), counted in the cache by
    the token's digest (a row id may come back, a deleted token's):
    Redis when REDIS_URL is set, so every process shares the count. The count needs
    no request (every method counts, the key is the digest), so none is given: the
    agents' route answers some hooks without making one."""
    limit = settings.TODOWEB_RATE_LIMIT
    if limit <= 0:
        return
    try:
        usage = get_usage(
            None, group="todoweb-api", key=lambda group, request: token_digest, rate=(limit, 60), increment=True
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
