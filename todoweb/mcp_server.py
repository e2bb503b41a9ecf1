"""The MCP server at /mcp (SPEC §7b): todoweb's todo tools for any MCP client.

Streamable HTTP on the official `mcp` SDK, stateless: any worker process can answer
any request, so it runs behind several processes as the API does. Each request
carries the API's bearer token; the URL picks the tools (`?dialects=`, default
`claude`) and the board session (`?session=`, a `session` header, or else the MCP
session: todoweb hands out an `Mcp-Session-Id` at `initialize`, which the client
sends back on every request, and keeps nothing of it in memory).

A tool call runs the write path of `POST /api/v1/sessions/{key}/tool` and answers
with the same text; an invalid call is a tool error in the tool's own words (the
model reads it and tries again), not a protocol failure.
"""

from __future__ import annotations

import asyncio
import io
import logging
import secrets
from typing import Any
from urllib.parse import parse_qs

import mcp_types as types
import orjson
from asgiref.sync import sync_to_async
from django.core.handlers.asgi import ASGIRequest
from django.db import InterfaceError, OperationalError, close_old_connections
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError

from . import events
from .api.lookups import check_key
from .api.tools import tool_definitions
from .auth import require_write, token_auth
from .envelopes import ToolCall
from .errors import ApiError, TodowebError
from .models import ApiToken
from .services import session_record_call

logger = logging.getLogger(__name__)

PATH = "/mcp"
SESSION_HEADER = b"mcp-session-id"
DEFAULT_DIALECTS = "claude"
# The board session of a client that names none and keeps no MCP session.
DEFAULT_SESSION = "mcp"
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
    token: ApiToken = ctx.request.scope["todoweb.token"]
    call = ToolCall("plain", params.name, None, params.arguments or {}, dialect=query(ctx, "dialect"))
    try:
        with events.deferred() as frames:
            output = await database(record, token, session_key(ctx), call, query(ctx, "reply"))
        await events.asend(frames)
    except TodowebError as error:
        return tool_error(error.message)
    except (OperationalError, InterfaceError):
        return tool_error("The database is unavailable; nothing was written. Try again shortly.")
    return types.CallToolResult(content=[types.TextContent(type="text", text=output)])


def record(token: ApiToken, session_key: str, call: ToolCall, reply: str | None) -> str:
    require_write(token)
    answer = session_record_call(
        project=token.project,
        session_key=check_key(session_key),
        call=call,
        reply_style=reply if reply in ("checklist", "native") else token.project.reply_style,
    )
    return answer.reply["content"]


async def database(work: Any, *args: Any) -> Any:
    """Run `work` on the database thread, its connection handled as Django handles a
    request's (these requests do not pass through Django's handler)."""

    def within_request() -> Any:
        close_old_connections()
        try:
            return work(*args)
        finally:
            close_old_connections()

    return await sync_to_async(within_request)()


def tool_error(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=message)], is_error=True)


def query(ctx: Any, name: str) -> str | None:
    values = parse_qs(ctx.request.scope.get("query_string", b"").decode("latin-1")).get(name)
    return values[0] if values else None


def session_key(ctx: Any) -> str:
    headers = ctx.request.headers
    named = query(ctx, "session") or headers.get("session")
    if named:
        return named
    mcp_session = headers.get("mcp-session-id")
    return f"mcp-{mcp_session}" if mcp_session else DEFAULT_SESSION


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
            scope["todoweb.token"] = await database(token_auth, request)
        except ApiError as error:
            await refuse(send, error)
            return
        manager = await self.manager()
        await manager.handle_request(scope, receive, with_session_id(scope, send))

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
        )
        started = asyncio.Event()
        self.tasks.add(asyncio.ensure_future(run(manager, started)))
        await started.wait()
        return manager


async def run(manager: StreamableHTTPSessionManager, started: asyncio.Event) -> None:
    async with manager.run():
        started.set()
        await asyncio.Event().wait()  # until the loop ends


def with_session_id(scope: dict[str, Any], send: Any) -> Any:
    """`send`, adding a new Mcp-Session-Id to the answer of a request that carries
    none (the client keeps the one of its `initialize` answer and sends it back)."""
    if scope["method"] != "POST" or any(name == SESSION_HEADER for name, _ in scope["headers"]):
        return send

    async def send_with_session_id(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            headers = [*message.get("headers", []), (SESSION_HEADER, secrets.token_hex(16).encode())]
            message = message | {"headers": headers}
        await send(message)

    return send_with_session_id


async def refuse(send: Any, error: ApiError) -> None:
    body = orjson.dumps({"ok": False, "error": {"code": error.code, "message": error.message, "details": {}}})
    headers = [(b"content-type", b"application/json")]
    headers += [(name.lower().encode(), value.encode()) for name, value in error.headers.items()]
    if error.status == 401:
        headers.append((b"www-authenticate", b'Bearer realm="todoweb"'))
    await send({"type": "http.response.start", "status": error.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
