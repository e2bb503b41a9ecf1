"""`GET /api/v1/events`: Server-Sent Events through the real ASGI application (its
URL, handler and token check), fed by the hub like the board's sockets."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.testing import ApplicationCommunicator
from django.utils import timezone

from tests.conftest import Api
from todoweb.asgi import application
from todoweb.live import hub, stream
from todoweb.live.hub import process_hub
from todoweb.models import ApiToken, Session
from todoweb.writes.tokens import token_create

pytestmark = pytest.mark.django_db(transaction=True)

TIMEOUT = 3
TODOS = [
    {"content": "Write the fix", "status": "in_progress", "activeForm": "Writing the fix"},
    {"content": "Run the tests", "status": "pending", "activeForm": "Running the tests"},
]


@pytest.fixture(autouse=True)
def memory_layer(settings):
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "todoweb.live.layer.ProcessLayer"}}


@pytest.fixture(autouse=True)
async def stop_the_hub():
    yield
    await process_hub().stop()


class Stream:
    """One `GET /api/v1/events` request, read event by event."""

    def __init__(self, token: str, query: str = "", last_event_id: str | None = None):
        headers = [(b"host", b"testserver"), (b"authorization", f"Bearer {token}".encode())]
        if last_event_id is not None:
            headers.append((b"last-event-id", last_event_id.encode()))
        self.communicator = ApplicationCommunicator(
            application,
            {
                "type": "http",
                "method": "GET",
                "path": "/api/v1/events",
                "query_string": query.encode(),
                "headers": headers,
                "http_version": "1.1",
            },
        )
        self.buffer = b""
        self.ended = False

    async def open(self) -> tuple[int, dict[bytes, bytes]]:
        await self.communicator.send_input({"type": "http.request", "body": b""})
        start = await self.communicator.receive_output(TIMEOUT)
        return start["status"], dict(start["headers"])

    async def error(self) -> dict[str, Any]:
        body = await self.communicator.receive_output(TIMEOUT)
        return json.loads(body["body"])

    async def next(self, timeout: float = TIMEOUT) -> dict[str, Any]:
        """The next event: its id, its name and its data (parsed), skipping comments."""
        while True:
            if b"\n\n" in self.buffer:
                block, self.buffer = self.buffer.split(b"\n\n", 1)
                fields: dict[str, str] = {}
                for line in block.decode().split("\n"):
                    if line.startswith(":"):
                        continue
                    name, _, value = line.partition(": ")
                    fields[name] = value
                if "event" in fields:
                    return {"id": fields.get("id"), "event": fields["event"], "data": json.loads(fields["data"])}
                continue
            message = await self.communicator.receive_output(timeout)
            assert message["type"] == "http.response.body"
            self.buffer += message.get("body", b"")
            if not message.get("more_body", False):
                self.ended = True
                if not self.buffer:
                    raise EOFError

    async def nothing_more(self) -> bool:
        """No event came, or is coming within a moment (comments and `retry:` aside)."""
        while not await self.communicator.receive_nothing(0.3):
            self.buffer += (await self.communicator.receive_output(TIMEOUT)).get("body", b"")
        return b"event: " not in self.buffer

    async def frame(self, timeout: float = TIMEOUT) -> bytes:
        """The next frame as sent (an event, a comment or `retry:`), without its blank
        line; fails if none comes within `timeout` seconds."""
        deadline = asyncio.get_running_loop().time() + timeout
        while b"\n\n" not in self.buffer:
            left = deadline - asyncio.get_running_loop().time()
            assert left > 0, f"no whole frame within {timeout} s: {self.buffer!r}"
            self.buffer += (await self.communicator.receive_output(left)).get("body", b"")
        frame, self.buffer = self.buffer.split(b"\n\n", 1)
        return frame

    async def close(self) -> None:
        await self.communicator.send_input({"type": "http.disconnect"})
        await self.communicator.wait(TIMEOUT)


async def write(api, key: str, todos=TODOS) -> dict[str, Any]:
    response = await sync_to_async(api.call)(key, "TodoWrite", {"todos": todos})
    assert response.status_code == 200, response.content
    return response.json()


async def test_a_session_stream_starts_with_its_state_then_follows_each_revision_and_message(api, token):
    await write(api, "run-1")
    stream = Stream(token, "session=run-1")
    status, headers = await stream.open()
    assert status == 200 and headers[b"Content-Type"] == b"text/event-stream"
    assert headers[b"Cache-Control"] == b"no-cache"
    first = [await stream.next() for _ in range(3)]
    assert [event["event"] for event in first] == ["session.snapshot", "session.messages", "session.questions"]
    assert first[0]["data"]["revision"] == 1 and first[0]["data"]["session"]["key"] == "run-1"
    assert first[1]["data"]["messages"] == [] and first[2]["data"]["questions"] == []

    await write(api, "run-1", [dict(TODOS[0], status="completed"), dict(TODOS[1], status="in_progress")])
    event = await stream.next()
    assert event["event"] == "session.snapshot" and event["data"]["revision"] == 2
    assert int(event["id"]) > int(first[0]["id"])

    note = await sync_to_async(api.post)("/api/v1/sessions/run-1/messages", {"text": "Use <b>staging</b> 数据库"})
    assert note.status_code == 201
    event = await stream.next()
    assert event["event"] == "session.messages"
    (message,) = event["data"]["messages"]
    assert (message["text"], message["state"]) == ("Use <b>staging</b> 数据库", "waiting")

    # Another session of the project is not this stream's.
    await write(api, "run-2")
    assert await stream.nothing_more()
    await stream.close()


async def test_a_project_stream_has_every_sessions_summary_and_nothing_of_other_projects(api, token):
    stream = Stream(token)
    assert (await stream.open())[0] == 200
    await write(api, "run-1")
    event = await stream.next()
    assert event["event"] == "session.summary"
    assert (event["data"]["session"]["key"], event["data"]["session"]["revision"]) == ("run-1", 1)

    _, other_token, _ = await sync_to_async(token_create)(project_slug="other")
    await write(Api(other_token), "theirs")
    assert await stream.nothing_more()

    archived = await sync_to_async(api.delete)("/api/v1/sessions/run-1")
    assert archived.status_code in (200, 204)
    event = await stream.next()
    assert event["event"] == "session.archived"
    await stream.close()


async def test_reconnecting_with_last_event_id_sends_what_moved_meanwhile(api, token):
    stream = Stream(token)
    await stream.open()
    await write(api, "run-1")
    seen = await stream.next()
    await stream.close()

    await write(api, "run-2")  # while the client was away
    resumed = Stream(token, last_event_id=seen["id"])
    await resumed.open()
    keys = set()
    for _ in range(2):  # run-1 may come again (the clock's slack): never lost, perhaps twice
        event = await resumed.next()
        keys.add(event["data"]["session"]["key"])
        if "run-2" in keys:
            break
    assert "run-2" in keys
    await resumed.close()

    # A fresh stream (no Last-Event-ID) starts with nothing but what comes next.
    fresh = Stream(token)
    await fresh.open()
    assert await fresh.nothing_more()
    await fresh.close()


async def test_a_revoked_token_ends_the_stream_at_once(api, token, read_token):
    stream = Stream(read_token)  # a read token follows as well
    assert (await stream.open())[0] == 200
    row = await sync_to_async(ApiToken.objects.get)(scope="read")
    row.revoked_at = timezone.now()
    await sync_to_async(row.save)()
    event = await stream.next()
    assert event["event"] == "stream.ended"
    with pytest.raises(EOFError):
        await stream.next()
    await stream.communicator.wait(TIMEOUT)


async def test_reconciliation_ends_the_stream_of_a_token_revoked_unannounced(api, token, monkeypatch):
    monkeypatch.setattr(hub, "RECONCILE_EVERY", 0.2)
    stream = Stream(token)
    await stream.open()
    await sync_to_async(ApiToken.objects.filter(scope="write").update)(revoked_at=timezone.now())
    event = await stream.next()
    assert event["event"] == "stream.ended"


async def test_a_quiet_stream_sends_a_comment_line_every_keepalive_interval(api, token, monkeypatch):
    assert stream.KEEPALIVE_EVERY == 15  # as docs/api.md says; shorter here
    monkeypatch.setattr(stream, "KEEPALIVE_EVERY", 0.5)
    events = Stream(token)
    await events.open()
    clock = asyncio.get_running_loop().time
    opened = clock()
    assert await events.frame() == b"retry: 2000"
    # Nothing to say: a comment line (which EventSource ignores) after the interval, and again.
    assert await events.frame() == b": keep-alive"
    first = clock()
    assert await events.frame() == b": keep-alive"
    assert first - opened > 0.25 and clock() - first > 0.25  # not sooner (the margin: the reader's own delays)
    # The stream goes on as before.
    await write(api, "run-1")
    assert (await events.next())["event"] == "session.summary"
    await events.close()


async def test_leaving_unwatches_the_groups(api, token):
    await write(api, "run-1")
    session = await sync_to_async(Session.objects.get)(key="run-1")
    stream = Stream(token, "session=run-1")
    await stream.open()
    await stream.next()
    group = f"session-{session.public_id}"
    assert process_hub().watchers[group]
    await stream.close()
    await asyncio.sleep(0)
    assert not process_hub().watchers.get(group) and not process_hub().viewers


@pytest.mark.parametrize(
    ("headers", "query", "status", "code"),
    [
        ([], "", 401, "unauthorized"),
        ([(b"authorization", b"Bearer tw_nope")], "", 401, "unauthorized"),
        (None, "session=nope", 404, "not_found"),
        (None, "session=%3Cscript%3E", 422, "invalid_input"),
    ],
)
async def test_refusals_are_json_errors(api, token, headers, query, status, code):
    stream = Stream(token, query)
    if headers is not None:
        stream.communicator.scope["headers"] = [(b"host", b"testserver"), *headers]
    assert (await stream.open())[0] == status
    assert (await stream.error())["error"]["code"] == code
