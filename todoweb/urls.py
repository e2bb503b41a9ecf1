from __future__ import annotations

from django.contrib import admin
from django.urls import include, path

from . import health
from .api import api

urlpatterns = [
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("api/v1/", api.urls),
    path("admin/", admin.site.urls),
    path("accounts/", include("django.contrib.auth.urls")),
]
