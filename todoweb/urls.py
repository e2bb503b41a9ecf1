from __future__ import annotations

from django.contrib import admin
from django.templatetags.static import static
from django.urls import include, path
from django.views.generic import RedirectView

from todoweb.web import health, otlp, protected_resource
from todoweb.web.api import api
from todoweb.web.board import actions as board_actions
from todoweb.web.board import exports, team, views

urlpatterns = [
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("api/v1/", api.urls),
    # OTLP/HTTP: agents' telemetry exports (OTEL_EXPORTER_OTLP_ENDPOINT is the server's address).
    path("v1/logs", otlp.logs, name="otlp-logs"),
    path("v1/traces", otlp.traces, name="otlp-traces"),
    path("v1/metrics", otlp.metrics, name="otlp-metrics"),
    # RFC 9728: the API's metadata, and the MCP server's (resource path /mcp).
    path(".well-known/oauth-protected-resource", protected_resource.metadata),
    path(".well-known/oauth-protected-resource/mcp", protected_resource.metadata, {"resource_path": "/mcp"}),
    path("admin/", admin.site.urls),
    # Browsers and crawlers ask for /favicon.ico whatever the pages say.
    path("favicon.ico", RedirectView.as_view(url=static("todoweb/favicon.svg"), permanent=True)),
    path("accounts/", include("django.contrib.auth.urls")),
    path("", views.dashboard, name="dashboard"),
    path("team/", include(team)),
    path("export/steps.csv", exports.steps_csv, name="export-steps-csv"),
    path("export/steps.jsonl", exports.steps_jsonl, name="export-steps-jsonl"),
    path("export/sessions.csv", exports.sessions_csv, name="export-sessions-csv"),
    path("s/<str:public_id>/", views.session_panel, name="session"),
    path("s/<str:public_id>/revisions/<int:number>.json", views.revision_json, name="session-revision"),
    path("s/<str:public_id>/history.json", views.history_json, name="session-history"),
    path("s/<str:public_id>/dropped.json", views.dropped_json, name="session-dropped"),
    path("s/<str:public_id>/actions/", include(board_actions)),
    path("s/<str:public_id>/export.json", views.export_json, name="session-export-json"),
    path("s/<str:public_id>/export.md", views.export_md, name="session-export-md"),
]
