"""The MCP server at /mcp, driven by the official SDK's own client over
real HTTP against the app under uvicorn."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from mcp.client import Client
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, INVALID_REQUEST, UNSUPPORTED_PROTOCOL_VERSION
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_MODERN_VERSION, SUPPORTED_PROTOCOL_VERSIONS

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


@asynccontextmanager
async def sdk_client(url: str, token: str, *, mode: str = "auto", **headers: str) -> AsyncIterator[Client]:
    """The SDK's high-level client, as applications use it: by default it probes for the
    newest (stateless) protocol version and keeps the handshake for servers without it."""
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}", **headers})
    async with http, Client(streamable_http_client(url, http_client=http), mode=mode) as client:
        yield client


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


def test_a_tool_calls_result_carries_the_endpoints_answer_as_structured_content_when_asked(asgi_server, token, project):
    """Programs read the plan data (`?structured=1`); clients that hand the model the
    structured content rather than the text still hand it the text, under `output`."""

    async def write(query: str) -> Any:
        async with sdk_client(f"{asgi_server.url}/mcp?session=structured{query}", token) as client:
            return await client.call_tool("TodoWrite", PLAN)

    # By default the model reads the checklist, in every client.
    assert run(write("")).structured_content is None
    result = run(write("&structured=1"))
    structured = result.structured_content
    assert structured is not None
    assert structured["output"] == result.content[0].text
    assert structured["tool"] == "TodoWrite" and structured["dialect"] == "claude"
    data = structured["data"]
    assert data["revision"] == 2 and data["session"]["key"] == "structured"
    assert [(t["content"], t["status"]) for t in data["todos"]] == [
        ("Read the code", "completed"),
        ("Fix <b>the</b> bug 🐛", "in_progress"),
    ]
    over_http = httpx.post(
        f"{asgi_server.url}/api/v1/sessions/structured-2/tool",
        json={"tool": "TodoWrite", "input": PLAN},
        headers={"Authorization": f"Bearer {token}"},
    ).json()
    assert set(structured) == set(over_http) - {"reply"}
    assert set(data) == set(over_http["data"])


def test_a_tool_error_carries_no_structured_content(asgi_server, token):
    async def write() -> Any:
        async with sdk_client(f"{asgi_server.url}/mcp?session=s1", token) as client:
            return await client.call_tool("TodoWrite", {"todos": "nope"})

    result = run(write())
    assert result.is_error is True and result.structured_content is None


def test_the_dialects_listed_decide_which_dialect_a_shared_tool_name_is(asgi_server, token, project):
    """Under ?dialects=qwen the model was given Qwen Code's todo_write: its calls are
    Qwen Code's whatever their fields (with priority they would route to Amp, without
    todos to WeKnora)."""
    with_priority = {"todos": [{"id": "1", "content": "Ship it", "status": "pending", "priority": "high"}]}

    async def calls() -> list[Any]:
        async with sdk_client(f"{asgi_server.url}/mcp?dialects=qwen&session=qwen", token) as client:
            return [
                await client.call_tool("todo_write", with_priority),
                await client.call_tool("todo_write", {}),
            ]

    written, missing = run(calls())
    assert written.is_error is False
    assert Revision.objects.get(session__key="qwen").dialect == "qwen"
    assert missing.is_error is True
    assert missing.content[0].text == 'Parameter "todos" must be an array.'

    async def forced() -> Any:
        url = f"{asgi_server.url}/mcp?dialects=qwen&dialect=amp&session=forced"
        async with sdk_client(url, token) as client:
            return await client.call_tool("todo_write", with_priority)

    assert run(forced()).is_error is False
    assert Revision.objects.get(session__key="forced").dialect == "amp"


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


def test_two_conversations_of_a_client_on_the_newest_protocol_are_two_board_sessions(asgi_server, token, project):
    """A client that offers the stateless protocol version first gets no Mcp-Session-Id
    from it: without a named session it is led to the handshake, which gives it one."""

    async def two_conversations() -> list[str]:
        versions = []
        async with (
            sdk_client(f"{asgi_server.url}/mcp", token) as first,
            sdk_client(f"{asgi_server.url}/mcp", token) as second,
        ):
            for client in (first, second, first, second):
                await client.call_tool("TodoWrite", PLAN)
                versions.append(client.session.protocol_version)
        return versions

    versions = run(two_conversations())
    sessions = Session.objects.filter(project=project)
    assert sorted(session.revision for session in sessions) == [2, 2]
    assert all(session.key.startswith("mcp-") for session in sessions)
    assert set(versions) <= set(HANDSHAKE_PROTOCOL_VERSIONS)


def test_a_conversation_on_the_newest_protocol_that_names_its_session_keeps_that_protocol(asgi_server, token, project):
    async def write(query: str, **headers: str) -> str:
        async with sdk_client(f"{asgi_server.url}/mcp{query}", token, **headers) as client:
            await client.call_tool("TodoWrite", PLAN)
            return client.session.protocol_version

    assert run(write("?session=named")) == LATEST_MODERN_VERSION
    assert run(write("", session="from-header")) == LATEST_MODERN_VERSION
    assert Session.objects.get(project=project, key="named").revision == 1
    assert Session.objects.get(project=project, key="from-header").revision == 1


def test_a_client_pinned_to_the_newest_protocol_without_a_session_is_told_how_to_name_one(asgi_server, token):
    async def write() -> MCPError:
        async with sdk_client(f"{asgi_server.url}/mcp", token, mode=LATEST_MODERN_VERSION) as client:
            with pytest.raises(MCPError) as raised:
                await client.call_tool("TodoWrite", PLAN)
            return raised.value

    error = run(write())
    assert error.code == UNSUPPORTED_PROTOCOL_VERSION
    assert "?session=<key>" in error.message and "initialize" in error.message
    assert error.error.data["supported"] == list(HANDSHAKE_PROTOCOL_VERSIONS)
    assert not Revision.objects.exists()


def test_a_tool_call_in_no_session_at_all_writes_nothing(asgi_server, token):
    """No Mcp-Session-Id, no named session: nothing falls back to a session shared by
    every such caller."""
    body = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "TodoWrite", "arguments": PLAN}}
    headers = {
        "Authorization": f"Bearer {token}",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": HANDSHAKE_PROTOCOL_VERSIONS[-1],
    }
    for _ in range(2):
        answer = httpx.post(f"{asgi_server.url}/mcp", json=body, headers=headers)
        assert "Mcp-Session-Id" in answer.text, answer.text
    assert not Session.objects.exists()


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


def challenge(header: str) -> dict[str, str]:
    """The parameters of a `WWW-Authenticate: Bearer …` challenge."""
    assert header.startswith("Bearer ")
    return dict(re.findall(r'(\w+)="([^"]*)"', header))


@pytest.mark.parametrize(
    ("authorization", "reason"),
    [
        (None, "Missing API token: send 'Authorization: Bearer <token>' or 'X-Api-Key: <token>'"),
        ("Bearer not-a-token", "Unknown or revoked API token"),
    ],
)
def test_a_request_without_a_valid_token_is_told_why_and_pointed_at_no_authorization_server(
    asgi_server, authorization, reason
):
    """The reason in the challenge, and protected-resource metadata (RFC 9728) that names
    no authorization server: the token is the API's, there is no OAuth to start."""
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    if authorization:
        headers["Authorization"] = authorization
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    r = httpx.post(f"{asgi_server.url}/mcp", content=json.dumps(body), headers=headers)
    assert r.status_code == 401
    error = r.json()["error"]
    assert error["message"] == reason and error["data"]["code"] == "unauthorized"
    params = challenge(r.headers["WWW-Authenticate"])
    assert params["error"] == "invalid_token"
    assert params["error_description"] == reason
    assert params["resource_metadata"] == f"{asgi_server.url}/.well-known/oauth-protected-resource/mcp"
    metadata = httpx.get(params["resource_metadata"])
    assert metadata.status_code == 200
    assert metadata.json()["resource"] == f"{asgi_server.url}/mcp"
    assert metadata.json()["bearer_methods_supported"] == ["header"]
    assert "authorization_servers" not in metadata.json()


