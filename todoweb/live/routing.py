"""Websocket URLs."""

from __future__ import annotations

from django.urls import path

from todoweb.live import consumers

websocket_urlpatterns: list = [
    path("ws/sessions/<str:public_id>/", consumers.SessionConsumer.as_asgi()),
    path("ws/dashboard/", consumers.DashboardConsumer.as_asgi()),
]
