"""The three routes into an agent's write path, the tool endpoint, the agents' hooks
and the MCP server, meet here: in one short write (store.write: on SQLite, on the
event loop's own thread when nothing else writes) the token and the session are
read (in one query, unless the route checked the token already), the token checked,
and the call recorded (writes.record); once committed, its live frames are published."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from todoweb import store
from todoweb.live import events
from todoweb.models import ApiToken
from todoweb.store import sql
from todoweb.web.auth import check_token, rate_counted_in_process, require_write
from todoweb.writes.record import CallRequest, Recorded, record


def short_write() -> Callable[..., Awaitable[Any]]:
    """How a call that checks its token is written: `store.write`, unless counting it
    against the rate limit is a round trip to Redis, which the event loop must not wait
    on (an outage would hold every request for the client's timeout): then in a
    database thread."""
    return store.write if rate_counted_in_process() else store.run


async def record_call(found_by: str, call: CallRequest) -> Recorded:
    """Record `call` with the token of digest `found_by` (a write token of the session's project)."""
    recorded = await short_write()(record_with_token, found_by, call)
    await events.asend(recorded.frames)
    return recorded


async def record_call_of(token: ApiToken, call: CallRequest) -> Recorded:
    """Record `call` for a token its route has checked already (the MCP server checks
    it once per request, before the SDK reads the message)."""
    recorded = await store.write(record_for_project, token, call)  # its rate counted already
    await events.asend(recorded.frames)
    return recorded


def record_for_project(token: ApiToken, call: CallRequest) -> Recorded:
    require_write(token)
    row = sql.session_row(token.project, call.session_key, idempotency_key=call.key)
    return record(token.project, call, row)


def record_with_token(found_by: str, call: CallRequest) -> Recorded:
    # The token and the session in one query: a round trip fewer per call.
    token, row = sql.token_and_session(found_by, call.session_key, idempotency_key=call.key)
    token = check_token(token, found_by)
    require_write(token)
    return record(token.project, call, row)
