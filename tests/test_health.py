from __future__ import annotations

import socket
import time

import httpx
import pytest
from django.db import connection


def test_it_answers_healthz_without_a_token(client):
    assert client.get("/healthz").json() == {"ok": True}


def test_it_checks_database_and_channel_layer_on_readyz(client, db):
    assert client.get("/readyz").json() == {"ok": True, "checks": {"database": True, "channel_layer": True}}


def test_it_stays_ready_but_reports_a_channel_layer_that_is_down(client, db, settings):
    # Writes need only the database: a Redis blip must not take the instance out of rotation.
    settings.CHANNEL_LAYERS = {
        "default": {"BACKEND": "channels_redis.core.RedisChannelLayer", "CONFIG": {"hosts": ["redis://127.0.0.1:1"]}}
    }
    from channels.layers import channel_layers

    channel_layers.backends.clear()
    try:
        r = client.get("/readyz")
        assert r.status_code == 200
        assert r.json() == {"ok": True, "checks": {"database": True, "channel_layer": False}}
    finally:
        channel_layers.backends.clear()


def test_it_reports_not_ready_without_its_database(client, db, monkeypatch):
    from todoweb.web import health

    monkeypatch.setattr(health, "check_database", lambda: False)
    r = client.get("/readyz")
    assert r.status_code == 503 and r.json()["ok"] is False


def test_probes_answer_whatever_host_they_are_sent(asgi_server):
    # Orchestrators, load balancers and compose's own check probe by address.
    for path in ("/healthz", "/readyz"):
        answer = httpx.get(asgi_server.url + path, headers={"Host": "10.1.2.3:8000"})
        assert answer.status_code == 200, answer.text
        assert answer.json()["ok"] is True
    # Everything else keeps refusing a host the site does not serve.
    assert httpx.get(asgi_server.url + "/accounts/login/", headers={"Host": "10.1.2.3:8000"}).status_code == 400


@pytest.mark.skipif(connection.vendor != "postgresql", reason="the PostgreSQL readiness check (DATABASE_URL is SQLite)")
def test_readiness_gives_up_on_a_postgresql_that_does_not_answer(client, db, monkeypatch):
    from todoweb.web import health

    # A server that takes the connection and never says a word: without a timeout of
    # its own the check would wait as long as the pool does (30 s).
    with socket.create_server(("127.0.0.1", 0)) as silent:
        params = connection.get_connection_params() | {"host": "127.0.0.1", "port": silent.getsockname()[1]}
        monkeypatch.setattr(connection, "get_connection_params", lambda: params)
        monkeypatch.setattr(health, "DATABASE_TIMEOUT", 1)
        started = time.monotonic()
        assert health.check_database() is False
        assert time.monotonic() - started < 10
