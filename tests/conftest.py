from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from django.contrib.auth import get_user_model
from django.db import connections
from django.test import Client

from tests.live_server import LiveServer
from todoweb.models import ApiToken, Project
from todoweb.serve.agent_routes import AgentRoutes
from todoweb.serve.handlers import ApiHandler
from todoweb.writes.tokens import token_create

IN_CI = os.environ.get("CI", "").lower() == "true"

# A test of a fast path itself (todoweb.fences): skipped in the pass with every fast
# path off, which runs the rest of the suite on the libraries' public paths.
fast_path = pytest.mark.skipif(
    os.environ.get("TODOWEB_FAST_PATHS", "1").lower() in ("0", "false", "no", "off"),
    reason="tests a fast path, and TODOWEB_FAST_PATHS=0",
)


@pytest.fixture(scope="session", autouse=True)
def close_connection_pool(django_db_setup, django_db_blocker):
    """Close PostgreSQL's pool before the test database is dropped (idle pooled
    connections from server threads would otherwise keep it open)."""
    yield
    with django_db_blocker.unblock():
        for connection in connections.all():
            if getattr(connection, "pool", None) is not None:
                connection.close_pool()


@pytest.fixture(autouse=True)
def fast_hasher(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def no_rate_limit(settings):
    settings.TODOWEB_RATE_LIMIT = 0


@pytest.fixture(autouse=True)
def database_threads_see_the_test_data(request, settings):
    """Most tests run inside a transaction of their own thread's connection, which a
    write from another database thread (store/database.py) would not see: they
    write from the one thread. Tests whose data is committed (transactional_db,
    live servers) keep the deployment's threads."""
    marker = request.node.get_closest_marker("django_db")
    if "transactional_db" not in request.fixturenames and not (marker and marker.kwargs.get("transaction")):
        settings.TODOWEB_DB_THREADS = 1


@pytest.fixture
def project(db) -> Project:
    return Project.objects.create(name="Alpha", slug="alpha")


MEMBER_PASSWORD = "correct horse battery"


@pytest.fixture
def member(project):
    """A logged-out user who is a member of `project` (password MEMBER_PASSWORD)."""
    user = get_user_model().objects.create_user("member", password=MEMBER_PASSWORD)
    project.members.add(user)
    return user


@pytest.fixture
def token(project) -> str:
    _, raw, _ = token_create(project_slug=project.slug)
    return raw


@pytest.fixture
def read_token(project) -> str:
    _, raw, _ = token_create(project_slug=project.slug, scope=ApiToken.Scope.READ)
    return raw


def assert_refused(response, message: str | None = None, *, status: int = 422, code: str = "invalid_input") -> dict:
    """Asserts an error answer: status, code, the message (when given), and a reply
    carrying the message whenever the body named a tool call."""
    body = response.json()
    assert response.status_code == status, body
    assert body["ok"] is False
    assert body["error"]["code"] == code
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    if message is not None:
        assert body["error"]["message"] == message
    if "reply" in body:
        content = body["reply"].get("content", body["reply"].get("output"))
        assert content == body["error"]["message"]
        # The Chat Completions tool message has no error flag; the others carry one.
        assert body["reply"].get("is_error", True) is True
    return body


class Api:
    """Calls the API through the real URLs and middleware with a bearer token."""

    def __init__(self, raw_token: str):
        self.client = Client()
        self.headers = {"Authorization": f"Bearer {raw_token}"}

    def post(self, path: str, body: Any, *, headers: dict[str, str] | None = None, **extra):
        data = body if isinstance(body, (str, bytes)) else json.dumps(body)
        return self.client.post(
            path, data=data, content_type="application/json", headers=self.headers | (headers or {}), **extra
        )

    def tool(self, key: str, body: Any, *, query: str = "", headers: dict[str, str] | None = None):
        return self.post(f"/api/v1/sessions/{key}/tool{query}", body, headers=headers)

    def call(self, key: str, tool: str, args: Any, *, call_id: str | None = None, query: str = "", headers=None):
        body = {"tool": tool, "input": args} | ({"id": call_id} if call_id else {})
        return self.tool(key, body, query=query, headers=headers)

    def chat(self, key: str, tool: str, arguments: str, *, call_id: str | None = "call_1", query: str = ""):
        """A Chat Completions tool call, with its arguments text as the model wrote it."""
        body = {"id": call_id, "type": "function", "function": {"name": tool, "arguments": arguments}}
        return self.tool(key, body, query=query)

    def native(self, key: str, tool: str, args: Any, **extra):
        """A plain-form call answered in the tool's own words."""
        return self.call(key, tool, args, query="?reply=native", **extra)

    def ok(self, key: str, tool: str, args: Any) -> dict:
        response = self.native(key, tool, args)
        assert response.status_code == 200, response.content
        return response.json()

    def rejected(self, key: str, tool: str, args: Any, message: str, *, revision: int | None = None) -> dict:
        """Asserts the call is refused with `message` (error and reply) and nothing was written:
        the session stays at `revision` (None: it does not exist)."""
        response = self.native(key, tool, args)
        assert response.status_code == 422, response.content
        body = response.json()
        assert body["error"]["message"] == message
        assert body["reply"]["is_error"] is True and body["reply"]["content"] == message
        assert self.revision(key) == revision
        return body

    def revision(self, key: str) -> int | None:
        """The session's revision, or None when it does not exist."""
        response = self.get(f"/api/v1/sessions/{key}")
        return None if response.status_code == 404 else response.json()["revision"]

    def get(self, path: str, **extra):
        return self.client.get(path, headers=self.headers, **extra)

    def patch(self, path: str, body: Any):
        return self.client.patch(path, data=json.dumps(body), content_type="application/json", headers=self.headers)

    def delete(self, path: str):
        return self.client.delete(path, headers=self.headers)


@pytest.fixture
def api(token) -> Api:
    return Api(token)


@pytest.fixture
def read_api(read_token) -> Api:
    return Api(read_token)


@pytest.fixture
def other_api(db) -> Api:
    """A write token of another project."""
    _, raw, _ = token_create(project_slug="other")
    return Api(raw)


@pytest.fixture
async def agents_client() -> AsyncIterator[httpx.AsyncClient]:
    """The agents' routes (the tool endpoint, the hooks) as the server runs them, on
    this test's event loop."""
    transport = httpx.ASGITransport(app=AgentRoutes(ApiHandler()))
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        yield client


@pytest.fixture
def asgi_server(transactional_db, settings) -> Iterator[LiveServer]:
    """The app served over real HTTP and websockets, on the in-memory channel layer."""
    from channels.layers import channel_layers

    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "todoweb.live.layer.ProcessLayer"}}
    channel_layers.backends.clear()
    server = LiveServer()
    server.start()
    yield server
    if server.server is not None and not server.server.should_exit:
        server.stop()
