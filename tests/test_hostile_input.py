"""Input built to break things gets a clear 4xx and changes nothing: overflowing
numbers, deep nesting, huge lists, crafted cursors and out-of-range numbers."""

from __future__ import annotations

import base64
import json

import pytest

from tests.conftest import assert_refused
from todoweb.calls.jsonio import MAX_DEPTH, MAX_LIST_ITEMS
from todoweb.models import Revision, Session

WRITE = {"todos": [{"content": "a", "status": "pending", "activeForm": "doing a"}]}


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def chat(arguments: str, tool: str = "TodoWrite") -> dict:
    return {"id": "call_1", "type": "function", "function": {"name": tool, "arguments": arguments}}


@pytest.mark.parametrize("number", ["1e400", "-1E+999", "123456789e999"])
def test_it_refuses_a_number_that_overflows_a_double_naming_where(api, number):
    body = '{"tool": "TodoWrite",\n "input": {"todos": [], "x": NUMBER}}'.replace("NUMBER", number)
    at, line_start = body.index(number), body.index("\n") + 1
    answer = assert_refused(api.tool("s1", body), status=400, code="invalid_json")
    assert answer["error"]["message"] == (
        f"The body is not valid JSON: number {number} is out of range: line 2 column {at - line_start + 1} (char {at})"
    )
    assert not Session.objects.exists()


def test_it_keeps_an_integer_beyond_64_bits_as_the_call_wrote_it(api):
    """orjson stores the call's JSON only up to 64-bit integers; past that the input
    is still stored, whole."""
    body = '{"tool": "TodoWrite", "input": {"todos": [], "n": 123456789012345678901234567890}}'
    assert api.tool("s1", body).status_code == 200
    assert Revision.objects.get().raw_input == {"todos": [], "n": 123456789012345678901234567890}


def test_it_refuses_an_overflowing_number_in_the_arguments_text(api):
    answer = assert_refused(api.tool("s1", chat('{"todos": [], "n": 1e400}')), status=400, code="invalid_json")
    assert answer["error"]["message"] == (
        "The arguments text is not valid JSON: number 1e400 is out of range: line 1 column 20 (char 19)"
    )
    assert answer["reply"]["tool_call_id"] == "call_1"
    assert not Session.objects.exists()


def test_it_answers_codex_in_serdes_words_for_an_overflowing_number(api):
    arguments = '{"plan": [{"step": 1e400, "status": "pending"}]}'
    answer = assert_refused(api.tool("s1", chat(arguments, "update_plan")), status=400, code="invalid_json")
    assert answer["error"]["message"] == "failed to parse function arguments: number out of range at line 1 column 24"


def test_it_accepts_what_kimi_accepts_and_stores_the_arguments_text(api):
    # kosong parses with Python's json: 1e400 is a float, and the extra field is ignored.
    arguments = '{"todos": [{"title": "a", "status": "pending"}], "weight": 1e400}'
    r = api.tool("s1", chat(arguments, "SetTodoList"))
    assert r.status_code == 200, r.content
    assert Revision.objects.get().raw_input == arguments


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 950, 5000])
def test_it_refuses_nesting_past_the_limit_before_storing_anything(api, depth):
    body = json.dumps({"tool": "TodoWrite", "input": {"todos": [], "meta": "@"}}).replace('"@"', nested(depth))
    answer = assert_refused(api.tool("s1", body), status=400, code="invalid_json")
    assert answer["error"]["message"] == f"The body is not valid JSON: nested more than {MAX_DEPTH} levels deep"
    assert not Session.objects.exists()


def test_it_stores_nesting_within_the_limit(api):
    args = {"subject": "a", "description": "d", "metadata": json.loads(nested(MAX_DEPTH - 4))}
    args["metadata"] = {"deep": args["metadata"]}
    r = api.call("s1", "TaskCreate", args)
    assert r.status_code == 200, r.content
    assert Revision.objects.get().raw_input == args


def test_it_refuses_a_list_longer_than_any_call_needs(api):
    args = {"todos": [{"title": "", "status": "nope"}] * (MAX_LIST_ITEMS + 1)}
    answer = assert_refused(api.call("s1", "SetTodoList", args))
    assert answer["error"]["message"] == (
        "Too many items in one list: 1,001. todoweb takes at most 1,000 in any list or object of a call "
        "(a fixed limit, whatever the project's max_items policy allows)"
    )
    assert not Session.objects.exists()


