"""No secret in any log: share tokens, API tokens (Bearer, X-Api-Key, or by
mistake in a query string) and session cookies never reach the server's output, in
every way the README starts the server."""

from __future__ import annotations

import json
import re

import httpx
import pytest
from websockets.sync.client import connect

from tests.servers import PY, Server, base_env, create_token, free_port, manage

PASSWORD = "a long password for the log test"


@pytest.fixture
def deployment(tmp_path) -> dict[str, str]:
    env = base_env(
        DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}",
        DJANGO_SUPERUSER_USERNAME="watcher",
        DJANGO_SUPERUSER_PASSWORD=PASSWORD,
        DJANGO_SUPERUSER_EMAIL="watcher@example.com",
        LOG_LEVEL="INFO",
    )
    manage(env, "migrate")
    manage(env, "createsuperuser", "--noinput")
    return env


def use_every_secret(url: str, token: str) -> list[str]:
    """Use the server the way agents and people do; returns the secrets it saw."""
    ws_url = url.replace("http://", "ws://")
    bearer = {"Authorization": f"Bearer {token}"}
    call = {"type": "tool_use", "id": "toolu_1", "name": "TodoWrite", "input": {"todos": []}}
    with httpx.Client(base_url=url, timeout=10) as http:
        assert http.post("/api/v1/sessions/logs/tool", json=call, headers=bearer).status_code == 200
        assert http.get("/api/v1/sessions/logs", headers={"X-Api-Key": token}).status_code == 200
        # Tokens in query strings, by mistake, and errors that name the request.
        assert http.get(f"/api/v1/sessions/logs?api_key={token}", headers=bearer).status_code == 200
        assert http.get(f"/api/v1/sessions/nope?token={token}", headers=bearer).status_code == 404
        assert http.get("/api/v1/sessions", headers={"Authorization": f"Bearer {token}x"}).status_code == 401
        json_type = bearer | {"Content-Type": "application/json"}
        assert (
            http.post(f"/api/v1/sessions/logs/tool?key={token}", content=b"{oops", headers=json_type).status_code == 400
        )

        share = http.post("/api/v1/sessions/logs/share", headers=bearer).json()
        assert http.get(share["url"].replace(url, "")).status_code == 200
        public_id = share["url"].split("/s/")[1].split("/")[0]
        with connect(f"{ws_url}/ws/sessions/{public_id}/?share={share['token']}", origin=url) as ws:
            assert json.loads(ws.recv(timeout=10))["type"] == "session.snapshot"

        login = http.get("/accounts/login/")
        csrf = http.cookies["csrftoken"]
        form = {"username": "watcher", "password": PASSWORD, "csrfmiddlewaretoken": csrf}
        assert http.post("/accounts/login/", data=form, headers={"Referer": str(login.url)}).status_code == 302
        cookie = http.cookies["sessionid"]
        assert http.get("/").status_code == 200
        with connect(f"{ws_url}/ws/dashboard/", origin=url, additional_headers={"Cookie": f"sessionid={cookie}"}) as ws:
            assert json.loads(ws.recv(timeout=10))["type"] == "dashboard.snapshot"
    return [token, share["token"], cookie, csrf]


def assert_no_secret(output: str, secrets: list[str]) -> None:
    for secret in secrets:
        assert secret not in output, f"a secret reached the log: …{secret[-6:]}"
    assert not re.search(r"\b(?:tw|sh)_[A-Za-z0-9_-]{16,}", output)


def test_the_production_command_logs_requests_without_secrets(deployment, tmp_path):
    token = create_token(deployment)
    with Server.serve(deployment, tmp_path / "serve.log", workers=2) as server:
        secrets = use_every_secret(server.url, token)
    output = server.output()
    assert "GET /s/" in output and "WebSocket /ws/sessions/" in output  # the access log is on
    assert "share=[redacted]" in output and "api_key=[redacted]" in output
    assert_no_secret(output, secrets)


def test_make_runs_server_logs_no_secret(deployment, tmp_path):
    token = create_token(deployment)
    port = free_port()
    server = Server([PY, "manage.py", "start", "--port", str(port)], deployment, port=port, log=tmp_path / "start.log")
    with server:
        secrets = use_every_secret(server.url, token)
    # The banner hands the user the demo agent's own token, on purpose; no log line does.
    banner, _, log = server.output().partition("A demo agent is driving")
    assert "token for project 'demo'" in banner
    assert_no_secret(log, secrets)
    assert all(secret not in banner for secret in secrets)


def test_a_request_for_a_foreign_host_is_one_line_of_the_log(deployment, tmp_path):
    """A scanner sends a Host outside ALLOWED_HOSTS: it is answered 400 and noted in
    one line, not a traceback of Django's internals (the health probes answer any Host)."""
    with Server.serve(deployment, tmp_path / "serve.log", workers=1) as server:
        with httpx.Client(base_url=server.url, timeout=10) as http:
            assert http.get("/readyz", headers={"Host": "scanner.example"}).status_code == 200
            for path in ("/admin/", "/", "/accounts/login/"):
                assert http.get(path, headers={"Host": "scanner.example"}).status_code == 400
    output = server.output()
    assert output.count("Invalid HTTP_HOST header: 'scanner.example'") == 3
    assert "Traceback" not in output
