"""`Todoweb` and `AsyncTodoweb`: a todoweb board's API for an agent's backend.

`record(session, tool_call)` posts one todo tool call, in any envelope the tool
endpoint reads (an Anthropic `tool_use` block, a Chat Completions or Responses
function call, LangChain's `{"name", "args", "id", "type": "tool_call"}`, or the
plain `{"tool", "id", "input"}`), and returns the endpoint's answer: `output` is
the text for the model (with people's edits first, when there are any) and `reply`
the tool result ready for the conversation.

`hook(agent, event)` posts an agent's hook input (Claude Code's PostToolUse, …) and
returns what the hook hands the model (`{}` when nothing); `tell(session)` claims
what people told the agent that it has not heard yet.

A board that is down or slow never breaks the agent: every call is bounded by
`timeout`, and a failure to reach the board is logged and answered with None (or
`{}` for a hook), so the agent goes on as if todoweb were not there. Answers the
board gives (including errors such as a refused list, `ok: false`, whose `reply`
tells the model what to fix) are returned as they are.
"""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import quote

import httpx

from todoweb_client import __version__

logger = logging.getLogger("todoweb_client")

DEFAULT_TIMEOUT = 5.0
# Todo tools todoweb knows by name, for frameworks that have none of their own (the
# agent's developer gives it one): Codex's, Gemini CLI's and deepagents', Qwen Code's,
# Claude Code's, opencode's, VS Code Copilot's, Roo's. The input decides the rest.
KNOWN_TODO_TOOLS = frozenset(
    {"update_plan", "write_todos", "todo_write", "TodoWrite", "todowrite", "manage_todo_list", "update_todo_list"}
)
USER_AGENT = f"todoweb-client/{__version__}"


def session_path(session: str) -> str:
    return f"/api/v1/sessions/{quote(session, safe='')}"


def request_args(
    session: str, tool_call: dict[str, Any], title: str | None, reply: str | None
) -> tuple[str, dict[str, Any]]:
    params = {name: value for name, value in (("title", title), ("reply", reply)) if value}
    return f"{session_path(session)}/tool", {"json": tool_call, "params": params}


def answer_of(response: httpx.Response) -> dict[str, Any] | None:
    """The board's JSON answer, success or error; None when it gave none (a proxy's
    page, a server error)."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if not isinstance(body, dict):
        logger.warning("todoweb answered %s without a JSON answer", response.status_code)
        return None
    if response.status_code >= 400:
        error = body.get("error") or {}
        logger.warning("todoweb refused the call (%s): %s", response.status_code, error.get("message", body))
    return body


def hook_args(agent: str, event: dict[str, Any], wait: int | None, timeout: float) -> tuple[str, dict[str, Any]]:
    params: dict[str, Any] = {"answer": "hook"} | ({"wait": wait} if wait else {})
    # A plan waiting for approval holds the request open up to `wait` seconds.
    return f"/api/v1/hooks/{agent}", {"json": event, "params": params, "timeout": timeout + (wait or 0)}


def hook_output(response: httpx.Response) -> dict[str, Any]:
    answer = answer_of(response)
    return answer if response.status_code == 200 and answer is not None else {}


def tell_args(session: str, route: str) -> tuple[str, dict[str, Any]]:
    return f"{session_path(session)}/tell", {"json": {"route": route}}


def notice_of(response: httpx.Response) -> str | None:
    answer = answer_of(response)
    return answer.get("notice") if response.status_code == 200 and answer else None


def headers_for(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", "User-Agent": USER_AGENT}


class Todoweb:
    """A todoweb board, for synchronous code. `url` is the server's base URL
    (`http://127.0.0.1:8000`), `token` a project token with write scope."""

    def __init__(self, url: str, token: str, *, timeout: float = DEFAULT_TIMEOUT, http: httpx.Client | None = None):
        self.timeout = timeout
        self.http = http or httpx.Client(base_url=url.rstrip("/"), headers=headers_for(token), timeout=timeout)

    def __enter__(self) -> Todoweb:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        self.http.close()

    def record(
        self, session: str, tool_call: dict[str, Any], *, title: str | None = None, reply: str | None = None
    ) -> dict[str, Any] | None:
        """Record one todo tool call in `session`; the tool endpoint's answer, or None
        when the board could not be reached."""
        path, args = request_args(session, tool_call, title, reply)
        try:
            return answer_of(self.http.post(path, **args))
        except httpx.HTTPError as error:
            logger.warning("todoweb is unreachable, the call is not recorded: %s", error)
            return None

    def hook(self, agent: str, event: dict[str, Any], *, wait: int | None = None) -> dict[str, Any]:
        """Post an agent's hook input to `/api/v1/hooks/<agent>`; what the hook hands
        the agent (`hookSpecificOutput`), `{}` when nothing or on failure."""
        path, args = hook_args(agent, event, wait, self.timeout)
        try:
            return hook_output(self.http.post(path, **args))
        except httpx.HTTPError as error:
            logger.warning("todoweb is unreachable, the hook event is not recorded: %s", error)
            return {}

    def tell(self, session: str, route: str = "API") -> str | None:
        """What people told the agent of `session` that it has not heard yet (the
        notice for the model), marked told by `route`; None when nothing."""
        path, args = tell_args(session, route)
        try:
            return notice_of(self.http.post(path, **args))
        except httpx.HTTPError as error:
            logger.warning("todoweb is unreachable: %s", error)
            return None


class AsyncTodoweb:
    """`Todoweb` for asyncio code: the same methods, awaited."""

    def __init__(
        self, url: str, token: str, *, timeout: float = DEFAULT_TIMEOUT, http: httpx.AsyncClient | None = None
    ):
        self.timeout = timeout
        self.http = http or httpx.AsyncClient(base_url=url.rstrip("/"), headers=headers_for(token), timeout=timeout)

    async def __aenter__(self) -> AsyncTodoweb:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self.http.aclose()

    async def record(
        self, session: str, tool_call: dict[str, Any], *, title: str | None = None, reply: str | None = None
    ) -> dict[str, Any] | None:
        path, args = request_args(session, tool_call, title, reply)
        try:
            return answer_of(await self.http.post(path, **args))
        except httpx.HTTPError as error:
            logger.warning("todoweb is unreachable, the call is not recorded: %s", error)
            return None

    async def hook(self, agent: str, event: dict[str, Any], *, wait: int | None = None) -> dict[str, Any]:
        path, args = hook_args(agent, event, wait, self.timeout)
        try:
            return hook_output(await self.http.post(path, **args))
        except httpx.HTTPError as error:
            logger.warning("todoweb is unreachable, the hook event is not recorded: %s", error)
            return {}

    async def tell(self, session: str, route: str = "API") -> str | None:
        path, args = tell_args(session, route)
        try:
            return notice_of(await self.http.post(path, **args))
        except httpx.HTTPError as error:
            logger.warning("todoweb is unreachable: %s", error)
            return None
