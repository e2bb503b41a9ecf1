"""The agents' write endpoints by their own route (todoweb.runtime.agent_routes) answer
byte for byte what the API's handler answers (URL resolver, django-ninja), for good
calls and bad ones, on every hook and the tool endpoint; what the route is not sure of
goes to the API handler."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from todoweb.models import Revision
from todoweb.runtime.agent_routes import AgentRoutes
from todoweb.runtime.database import in_database_thread
from todoweb.runtime.handlers import ApiHandler

pytestmark = pytest.mark.django_db(transaction=True)

TODOS = [
    {"content": "Read <script>alert(1)</script> & fix", "status": "completed", "activeForm": "Reading"},
    {"content": "修复 the 🐛 bug\u0007", "status": "in_progress", "activeForm": "修复中"},
    {"content": "Run the tests", "status": "pending", "activeForm": "Running the tests"},
]
TOOL_USE = {"type": "tool_use", "id": "toolu_01", "name": "TodoWrite", "input": {"todos": TODOS}}


def claude_hook(session: str, tool: str = "TodoWrite", tool_input: Any = None, **fields: Any) -> dict[str, Any]:
    return {
        "session_id": session,
        "cwd": "/home/me/shop",
        "hook_event_name": "PostToolUse",
        "tool_name": tool,
        "tool_input": {"todos": TODOS} if tool_input is None else tool_input,
        "tool_use_id": "toolu_02",
    } | fields


PLAN = [{"step": "Read the code", "status": "completed"}, {"step": "Fix it", "status": "in_progress"}]
GEMINI_TODOS = [{"description": "Fix it", "status": "in_progress"}]

# (method, path, query, headers, body, whether the agents' route answers it itself).
# `{s}` is the session key: each case runs on a session of its own on each side.
CASES: list[tuple[str, str, str, dict[str, str], Any, bool]] = [
    ("POST", "/api/v1/sessions/{s}/tool", "", {}, TOOL_USE, True),
    ("POST", "/api/v1/sessions/{s}/tool", "reply=native", {}, TOOL_USE, True),
    ("POST", "/api/v1/sessions/{s}/tool", "reply=checklist&title=Shop%20fix", {}, TOOL_USE, True),
    (
        "POST",
        "/api/v1/sessions/{s}/tool",
        "dialect=claude",
        {"X-Todoweb-Title": "UTF-8''The%20%E5%BA%97%20fix"},
        TOOL_USE,
        True,
    ),
    ("POST", "/api/v1/sessions/{s}/tool", "", {}, {"tool": "TodoWrite", "input": {"todos": "nope"}}, True),
    ("POST", "/api/v1/sessions/{s}/tool", "", {}, {"tool": "NoSuchTool", "input": {}}, True),
    ("POST", "/api/v1/sessions/{s}/tool", "", {}, b'{"tool": "TodoWrite", "input": ', True),
    ("POST", "/api/v1/sessions/{s}/tool", "", {"Content-Type": "text/plain"}, b"{}", True),
    ("POST", "/api/v1/sessions/{s}/tool", "", {"Authorization": "Bearer nope"}, TOOL_USE, True),
    ("POST", "/api/v1/sessions/{s}/tool", "", {"If-Match": '"7"'}, TOOL_USE, True),
    ("POST", "/api/v1/sessions/{s}/tool", "", {"Idempotency-Key": "x" * 300}, TOOL_USE, True),
    ("POST", "/api/v1/sessions/{s}/tool", "", {}, {"tool": "TodoWrite", "input": {"todos": TODOS * 400}}, True),
    ("POST", "/api/v1/sessions/{s}/tool", "reply=bogus", {}, TOOL_USE, False),
    ("POST", "/api/v1/sessions/{s}/tool", "reply=native&reply=checklist", {}, TOOL_USE, False),
    ("POST", "/api/v1/sessions/{s}/tool", "other=1", {}, TOOL_USE, False),
    ("GET", "/api/v1/sessions/{s}/tool", "", {}, None, False),
    ("POST", "/api/v1/hooks/claude-code", "", {}, claude_hook("{s}"), True),
    ("POST", "/api/v1/hooks/claude-code", "reply=native", {"X-Todoweb-Branch": "main"}, claude_hook("{s}"), True),
    ("POST", "/api/v1/hooks/claude-code", "answer=hook", {}, claude_hook("{s}"), True),
    ("POST", "/api/v1/hooks/claude-code", "", {}, claude_hook("{s}", "Bash", {"command": "ls"}), True),
    ("POST", "/api/v1/hooks/claude-code", "", {}, claude_hook("{s}", agent_id="sub 1"), True),
    ("POST", "/api/v1/hooks/claude-code", "", {}, claude_hook("{s}", hook_event_name="Stop"), True),
    ("POST", "/api/v1/hooks/claude-code", "", {}, claude_hook("{s}", tool_input={"todos": [{"x": 1}]}), True),
    ("POST", "/api/v1/hooks/claude-code", "", {"Authorization": "Bearer nope"}, claude_hook("{s}"), True),
    ("POST", "/api/v1/hooks/claude-code", "", {}, {"hook_event_name": "PostToolUse"}, False),
    ("POST", "/api/v1/hooks/claude-code", "", {}, {"session_id": 5}, False),
    ("POST", "/api/v1/hooks/claude-code", "", {}, b"not json", False),
    ("POST", "/api/v1/hooks/claude-code", "wait=0", {}, claude_hook("{s}"), False),
    ("POST", "/api/v1/hooks/claude-code", "answer=nope", {}, claude_hook("{s}"), False),
    ("POST", "/api/v1/hooks/codex", "", {}, claude_hook("{s}", "update_plan", {"plan": PLAN}), True),
    ("POST", "/api/v1/hooks/qwen-code", "", {}, claude_hook("{s}", "todo_write", {"todos": TODOS}), True),
    (
        "POST",
        "/api/v1/hooks/gemini-cli",
        "",
        {},
        claude_hook("{s}", "write_todos", {"todos": GEMINI_TODOS}, hook_event_name="AfterTool"),
        True,
    ),
    ("POST", "/api/v1/hooks/no-such-agent", "", {}, claude_hook("{s}"), False),
]


class Counted:
    """An API handler that counts the requests it resolves itself."""

    def __init__(self) -> None:
        self.handler = ApiHandler()
        self.resolved = 0
        answer = self.handler.get_response_async

        async def counted(request):
            self.resolved += 1
            return await answer(request)

        self.handler.get_response_async = counted  # type: ignore[method-assign]


@pytest.fixture
async def clients() -> AsyncIterator[tuple[httpx.AsyncClient, httpx.AsyncClient, Counted]]:
    counted = Counted()
    routes = httpx.ASGITransport(app=AgentRoutes(counted.handler))
    api = httpx.ASGITransport(app=ApiHandler())
    async with (
        httpx.AsyncClient(transport=routes, base_url="http://127.0.0.1") as by_routes,
        httpx.AsyncClient(transport=api, base_url="http://127.0.0.1") as by_api,
    ):
        yield by_routes, by_api, counted


def filled(value: Any, session: str) -> Any:
    if isinstance(value, str):
        return value.replace("{s}", session)
    if isinstance(value, dict):
        return {k: filled(v, session) for k, v in value.items()}
    return value


async def send(client: httpx.AsyncClient, case: tuple, session: str, token: str) -> httpx.Response:
    method, path, query, headers, body, _ = case
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"} | headers
    content = body if isinstance(body, bytes) else None
    json_body = None if body is None or isinstance(body, bytes) else filled(body, session)
    url = filled(path, session) + (f"?{query}" if query else "")
    return await client.request(method, url, headers=headers, content=content, json=json_body)


TIMESTAMP = re.compile(rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z")


def comparable(answer: httpx.Response, session: str) -> tuple[int, list[tuple[str, str]], bytes]:
    """The answer with what two sessions cannot share (their keys, ids and times) blanked."""
    body = answer.content.replace(session.encode(), b"<session>")
    try:
        public_id = answer.json()["data"]["session"]["id"]
    except (ValueError, KeyError, TypeError):
        public_id = None
    if public_id:
        body = body.replace(public_id.encode(), b"<id>")
    headers = sorted((k, v) for k, v in answer.headers.items() if k != "content-length")
    return answer.status_code, headers, TIMESTAMP.sub(b"<time>", body)


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]} {c[1]}?{c[2]} #{n}" for n, c in enumerate(CASES)])
async def test_the_agents_route_answers_what_the_api_answers(clients, token, case):
    by_routes, by_api, counted = clients
    number = CASES.index(case)
    mine, theirs = f"routes-{number}", f"apiapi-{number}"
    for attempt in range(2):  # the second time: a replay, or the next revision
        ours = await send(by_routes, case, mine, token)
        api = await send(by_api, case, theirs, token)
        assert comparable(ours, mine) == comparable(api, theirs), (attempt, ours.content, api.content)
    answers_itself = case[-1]
    assert counted.resolved == (0 if answers_itself else 2)


async def test_a_call_written_by_the_agents_route_is_in_the_database(clients, token):
    by_routes, _, counted = clients
    answer = await send(by_routes, CASES[0], "written", token)
    assert answer.status_code == 200, answer.content
    assert answer.json()["data"]["revision"] == 1
    assert counted.resolved == 0
    # Read as the app reads: in_database_thread gives the connection back (a pooled one
    # kept by the test's thread would count against another test's pool).
    revision = await in_database_thread(Revision.objects.select_related("session").get)
    assert revision.session.key == "written"
    assert [todo["content"] for todo in revision.todos] == [todo["content"] for todo in TODOS]
