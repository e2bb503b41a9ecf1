"""The MCP server at /mcp: todoweb's todo tools for any MCP client.

Streamable HTTP on the official `mcp` SDK, stateless: any worker process can answer
any request, so it runs behind several processes as the API does. Each request
carries the API's bearer token; the URL picks the tools (`?dialects=`, default
`claude`) and the board session.

Every conversation is a board session of its own. The caller may name it
(`?session=<key>` or a `session` header). Otherwise it is the conversation's MCP
session: todoweb hands out an `Mcp-Session-Id` at `initialize`, which the client
sends back on every request (todoweb keeps nothing of it in memory). The stateless
protocol versions (2026-07-28 on) have neither a handshake nor a session id, so
nothing tells one of their conversations from another: such a request that names
no session is answered "unsupported protocol version", naming the handshake
versions, and the client falls back to the handshake (as the SDKs' `auto`
negotiation does). A request that names its session is served in any version.

A tool call runs the write path of `POST /api/v1/sessions/{key}/tool` and answers
with the same text; an invalid call is a tool error in the tool's own words (the
model reads it and tries again), not a protocol failure. The body is read here, not
by the SDK, under the API's limits: over `TODOWEB_MAX_BODY_BYTES` it is a 413, text
that is not JSON a parse error, and tool arguments that the tool endpoint would
refuse (overflowing numbers, deep nesting, NUL, huge lists) a tool error in the
endpoint's words. Whatever reaches the write path has passed the endpoint's checks.
"""

from __future__ import annotations

import asyncio
import io
import json
import logging
import secrets
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

import mcp_types as types
import orjson
from django.conf import settings
from django.core.handlers.asgi import ASGIRequest
from django.db import InterfaceError, OperationalError
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import DEFAULT_MAX_REQUEST_BODY_SIZE, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from todoweb import dialects
from todoweb.calls import jsonio
from todoweb.calls.envelopes import ToolCall
from todoweb.calls.errors import ApiError, TodowebError
from todoweb.live.viewers import scope_header
from todoweb.models import ApiToken
from todoweb.store.database import in_database_thread
from todoweb.web.api.body import too_large
from todoweb.web.api.lookups import check_key
from todoweb.web.api.tools import tool_definitions
from todoweb.web.auth import token_auth
from todoweb.web.protected_resource import challenge
from todoweb.web.recording import record_call_of
from todoweb.writes.record import CallRequest

logger = logging.getLogger(__name__)

# Where serve/handlers.py routes the MCP server: the resource its challenges name.
MCP_PATH = "/mcp"
SESSION_HEADER = b"mcp-session-id"
VERSION_HEADER = b"mcp-protocol-version"
DEFAULT_DIALECTS = "claude"
NOT_POST = "This MCP server is stateless: it answers POST requests only (no stream to GET, no session to DELETE)"
# A call that did not come as one request in its own POST (the SDK takes no batches).
UNCHECKED = "Send each tools/call as one JSON-RPC request in a POST of its own"
NO_SESSION = (
    "This request names no board session and carries no Mcp-Session-Id: send the one the answer to "
    "initialize gave, or name a session with ?session=<key> in the URL or a 'session' header"
)
# What clients ask before running a tool without the user's approval: todoweb's tools
# only write the agent's own plan, on this server.
ANNOTATIONS = types.ToolAnnotations(destructive_hint=False, open_world_hint=False)


