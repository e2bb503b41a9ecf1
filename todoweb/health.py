"""Liveness and readiness probes for load balancers and orchestrators (no token)."""

from __future__ import annotations

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import connection
from django.http import HttpRequest, JsonResponse


def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"ok": True})


def readyz(request: HttpRequest) -> JsonResponse:
    checks = {"database": check_database(), "channel_layer": check_channel_layer()}
    ready = all(checks.values())
    return JsonResponse({"ok": ready, "checks": checks}, status=200 if ready else 503)


def check_database() -> bool:
    try:
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
