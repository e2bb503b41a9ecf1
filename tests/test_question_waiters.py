"""A question knows when its asker has gone: the hook that asked (or the last
`?wait` poll) hanging up leaves it `abandoned`, and a later answer is refused, on the
board and by API; another request still waiting keeps it open. Driven through the
ASGI application as the server runs it, with a client that hangs up."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.test import Client
from django.utils import timezone

from tests.conftest import Api
from tests.test_questions import SESSION_ID, exit_plan_mode
from todoweb.models import Question, Session
from todoweb.serve.agent_routes import AgentRoutes
from todoweb.serve.handlers import ApiHandler
from todoweb.store.database import in_database_thread
from todoweb.writes import questions

pytestmark = pytest.mark.django_db(transaction=True)

QUESTIONS = f"/api/v1/sessions/{SESSION_ID}/questions"


class Request:
    """One HTTP request to the application, whose client hangs up when told to."""

    def __init__(self, app: Any, token: str, method: str, path: str, body: Any = None) -> None:
        path, _, query = path.partition("?")
        self.scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": method,
            "scheme": "http",
            "path": path,
            "raw_path": path.encode(),
            "root_path": "",
            "query_string": query.encode(),
            "headers": [
                (b"host", b"127.0.0.1"),
                (b"authorization", f"Bearer {token}".encode()),
                (b"content-type", b"application/json"),
            ],
            "client": ("127.0.0.1", 50000),
            "server": ("127.0.0.1", 8000),
        }
        self.body = json.dumps(body).encode() if body is not None else b""
        self.gone = asyncio.Event()
        self.read = False
        self.status: int | None = None
        self.content = b""
        self.task = asyncio.ensure_future(app(self.scope, self.receive, self.send))

    async def receive(self) -> dict[str, Any]:
        if not self.read:
            self.read = True
            return {"type": "http.request", "body": self.body, "more_body": False}
        await self.gone.wait()  # the client is there until it hangs up
        return {"type": "http.disconnect"}

    async def send(self, message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            self.status = message["status"]
        else:
            self.content += message.get("body", b"")

    async def hang_up(self) -> None:
        self.gone.set()
        await self.task

    async def answered(self) -> dict[str, Any]:
        await self.task
        return json.loads(self.content)


async def until(condition: Any) -> Any:
    """Waits for `condition()` (run in the database thread) to be true: the other
    request's progress, not a time."""
    while not (found := await in_database_thread(condition)):
        await asyncio.sleep(0.01)
    return found


def waited_on_by(count: int) -> Any:
    return lambda: Question.objects.filter(waiters=count).first()


async def api(app: Any, token: str, method: str, path: str, body: Any = None) -> tuple[int, dict[str, Any]]:
    request = Request(app, token, method, path, body)
    answer = await request.answered()
    return request.status, answer


def board_answer(member: Any, question_id: int, decision: str) -> Any:
    """A member's answer on the session's panel (its action, behind the login)."""
    board = Client()
    board.force_login(member)
    public_id = Session.objects.get(key=SESSION_ID).public_id
    return board.post(
        f"/s/{public_id}/actions/answer",
        {"question": question_id, "decision": decision},
        content_type="application/json",
    )


def panel_page(member: Any) -> str:
    board = Client()
    board.force_login(member)
    return board.get(Session.objects.get(key=SESSION_ID).get_absolute_url()).content.decode()


@pytest.fixture
def app() -> Any:
    return AgentRoutes(ApiHandler())


async def test_it_abandons_a_plan_whose_hook_hung_up_and_refuses_a_later_approval(app, token, member):
    # Five seconds of waiting: without the hook's hang-up seen, it would still be open
    # (and, once it returns, expired: not the refusal below).
    hook = Request(app, token, "POST", "/api/v1/hooks/claude-code?wait=5", exit_plan_mode())
    question = await until(waited_on_by(1))
    await hook.hang_up()

    status, listed = await api(app, token, "GET", QUESTIONS)
    (shown,) = listed["questions"]
    assert (shown["state"], shown["id"]) == ("abandoned", question.pk)
    assert shown["abandoned_at"] is not None

    status, refused = await api(app, token, "POST", f"{QUESTIONS}/{question.pk}/answer", {"decision": "allow"})
    assert status == 409
    assert refused["error"]["code"] == "abandoned"
    assert "The agent stopped waiting" in refused["error"]["message"]

    refused_on_board = await sync_to_async(board_answer)(member, question.pk, "allow")
    assert refused_on_board.status_code == 409
    assert refused_on_board.json()["error"]["code"] == "abandoned"

    panel = await sync_to_async(panel_page)(member)
    assert "The agent stopped waiting: its request ended before an answer came, so none is taken." in panel
    assert "state-abandoned" in panel

    # Nothing changed: no decision, no one named, nobody left waiting.
    stored = await in_database_thread(Question.objects.get)
    assert (stored.decision, stored.decided_by, stored.decided_at, stored.waiters) == ("", "", None, 0)


