"""API tokens: hashed at rest, createtoken, X-Api-Key, last_used_at."""

from __future__ import annotations

from io import StringIO

import httpx
import pytest
from django.core.management import call_command

from tests.conftest import Api
from todoweb.asgi import application
from todoweb.models import ApiToken, Project, Revision
from todoweb.writes.tokens import token_create


def test_it_creates_a_project_and_prints_the_raw_token_last(db):
    out = StringIO()
    call_command("createtoken", "team-x", "--scope", "read", "--name", "ci", stdout=out)
    raw = out.getvalue().strip().splitlines()[-1]
    assert raw.startswith("tw_") and " " not in raw
    token = ApiToken.objects.get()
    assert token.project.slug == "team-x" and token.scope == "read" and token.name == "ci"
    assert raw not in token.digest and token.digest != raw
    assert Api(raw).get("/api/v1/sessions").status_code == 200


def test_it_reuses_an_existing_project(project):
    call_command("createtoken", project.slug, stdout=StringIO())
    call_command("createtoken", project.slug, stdout=StringIO())
    assert Project.objects.count() == 1
    assert ApiToken.objects.filter(project=project).count() == 2


def test_it_accepts_the_x_api_key_header(token):
    api = Api(token)
    api.headers = {"X-Api-Key": token}
    assert api.get("/api/v1/sessions").status_code == 200


def test_it_records_last_use(token):
    assert ApiToken.objects.get().last_used_at is None
    Api(token).get("/api/v1/sessions")
    assert ApiToken.objects.get().last_used_at is not None


TWO_TOKENS = (
    "The Authorization header and the X-Api-Key header name different tokens: send one token, "
    "in one of them (or the same token in both)"
)
PLAN = {"todos": [{"content": "Ship it", "status": "in_progress", "activeForm": "Shipping it"}]}
HOOK = {
    "session_id": "s1",
    "hook_event_name": "PostToolUse",
    "tool_name": "TodoWrite",
    "tool_input": PLAN,
    "tool_response": {},
}
MCP_LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"}
# Every route that takes a token: (method, path, JSON body, extra headers).
TOKEN_ROUTES = {
    "tool endpoint": ("POST", "/api/v1/sessions/s1/tool", {"tool": "TodoWrite", "input": PLAN}, {}),
    "tool endpoint through Django": (
        "POST",
        "/api/v1/sessions/s1/tool?reply=native&x=1",
        {"tool": "TodoWrite", "input": PLAN},
        {},
    ),
    "hook": ("POST", "/api/v1/hooks/claude-code", HOOK, {}),
    "hook through Django": ("POST", "/api/v1/hooks/claude-code?x=1", HOOK, {}),
    "sessions": ("GET", "/api/v1/sessions", None, {}),
    # A session that does not exist, so that the stream answers at once once the token passes.
    "server-sent events": ("GET", "/api/v1/events?session=missing", None, {}),
    "OTLP": ("POST", "/v1/logs", {"resourceLogs": []}, {}),
    "MCP": ("POST", "/mcp?session=s1", MCP_LIST, MCP_HEADERS),
}


@pytest.fixture
def other_token(db) -> str:
    _, raw, _ = token_create(project_slug="beta")
    return raw


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("route", TOKEN_ROUTES.values(), ids=TOKEN_ROUTES.keys())
async def test_it_refuses_two_different_tokens_in_authorization_and_x_api_key(token, other_token, route):
    method, path, body, extra = route
    headers = extra | {"Authorization": f"Bearer {token}", "X-Api-Key": other_token}
    transport = httpx.ASGITransport(app=application)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        answer = await client.request(method, path, json=body, headers=headers)
        assert answer.status_code == 401, answer.text
        error = answer.json()["error"]
        assert error["message"] == TWO_TOKENS
        assert "WWW-Authenticate" in answer.headers
        # The same token in both is one token.
        same = await client.request(method, path, json=body, headers=headers | {"X-Api-Key": token})
        assert same.status_code != 401, same.text
    assert not await Revision.objects.filter(session__project__slug="beta").aexists()