def test_the_sdk_client_shows_why_its_token_was_refused(asgi_server):
    async def connect() -> BaseException:
        with pytest.raises(BaseException) as raised:
            async with sdk_client(f"{asgi_server.url}/mcp", "tw_revoked-or-never-made"):
                pass
        return raised.value

    error = mcp_error(run(connect()))
    assert error.message == "Unknown or revoked API token"


def mcp_error(raised: BaseException) -> MCPError:
    """The MCPError a client raised, alone or in the exception group of its tasks."""
    if isinstance(raised, BaseExceptionGroup):
        matched, _ = raised.split(MCPError)
        assert matched is not None, raised
        return mcp_error(matched.exceptions[0])
    assert isinstance(raised, MCPError), raised
    return raised


@pytest.mark.parametrize(
    ("authorization", "reason"),
    [
        (
            "tw_abc",
            "The Authorization header holds a token without its scheme: "
            "send 'Authorization: Bearer <token>' (or 'X-Api-Key: <token>')",
        ),
        (
            "Token tw_abc",
            "The Authorization header uses the scheme 'Token': "
            "send 'Authorization: Bearer <token>' (or 'X-Api-Key: <token>')",
        ),
    ],
)
def test_a_token_sent_in_the_wrong_form_is_told_how_to_send_it(asgi_server, authorization, reason):
    headers = {"Authorization": authorization, "Accept": "application/json, text/event-stream"}
    r = httpx.post(f"{asgi_server.url}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, headers=headers)
    assert r.status_code == 401
    assert r.json()["error"]["message"] == reason
    assert challenge(r.headers["WWW-Authenticate"])["error_description"] == reason
    assert "tw_abc" not in r.text


def test_a_write_through_mcp_reaches_the_sessions_watchers(asgi_server, token, project):
    """The live event goes out as for the tool endpoint (published from the loop)."""
    from channels.layers import get_channel_layer

    from todoweb.live import events

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
    """Refused from the first request on: the client shows why as it connects."""

    async def connect() -> None:
        async with mcp_client(f"{asgi_server.url}/mcp?dialects=nope", token) as session:
            await session.list_tools()

    with pytest.raises(BaseExceptionGroup) as raised:
        run(connect())
    errors = leaves(raised.value.subgroup(lambda error: isinstance(error, MCPError)))
    assert errors and errors[0].message.startswith("?dialects=: Unknown dialect(s): nope. Known: ")


def leaves(group: BaseException | None) -> list[Any]:
    if group is None:
        return []
    if isinstance(group, BaseExceptionGroup):
        return [leaf for error in group.exceptions for leaf in leaves(error)]
    return [group]


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


SPEAKS = ", ".join(SUPPORTED_PROTOCOL_VERSIONS)
HANDSHAKE_HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"}


def tool_call_text(tool: str, arguments_text: str) -> str:
    """A tools/call request around the arguments as raw text (which may be no JSON an
    encoder writes)."""
    params = f'{{"name": {json.dumps(tool)}, "arguments": {arguments_text}}}'
    return f'{{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {params}}}'


def mcp_post(url: str, token: str, body: str | bytes, **headers: str) -> httpx.Response:
    headers = HANDSHAKE_HEADERS | {"Authorization": f"Bearer {token}", "Content-Type": "application/json"} | headers
    return httpx.post(url, content=body, headers=headers, timeout=30)


def rpc_answer(response: httpx.Response) -> dict:
    """The JSON-RPC message of an answer, sent as JSON or as one server-sent event."""
    if response.headers["content-type"].startswith("text/event-stream"):
        data = [line[len("data:") :] for line in response.text.splitlines() if line.startswith("data:")]
        return json.loads(data[-1])
    return response.json()


def endpoint_answer(url: str, token: str, tool: str, arguments_text: str) -> httpx.Response:
    body = f'{{"tool": {json.dumps(tool)}, "input": {arguments_text}}}'
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    return httpx.post(f"{url}/api/v1/sessions/endpoint/tool", content=body, headers=headers, timeout=30)


def test_a_body_over_the_limit_is_refused_with_413_in_the_apis_words(asgi_server, token):
    arguments = json.dumps({"todos": [{"content": "x" * 3_500_000, "status": "pending", "activeForm": "X"}]})
    answer = mcp_post(f"{asgi_server.url}/mcp?session=s1", token, tool_call_text("TodoWrite", arguments))
    endpoint = endpoint_answer(asgi_server.url, token, "TodoWrite", arguments)
    assert answer.status_code == endpoint.status_code == 413
    message = endpoint.json()["error"]["message"]
    assert "TODOWEB_MAX_BODY_BYTES" in message
    # The same words, each body's own size.
    assert answer.json()["error"]["message"] == re.sub(
        r"[\d,]+ bytes;", f"{len(answer.request.content):,} bytes;", message
    )
    assert not Revision.objects.exists()


def test_a_body_that_is_not_json_is_a_parse_error_in_the_apis_words(asgi_server, token):
    body = tool_call_text("TodoWrite", '{"todos": [NaN]}')
    answer = mcp_post(f"{asgi_server.url}/mcp?session=s1", token, body)
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["code"] == -32700
    assert error["message"] == "The body is not valid JSON: NaN is not allowed in JSON"
    assert (
        endpoint_answer(asgi_server.url, token, "TodoWrite", '{"todos": [NaN]}').json()["error"]["message"]
        == (error["message"])
    )
    assert not Revision.objects.exists()


HOSTILE_ARGUMENTS = {
    "an overflowing number": '{"todos": [], "weight": 1e400}',
    "nesting 100 levels deep": '{"todos": [], "meta": ' + "[" * 100 + "]" * 100 + "}",
    "a NUL character": '{"todos": [{"content": "a\\u0000b", "status": "pending", "activeForm": "A"}]}',
    "a lone surrogate": '{"todos": [{"content": "\\ud800", "status": "pending", "activeForm": "A"}]}',
    "a list of 1,001 items": '{"todos": [' + ", ".join(["0"] * 1001) + "]}",
}


@pytest.mark.parametrize("arguments", HOSTILE_ARGUMENTS.values(), ids=HOSTILE_ARGUMENTS.keys())
def test_hostile_arguments_are_a_tool_error_in_the_apis_words_and_write_nothing(asgi_server, token, arguments):
    answer = mcp_post(f"{asgi_server.url}/mcp?session=s1", token, tool_call_text("TodoWrite", arguments))
    assert answer.status_code == 200, answer.text
    result = rpc_answer(answer)["result"]
    assert result["isError"] is True
    endpoint = endpoint_answer(asgi_server.url, token, "TodoWrite", arguments)
    assert endpoint.status_code in (400, 422)
    # The same words; a position in the text counts in each route's own body.
    assert without_position(result["content"][0]["text"]) == without_position(endpoint.json()["error"]["message"])
    assert not Revision.objects.exists()


def test_an_envelope_no_database_stores_is_refused_before_mcp(asgi_server, token):
    """Outside the tool's arguments the problem is the client's, not the model's: a
    JSON-RPC error, HTTP 400, in the API's words (the request's id kept, however large)."""
    body = (
        '{"jsonrpc": "2.0", "id": 123456789012345678901234567890, "method": "tools/call", "params": '
        '{"name": "TodoWrite", "arguments": {"todos": []}, "_meta": {"note": "a\\u0000b"}}}'
    )
    answer = mcp_post(f"{asgi_server.url}/mcp?session=s1", token, body)
    assert answer.status_code == 400
    assert answer.json() == {
        "jsonrpc": "2.0",
        "id": 123456789012345678901234567890,
        "error": {
            "code": -32600,
            "message": "Text may not contain the NUL character (\\u0000)",
            "data": {"code": "invalid_input"},
        },
    }
    assert not Revision.objects.exists()


def without_position(message: str) -> str:
    return re.sub(r": line \d+ column \d+ \(char \d+\)$| at byte \d+\)$", "", message)


def test_a_get_is_answered_405_at_once(asgi_server, token):
    """A stateless server opens no stream for GET: it says so rather than holding the
    request open."""
    answer = httpx.get(
        f"{asgi_server.url}/mcp",
        headers={"Authorization": f"Bearer {token}", "Accept": "text/event-stream"},
        timeout=5,
    )
    assert answer.status_code == 405
    assert answer.headers["Allow"] == "POST"


def tool_call_answer(url: str, token: str, **headers: str) -> httpx.Response:
    return mcp_post(url, token, tool_call_text("TodoWrite", json.dumps(PLAN)), **headers)


def input_fault(answer: httpx.Response, code: int) -> str:
    """The message of a 400 JSON-RPC error with this code, in the API's code for it."""
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert error["code"] == code, error
    return error["message"]


def test_a_bad_protocol_version_header_is_the_clients_fault_said_as_such(asgi_server, token):
    url = f"{asgi_server.url}/mcp?session=s1"
    message = input_fault(tool_call_answer(url, token, **{"MCP-Protocol-Version": "bogus"}), INVALID_REQUEST)
    assert message == f'The MCP-Protocol-Version header "bogus" is not a protocol version; todoweb speaks {SPEAKS}'
    unknown = tool_call_answer(url, token, **{"MCP-Protocol-Version": "2031-01-01"})
    assert input_fault(unknown, UNSUPPORTED_PROTOCOL_VERSION) == (
        f"Protocol version 2031-01-01 is not one todoweb speaks: {SPEAKS}"
    )
    assert unknown.json()["error"]["data"]["supported"] == list(SUPPORTED_PROTOCOL_VERSIONS)
    assert not Revision.objects.exists()


@pytest.mark.parametrize(
    "query, headers, code, message",
    [
        ("?session=a%01b", {}, INVALID_PARAMS, 'The ?session= in the URL ("a\\u0001b"): Invalid session key: '),
        ("?session=a%2Fb", {}, INVALID_PARAMS, 'The ?session= in the URL ("a/b"): Invalid session key: '),
        ("?session=a%00b", {}, INVALID_PARAMS, "The URL may not contain the NUL character (%00)"),
        ("", {"session": "a b"}, INVALID_PARAMS, 'The session header ("a b"): Invalid session key: '),
        ("?session=s1", {"Mcp-Session-Id": "not<an>id"}, INVALID_REQUEST, 'The Mcp-Session-Id header ("not<an>id")'),
        ("?session=s1&dialects=nope", {}, INVALID_PARAMS, "?dialects=: Unknown dialect(s): nope. Known: "),
    ],
)
def test_a_bad_session_or_dialect_in_the_url_or_headers_is_a_400_saying_what_is_wrong(
    asgi_server, token, query, headers, code, message
):
    answer = tool_call_answer(f"{asgi_server.url}/mcp{query}", token, **headers)
    assert input_fault(answer, code).startswith(message)
    assert answer.json()["error"]["data"]["code"] == "invalid_input"
    assert not Revision.objects.exists()
