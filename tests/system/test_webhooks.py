"""Webhooks from real server processes to real receivers on the loopback: sessions
completing, failing, going idle and edited by a person each make exactly one
delivery per endpoint, signed (verified with the standardwebhooks library); a
receiver that is down gets every event once it is back, with the server restarted in
between. On PostgreSQL two server processes deliver (each delivery claimed once). A
worker process of its own (`manage.py webhook_worker`) delivers for servers that do
not. The application served by plain uvicorn delivers too, with no setting. A
dripping receiver, a silent one and a project's 20 endpoints at a black hole hold up
no other project's delivery."""

from __future__ import annotations

import signal
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from standardwebhooks import Webhook

from tests.servers import PY, ROOT, Server, base_env, create_token, free_port, manage
from tests.webhook_receiver import BlackHole, Dripping, Receiver, Silent

WITHIN = 90.0  # seconds: a deadline, generous (the machine is shared)
PLAN = [
    {"content": "Read the issue", "status": "completed", "activeForm": "Reading the issue"},
    {"content": "Write the fix", "status": "in_progress", "activeForm": "Writing the fix"},
]
DONE = [{**step, "status": "completed"} for step in PLAN]
EVENTS = ["session.created", "session.completed", "session.failed", "session.idle", "plan.edited", "step.failed"]


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'db.sqlite3'}"
    else:
        yield request.getfixturevalue("postgres_url")


class Agent:
    def __init__(self, server: Server, token: str):
        self.http = httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {token}"}, timeout=30)

    def call(self, key: str, tool: str, args: Any, call_id: str | None = None) -> dict:
        body = {"tool": tool, "input": args} | ({"id": call_id} if call_id else {})
        response = self.http.post(f"/api/v1/sessions/{key}/tool", json=body)
        assert response.status_code == 200, response.text
        return response.json()

    def post(self, path: str, body: Any, **headers: str) -> httpx.Response:
        return self.http.post(path, json=body, headers=headers)


