"""The Python client (clients/python, `todoweb_client`) against the real app served
over HTTP: `Todoweb` and `AsyncTodoweb` record every envelope, hand back the board's
answers (refusals included), carry people's edits back (`hook`, `tell`), and never
raise when the board cannot be reached."""

from __future__ import annotations

import asyncio
import socket
import time

import httpx
import pytest
from todoweb_client import AsyncTodoweb, Todoweb

from todoweb.models import Session

pytestmark = pytest.mark.django_db(transaction=True)

TODOS = [{"content": "Read the code", "status": "in_progress", "activeForm": "Reading the code"}]
EDITED = [{"id": "1", "content": "Read the code twice", "status": "in_progress"}]
NOTICE = 'The user changed the plan:\n- reworded "Read the code" to "Read the code twice"'


@pytest.fixture
def board(asgi_server, token):
    with Todoweb(asgi_server.url, token) as client:
        yield client


@pytest.fixture
def unreachable() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


def edit(asgi_server, token: str, session: str) -> None:
    answer = httpx.post(
        f"{asgi_server.url}/api/v1/sessions/{session}/edits",
        json={"todos": EDITED},
        headers={"Authorization": f"Bearer {token}", "If-Match": "1"},
    )
    assert answer.status_code == 200, answer.text


@pytest.mark.parametrize(
    "call",
    [
        {"type": "tool_use", "id": "toolu_1", "name": "TodoWrite", "input": {"todos": TODOS}},
        {"type": "tool_call", "id": "call_1", "name": "write_todos", "args": {"todos": TODOS}},
        {"tool": "TodoWrite", "id": "plain-1", "input": {"todos": TODOS}},
    ],
    ids=["anthropic", "langchain", "plain"],
)
def test_record_writes_the_call_and_returns_the_tool_endpoints_answer(board, call):
    answer = board.record("client-1", call, title="Checkout fix")
    assert answer is not None and answer["ok"] is True, answer
    assert answer["data"]["revision"] == 1 and answer["reply"]["content"] == answer["output"]
    assert "[>] Read the code" in answer["output"]
    session = Session.objects.with_current().get(key="client-1")
    assert (session.title, session.current.todos[0]["content"]) == ("Checkout fix", "Read the code")


def test_a_refused_list_comes_back_as_the_boards_answer_for_the_model(board):
    answer = board.record("client-2", {"tool": "TodoWrite", "id": "x", "input": {"todos": "not a list"}})
    assert answer is not None and answer["ok"] is False and answer["error"]["code"] == "invalid_input"
    assert answer["reply"]["is_error"] is True
    assert not Session.objects.filter(key="client-2", revision__gt=0).exists()


def test_a_persons_edit_comes_back_once_through_a_hook_on_any_tool(board, asgi_server, token):
    board.record("client-3", {"tool": "TodoWrite", "id": "t1", "input": {"todos": TODOS}})
    read = {
        "session_id": "client-3",
        "hook_event_name": "PostToolUse",
        "tool_name": "Read",
        "tool_input": {"file_path": "a.py"},
        "tool_use_id": "r1",
    }
    assert board.hook("claude-code", read) == {}
    edit(asgi_server, token, "client-3")
    told = board.hook("claude-code", read | {"tool_use_id": "r2"})
    assert told == {"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": NOTICE}}
    assert board.hook("claude-code", read | {"tool_use_id": "r3"}) == {}


def test_the_async_client_records_and_tells(asgi_server, token):
    async def scenario() -> tuple[dict | None, str | None, str | None]:
        async with AsyncTodoweb(asgi_server.url, token) as client:
            answer = await client.record("client-4", {"tool": "TodoWrite", "id": "a1", "input": {"todos": TODOS}})
            await asyncio.to_thread(edit, asgi_server, token, "client-4")
            return answer, await client.tell("client-4", route="test loop"), await client.tell("client-4")

    answer, notice, again = asyncio.run(scenario())
    assert answer is not None and answer["ok"] and answer["data"]["revision"] == 1
    assert notice is not None and notice.startswith(NOTICE) and again is None
    [message] = Session.objects.get(key="client-4").messages.all()
    assert message.told_via == "test loop"


def test_an_unreachable_board_never_raises(unreachable):
    started = time.monotonic()
    with Todoweb(unreachable, "tw_nobody", timeout=2) as client:
        assert client.record("s", {"tool": "TodoWrite", "input": {"todos": TODOS}}) is None
        assert client.hook("claude-code", {"session_id": "s", "hook_event_name": "PostToolUse"}) == {}
        assert client.tell("s") is None

    async def async_calls() -> tuple:
        async with AsyncTodoweb(unreachable, "tw_nobody", timeout=2) as client:
            return await client.record("s", {"tool": "TodoWrite", "input": {"todos": TODOS}}), await client.tell("s")

    assert asyncio.run(async_calls()) == (None, None)
    assert time.monotonic() - started < 10


def test_a_wrong_token_is_logged_and_answered_as_the_board_gave_it(asgi_server, caplog):
    with Todoweb(asgi_server.url, "tw_wrong") as client:
        answer = client.record("s", {"tool": "TodoWrite", "input": {"todos": TODOS}})
    assert answer is not None and answer["error"]["code"] == "unauthorized"
    assert "todoweb refused the call (401)" in caplog.text
