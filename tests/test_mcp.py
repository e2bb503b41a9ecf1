"""The MCP server at /mcp (SPEC §7b), driven by the official SDK's own client over
real HTTP against the app under uvicorn."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from todoweb.models import Revision, Session

pytestmark = pytest.mark.django_db(transaction=True)

PLAN = {
    "todos": [
        {"content": "Read the code", "status": "completed", "activeForm": "Reading the code"},
        {"content": "Fix <b>the</b> bug 🐛", "status": "in_progress", "activeForm": "Fixing the bug"},
    ]
}


@asynccontextmanager
async def mcp_client(url: str, token: str, **headers: str) -> AsyncIterator[ClientSession]:
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}", **headers})
    async with http, streamable_http_client(url, http_client=http) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            yield session


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


def test_it_lists_the_claude_tools_by_default_and_the_dialects_asked_for(asgi_server, token):
    async def names(query: str) -> list[str]:
        async with mcp_client(f"{asgi_server.url}/mcp{query}", token) as session:
            return [tool.name for tool in (await session.list_tools()).tools]

    assert run(names("")) == ["TodoWrite", "TodoRead"]
    assert run(names("?dialects=kimi,codex")) == ["SetTodoList", "update_plan"]


def test_the_tools_say_they_only_write_the_agents_plan(asgi_server, token):
    """Clients (Codex's automatic approval) run a tool unasked only when it is neither
    destructive nor reaches outside."""

    async def annotations() -> list[Any]:
        async with mcp_client(f"{asgi_server.url}/mcp", token) as session:
            return [tool.annotations for tool in (await session.list_tools()).tools]

    for annotation in run(annotations()):
        assert annotation.destructive_hint is False and annotation.open_world_hint is False


def test_a_tool_call_writes_a_revision_and_answers_with_the_endpoints_text(asgi_server, token, project):
    async def write() -> Any:
        async with mcp_client(f"{asgi_server.url}/mcp?session=agent-1", token) as session:
            return await session.call_tool("TodoWrite", PLAN)

    result = run(write())
    assert result.is_error is False
    text = result.content[0].text
    session = Session.objects.get(project=project, key="agent-1")
    revision = Revision.objects.get(session=session)
    assert revision.number == 1 and revision.dialect == "claude"
    assert [step["content"] for step in revision.todos] == ["Read the code", "Fix <b>the</b> bug 🐛"]
    # The same text the tool endpoint answers for the same call.
    over_http = httpx.post(
        f"{asgi_server.url}/api/v1/sessions/agent-2/tool",
        json={"tool": "TodoWrite", "input": PLAN},
        headers={"Authorization": f"Bearer {token}"},
    ).json()
    assert text == over_http["output"].replace("agent-2", "agent-1")


def test_without_a_named_session_the_mcp_session_is_the_board_session(asgi_server, token, project):
    async def two_connections() -> None:
        for _ in range(2):
            async with mcp_client(f"{asgi_server.url}/mcp", token) as session:
                await session.call_tool("TodoWrite", PLAN)
                await session.call_tool("TodoWrite", {"todos": []})

    run(two_connections())
    sessions = Session.objects.filter(project=project)
    assert sessions.count() == 2
    assert all(session.key.startswith("mcp-") and session.revision == 2 for session in sessions)


def test_the_session_header_names_the_board_session(asgi_server, token, project):
    async def write() -> None:
        async with mcp_client(f"{asgi_server.url}/mcp", token, session="from-header") as session:
            await session.call_tool("TodoWrite", PLAN)

    run(write())
    assert Session.objects.get(project=project, key="from-header").revision == 1


def test_an_invalid_call_is_a_tool_error_in_the_tools_words_and_writes_nothing(asgi_server, token):
    bad = {"todos": [{"content": "a", "status": "done", "activeForm": "A"}]}

    async def call(name: str, args: dict) -> Any:
        async with mcp_client(f"{asgi_server.url}/mcp?session=s1", token) as session:
            return await session.call_tool(name, args)

    result = run(call("TodoWrite", bad))
    assert result.is_error is True
    assert (
        result.content[0].text
        == "Todo at index 0: invalid status 'done'. Must be one of: pending, in_progress, completed"
    )
    unknown = run(call("NoSuchTool", {}))
    assert unknown.is_error is True and "NoSuchTool" in unknown.content[0].text
    assert not Revision.objects.exists()


def test_a_read_token_cannot_write(asgi_server, read_token):
    async def write() -> Any:
        async with mcp_client(f"{asgi_server.url}/mcp?session=s1", read_token) as session:
            return await session.call_tool("TodoWrite", PLAN)

    result = run(write())
    assert result.is_error is True
    assert not Revision.objects.exists()


@pytest.mark.parametrize("authorization", [None, "Bearer not-a-token"])
def test_a_request_without_a_valid_token_is_refused_before_mcp(asgi_server, authorization):
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    if authorization:
        headers["Authorization"] = authorization
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    r = httpx.post(f"{asgi_server.url}/mcp", content=json.dumps(body), headers=headers)
    assert r.status_code == 401
    assert r.headers["WWW-Authenticate"].startswith("Bearer")
    assert r.json()["error"]["code"] == "unauthorized"


def test_a_write_through_mcp_reaches_the_sessions_watchers(asgi_server, token, project):
    """The live event goes out as for the tool endpoint (published from the loop)."""
    from channels.layers import get_channel_layer

    from todoweb import events

    async def write_and_listen() -> dict:
        layer = get_channel_layer()
        channel = await layer.new_channel()
        async with mcp_client(f"{asgi_server.url}/mcp?session=watched", token) as session:
            await session.call_tool("TodoWrite", {"todos": []})
            public_id = await Session.objects.values_list("public_id", flat=True).aget(key="watched")
            await layer.group_add(events.session_group(public_id), channel)
            await session.call_tool("TodoWrite", PLAN)
        return await asyncio.wait_for(layer.receive(channel), timeout=10)

    frame = run(write_and_listen())
    assert frame["kind"] == "session.snapshot"
    assert json.loads(frame["text"])["revision"] == 2


def test_unknown_dialects_are_an_mcp_error_not_a_crash(asgi_server, token):
    from mcp.shared.exceptions import MCPError

    async def list_unknown() -> str:
        async with mcp_client(f"{asgi_server.url}/mcp?dialects=nope", token) as session:
            try:
                await session.list_tools()
            except MCPError as error:
                return error.message
        return "no error"

    assert run(list_unknown()).startswith("Unknown dialect(s): nope. Known: ")


def test_a_persons_edit_is_told_to_the_agent_on_its_next_mcp_call(asgi_server, token):
    headers = {"Authorization": f"Bearer {token}"}
    httpx.post(
        f"{asgi_server.url}/api/v1/sessions/mcp-edit/tool", json={"tool": "TodoWrite", "input": PLAN}, headers=headers
    )
    todos = [{"id": "1", "content": "Read the code first", "status": "completed"}]
    edit = httpx.post(
        f"{asgi_server.url}/api/v1/sessions/mcp-edit/edits", json={"todos": todos}, headers=headers | {"If-Match": "1"}
    )
    assert edit.status_code == 200, edit.text

    async def read() -> Any:
        async with mcp_client(f"{asgi_server.url}/mcp?session=mcp-edit", token) as session:
            return await session.call_tool("TodoRead", {})

    text = run(read()).content[0].text
    assert text.startswith('The user changed the plan:\n- reworded "Read the code" to "Read the code first"')
    assert "removed" in text and "Fix <b>the</b> bug" in text
