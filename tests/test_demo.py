"""The demo command: a fixed set of simulated agents looping through their plans over
real HTTP, on sessions it reuses across rounds and restarts; and how `make run`
(manage.py start) starts it."""

from __future__ import annotations

import itertools
import socket
from datetime import datetime, timedelta

import httpx
import pytest
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from todoweb.management.commands import demo, start
from todoweb.models import ApiToken, Revision, Session

LOOPING = {
    "demo-claude-code": "claude",
    "demo-claude-code:explore": "claude",
    "demo-kimi": "kimi",
    "demo-codex": "codex",
    "demo-weknora": "weknora",
    "demo-gemini": "gemini",
    "demo-roo": "roo",
}
IDLE = "demo-opencode"
KEYS = {*LOOPING, IDLE}


def run_demo(server, token: str, *, rounds: int, seed: int = 1) -> None:
    call_command(
        "demo", "--url", server.url, "--token", token, "--rounds", str(rounds), "--delay", "0", "--seed", str(seed)
    )


def sessions(project) -> dict[str, Session]:
    return {session.key: session for session in Session.objects.filter(project=project)}


def revisions(session: Session) -> list[Revision]:
    return list(Revision.objects.filter(session=session).order_by("number"))


@pytest.fixture
def after_three_rounds(asgi_server, token, project) -> dict[str, Session]:
    run_demo(asgi_server, token, rounds=3)
    return sessions(project)


def test_it_keeps_one_session_per_agent_however_many_rounds(after_three_rounds):
    assert set(after_three_rounds) == KEYS
    assert {key: after_three_rounds[key].dialect for key in LOOPING} == LOOPING
    assert after_three_rounds[IDLE].dialect == "opencode"


def test_each_round_starts_the_plan_again_on_the_same_session(after_three_rounds):
    for key in LOOPING:
        history = revisions(after_three_rounds[key])
        # Numbered 1, 2, 3 … with no gap, as one session's history.
        assert [r.number for r in history] == list(range(1, len(history) + 1)), key
        # One cleared list per round, each followed by the plan afresh: no step is
        # taken for the last round's (reopened, or running since then).
        assert sum(r.todos == [] for r in history) == 3, key
        assert all(step["reopened"] == 0 for r in history for step in r.todos), key
        last_round_start = [r.created_at for r in history if r.todos == []][-1]
        for step in history[-1].todos:
            if step["started_at"] is not None:
                assert datetime.fromisoformat(step["started_at"]) >= last_round_start, (key, step)


def test_the_dropped_lists_do_not_grow_with_the_rounds(after_three_rounds):
    """Codex drops two unstarted steps and WeKnora its failed one each round; the next
    round takes them up again, so nothing piles up."""
    longest = {key: max(len(r.dropped) for r in revisions(after_three_rounds[key])) for key in LOOPING}
    assert longest["demo-codex"] == 2
    assert longest["demo-weknora"] == 1
    assert all(length == 0 for key, length in longest.items() if key not in ("demo-codex", "demo-weknora"))


def test_the_weknora_run_ends_failed(after_three_rounds):
    weknora = after_three_rounds["demo-weknora"]
    assert weknora.state == Session.State.FAILED
    statuses = [step["status"] for step in revisions(weknora)[-1].todos]
    assert "failed" in statuses and "pending" not in statuses and "in_progress" not in statuses
    assert weknora.title == "Re-index the knowledge base"


def test_the_other_looping_agents_end_their_runs_completed(after_three_rounds):
    for key in LOOPING.keys() - {"demo-weknora"}:
        assert after_three_rounds[key].state == Session.State.COMPLETED, key
    gemini = revisions(after_three_rounds["demo-gemini"])[-1].todos
    assert [step["status"] for step in gemini].count("cancelled") == 1


def test_claude_code_hands_a_step_to_a_subagent_under_it(after_three_rounds):
    parent, child = after_three_rounds["demo-claude-code"], after_three_rounds["demo-claude-code:explore"]
    assert child.parent == parent and parent.parent is None
    assert parent.title == "shop"  # from the hook's working folder
    assert child.title == "Explore: rounding call sites"
    # The subagent ran while its parent's step 2 was in progress.
    child_first_plan = next(r for r in revisions(child) if r.todos)
    parent_then = Revision.objects.filter(session=parent, created_at__lte=child_first_plan.created_at).latest("number")
    assert [step["status"] for step in parent_then.todos][:3] == ["completed", "in_progress", "pending"]


def test_opencode_writes_once_and_is_left_with_work_to_do(after_three_rounds):
    opencode = after_three_rounds[IDLE]
    (only,) = revisions(opencode)
    assert opencode.working_steps > 0 and opencode.title == "Migrate the auth module to the new SDK"
    # Everyone else went on writing after it.
    assert Revision.objects.exclude(session=opencode).latest("created_at").created_at > only.created_at
    idle_after = timedelta(seconds=settings.TODOWEB_IDLE_AFTER)
    assert opencode.state_at(opencode.updated_at + idle_after / 2) == Session.State.ACTIVE
    assert opencode.state_at(opencode.updated_at + idle_after) == Session.State.IDLE


