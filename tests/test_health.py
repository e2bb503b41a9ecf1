from __future__ import annotations


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
