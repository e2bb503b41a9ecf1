"""The demo command drives simulated agents through the real HTTP API."""

from __future__ import annotations

import httpx
import pytest
from django.core import signals
from django.core.handlers.wsgi import WSGIHandler
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import close_old_connections
from django.utils import timezone

from todoweb.management.commands import demo
from todoweb.models import Revision, Session


@pytest.fixture
def in_process(monkeypatch):
    """The command's HTTP client, served by this process's Django (same test database)."""

    def make_client(url: str, token: str) -> httpx.Client:
        return httpx.Client(
            transport=httpx.WSGITransport(app=WSGIHandler()),
            base_url=url,
            headers={"Authorization": f"Bearer {token}"},
        )

    monkeypatch.setattr(demo, "make_client", make_client)
    # As Django's test Client does: keep the test's connection (and transaction) open.
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


def test_it_drives_agents_in_several_dialects_through_one_round(in_process, token):
    call_command("demo", "--url", "http://testserver", "--token", token, "--rounds", "1", "--delay", "0", "--seed", "1")
    sessions = {s.key.split("-", 2)[2]: s for s in Session.objects.all()}
    assert {"claude-r1", "kimi-r1", "codex-r1", "weknora-r1", "cc-r1"} <= set(sessions)
    # Every plan ran to its end.
    for name in ("claude-r1", "kimi-r1", "codex-r1", "cc-r1"):
        assert sessions[name].total_steps and sessions[name].open_steps == 0, name
    # Several dialects (TodoWrite stands in for any not registered yet).
    assert len({s.dialect for s in sessions.values()}) >= 3
    # The codex plan was rewritten midway: an unfinished step was dropped.
    assert Revision.objects.filter(session=sessions["codex-r1"]).exclude(dropped=[]).exists()
    # WeKnora's agent failed a step and retried.
    assert any(
        step["status"] == "failed" for r in Revision.objects.filter(session=sessions["weknora-r1"]) for step in r.todos
    )
    # The Claude Code session spawned a subagent, linked to its parent through the hook.
    child = sessions["cc-r1:explore-1"]
    assert child.parent == sessions["cc-r1"]
    assert sessions["cc-r1"].title == "shop"
    assert sessions["claude-r1"].title == "Add rate limiting to the public API"


def test_it_falls_back_to_todowrite_for_an_unknown_dialect(in_process, token, monkeypatch):
    real = demo.Agent.payload

    def payload(agent):
        body = real(agent)
        if agent.dialect == "kimi":
            body["tool"] = "NotYetATool"
        return body

    monkeypatch.setattr(demo.Agent, "payload", payload)
    call_command("demo", "--url", "http://testserver", "--token", token, "--rounds", "1", "--delay", "0", "--seed", "2")
    kimi = Session.objects.get(key__contains="-kimi-r1")
    assert kimi.dialect == "claude" and kimi.open_steps == 0


def test_it_refuses_a_bad_token(in_process, db):
    with pytest.raises(CommandError, match="401"):
        call_command("demo", "--url", "http://testserver", "--token", "nope", "--rounds", "1", "--delay", "0")


def test_it_waits_for_the_server_then_gives_up(monkeypatch):
    monkeypatch.setattr(demo.time, "sleep", lambda s: None)
    client = httpx.Client(base_url="http://127.0.0.1:9", timeout=0.1)
    with pytest.raises(CommandError, match="healthz"):
        demo.wait_until_up(client, timeout=0)


def test_make_run_keeps_one_token_across_runs(db, tmp_path, monkeypatch):
    from todoweb.management.commands import start
    from todoweb.models import ApiToken

    monkeypatch.setattr(start, "TOKEN_FILE", tmp_path / "demo-token")
    first = start.Command().demo_token()
    assert start.Command().demo_token() == first
    assert ApiToken.objects.count() == 1
    ApiToken.objects.update(revoked_at=timezone.now())
    second = start.Command().demo_token()
    assert second != first and (tmp_path / "demo-token").read_text().strip() == second


def test_demo_0_turns_the_demo_agent_off(monkeypatch):
    from todoweb.management.commands import start

    monkeypatch.setenv("DEMO", "0")
    assert start.Command().create_parser("manage.py", "start").parse_args([]).no_demo is True
    monkeypatch.setenv("DEMO", "1")
    assert start.Command().create_parser("manage.py", "start").parse_args([]).no_demo is False
