"""HTTP handlers: the browser's pages and the API take different middleware.

The API authenticates by token and answers JSON: sessions, CSRF, messages,
clickjacking protection and static files do nothing for it. Under ASGI each
synchronous middleware costs the request two thread hops; together they halve the
throughput of a request. So requests under /api/ and the OTLP receiver's /v1/ go
to a handler without them, and so do the health probes, which the browser's
middleware would refuse for a Host outside ALLOWED_HOSTS.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

import orjson
from django.conf import settings
from django.core.handlers.asgi import ASGIHandler
from django.core.handlers.exception import convert_exception_to_response
from django.http import HttpRequest, HttpResponseBase, JsonResponse
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

API_PREFIX = "/api/"
OTLP_PREFIX = "/v1/"
# The health probes, answered whatever Host they are sent: orchestrators, load
# balancers and compose's own check probe by address, not by the site's name.
PROBE_PATHS = frozenset(["/healthz", "/readyz"])
# The MCP server (web/mcp.py), imported by its first request.
MCP_PATH = "/mcp"


class ApiHandler(ASGIHandler):
    """Django's ASGI handler with no middleware: the URLconf, views and exception
    handling are Django's own.

    It also runs every API request's synchronous work (its database work above all)
    on one thread, asgiref's thread for thread-sensitive code, instead of a thread per
    request: concurrent writers queue in order instead of fighting over the GIL and
    the SQLite write lock (16 writers on 16 threads wrote 3x slower than in a queue)."""

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        # ASGIHandler.__call__ without its ThreadSensitiveContext, which would give
        # the request a thread of its own.
        await self.handle(scope, receive, send)

    async def get_response_async(self, request: HttpRequest) -> HttpResponseBase:
        response = await super().get_response_async(request)
        if response.status_code in (404, 405) and not response.get("Content-Type", "").startswith("application/json"):
            # Django's own answer for a URL the API does not have, or ninja's for a
            # method an endpoint does not take: in the API's error shape.
            return error_shape(request, response)
        return response

    def load_middleware(self, is_async: bool = False) -> None:
        # What BaseHandler.load_middleware leaves behind for an empty MIDDLEWARE.
        self._view_middleware = []
        self._template_response_middleware = []
        self._exception_middleware = []
        self._middleware_chain = convert_exception_to_response(
            self._get_response_async if is_async else self._get_response
        )


def error_shape(request: HttpRequest, response: HttpResponseBase) -> JsonResponse:
    where = f"{request.method} {request.path}"
    if response.status_code == 404:
        error = {"code": "not_found", "message": f"No such endpoint: {where} (see /api/v1/docs)", "details": {}}
    else:
        allowed = sorted(method.strip() for method in response.get("Allow", "").split(",") if method.strip())
        error = {
            "code": "method_not_allowed",
            "message": f"Method not allowed: {where}; it takes {', '.join(allowed)}",
            "details": {"allowed": allowed},
        }
    shaped = JsonResponse({"ok": False, "error": error}, status=response.status_code)
    if "Allow" in response:
        shaped["Allow"] = response["Allow"]
    return shaped


def has_nul(scope: dict[str, Any]) -> bool:
    """Whether the URL holds a NUL character, which no PostgreSQL text takes: a
    session key, a search or an opaque id with one would end in a database error."""
    query = scope.get("query_string", b"")
    return "\x00" in scope["path"] or b"%00" in query or b"\x00" in query


NUL_MESSAGE = "The URL may not contain the NUL character (%00)"


async def refuse_nul(scope: dict[str, Any], send: Any) -> None:
    if scope["type"] == "websocket":
        await send({"type": "websocket.close", "code": 4400})
        return
    if scope["path"].startswith(API_PREFIX) or scope["path"].startswith("/mcp"):
        error = {"code": "invalid_input", "message": NUL_MESSAGE, "details": {}}
        body, content_type = orjson.dumps({"ok": False, "error": error}), b"application/json"
    else:
        body, content_type = f"Bad Request: {NUL_MESSAGE}".encode(), b"text/plain; charset=utf-8"
    await send({"type": "http.response.start", "status": 400, "headers": [(b"content-type", content_type)]})
    await send({"type": "http.response.body", "body": body})


# The functions below that route a request return the coroutine of the application
# they chose rather than await it in a coroutine of their own: a websocket would keep
# that coroutine's frame for its whole life, and each costs every request a little.


def without_nul(app: Any) -> Any:
    """`app`, refusing requests whose URL holds a NUL character (400, or a refused
    websocket handshake)."""

    def guard(scope: dict[str, Any], receive: Any, send: Any) -> Awaitable[None]:
        if scope["type"] in ("http", "websocket") and has_nul(scope):
            return refuse_nul(scope, send)
        return app(scope, receive, send)

    return guard


def by_protocol(*, http: Any, websocket: Any) -> Any:
    """HTTP requests to `http`, websockets to `websocket` (as Channels' ProtocolTypeRouter)."""

    def route(scope: dict[str, Any], receive: Any, send: Any) -> Awaitable[None]:
        if scope["type"] == "http":
            return http(scope, receive, send)
        if scope["type"] == "websocket":
            return websocket(scope, receive, send)
        raise ValueError(f"No application configured for scope type {scope['type']!r}")

    return route


class MadeOnFirstRequest:
    """An ASGI app made when its first request comes. The MCP server's SDK costs a
    process 24 MB and a second to import, which a deployment whose agents never use
    MCP need not pay: its first MCP request pays the second instead."""

    def __init__(self, make: Any) -> None:
        self.make = make
        self.app: Any = None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if self.app is None:
            self.app = self.make()
        await self.app(scope, receive, send)


def mcp_app() -> Any:
    from todoweb.web.mcp import McpApp

    return McpApp()


def http_application(browser: ASGIHandler) -> Any:
    """The ASGI application for HTTP: /api/, /v1/ (OTLP) and the health probes to the
    lean handler (the agents' writes by their own route), /mcp to the MCP server, the
    rest to `browser`."""
    from todoweb.serve.agent_routes import AgentRoutes

    api = AgentRoutes(ApiHandler())
    mcp = MadeOnFirstRequest(mcp_app)

    def route(scope: dict[str, Any], receive: Any, send: Any) -> Awaitable[None]:
        path = scope["path"]
        if path.startswith(API_PREFIX) or path.startswith(OTLP_PREFIX) or path in PROBE_PATHS:
            handler = api
        elif path == MCP_PATH or path.startswith(MCP_PATH + "/"):
            handler = mcp
        else:
            handler = browser
        return handler(scope, receive, send)

    # Behind a proxy: the client's address and scheme from X-Forwarded-For and
    # X-Forwarded-Proto, trusted from the addresses in FORWARDED_ALLOW_IPS (uvicorn's
    # variable and middleware). Here, not in the server: the sockets read neither, and
    # a socket kept the middleware's frame for its whole life (0.3 KB).
    return ProxyHeadersMiddleware(route, trusted_hosts=settings.FORWARDED_ALLOW_IPS)