async def test_a_poll_still_waiting_keeps_the_question_open_when_the_hook_hangs_up(app, token):
    hook = Request(app, token, "POST", "/api/v1/hooks/claude-code?wait=60", exit_plan_mode())
    question = await until(waited_on_by(1))
    poll = Request(app, token, "GET", f"{QUESTIONS}/{question.pk}?wait=60")
    await until(waited_on_by(2))
    await hook.hang_up()  # its request is over: its count is taken off
    assert (await in_database_thread(Question.objects.get)).waiters == 1

    status, answered = await api(app, token, "POST", f"{QUESTIONS}/{question.pk}/answer", {"decision": "allow"})
    assert (status, answered.get("state")) == (200, "allowed"), answered
    assert (await poll.answered())["state"] == "allowed"
    assert (await in_database_thread(Question.objects.get)).waiters == 0


async def test_the_last_poll_hanging_up_abandons_a_question_asked_by_api(app, token):
    status, asked = await api(app, token, "POST", QUESTIONS, {"kind": "permission", "tool_name": "Bash", "wait": 300})
    assert status == 201
    # A poll whose wait ends answers `open` and leaves it open: the agent polls again.
    status, polled = await api(app, token, "GET", f"{QUESTIONS}/{asked['id']}?wait=0.1")
    assert (status, polled["state"]) == (200, "open")
    assert (await in_database_thread(Question.objects.get)).waiters == 0

    poll = Request(app, token, "GET", f"{QUESTIONS}/{asked['id']}?wait=60")
    await until(waited_on_by(1))
    await poll.hang_up()  # Django's handler cancels the view: the wait sees it all the same

    status, refused = await api(app, token, "POST", f"{QUESTIONS}/{asked['id']}/answer", {"decision": "deny"})
    assert (status, refused["error"]["code"]) == (409, "abandoned")
    assert (await in_database_thread(Question.objects.get)).abandoned_at is not None


async def test_a_waiter_on_another_process_keeps_the_question_open(app, token):
    """The count is the question's row: a request waiting on another server process
    (counted there as this one counts its own) is a waiter all the same."""
    hook = Request(app, token, "POST", "/api/v1/hooks/claude-code?wait=60", exit_plan_mode())
    question = await until(waited_on_by(1))
    await in_database_thread(questions.start_waiting, question.pk)  # the other process's poll
    await hook.hang_up()
    stored = await in_database_thread(Question.objects.get)
    assert (stored.abandoned_at, stored.waiters) == (None, 1)
    await in_database_thread(questions.stop_waiting, stored, hung_up=True)  # it hangs up too
    assert (await in_database_thread(Question.objects.get)).abandoned_at is not None


def test_a_real_server_sees_the_hook_hang_up(asgi_server, token):
    """Over a socket, as Claude Code's http hook hangs up at its own timeout."""
    body = json.dumps(exit_plan_mode()).encode()
    with socket.create_connection(("127.0.0.1", asgi_server.port)) as hook:
        hook.sendall(
            b"POST /api/v1/hooks/claude-code?wait=5 HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            + f"Authorization: Bearer {token}\r\nContent-Type: application/json\r\n".encode()
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        while not Question.objects.filter(waiters=1).exists():
            time.sleep(0.01)
    # Without the hang-up seen, it would stay open until its 5 s pass, then expire.
    while (question := Question.objects.get()).abandoned_at is None and question.expires_at > timezone.now():
        time.sleep(0.01)
    answered = Api(token).post(f"{QUESTIONS}/{question.pk}/answer", {"decision": "allow"})
    assert (answered.status_code, answered.json()["error"]["code"]) == (409, "abandoned")
