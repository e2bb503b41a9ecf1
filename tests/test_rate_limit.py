"""The per-token rate limit: 429 with Retry-After, and open (logged) when its cache is down."""

from __future__ import annotations

import logging

from tests.conftest import assert_refused
from todoweb.web import auth


def test_it_rate_limits_per_token(api, settings):
    settings.TODOWEB_RATE_LIMIT = 3
    for _ in range(3):
        assert api.get("/api/v1/sessions").status_code == 200
    r = api.get("/api/v1/sessions")
    assert_refused(r, status=429, code="rate_limited")
    assert 1 <= int(r["Retry-After"]) <= 60


def test_it_counts_each_token_on_its_own(api, read_api, settings):
    settings.TODOWEB_RATE_LIMIT = 1
    assert api.get("/api/v1/sessions").status_code == 200
    assert read_api.get("/api/v1/sessions").status_code == 200
    assert api.get("/api/v1/sessions").status_code == 429


def test_it_carries_the_reply_on_a_limited_tool_call(api, settings):
    settings.TODOWEB_RATE_LIMIT = 1
    api.call("s1", "TodoRead", {})
    body = {"type": "tool_use", "id": "toolu_9", "name": "TodoRead", "input": {}}
    answer = assert_refused(api.tool("s1", body), status=429, code="rate_limited")
    assert answer["reply"]["tool_use_id"] == "toolu_9"


def test_it_lets_requests_through_and_logs_once_when_the_cache_is_down(api, settings, caplog, monkeypatch):
    monkeypatch.setattr(auth.cache_down_logger, "last", float("-inf"))
    # Nothing listens on port 1: every cache call fails at once.
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": "redis://127.0.0.1:1/0",
            "OPTIONS": {"socket_connect_timeout": 0.2},
        }
    }
    settings.TODOWEB_RATE_LIMIT = 2
    write = {"todos": [{"content": "a", "status": "pending", "activeForm": "doing a"}]}
    with caplog.at_level(logging.WARNING, logger="todoweb.web.auth"):
        for _ in range(5):
            assert api.call("s1", "TodoWrite", write).status_code == 200
    assert api.get("/api/v1/sessions/s1").json()["revision"] == 5
    warnings = [r for r in caplog.records if r.name == "todoweb.web.auth"]
    assert len(warnings) == 1 and "cache is unreachable" in warnings[0].getMessage()
