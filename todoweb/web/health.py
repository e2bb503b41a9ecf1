"""Liveness and readiness probes for load balancers and orchestrators (no token)."""

from __future__ import annotations

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import connection
from django.http import HttpRequest, JsonResponse


def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"ok": True})


def readyz(request: HttpRequest) -> JsonResponse:
    """Ready when the database answers: that is all a write needs. A channel layer
    that is down only slows live updates (watchers catch up from the database), so it
    is reported, not failed on: a Redis blip must not take every instance out of the
    load balancer."""
    checks = {"database": check_database(), "channel_layer": check_channel_layer()}
    ready = checks["database"]
    return JsonResponse({"ok": ready, "checks": checks}, status=200 if ready else 503)


# How long readiness waits for the database: a probe gives up after a few seconds.
DATABASE_TIMEOUT = 2


def check_database() -> bool:
    """Whether the database answers, within DATABASE_TIMEOUT seconds on PostgreSQL:
    there on a connection of its own, as the pool would wait 30 s for one it cannot
    make."""
    try:
        if connection.vendor == "postgresql":
            params = connection.get_connection_params() | {"connect_timeout": DATABASE_TIMEOUT}
            with connection.Database.connect(**params) as own:
                own.execute("SELECT 1")
            return True
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        return True
    except Exception:
        return False


def check_channel_layer() -> bool:
    layer = get_channel_layer()
    if layer is None:
        return False
    try:
        async_to_sync(layer.group_send)("readyz", {"type": "readyz.ping"})
        return True
    except Exception:
        return False