async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
    try:
        definitions = tool_definitions(query(ctx, "dialects") or DEFAULT_DIALECTS)
    except TodowebError as error:  # unknown dialects, or two sharing a tool name
        raise MCPError(types.INVALID_PARAMS, error.message) from None
    tools = [
        types.Tool(name=d.name, description=d.description, input_schema=d.input_schema, annotations=ANNOTATIONS)
        for d in definitions
    ]
    return types.ListToolsResult(tools=tools)


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    scope = ctx.request.scope
    token: ApiToken = scope["todoweb.token"]
    checked: CheckedCall | None = scope.get("todoweb.call")
    if checked is None or checked.problem is not None:
        return tool_error(checked.problem if checked is not None else UNCHECKED)
    key = session_key(ctx)
    if key is None:
        # A request of the handshake era that never took the session id it was given.
        raise MCPError(types.INVALID_REQUEST, NO_SESSION)
    # The arguments as todoweb parsed and checked them, not as the SDK read them again.
    arguments = checked.arguments if checked.arguments is not None else {}
    dialect = query(ctx, "dialect") or listed_dialect(scope, params.name)
    call = ToolCall("plain", params.name, None, arguments, dialect=dialect)
    reply = query(ctx, "reply")
    try:
        write = CallRequest(
            check_key(key), call, reply_style=reply if reply in ("checklist", "native") else None, route="MCP"
        )
        answer = (await record_call_of(token, write)).answer
    except TodowebError as error:
        return tool_error(error.message)
    except (OperationalError, InterfaceError):
        return tool_error("The database is unavailable; nothing was written. Try again shortly.")
    text = [types.TextContent(type="text", text=answer.reply["content"])]
    if query(ctx, "structured") not in ("1", "true"):
        return types.CallToolResult(content=text)
    # Asked for: the tool endpoint's answer (`ok`, `tool`, `dialect`, `output`,
    # `data`) as structured content, for programs. Not by default: Claude Code and
    # Pydantic AI hand the model the structured content in place of the text, which
    # would give it the whole data shape as JSON on every call instead of its checklist.
    return types.CallToolResult(content=text, structured_content=orjson.loads(answer.body))


def listed_dialect(scope: dict[str, Any], tool: str) -> str | None:
    """The dialect, among those the tools were listed from, whose tool the model was
    given under this name: where dialects share a name (`todo_write`: WeKnora, Cursor,
    Goose, Amp, Qwen Code), the input's fields would otherwise pick one the model never
    saw. (`?dialect=` still forces one.)"""
    known = dialects.dialects()
    for name in (query_value(scope, "dialects") or DEFAULT_DIALECTS).split(","):
        module = known.get(name.strip())
        if module is not None and tool in module.TOOLS:
            return module.NAME
    return None


def tool_error(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=message)], is_error=True)


def query(ctx: Any, name: str) -> str | None:
    return query_value(ctx.request.scope, name)


def query_value(scope: dict[str, Any], name: str) -> str | None:
    values = parse_qs(scope.get("query_string", b"").decode("latin-1")).get(name)
    return values[0] if values else None


def session_key(ctx: Any) -> str | None:
    """The board session: the one the caller names, else the MCP session's; None when
    the request has neither (never a session shared by every such caller)."""
    scope = ctx.request.scope
    named = named_session(scope)
    if named:
        return named
    mcp_session = ctx.request.headers.get("mcp-session-id")
    return f"mcp-{mcp_session}" if mcp_session else None


def named_session(scope: dict[str, Any]) -> str | None:
    return query_value(scope, "session") or scope_header(scope, b"session")


def stateless_version(scope: dict[str, Any]) -> str | None:
    """The protocol version the request speaks when it is one without a handshake
    (2026-07-28 on, or one unknown to the SDK), else None."""
    version = scope_header(scope, VERSION_HEADER)
    return version if version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS else None


def new_server() -> Server:
    return Server("todoweb", version="1", on_list_tools=list_tools, on_call_tool=call_tool)


