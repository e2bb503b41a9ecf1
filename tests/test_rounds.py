"""POST /api/v1/sessions/{key}/rounds: learn-claude-code's nag reminder counter."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connection

from tests.conftest import Api
from todoweb.models import Session
from todoweb.writes.rounds import REMINDER

URL = "/api/v1/sessions/run-1/rounds"
TURNS = 20
TODOS = [{"content": "Run the tests", "status": "in_progress", "activeForm": "Running the tests"}]


def test_it_counts_turns_without_the_todo_tool(api):
    answers = [api.post(URL, {"used_todo": False}).json() for _ in range(2)]
    assert answers == [
        {"rounds_since_todo": 1, "reminder": None},
        {"rounds_since_todo": 2, "reminder": None},
    ]


def test_it_reminds_from_the_third_turn_on(api):
    answers = [api.post(URL, {"used_todo": False}).json() for _ in range(5)]
    assert [a["rounds_since_todo"] for a in answers] == [1, 2, 3, 4, 5]
    assert [a["reminder"] for a in answers] == [None, None, REMINDER, REMINDER, REMINDER]
    assert REMINDER == "<reminder>Update your todos.</reminder>"


def test_it_resets_on_a_turn_that_used_the_todo_tool(api):
    for _ in range(4):
        api.post(URL, {"used_todo": False})
    r = api.post(URL, {"used_todo": True})
    assert r.status_code == 200
    assert r.json() == {"rounds_since_todo": 0, "reminder": None}
    assert api.post(URL, {"used_todo": False}).json()["rounds_since_todo"] == 1


def test_it_resets_on_a_todo_write_through_the_tool_endpoint(api):
    for _ in range(3):
        api.post(URL, {"used_todo": False})
    assert api.call("run-1", "TodoWrite", {"todos": TODOS}).status_code == 200
    assert api.post(URL, {"used_todo": False}).json() == {"rounds_since_todo": 1, "reminder": None}


def test_it_creates_an_empty_session_for_an_unknown_key(api):
    api.post(URL, {"used_todo": False})
    session = Session.objects.get(key="run-1")
    assert session.state == "empty"
    assert session.revision == 0
    assert api.get("/api/v1/sessions/run-1").json()["todos"] == []


def test_it_keeps_the_sessions_of_each_key_apart(api):
    for _ in range(3):
        api.post(URL, {"used_todo": False})
    assert api.post("/api/v1/sessions/run-2/rounds", {"used_todo": False}).json()["rounds_since_todo"] == 1


@pytest.mark.parametrize(
    "body, where",
    [
        ({}, "used_todo"),
        ({"used_todo": "false"}, "used_todo"),
        ({"used_todo": 1}, "used_todo"),
        ({"used_todo": None}, "used_todo"),
        ({"usedTodo": True}, "used_todo"),
        ({"used_todo": True, "extra": 1}, "extra"),
        ([], ""),
    ],
)
def test_it_rejects_an_invalid_body(api, body, where):
    r = api.post(URL, body)
    assert r.status_code == 422
    error = r.json()["error"]
    assert error["code"] == "invalid_input"
    assert where in error["message"]
    assert not Session.objects.exists()


def test_it_rejects_invalid_json(api):
    r = api.post(URL, "{used_todo: true")
    assert r.status_code == 400
    assert r.json()["error"]["code"] == "invalid_json"


def test_it_rejects_another_content_type(api):
    r = api.client.post(URL, data="used_todo=true", content_type="text/plain", headers=api.headers)
    assert r.status_code == 415


def test_it_rejects_an_invalid_session_key(api):
    r = api.post("/api/v1/sessions/bad%20key/rounds", {"used_todo": False})
    assert r.status_code == 422
    assert "Invalid session key" in r.json()["error"]["message"]


def test_it_needs_a_write_token(read_api):
    r = read_api.post(URL, {"used_todo": False})
    assert r.status_code == 403
    assert not Session.objects.exists()


def test_it_needs_a_token(client, db):
    r = client.post(URL, data='{"used_todo": false}', content_type="application/json")
    assert r.status_code == 401


@pytest.mark.django_db(transaction=True)
def test_it_loses_no_turn_under_concurrent_calls(token):
    def turn(_: int) -> int:
        try:
            return Api(token).post("/api/v1/sessions/busy/rounds", {"used_todo": False}).status_code
        finally:
            connection.close()

    # A fresh key: the first calls also race to create the session.
    with ThreadPoolExecutor(max_workers=TURNS) as pool:
        statuses = list(pool.map(turn, range(TURNS)))
    assert statuses == [200] * TURNS
    assert Session.objects.get(key="busy").rounds_since_todo == TURNS