def test_it_reports_the_first_twenty_of_many_errors_and_a_count(api):
    args = {"todos": [{"title": "", "status": "nope"}] * MAX_LIST_ITEMS}
    r = api.call("s1", "SetTodoList", args)
    answer = assert_refused(r)
    message = answer["error"]["message"]
    assert message.startswith("Error validating JSON arguments: 2000 validation errors for Params\n")
    assert message.endswith("\n… and 1980 more errors")
    assert message.count("[type=") == 20
    assert len(r.content) < 20_000
    assert answer["error"]["details"]["count"] == 2000 and len(answer["error"]["details"]["errors"]) == 20


def test_it_caps_the_issues_claude_tasks_reports(api):
    args = {"subject": "a", "description": "d"} | {f"extra{i}": 1 for i in range(100)}
    answer = assert_refused(api.call("s1", "TaskCreate", args))
    lines = answer["error"]["message"].split("\n")
    assert lines[0] == "TaskCreate failed due to the following issues:"
    assert lines[1:21] == [f"An unexpected parameter `extra{i}` was provided" for i in range(20)]
    assert lines[21:] == ["… and 80 more"]
    assert answer["error"]["details"]["count"] == 100


def test_it_adds_a_thousand_blockers_at_once_and_caps_what_a_step_keeps(api):
    api.call("s1", "TaskCreate", {"subject": "a", "description": "d"})
    blockers = [str(n) for n in range(2, 1002)]
    answer = assert_refused(api.call("s1", "TaskUpdate", {"taskId": "1", "addBlockedBy": blockers}))
    assert answer["error"]["message"] == "Item at index 0: blocked by 1000 steps; this project allows at most 100"
    r = api.call("s1", "TaskUpdate", {"taskId": "1", "addBlockedBy": blockers[:100] * 10})
    assert r.status_code == 200, r.content
    assert r.json()["data"]["todos"][0]["blocked_by"] == blockers[:100]


def cursor(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode()


@pytest.mark.parametrize(
    "text",
    [
        "0001-01-01T00:00:00+23:59|1",
        "9999-12-31T23:59:59-23:59|1",
        "2026-01-01T00:00:00+00:00|99999999999999999999999",
        "2026-01-01T00:00:00|1",
        "2026-01-01T00:00:00+00:00|-5",
        "2026-01-01T00:00:00+00:00",
    ],
)
def test_it_answers_a_crafted_cursor_with_422(api, text):
    assert_refused(api.get(f"/api/v1/sessions?cursor={cursor(text)}"))


@pytest.mark.parametrize("text", ["0001-01-01T00:00:00+00:00|1", "9999-12-31T23:59:59+00:00|1"])
def test_it_pages_from_the_ends_of_time(api, text):
    api.call("s1", "TodoWrite", WRITE)
    r = api.get(f"/api/v1/sessions?cursor={cursor(text)}")
    assert r.status_code == 200
    assert len(r.json()["sessions"]) == (1 if text.startswith("9999") else 0)


@pytest.mark.parametrize("path", ["revisions?after=99999999999999999999", "revisions?after=-1", "revisions?limit=1e9"])
def test_it_answers_out_of_range_query_numbers_with_422(api, path):
    api.call("s1", "TodoWrite", WRITE)
    assert_refused(api.get(f"/api/v1/sessions/s1/{path}"))


@pytest.mark.parametrize("number", ["0", "2147483648", "99999999999999999999999"])
def test_it_answers_404_for_revision_numbers_that_cannot_exist(api, member, client, number):
    api.call("s1", "TodoWrite", WRITE)
    assert_refused(api.get(f"/api/v1/sessions/s1/revisions/{number}"), status=404, code="not_found")
    client.force_login(member)
    public_id = Session.objects.get().public_id
    assert client.get(f"/s/{public_id}/revisions/{number}.json").status_code == 404


@pytest.mark.parametrize("body", ["[]", "3", '"x"', "null"])
def test_it_refuses_a_share_body_that_is_not_an_object(api, body):
    api.call("s1", "TodoWrite", WRITE)
    answer = assert_refused(api.post("/api/v1/sessions/s1/share", body))
    assert answer["error"]["message"] == "The body must be a JSON object"
