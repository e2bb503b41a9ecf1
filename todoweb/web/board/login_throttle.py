"""Login throttling: django-axes counts failed logins in the database (so every
process counts the same ones) and locks out an account, and an address, after
AXES_FAILURE_LIMIT failures within AXES_COOLOFF_TIME. Here: its backend, and the page
a locked-out person gets, which says until when."""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from typing import Any

from axes.backends import AxesStandaloneBackend
from axes.helpers import get_client_username, get_cool_off, get_failure_limit
from axes.models import AccessAttempt
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone


class LoginThrottle(AxesStandaloneBackend):
    """Refuses every login, right password or not, while the account or the address is
    locked out (the next backend checks the password).

    Every login from the web passes its request (Django's login views and the admin's
    do). A check with no request comes from code on the server, such as the test
    client's `login()`: there is no visitor to throttle, so it goes on to the next
    backend instead of failing as axes' own backend would."""

    def authenticate(self, request: HttpRequest | None, *args: Any, **kwargs: Any) -> None:
        if request is None:
            return None
        return super().authenticate(request, *args, **kwargs)


def client_address(request: HttpRequest) -> str | None:
    """The address failed logins are counted against (AXES_CLIENT_IP_CALLABLE): the
    connection's, or the one a proxy in FORWARDED_ALLOW_IPS forwarded, as the server
    set it. Axes would otherwise read X-Forwarded-For through django-ipware whenever
    that is installed, from any client: a new header value for each guess would dodge
    the lock on the address."""
    return request.META.get("REMOTE_ADDR")


def locked_out(request: HttpRequest, *args: Any) -> HttpResponse:
    """The page for a login refused by the lockout (AXES_LOCKOUT_CALLABLE): 429 with
    Retry-After, in the board's style, saying when to try again."""
    # Axes calls this with (request, response, credentials), or (request, credentials).
    username = get_client_username(request, getattr(request, "axes_credentials", None))
    cool_off = get_cool_off(request) or timedelta(0)
    retry_at = unlocked_at(username, getattr(request, "axes_ip_address", None), request, cool_off)
    seconds = max(0, math.ceil((retry_at - timezone.now()).total_seconds()))
    context = {
        "retry_at": retry_at,
        "minutes": max(1, math.ceil(seconds / 60)),
        "failure_limit": get_failure_limit(request, None),
    }
    response = render(request, "registration/locked_out.html", context, status=429)
    response["Retry-After"] = str(seconds)
    return response


def unlocked_at(username: str | None, address: str | None, request: HttpRequest, cool_off: timedelta) -> datetime:
    """When neither the account nor the address is locked out any more.

    Axes forgets a failure record cool_off after its last failure (failures during the
    lockout are not recorded, so this time holds). A lock lifts once the failures of
    the records left are fewer than the limit."""
    limit = get_failure_limit(request, None)
    now = timezone.now()
    ends = [now]
    for field, value in (("username", username), ("ip_address", address)):
        if not value:
            continue
        rows = AccessAttempt.objects.filter(**{field: value}, attempt_time__gt=now - cool_off)
        records = sorted(rows.values_list("attempt_time", "failures_since_start"))
        failures = sum(count for _, count in records)
        for attempt_time, count in records:
            if failures < limit:
                break
            failures -= count
            ends.append(attempt_time + cool_off)
    return max(ends)