def test_a_restart_picks_up_the_same_sessions(asgi_server, token, project):
    run_demo(asgi_server, token, rounds=1)
    first = sessions(project)
    run_demo(asgi_server, token, rounds=2, seed=2)
    second = sessions(project)
    assert set(second) == KEYS
    assert {key: s.public_id for key, s in second.items()} == {key: s.public_id for key, s in first.items()}
    for key in LOOPING:
        # The history goes on where it was, one cleared list per round in all.
        history = revisions(second[key])
        assert second[key].revision == len(history) > first[key].revision, key
        assert sum(r.todos == [] for r in history) == 3, key
    assert second[IDLE].revision == 2  # once per start


def test_it_paces_the_writes_a_few_seconds_apart():
    """With the default beat, each agent writes every few seconds and all of them
    together about once a second; a failed run stays on the board a minute."""
    now = [0.0]
    writes: list[tuple[float, str, list[str]]] = []

    class Recorded(demo.Demo):
        def post(self, agent: demo.Agent) -> None:
            writes.append((now[0], agent.key, [todo.status for todo in agent.todos]))

    def sleep(seconds: float) -> None:
        now[0] += seconds

    Recorded(None, None, delay=2.0, seed=3, clock=lambda: now[0], sleep=sleep).run(demo.cast(), rounds=2)

    assert {key for _, key, _ in writes} == KEYS
    for key in LOOPING:
        times = [moment for moment, k, _ in writes if k == key]
        gaps = [later - earlier for earlier, later in itertools.pairwise(times)]
        assert min(gaps) >= 0.5, key  # the cleared list shows half a second at least
        assert sorted(gaps)[len(gaps) // 2] <= 6.0, key  # a step every few seconds
    assert 0.3 <= len(writes) / now[0] <= 2.0
    weknora = [(moment, statuses) for moment, key, statuses in writes if key == "demo-weknora"]
    failed_at, next_round = next(
        (moment, weknora[i + 1][0]) for i, (moment, statuses) in enumerate(weknora) if "failed" in statuses
    )
    assert next_round - failed_at >= 30.0


def test_it_refuses_a_bad_token(asgi_server, db):
    with pytest.raises(CommandError, match="401"):
        call_command("demo", "--url", asgi_server.url, "--token", "nope", "--rounds", "1", "--delay", "0")


def test_it_waits_for_the_server_then_gives_up(monkeypatch):
    monkeypatch.setattr(demo.time, "sleep", lambda s: None)
    client = httpx.Client(base_url="http://127.0.0.1:9", timeout=0.1)
    with pytest.raises(CommandError, match="healthz"):
        demo.wait_until_up(client, timeout=0)


def test_make_run_keeps_one_token_across_runs(db, tmp_path, monkeypatch):
    monkeypatch.setattr(start, "TOKEN_FILE", tmp_path / "demo-token")
    first = start.Command().demo_token()
    assert start.Command().demo_token() == first
    assert ApiToken.objects.count() == 1
    ApiToken.objects.update(revoked_at=timezone.now())
    second = start.Command().demo_token()
    assert second != first and (tmp_path / "demo-token").read_text().strip() == second


def test_demo_0_turns_the_demo_agent_off(monkeypatch):
    monkeypatch.setenv("DEMO", "0")
    assert start.Command().create_parser("manage.py", "start").parse_args([]).no_demo is True
    monkeypatch.setenv("DEMO", "1")
    assert start.Command().create_parser("manage.py", "start").parse_args([]).no_demo is False


def test_port_and_host_come_from_the_environment(monkeypatch):
    monkeypatch.setenv("PORT", "9000")
    monkeypatch.setenv("HOST", "0.0.0.0")
    options = start.Command().create_parser("manage.py", "start").parse_args([])
    assert (options.port, options.host) == (9000, "0.0.0.0")


def test_with_the_demo_sessions_go_idle_after_a_minute_unless_configured(settings, monkeypatch):
    settings.TODOWEB_IDLE_AFTER = 600
    monkeypatch.setenv("TODOWEB_IDLE_AFTER", "300")
    start.Command().shorten_idle()
    assert settings.TODOWEB_IDLE_AFTER == 600
    monkeypatch.delenv("TODOWEB_IDLE_AFTER")
    start.Command().shorten_idle()
    assert settings.TODOWEB_IDLE_AFTER == 60


def test_start_refuses_a_busy_port_before_it_says_anything(db, capsys):
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        with pytest.raises(CommandError, match=f"127.0.0.1:{port}.*make run PORT={port + 1}"):
            call_command("start", host="127.0.0.1", port=port, no_demo=True)
    assert "starting" not in capsys.readouterr().out