class McpApp:
    """The ASGI app for /mcp: the token checked first, then the SDK's stateless
    session manager, started on first use in each event loop (Django's ASGI app has
    no lifespan to start it in)."""

    def __init__(self) -> None:
        self.managers: dict[asyncio.AbstractEventLoop, asyncio.Task] = {}
        self.tasks: set[asyncio.Task] = set()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        request = ASGIRequest(scope, io.BytesIO())
        try:
            scope["todoweb.token"] = await in_database_thread(token_auth, request)
        except ApiError as error:
            await refuse(send, error, request)
            return
        if scope["method"] != "POST":
            # Stateless: no stream to open for GET, no session to end for DELETE.
            # Both answers are the streamable-HTTP transport's own for such a server.
            error = rpc_error(None, types.INVALID_REQUEST, NOT_POST, "method_not_allowed")
            await send_json(send, 405, error, [(b"allow", b"POST")])
            return
        try:
            body = await read_body(scope, receive)
        except ApiError as error:
            await refuse(send, error, request)
            return
        except Disconnected:
            return
        try:
            message, body = read_message(body, scope)
        except Refusal as refusal:
            await send_json(send, 400, refusal.body)
            return
        version = stateless_version(scope)
        if version is not None and not named_session(scope) and request_id(message) is not None:
            await send_json(send, 400, handshake_please(version, request_id(message)))
            return
        manager = await self.manager()
        await manager.handle_request(scope, replay(body, receive), with_session_id(scope, message, send))

    async def manager(self) -> StreamableHTTPSessionManager:
        loop = asyncio.get_running_loop()
        if loop not in self.managers:
            # Requests that arrive while it starts wait for the same start.
            self.managers[loop] = loop.create_task(self.start())
        return await self.managers[loop]

    async def start(self) -> StreamableHTTPSessionManager:
        manager = StreamableHTTPSessionManager(
            new_server(),
            stateless=True,
            # Every request must carry a bearer token, which a page rebinding
            # a hostname to this server does not have.
            security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),
            # The body was read, and held to TODOWEB_MAX_BODY_BYTES, before the SDK sees it.
            max_request_body_size=max(settings.TODOWEB_MAX_BODY_BYTES, DEFAULT_MAX_REQUEST_BODY_SIZE),
        )
        started = asyncio.Event()
        self.tasks.add(asyncio.ensure_future(run(manager, started)))
        await started.wait()
        return manager


async def run(manager: StreamableHTTPSessionManager, started: asyncio.Event) -> None:
    async with manager.run():
        started.set()
        await asyncio.Event().wait()  # until the loop ends


class Disconnected(Exception):
    """The client went away before its body arrived."""


async def read_body(scope: dict[str, Any], receive: Any) -> bytes:
    """The request body, or the API's 413 as soon as it is known to be over the limit
    (by its Content-Length, else once that much has arrived)."""
    limit = settings.TODOWEB_MAX_BODY_BYTES
    length = scope_header(scope, b"content-length")
    if length is not None and length.isdigit() and int(length) > limit:
        raise too_large(int(length))
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise Disconnected
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise too_large()
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


def replay(body: bytes, receive: Any) -> Any:
    """`receive` for the SDK: the body already read, then whatever the client sends next
    (its disconnect)."""
    pending = [{"type": "http.request", "body": body, "more_body": False}]

    async def receive_again() -> dict[str, Any]:
        return pending.pop() if pending else await receive()

    return receive_again


@dataclass(frozen=True)
class CheckedCall:
    arguments: Any  # as parsed here; None when the call sent none
    problem: str | None  # why the tool endpoint would refuse these arguments, in its words


class Refusal(Exception):
    """A body answered 400 before MCP: not JSON, or an envelope no database stores."""

    def __init__(self, body: dict[str, Any]):
        super().__init__(body["error"]["message"])
        self.body = body


def read_message(body: bytes, scope: dict[str, Any]) -> tuple[Any, bytes]:
    """The JSON-RPC message, parsed and checked as the tool endpoint parses and checks
    its body, and the body for the SDK. A tool call's name and arguments are checked
    apart, as the tool endpoint's plain form `{"tool", "input"}` would be: what is
    wrong there is the model's to fix, so it becomes a tool error
    (`scope["todoweb.call"]`), not a protocol error."""
    what = "The body"
    try:
        text = jsonio.decode(body, what=what)
        message = jsonio.load(text, what=what)
    except jsonio.JsonError as exc:
        raise Refusal(rpc_error(None, types.PARSE_ERROR, str(exc), "invalid_json")) from None
    params = message.get("params") if isinstance(message, dict) else None
    call = None
    if message_method(message) == "tools/call" and isinstance(params, dict):
        call = {"tool": params.get("name"), "input": params.get("arguments")}
        rest = message | {"params": {k: v for k, v in params.items() if k not in ("name", "arguments")}}
    else:
        rest = message
    try:
        jsonio.check(rest, text=text, what=what)
    except jsonio.JsonError as exc:
        raise Refusal(rpc_error(request_id(message), types.PARSE_ERROR, str(exc), "invalid_json")) from None
    except jsonio.UnacceptableJson as exc:
        raise Refusal(rpc_error(request_id(message), types.INVALID_REQUEST, str(exc), "invalid_input")) from None
    if call is not None:
        try:
            jsonio.check(call, text=text, what=what)
        except (jsonio.JsonError, jsonio.UnacceptableJson) as exc:
            scope["todoweb.call"] = CheckedCall(None, str(exc))
            # The SDK reads the body again, and may choke on what todoweb refuses (a
            # lone surrogate): it gets the call without its arguments (and without its
            # name where the name is the problem; the stateless era checks it against
            # the Mcp-Name header).
            name = call["tool"] if isinstance(call["tool"], str) and clean(call["tool"]) else "refused"
            message = rest | {"params": rest["params"] | {"name": name, "arguments": {}}}
            return message, json.dumps(message, ensure_ascii=False).encode()
        scope["todoweb.call"] = CheckedCall(call["input"], None)
    return message, body


