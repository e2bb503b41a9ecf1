"""The agents' write endpoints by their own route (todoweb.serve.agent_routes) answer
byte for byte what the API's handler answers (URL resolver, django-ninja), for good
calls and bad ones, on every hook and the tool endpoint; what the route is not sure of
goes to the API handler, and a hook is answered without a Django request unless its
answer is an error."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from todoweb.models import Message, Revision, Session
from todoweb.serve.agent_routes import AgentRoutes
from todoweb.serve.handlers import ApiHandler
from todoweb.store.database import in_database_thread
from todoweb.writes import messages

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


BASH = claude_hook("{s}", "Bash", {"command": "ls"}, tool_response={"stdout": "a\n"})
PLAN = [{"step": "Read the code", "status": "completed"}, {"step": "Fix it", "status": "in_progress"}]
GEMINI_TODOS = [{"description": "Fix it", "status": "in_progress"}]

# (method, path, query, headers, body, who answers it: "bare", the agents' route
# without a Django request; "route", the agents' route with one; "api", the API handler).
# `{s}` is the session key: each case runs on a session of its own on each side.
CASES: list[tuple[str, str, str, dict[str, str], Any, bool]] = [
    ("POST", "/api/v1/sessions/{s}/tool", "", {}, TOOL_USE, "bare"),
    ("POST", "/api/v1/sessions/{s}/tool", "reply=native", {}, TOOL_USE, "bare"),
    ("POST", "/api/v1/sessions/{s}/tool", "reply=checklist&title=Shop%20fix", {}, TOOL_USE, "bare"),
    (
        "POST",
        "/api/v1/sessions/{s}/tool",
        "dialect=claude",
        {"X-Todoweb-Title": "UTF-8''The%20%E5%BA%97%20fix"},
        TOOL_USE,
        "bare",
    ),
    ("POST", "/api/v1/sessions/{s}/tool", "", {"Idempotency-Key": " key-1 "}, TOOL_USE, "bare"),
    ("POST", "/api/v1/sessions/{s}/tool", "", {"If-Match": "*", "X-Api-Key": "ignored"}, TOOL_USE, "bare"),
    ("POST", "/api/v1/sessions/{s}/tool", "", {"Authorization": "", "X_Api_Key": "{t}"}, TOOL_USE, "route"),
    ("POST", "/api/v1/sessions/{s}/tool", "", {"Authorization": "", "X-Api-Key": "{t}"}, TOOL_USE, "bare"),
    (
        "POST",
        "/api/v1/sessions/{s}/tool",
        "",
        {"Content-Type": "text/plain", "Content_Type": "application/json"},
        TOOL_USE,
        "route",
    ),
    ("POST", "/api/v1/sessions/{s}/tool", "", {}, {"tool": "TodoWrite", "input": {"todos": "nope"}}, "route"),
    ("POST", "/api/v1/sessions/{s}/tool", "", {}, {"tool": "NoSuchTool", "input": {}}, "route"),
    ("POST", "/api/v1/sessions/{s}/tool", "", {}, [TOOL_USE], "route"),
    ("POST", "/api/v1/sessions/{s}/tool", "", {}, b'{"tool": "TodoWrite", "input": ', "route"),
    ("POST", "/api/v1/sessions/{s}/tool", "", {"Content-Type": "text/plain"}, b"{}", "route"),
    ("POST", "/api/v1/sessions/{s}/tool", "", {"Content-Type": "application/json; charset=utf-8"}, TOOL_USE, "route"),
    ("POST", "/api/v1/sessions/{s}/tool", "", {"Authorization": "Bearer nope"}, TOOL_USE, "route"),
    ("POST", "/api/v1/sessions/{s}/tool", "", {"Authorization": ""}, TOOL_USE, "route"),
    ("POST", "/api/v1/sessions/{s}/tool", "", {"Authorization": "Bearer {r}"}, TOOL_USE, "route"),
    ("POST", "/api/v1/sessions/{s}/tool", "", {"If-Match": '"7"'}, TOOL_USE, "route"),
    ("POST", "/api/v1/sessions/{s}/tool", "", {"If-Match": "seven"}, TOOL_USE, "route"),
    ("POST", "/api/v1/sessions/{s}/tool", "", {}, TOOL_USE | {"expected_revision": "1"}, "route"),
    ("POST", "/api/v1/sessions/{s}/tool", "", {"Idempotency-Key": "x" * 300}, TOOL_USE, "route"),
    ("POST", "/api/v1/sessions/{s}/tool", "", {}, {"tool": "TodoWrite", "input": {"todos": TODOS * 400}}, "route"),
    ("POST", "/api/v1/sessions/{s}/tool", "title=%FF", {}, TOOL_USE, "bare"),
    ("POST", "/api/v1/sessions/{s}/tool", "reply=bogus", {}, TOOL_USE, "api"),
    ("POST", "/api/v1/sessions/{s}/tool", "reply=native&reply=checklist", {}, TOOL_USE, "api"),
    ("POST", "/api/v1/sessions/{s}/tool", "other=1", {}, TOOL_USE, "api"),
    ("GET", "/api/v1/sessions/{s}/tool", "", {}, None, "api"),
    ("POST", "/api/v1/hooks/claude-code", "", {}, claude_hook("{s}"), "bare"),
    ("POST", "/api/v1/hooks/claude-code", "reply=native", {"X-Todoweb-Branch": "main"}, claude_hook("{s}"), "bare"),
    ("POST", "/api/v1/hooks/claude-code", "answer=hook", {}, claude_hook("{s}"), "bare"),
    (
        "POST",
        "/api/v1/hooks/claude-code",
        "",
        {"X-Todoweb-Branch": "  feature/fix <b>&amp; \u0007"},
        claude_hook("{s}"),
        "bare",
    ),
    ("POST", "/api/v1/hooks/claude-code", "", {}, BASH, "bare"),
    ("POST", "/api/v1/hooks/claude-code", "answer=hook&wait=5", {}, BASH, "bare"),
    ("POST", "/api/v1/hooks/claude-code", "", {"Authorization": "", "X-Api-Key": "{t}"}, BASH, "bare"),
    ("POST", "/api/v1/hooks/claude-code", "", {}, claude_hook("{s}", "Bash", hook_event_name="PreToolUse"), "bare"),
    ("POST", "/api/v1/hooks/claude-code", "", {}, claude_hook("{s}", tool_response={"error": "no"}), "bare"),
    ("POST", "/api/v1/hooks/claude-code", "", {}, claude_hook("{s}", "Bash", agent_id="worker-1"), "bare"),
    ("POST", "/api/v1/hooks/claude-code", "", {"Authorization": ""}, BASH, "route"),
    ("POST", "/api/v1/hooks/claude-code", "", {"Authorization": "Bearer nope"}, BASH, "route"),
    ("POST", "/api/v1/hooks/claude-code", "", {"Authorization": "Basic bm9wZQ=="}, BASH, "route"),
    ("POST", "/api/v1/hooks/claude-code", "", {"Authorization": "Bearer {r}"}, BASH, "route"),
    ("POST", "/api/v1/hooks/claude-code", "", {"Content-Type": "application/json; charset=utf-8"}, BASH, "route"),
    ("POST", "/api/v1/hooks/claude-code", "", {}, claude_hook("{s}", "Bash", agent_id="sub 1"), "route"),
    ("POST", "/api/v1/hooks/claude-code", "", {}, claude_hook("{s}", "ExitPlanMode", hook_event_name="Stop"), "bare"),
    ("POST", "/api/v1/hooks/claude-code", "answer=hook&answer=full", {}, BASH, "api"),
    ("POST", "/api/v1/hooks/codex", "", {}, claude_hook("{s}", "shell", {"command": ["ls"]}), "bare"),
    ("POST", "/api/v1/hooks/qwen-code", "", {}, claude_hook("{s}", "run_shell_command"), "bare"),
    (
        "POST",
        "/api/v1/hooks/opencode",
        "",
        {},
        claude_hook("{s}", "bash", hook_event_name="tool.execute.after"),
        "bare",
    ),
    (
        "POST",
        "/api/v1/hooks/gemini-cli",
        "",
        {},
        claude_hook("{s}", "run_shell_command", hook_event_name="AfterTool"),
        "bare",
    ),
    ("POST", "/api/v1/hooks/claude-code", "", {}, claude_hook("{s}", agent_id="sub 1"), "route"),
    ("POST", "/api/v1/hooks/claude-code", "", {}, claude_hook("{s}", hook_event_name="Stop"), "bare"),
    ("POST", "/api/v1/hooks/claude-code", "", {}, claude_hook("{s}", tool_input={"todos": [{"x": 1}]}), "route"),
    ("POST", "/api/v1/hooks/claude-code", "", {"Authorization": "Bearer nope"}, claude_hook("{s}"), "route"),
    ("POST", "/api/v1/hooks/claude-code", "", {}, {"hook_event_name": "PostToolUse"}, "api"),
    ("POST", "/api/v1/hooks/claude-code", "", {}, {"session_id": 5}, "api"),
    ("POST", "/api/v1/hooks/claude-code", "", {}, b"not json", "api"),
    ("POST", "/api/v1/hooks/claude-code", "wait=0", {}, claude_hook("{s}"), "api"),
    ("POST", "/api/v1/hooks/claude-code", "answer=nope", {}, claude_hook("{s}"), "api"),
    ("POST", "/api/v1/hooks/codex", "", {}, claude_hook("{s}", "update_plan", {"plan": PLAN}), "bare"),
    ("POST", "/api/v1/hooks/qwen-code", "", {}, claude_hook("{s}", "todo_write", {"todos": TODOS}), "route"),
    (
        "POST",
        "/api/v1/hooks/gemini-cli",
        "",
        {},
        claude_hook("{s}", "write_todos", {"todos": GEMINI_TODOS}, hook_event_name="AfterTool"),
        "bare",
    ),
    ("POST", "/api/v1/hooks/no-such-agent", "", {}, claude_hook("{s}"), "api"),
]


class Counted:
    """An API handler that counts the requests it makes and those it resolves itself."""

    def __init__(self) -> None:
        self.handler = ApiHandler()
        self.made = self.resolved = 0
        answer, make = self.handler.get_response_async, self.handler.create_request

        async def counted(request):
            self.resolved += 1
            return await answer(request)

        def counted_make(*args):
            self.made += 1
            return make(*args)

        self.handler.get_response_async = counted  # type: ignore[method-assign]
        self.handler.create_request = counted_make  # type: ignore[method-assign]


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


async def send(client: httpx.AsyncClient, case: tuple, session: str, tokens: tuple[str, str]) -> httpx.Response:
    method, path, query, headers, body, _ = case
    token, read_token = tokens
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"} | {
        name: value.replace("{t}", token).replace("{r}", read_token) for name, value in headers.items()
    }
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
async def test_the_agents_route_answers_what_the_api_answers(clients, token, read_token, case):
    by_routes, by_api, counted = clients
    number = CASES.index(case)
    mine, theirs = f"routes-{number}", f"apiapi-{number}"
    for attempt in range(2):  # the second time: a replay, or the next revision
        ours = await send(by_routes, case, mine, (token, read_token))
        api = await send(by_api, case, theirs, (token, read_token))
        assert comparable(ours, mine) == comparable(api, theirs), (attempt, ours.content, api.content)
    answered_by = case[-1]
    assert counted.resolved == (2 if answered_by == "api" else 0)
    assert (counted.made == 0) == (answered_by == "bare")


async def test_a_call_written_by_the_agents_route_is_in_the_database(clients, token):
    by_routes, _, counted = clients
    answer = await send(by_routes, CASES[0], "written", (token, ""))
    assert answer.status_code == 200, answer.content
    assert answer.json()["data"]["revision"] == 1
    assert counted.resolved == 0
    # Read as the app reads: in_database_thread gives the connection back (a pooled one
    # kept by the test's thread would count against another test's pool).
    revision = await in_database_thread(Revision.objects.select_related("session").get)
    assert revision.session.key == "written"
    assert [todo["content"] for todo in revision.todos] == [todo["content"] for todo in TODOS]


async def test_a_hook_on_another_tool_tells_what_people_said_without_a_request(clients, token, read_token):
    by_routes, by_api, counted = clients
    for client, key in ((by_routes, "told-by-route"), (by_api, "told-by-api")):
        await send(client, CASES[0], key, (token, read_token))  # the session, with a plan
        session = await in_database_thread(Session.objects.get, key=key)
        await in_database_thread(messages.add, session, kind="note", text="Use <b>uv</b>, 不要 pip", author="ann")
    made = counted.made
    ours = await send(
        by_routes, ("POST", "/api/v1/hooks/claude-code", "", {}, BASH, "bare"), "told-by-route", (token, "")
    )
    api = await send(by_api, ("POST", "/api/v1/hooks/claude-code", "", {}, BASH, "bare"), "told-by-api", (token, ""))
    assert comparable(ours, "told-by-route") == comparable(api, "told-by-api")
    assert "Use <b>uv</b>, 不要 pip" in ours.json()["hookSpecificOutput"]["additionalContext"]
    assert counted.made == made  # no request made for it
    told = await in_database_thread(
        lambda: list(Message.objects.filter(session__key="told-by-route").values_list("told_via", flat=True))
    )
    assert told == ["Claude Code hook (Bash)"]


@pytest.mark.parametrize(
    "path, body, given, status",
    [
        # The token twice: Django reads them joined, which is no token.
        ("/api/v1/hooks/claude-code", BASH, [("Authorization", "Bearer {t}"), ("Authorization", "Bearer other")], 401),
        # The key twice: Django reads "first,second".
        (
            "/api/v1/sessions/{s}/tool",
            TOOL_USE,
            [("Authorization", "Bearer {t}"), ("Idempotency-Key", "first"), ("Idempotency-Key", "second")],
            200,
        ),
    ],
)
async def test_a_call_with_a_header_twice_is_read_as_the_api_reads_it(clients, token, path, body, given, status):
    by_routes, by_api, counted = clients
    headers = [(name, value.replace("{t}", token)) for name, value in given] + [("Content-Type", "application/json")]
    answers = [
        await client.post(filled(path, f"twice-{n}"), headers=headers, json=filled(body, f"twice-{n}"))
        for n, client in enumerate((by_routes, by_api))
    ]
    assert comparable(answers[0], "twice-0") == comparable(answers[1], "twice-1")
    assert answers[0].status_code == status
    assert counted.made == 1  # the route's view answered it, not the route alone


async def test_the_rate_limit_counts_hooks_answered_without_a_request(clients, token, settings):
    by_routes, _, counted = clients
    settings.TODOWEB_RATE_LIMIT = 2
    answers = [await send(by_routes, CASES[0], "limited", (token, "")) for _ in range(2)]
    answers.append(
        await send(by_routes, ("POST", "/api/v1/hooks/claude-code", "", {}, BASH, "bare"), "limited", (token, ""))
    )
    assert [answer.status_code for answer in answers] == [200, 200, 429]
    assert answers[-1].json()["error"]["code"] == "rate_limited"
    assert 1 <= int(answers[-1].headers["Retry-After"]) <= 60
