"""The agents' write endpoints, `POST /api/v1/sessions/<key>/tool` and
`POST /api/v1/hooks/<agent>`, served by their views without the rest of Django's
request machinery: no URL resolver, no django-ninja parameter parsing, no
request_started signal and no task watching for the client to go away. They are the
hot path (every tool call of an agent whose hook posts them all), and that machinery
cost more than the write itself.

The views and the answers are the API's own (todoweb.web.api.tools and .hooks). A
hook event or a tool call is read from the ASGI request alone and answered with the
answer's own bytes (todoweb.web.api.hooks.record_hook, .tools.record_tool), with no
Django request or response made unless there is an error to answer. A request it
cannot read that way (a Content-Type with parameters, a header given twice) is read
through Django's ASGIRequest by the endpoint's view, made and answered by the API
handler's own methods.
No request_finished signal either: it would cost a hop to the database thread, where
the connection is checked after each piece of work instead (runtime.database). A
request this route is not sure of (a query parameter it does not know or whose value
ninja would refuse, a hook body that does not validate, a body over the size limit,
another method) goes to the API handler, which answers it in full: this route only
ever answers what the API would answer the same way.
"""

from __future__ import annotations

import io
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.handlers.asgi import ASGIHandler
from django.http import HttpRequest, HttpResponseBase, QueryDict

from todoweb.calls.answers import Answered
from todoweb.calls.jsonio import loads
from todoweb.web.api import api
from todoweb.web.api.errors import CallFailed, error_response
from todoweb.web.api.hooks import AGENTS, PLAN_WAIT, HookInput, HookPost, hook_response, record_hook
from todoweb.web.api.questions import MAX_WAIT
from todoweb.web.api.tools import ToolPost, post_tool_call, record_tool

TOOL_PATH = re.compile(r"/api/v1/sessions/([^/]+)/tool")
HOOK_PATH = re.compile(r"/api/v1/hooks/([a-z-]+)")

# The values ninja would take for the views' query parameters (None: not given).
REPLIES = (None, "checklist", "native")
HOOK_ANSWERS = (None, "full", "hook")
WAIT = re.compile(r"[1-9][0-9]{0,3}")

View = Callable[[HttpRequest], Awaitable[HttpResponseBase] | None]
Answering = Awaitable[Answered]


def tool_view(request: HttpRequest, session_key: str) -> Awaitable[HttpResponseBase] | None:
    """The tool endpoint's answer, for a request the route could not read alone (None:
    a query the API must read)."""
    query = tool_query(request.META["QUERY_STRING"])
    if query is None:
        return None
    return post_tool_call(request, session_key, reply=query.get("reply"), dialect=query.get("dialect"))


def tool_query(query_string: str | None) -> dict[str, str] | None:
    """A tool call's query parameters (None: a query the API must read)."""
    if query_string is None:
        return None
    query = single_values(query_string, {"reply", "dialect", "title"})
    if query is None or query.get("reply") not in REPLIES or query.get("dialect") == "":
        return None
    return query


def hook_view(request: HttpRequest, name: str) -> Awaitable[HttpResponseBase] | None:
    """The hook's answer, for a request the route could not read alone (None: a query
    or a body the API must read)."""
    query = hook_query(request.META["QUERY_STRING"])
    if query is None:
        return None
    try:
        hook = HookInput.model_validate(api.parser.parse_body(request))
    except Exception:
        return None  # the API answers it with its own error
    posted = HookPost.of_request(request, hook, query.get("reply"), query.get("answer"), int(query["wait"]))
    return hook_response(request, name, posted)


def hook_query(query_string: str | None) -> dict[str, str] | None:
    """A hook's query parameters, `wait` filled in (None: a query the API must read)."""
    if query_string is None:
        return None
    query = single_values(query_string, {"reply", "answer", "wait"})
    if query is None or query.get("reply") not in REPLIES or query.get("answer") not in HOOK_ANSWERS:
        return None
    wait = query.setdefault("wait", str(PLAN_WAIT))
    if not WAIT.fullmatch(wait) or int(wait) > MAX_WAIT:
        return None
    return query


def single_values(query_string: str, known: set[str]) -> dict[str, str] | None:
    """The query's parameters, when each is one of `known` and given once (None: not)."""
    if not query_string:
        return {}  # the usual case, without parsing a QueryDict
    query = {}
    for key, values in QueryDict(query_string).lists():
        if key not in known or len(values) != 1:
            return None
        query[key] = values[0]
    return query


@dataclass(frozen=True)
class Route:
    """One of the agents' write endpoints, as a request's path names it."""

    view: View  # its answer through Django's request
    # Its answer from the ASGI request and body alone (None: the view reads the request).
    answer: Callable[[dict[str, Any], bytes], Answering | None]


def route_of(scope: dict[str, Any]) -> Route | None:
    """The route of this request when it may be one of the agents' writes."""
    if scope["method"] != "POST" or scope.get("root_path"):
        return None
    path = scope["path"]
    if match := TOOL_PATH.fullmatch(path):
        key = match.group(1)
        return Route(lambda request: tool_view(request, key), lambda scope, body: tool_answer(scope, body, key))
    if (match := HOOK_PATH.fullmatch(path)) and match.group(1) in AGENTS:
        name = match.group(1)
        return Route(lambda request: hook_view(request, name), lambda scope, body: hook_answer(scope, body, name))
    return None


