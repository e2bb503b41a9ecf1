"""HTTP handlers: the browser's pages and the API take different middleware.

The API authenticates by token and answers JSON: sessions, CSRF, messages,
clickjacking protection and static files do nothing for it. Under ASGI each
synchronous middleware costs the request two thread hops; together they halve the
throughput of a request. So requests under /api/ go to a handler without them.
"""

from __future__ import annotations

from typing import Any

from django.core.handlers.asgi import ASGIHandler
from django.core.handlers.exception import convert_exception_to_response

API_PREFIX = "/api/"


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

    def load_middleware(self, is_async: bool = False) -> None:
        # What BaseHandler.load_middleware leaves behind for an empty MIDDLEWARE.
        self._view_middleware = []
        self._template_response_middleware = []
        self._exception_middleware = []
        self._middleware_chain = convert_exception_to_response(
            self._get_response_async if is_async else self._get_response
        )


def http_application(browser: ASGIHandler) -> Any:
    """The ASGI application for HTTP: /api/ to the lean handler, /mcp to the MCP
    server, the rest to `browser`."""
    from .mcp_server import PATH as MCP_PATH
    from .mcp_server import McpApp

    api = ApiHandler()
    mcp = McpApp()

    async def route(scope: dict[str, Any], receive: Any, send: Any) -> None:
        path = scope["path"]
        if path.startswith(API_PREFIX):
            handler = api
        elif path == MCP_PATH or path.startswith(MCP_PATH + "/"):
            handler = mcp
        else:
            handler = browser
        await handler(scope, receive, send)

    return route