def clean(text: str) -> bool:
    try:
        jsonio.check_text(text)
    except jsonio.UnacceptableJson:
        return False
    return True


def message_method(message: Any) -> Any:
    return message.get("method") if isinstance(message, dict) else None


def request_id(message: Any) -> str | int | None:
    """The id of a request (None for a notification, a batch or no message at all)."""
    if not isinstance(message, dict):
        return None
    value = message.get("id")
    return value if isinstance(value, (str, int)) and not isinstance(value, bool) else None


def rpc_error(id: str | int | None, code: int, message: str, api_code: str) -> dict[str, Any]:
    """A JSON-RPC error; `data.code` is the API's code for the same refusal."""
    return {"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message, "data": {"code": api_code}}}


def handshake_please(version: str, id: str | int | None) -> dict[str, Any]:
    """The JSON-RPC error for a stateless-era request that names no session: the
    SDKs' `auto` negotiation reads -32022 naming only handshake versions as "use the
    handshake"; a client pinned to the version shows the message."""
    message = (
        f"Protocol version {version} is served here only with a named board session (?session=<key> in the URL "
        "or a 'session' header). Without one, connect with the initialize handshake: todoweb then keeps each "
        "conversation a board session of its own by its Mcp-Session-Id"
    )
    data = types.UnsupportedProtocolVersionErrorData(supported=list(HANDSHAKE_PROTOCOL_VERSIONS), requested=version)
    error = {"code": types.UNSUPPORTED_PROTOCOL_VERSION, "message": message, "data": data.model_dump(mode="json")}
    return {"jsonrpc": "2.0", "id": id, "error": error}


async def send_json(send: Any, status: int, body: Any, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    headers = [(b"content-type", b"application/json"), *(headers or [])]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    # json, not orjson: a request id may be an integer past 64 bits.
    await send({"type": "http.response.body", "body": json.dumps(body, ensure_ascii=False).encode()})


def with_session_id(scope: dict[str, Any], message: Any, send: Any) -> Any:
    """`send`, adding a new Mcp-Session-Id to the answer of an `initialize` (the client
    keeps it and sends it back on every request)."""
    if message_method(message) != "initialize" or scope_header(scope, SESSION_HEADER) is not None:
        return send

    async def send_with_session_id(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            headers = [*message.get("headers", []), (SESSION_HEADER, secrets.token_hex(16).encode())]
            message = message | {"headers": headers}
        await send(message)

    return send_with_session_id


async def refuse(send: Any, error: ApiError, request: ASGIRequest) -> None:
    """An HTTP refusal (401, 413, 429) as a JSON-RPC error: MCP clients show its message
    (the SDKs read the error of a non-2xx JSON-RPC answer)."""
    body = rpc_error(None, types.INVALID_REQUEST, error.message, error.code)
    headers = [(name.lower().encode(), value.encode()) for name, value in error.headers.items()]
    if error.status == 401:
        headers.append((b"www-authenticate", challenge(request, error.message, MCP_PATH).encode()))
    await send_json(send, error.status, body, headers)