def hook_answer(scope: dict[str, Any], body: bytes, name: str) -> Answering | None:
    """The hook's answer, read from the ASGI request alone, when everything the API
    would check of it is as the API takes it (None: the hook view reads it)."""
    read = json_request(scope, body, hook_query, HOOK_HEADERS)
    if read is None:
        return None
    query, headers, event = read
    try:
        hook = HookInput.model_validate(event)
    except Exception:
        return None
    posted = HookPost(
        hook,
        query.get("reply"),
        query.get("answer"),
        int(query["wait"]),
        headers.get(b"authorization", ""),
        headers.get(b"x-api-key", ""),
        headers.get(b"x-todoweb-branch"),
    )
    return record_hook(name, posted)


def tool_answer(scope: dict[str, Any], body: bytes, session_key: str) -> Answering | None:
    """The tool call's answer, read from the ASGI request alone, when everything the
    API would check of it is as the API takes it (None: the tool view reads it)."""
    read = json_request(scope, body, tool_query, TOOL_HEADERS)
    if read is None:
        return None
    query, headers, call_body = read
    posted = ToolPost(
        call_body,
        query.get("reply"),
        query.get("dialect"),
        query.get("title"),
        headers.get(b"x-todoweb-title"),
        headers.get(b"idempotency-key", ""),
        headers.get(b"if-match"),
        headers.get(b"authorization", ""),
        headers.get(b"x-api-key", ""),
    )
    return record_tool(session_key, posted)


HOOK_HEADERS = {b"content-type", b"authorization", b"x-api-key", b"x-todoweb-branch"}
TOOL_HEADERS = {b"content-type", b"authorization", b"x-api-key", b"x-todoweb-title", b"idempotency-key", b"if-match"}


def json_request(
    scope: dict[str, Any], body: bytes, query_of: Callable[[str | None], dict[str, str] | None], names: set[bytes]
) -> tuple[dict[str, str], dict[bytes, str], Any] | None:
    """A JSON request's query parameters (as `query_of` reads them), these headers and
    its body parsed, when all are as the API would read them (None: they are not)."""
    query = query_of(query_text(scope))
    headers = json_request_headers(scope, names)
    if query is None or headers is None:
        return None
    try:
        return query, headers, loads(body, what="The body")
    except Exception:
        return None


def query_text(scope: dict[str, Any]) -> str | None:
    """The query string as Django decodes it (None: not UTF-8, which the API reads)."""
    try:
        return scope["query_string"].decode()
    except UnicodeDecodeError:
        return None


def json_request_headers(scope: dict[str, Any], names: set[bytes]) -> dict[bytes, str] | None:
    """These headers of a request whose Content-Type is JSON, as text (None: another
    type, or one with parameters, or one of them given twice, which Django would read
    joined). A name with an underscore is not one of them, as Django ignores it."""
    found: dict[bytes, str] = {}
    for name, value in scope["headers"]:
        if name in names:
            if name in found:
                return None
            found[name] = value.decode("latin-1")
    return found if found.get(b"content-type") == "application/json" else None


class AgentRoutes:
    """The agents' write endpoints; every other request, and any of theirs it is not
    sure of, to `api` (the API's handler)."""

    def __init__(self, api_handler: ASGIHandler) -> None:
        self.api = api_handler

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        route = route_of(scope)
        if route is None or declared_too_large(scope):
            # A body over the limit is the API's to answer (413, with the model's reply).
            await self.api(scope, receive, send)
            return
        body, complete = await read_body(receive, settings.TODOWEB_MAX_BODY_BYTES)
        if body is None:
            return  # the client went away
        answering = route.answer(scope, body) if complete else None
        if answering is not None:
            await self.answer(scope, body, answering, send)
            return
        request, response = self.api.create_request(scope, io.BytesIO(body))
        viewing = route.view(request) if request is not None and complete else None
        if viewing is None and request is not None:
            await self.api(scope, replaying(body, complete, receive), send)
            return
        if viewing is not None:
            try:
                response = await viewing
            except Exception as error:
                response = api.on_exception(request, error)  # as ninja answers it
        # Connections are checked where they are used (in_database_thread): no
        # request_finished, which would cost a hop to the database thread.
        await self.api.send_response(response, send)

    async def answer(self, scope: dict[str, Any], body: bytes, answering: Answering, send: Any) -> None:
        """An answer without Django's request and response (7% of a TodoWrite hook's
        instructions); the request is made for an error's answer only."""
        try:
            answered = await answering
        except CallFailed as failed:
            request, _ = self.api.create_request(scope, io.BytesIO(body))
            await self.api.send_response(error_response(request, failed.error, call=failed.call), send)
            return
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": REPLAYED_HEADERS if answered.replayed else JSON_HEADERS,
            }
        )
        await send({"type": "http.response.body", "body": answered.content})


JSON_HEADERS = [(b"Content-Type", b"application/json")]
REPLAYED_HEADERS = [*JSON_HEADERS, (b"Idempotent-Replayed", b"true")]


def declared_too_large(scope: dict[str, Any]) -> bool:
    for name, value in scope["headers"]:
        if name == b"content-length":
            return not value.isdigit() or int(value) > settings.TODOWEB_MAX_BODY_BYTES
    return False


async def read_body(receive: Any, limit: int) -> tuple[bytes | None, bool]:
    """The request's body, and whether that is all of it: reading stops past `limit`
    bytes (a body sent without its length). None: the client went away."""
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None, False
        chunk = message.get("body", b"")
        chunks.append(chunk)
        size += len(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks), True
        if size > limit:
            return b"".join(chunks), False


def replaying(body: bytes, complete: bool, receive: Any) -> Any:
    """`receive` for a request whose body was read already, or its first part: that,
    then what comes."""
    sent = False

    async def receive_again() -> dict[str, Any]:
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": body, "more_body": not complete}

    return receive_again