def wait_until(condition, what: Any, within: float = WITHIN) -> Any:
    """Poll `condition` until it holds; fail after `within` seconds saying `what` (a
    text, or a function giving it then)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError(f"not within {within:g} s: {what() if callable(what) else what}")


def seen(receiver: Receiver) -> Counter:
    """(event, session key) → how many times the receiver got it."""
    with receiver.lock:
        return Counter((r.json()["type"], r.json()["data"]["session"]["key"]) for r in receiver.received)


def test_every_event_once_signed_through_an_outage_and_a_restart(database_url: str, tmp_path: Path) -> None:
    env = base_env(
        DATABASE_URL=database_url,
        TODOWEB_WEBHOOKS_ALLOW_PRIVATE="1",
        TODOWEB_IDLE_AFTER="3",
        TODOWEB_WEBHOOK_RETRY_BASE="0.5",
        TODOWEB_RATE_LIMIT="100000",
    )
    workers = 2 if database_url.startswith("postgres") else 1
    manage(env, "migrate")
    token = create_token(env, "demo")
    receiver = Receiver().start()
    slack = Receiver().start()
    server = Server.serve(env, tmp_path / "first.log", workers=workers).start()
    try:
        agent = Agent(server, token)
        made = agent.post("/api/v1/webhooks", {"url": receiver.url, "events": EVENTS})
        assert made.status_code == 201, made.text
        secret = made.json()["secret"]
        slack_made = agent.post(
            "/api/v1/webhooks", {"url": slack.url, "events": ["session.completed"], "format": "slack"}
        )
        assert slack_made.status_code == 201, slack_made.text

        # Completes (its last call sent twice, as a retrying client does).
        agent.call("done", "TodoWrite", {"todos": PLAN}, call_id="d1")
        agent.call("done", "TodoWrite", {"todos": DONE}, call_id="d2")
        agent.call("done", "TodoWrite", {"todos": DONE}, call_id="d2")
        # Fails: one step, then the other.
        agent.call("fails", "create_todos", {"items": ["Build", "Ship"]})
        agent.call("fails", "update_todo", {"id": "1", "status": "failed"})
        agent.call("fails", "update_todo", {"id": "2", "status": "failed"})
        # Edited by a person (and left with work to do: it goes idle too).
        agent.call("edited", "TodoWrite", {"todos": PLAN})
        edit = [{"content": "Read the issue", "status": "completed"}, {"content": "Fix it", "status": "in_progress"}]
        response = agent.post("/api/v1/sessions/edited/edits", {"todos": edit}, **{"If-Match": "1"})
        assert response.status_code == 200, response.text
        agent.call(
            "edited", "TodoWrite", {"todos": [{**s, "activeForm": s["content"], "status": "completed"} for s in edit]}
        )
        # Left with work to do: goes idle after 3 s, with no browser open.
        agent.call("idle", "TodoWrite", {"todos": PLAN})

        expected = {
            ("session.created", "done"): 1,
            ("session.completed", "done"): 1,
            ("session.created", "fails"): 1,
            ("step.failed", "fails"): 2,
            ("session.failed", "fails"): 1,
            ("session.created", "edited"): 1,
            ("plan.edited", "edited"): 1,
            ("session.idle", "edited"): 1,
            ("session.created", "idle"): 1,
            ("session.idle", "idle"): 1,
        }
        wait_until(
            lambda: seen(receiver) == expected,
            lambda: f"the first events {dict(expected)} (got {dict(seen(receiver))})",
        )
        wait_until(lambda: len(slack.received) == 1, "the completion on the Slack-shaped receiver")
        (text,) = [r.json()["text"] for r in slack.received]
        assert text.startswith("[demo] Session completed: done (2/2 steps done) <http://")
        assert text.endswith("/|Open the panel>") and "/s/" in text

        # The receiver goes down; a session completes meanwhile; its delivery fails.
        port = receiver.port
        receiver.stop()
        agent.call("later", "TodoWrite", {"todos": DONE})
        webhook_id = made.json()["id"]

        def failed_attempts() -> bool:
            log = agent.http.get(f"/api/v1/webhooks/{webhook_id}/deliveries").json()["deliveries"]
            return any(d["status"] == "pending" and d["attempts"] >= 1 for d in log)

        wait_until(failed_attempts, "a failed attempt while the receiver is down")
        server.stop()
    finally:
        if server.process is not None and server.process.poll() is None:
            server.stop()

    # The server (and its worker) restarts, then the receiver comes back on its address.
    server = Server.serve(env, tmp_path / "second.log", workers=workers).start()
    back = Receiver(port=port).start()
    try:
        later = {("session.created", "later"): 1, ("session.completed", "later"): 1}
        wait_until(lambda: seen(back) == later, lambda: f"the events of the outage {later} (got {dict(seen(back))})")
        agent = Agent(server, token)
        log = agent.http.get(f"/api/v1/webhooks/{made.json()['id']}/deliveries?limit=200").json()["deliveries"]
        assert Counter(d["status"] for d in log) == {"delivered": sum(expected.values()) + 2}
        retried = [d for d in log if d["attempts"] > 1]
        assert retried and all(d["session"] for d in retried)
        # Nothing twice: one request per delivery, each verified.
        everything = receiver.received + back.received
        assert len({r.headers["webhook-id"] for r in everything}) == len(everything) == len(log)
        for got in everything:
            Webhook(secret).verify(got.body, got.headers)
        assert "Traceback" not in server.output()
    finally:
        server.stop()
        back.stop()
        slack.stop()


def test_a_worker_of_its_own_delivers_what_servers_that_do_not_deliver_write(database_url: str, tmp_path: Path) -> None:
    env = base_env(DATABASE_URL=database_url, TODOWEB_WEBHOOKS_ALLOW_PRIVATE="1", TODOWEB_WEBHOOK_WORKER="0")
    manage(env, "migrate")
    token = create_token(env, "demo")
    receiver = Receiver().start()
    server = Server.serve(env, tmp_path / "server.log").start()
    worker = None
    try:
        agent = Agent(server, token)
        made = agent.post("/api/v1/webhooks", {"url": receiver.url, "events": ["session.completed"]})
        assert made.status_code == 201, made.text
        agent.call("done", "TodoWrite", {"todos": DONE})
        log = agent.http.get(f"/api/v1/webhooks/{made.json()['id']}/deliveries").json()["deliveries"]
        assert [d["status"] for d in log] == ["pending"]
        # The server does not deliver; the worker process does, once.
        worker = subprocess.Popen(
            [PY, "manage.py", "webhook_worker"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        wait_until(lambda: len(receiver.received) == 1, "the completion, delivered by the worker process")
        Webhook(made.json()["secret"]).verify(receiver.received[0].body, receiver.received[0].headers)
        agent.call("later", "TodoWrite", {"todos": DONE})
        wait_until(lambda: len(receiver.received) == 2, "a later completion, delivered by the same worker")
        worker.send_signal(signal.SIGTERM)
        output, _ = worker.communicate(timeout=30)
        assert worker.returncode == 0, output
        assert seen(receiver) == {("session.completed", "done"): 1, ("session.completed", "later"): 1}
    finally:
        if worker is not None and worker.poll() is None:
            worker.kill()
        server.stop()
        receiver.stop()


def test_the_application_served_by_plain_uvicorn_delivers_by_default(tmp_path: Path) -> None:
    env = base_env(DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}", TODOWEB_WEBHOOKS_ALLOW_PRIVATE="1")
    assert "TODOWEB_WEBHOOK_WORKER" not in env
    manage(env, "migrate")
    token = create_token(env, "demo")
    port = free_port()
    uvicorn = [PY, "-m", "uvicorn", "todoweb.asgi:application", "--host", "127.0.0.1", "--port", str(port)]
    receiver = Receiver().start()
    server = Server(uvicorn, env, port=port, log=tmp_path / "uvicorn.log").start()
    try:
        agent = Agent(server, token)
        made = agent.post("/api/v1/webhooks", {"url": receiver.url, "events": ["session.completed"]})
        assert made.status_code == 201, made.text
        agent.call("done", "TodoWrite", {"todos": DONE})
        wait_until(lambda: len(receiver.received) == 1, "the completion, delivered by the server process itself")
        Webhook(made.json()["secret"]).verify(receiver.received[0].body, receiver.received[0].headers)
        assert seen(receiver) == {("session.completed", "done"): 1}
        assert "Traceback" not in server.output()
    finally:
        server.stop()
        receiver.stop()


def test_no_receiver_holds_up_another_projects_delivery(database_url: str, tmp_path: Path) -> None:
    env = base_env(DATABASE_URL=database_url, TODOWEB_WEBHOOKS_ALLOW_PRIVATE="1", TODOWEB_RATE_LIMIT="100000")
    manage(env, "migrate")
    tokens = {name: create_token(env, name) for name in ("crowded", "slow", "healthy")}
    server = Server.serve(env, tmp_path / "server.log").start()
    with BlackHole() as hole, Dripping(every=0.5, part="headers", length=1000) as dripping, Silent() as silent:
        healthy = Receiver().start()
        try:
            agents = {name: Agent(server, token) for name, token in tokens.items()}
            for n in range(20):  # a project's every endpoint at an address that never answers
                made = agents["crowded"].post("/api/v1/webhooks", {"url": f"{hole.url}/{n}", "events": EVENTS})
                assert made.status_code == 201, made.text
            slow = {}
            for receiver in (dripping, silent):
                made = agents["slow"].post("/api/v1/webhooks", {"url": receiver.url, "events": EVENTS})
                assert made.status_code == 201, made.text
                slow[receiver.url] = made.json()["id"]
            made = agents["healthy"].post("/api/v1/webhooks", {"url": healthy.url, "events": ["session.created"]})
            assert made.status_code == 201, made.text
            # A backlog: 100 deliveries to the black hole, 10 to the slow receivers.
            for n in range(5):
                agents["crowded"].call(f"c{n}", "TodoWrite", {"todos": PLAN})
                agents["slow"].call(f"s{n}", "TodoWrite", {"todos": PLAN})
            wait_until(lambda: dripping.connections and silent.taken, "the slow receivers' attempts under way")

            waited = []
            for n in range(3):
                sent = time.monotonic()
                agents["healthy"].call(f"h{n}", "TodoWrite", {"todos": PLAN})
                wait_until(lambda n=n: len(healthy.received) > n, f"the healthy endpoint's delivery {n + 1}")
                waited.append(healthy.received[n].at - sent)
            assert max(waited) <= 2.0, f"event to receipt: {waited} s"

            # The dripping receiver's attempt ended at its deadline, saying so.
            def dripped() -> list[dict]:
                log = agents["slow"].http.get(f"/api/v1/webhooks/{slow[dripping.url]}/deliveries").json()
                return [d for d in log["deliveries"] if d["attempts"]]

            (first, *_) = wait_until(dripped, "the dripping receiver's first attempt recorded")
            assert first["error"] == "timed out: no whole answer within 5 s"
            assert "Traceback" not in server.output()
        finally:
            server.stop()
            healthy.stop()
