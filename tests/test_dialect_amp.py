"""Amp's todo_write / todo_read (behaviour from the Amp CLI bundle) through the real URL."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

from tests.conftest import assert_refused
from todoweb.dialects import amp
from todoweb.plan.steps import Item

PLAN = {
    "todos": [
        {"id": "1", "content": "Run the build", "status": "completed", "priority": "high"},
        {"id": "2", "content": "Fix error 1", "status": "in-progress", "priority": "high"},
        {"id": "3", "content": "Fix error 2", "status": "todo", "priority": "medium"},
    ]
}


def js(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def todo(id: Any = "1", content: Any = "a", status: Any = "todo", **extra: Any) -> dict[str, Any]:
    return {"id": id, "content": content, "status": status, **extra}


def call(api, key: str, tool: str, args: Any, *, forced: bool = False):
    return api.call(key, tool, args, query="?reply=native" + ("&dialect=amp" if forced else ""))


def ok(api, key: str, args: Any, *, tool: str = "todo_write", forced: bool = False) -> dict:
    response = call(api, key, tool, args, forced=forced)
    assert response.status_code == 200, response.content
    assert response.json()["dialect"] == "amp"
    return response.json()


def read(api, key: str) -> str:
    return ok(api, key, {}, tool="todo_read")["output"]


def test_todo_write_replaces_the_list_and_answers_with_its_input(api):
    body = ok(api, "a1", PLAN)
    assert body["output"] == js(PLAN["todos"])
    assert [(t["id"], t["content"], t["status"], t["priority"]) for t in body["data"]["todos"]] == [
        ("1", "Run the build", "completed", "high"),
        ("2", "Fix error 1", "in_progress", "high"),
        ("3", "Fix error 2", "pending", "medium"),
    ]
    assert body["data"]["warnings"] == []
    assert api.revision("a1") == 1


def test_todo_read_answers_the_list_without_writing(api):
    ok(api, "a1", PLAN)
    assert read(api, "a1") == f"<result>{js(PLAN['todos'])}</result>"
    assert api.revision("a1") == 1


def test_todo_read_of_nothing_is_empty(api):
    assert read(api, "a1") == ""
    assert api.revision("a1") in (None, 0)


def test_an_empty_list_clears(api):
    ok(api, "a1", PLAN)
    body = ok(api, "a1", {"todos": []}, forced=True)
    assert body["output"] == "[]"
    assert body["data"]["todos"] == []
    assert api.revision("a1") == 2
    assert read(api, "a1") == ""


def test_the_schemas_old_shape_without_priority_is_taken_too(api):
    body = ok(api, "a1", {"todos": [todo("0", "Run the build"), todo("0", "Fix any type errors")]})
    assert [(t["content"], t["status"], t["priority"]) for t in body["data"]["todos"]] == [
        ("Run the build", "pending", None),
        ("Fix any type errors", "pending", None),
    ]
    assert (
        body["output"]
        == '[{"id":"0","content":"Run the build","status":"todo"},{"id":"0","content":"Fix any type errors","status":"todo"}]'
    )


@pytest.mark.parametrize(
    ("args", "output"),
    [
        ({}, "undefined"),
        ({"todos": None}, "null"),
        ({"todos": "- [ ] a"}, '"- [ ] a"'),
        ({"todos": {"id": "1"}}, '{"id":"1"}'),
        ({"todos": 1.0}, "1"),
        ([PLAN], "undefined"),
        ("todos", "undefined"),
        (7, "undefined"),
    ],
)
def test_anything_but_a_list_is_answered_and_changes_nothing(api, args, output):
    ok(api, "a1", PLAN)
    assert ok(api, "a1", args, forced=True)["output"] == output
    assert api.revision("a1") == 1
    assert read(api, "a1") == f"<result>{js(PLAN['todos'])}</result>"


def test_null_arguments_are_javascripts_type_error(api):
    response = call(api, "a1", "todo_write", None, forced=True)
    assert_refused(response, "<error>Cannot read properties of null (reading 'todos')</error>")
    assert api.revision("a1") is None


def test_unknown_statuses_are_kept_as_pending_with_a_warning(api):
    todos = [
        todo("1", "a", "done", priority="low"),
        todo("2", "b", "in_progress", priority="urgent"),
        {"id": "3", "content": "c"},
    ]
    body = ok(api, "a1", {"todos": todos})
    assert [(t["status"], t["priority"]) for t in body["data"]["todos"]] == [
        ("pending", "low"),
        ("pending", None),
        ("pending", None),
    ]
    assert [w["message"] for w in body["data"]["warnings"]] == [
        "Todo 1 (1): status 'done' is not an Amp status; stored as pending",
        "Todo 2 (2): status 'in_progress' is not an Amp status; stored as pending",
        "Todo 2 (2): priority 'urgent' is not high, medium or low",
        "Todo 3 (3): status 'undefined' is not an Amp status; stored as pending",
    ]
    assert body["output"] == js(todos)


def test_items_that_are_not_todos_are_stored_with_a_warning(api):
    todos = [todo("1", "a", priority="high"), "write tests", {"content": 5, "status": "todo"}, None]
    body = ok(api, "a1", {"todos": todos})
    assert [(t["content"], t["status"]) for t in body["data"]["todos"]] == [
        ("a", "pending"),
        ("write tests", "pending"),
        ("5", "pending"),
        ("null", "pending"),
    ]
    assert [w["code"] for w in body["data"]["warnings"]] == ["invalid_item", "invalid_content", "invalid_item"]
    assert (
        body["output"]
        == '[{"id":"1","content":"a","status":"todo","priority":"high"},"write tests",{"content":5,"status":"todo"},null]'
    )


def test_the_reply_is_javascripts_json(api):
    todos = [
        {
            "id": 1,
            "content": "a",
            "status": "todo",
            "priority": "high",
            "10": True,
            "2": 1.50,
            "big": 1e21,
            "small": 1e-7,
        }
    ]
    body = ok(api, "a1", {"todos": todos})
    assert (
        body["output"]
        == '[{"2":1.5,"10":true,"id":1,"content":"a","status":"todo","priority":"high","big":1e+21,"small":1e-7}]'
    )
    assert body["data"]["todos"][0]["id"] == "1"


def test_hostile_text_is_stored_and_answered_verbatim(api):
    content = "<script>alert('x')</script> 修复 🐛 \"q\" \\ \u2028"
    body = ok(api, "a1", {"todos": [todo("x", content, "in-progress", priority="high")]})
    assert body["data"]["todos"][0]["content"] == content
    assert body["output"] == js([todo("x", content, "in-progress", priority="high")])
    assert "<script>" in read(api, "a1")


def test_todo_read_shows_other_dialects_lists_in_amp_words(api):
    claude = {
        "todos": [
            {"content": "a", "status": "in_progress", "activeForm": "Doing a"},
            {"content": "b", "status": "completed", "activeForm": "Doing b"},
        ]
    }
    assert api.call("a1", "TodoWrite", claude).status_code == 200
    ids = [t["id"] for t in api.get("/api/v1/sessions/a1").json()["todos"]]
    expected = [
        {"id": ids[0], "content": "a", "status": "in-progress"},
        {"id": ids[1], "content": "b", "status": "completed"},
    ]
    assert read(api, "a1") == f"<result>{js(expected)}</result>"


def test_todo_read_passes_statuses_amp_has_no_word_for():
    current = [
        Item(id="1", content="a", status="cancelled", priority="low"),
        Item(id="2", content="b", status="failed"),
    ]
    outcome = amp.call("todo_read", {}, current)
    assert outcome.items is None
    assert (
        outcome.native
        == '<result>[{"id":"1","content":"a","status":"cancelled","priority":"low"},{"id":"2","content":"b","status":"failed"}]</result>'
    )


def test_it_accepts_the_chat_completions_form(api):
    body = {"id": "call_1", "type": "function", "function": {"name": "todo_write", "arguments": json.dumps(PLAN)}}
    response = api.tool("a1", body, query="?reply=native")
    assert response.status_code == 200, response.json()
    assert response.json()["reply"] == {"role": "tool", "tool_call_id": "call_1", "content": js(PLAN["todos"])}
    read_call = {"id": "call_2", "type": "function", "function": {"name": "todo_read", "arguments": "{}"}}
    response = api.tool("a1", read_call, query="?reply=native")
    assert response.json()["reply"]["content"] == f"<result>{js(PLAN['todos'])}</result>"


def test_it_answers_in_the_checklist_style_by_default(api):
    response = api.call("a1", "todo_write", PLAN)
    assert response.status_code == 200
    assert "Fix error 1" in response.json()["output"]


@pytest.mark.parametrize(
    ("args", "fits"),
    [
        (PLAN, True),
        ({"todos": [todo(status="completed", priority="low")]}, True),
        ({"todos": [todo(status="in-progress")]}, True),
        ({"todos": [todo(status="todo")]}, True),
        ({"todos": [todo(status="completed")]}, False),
        ({"todos": [todo(status="pending")]}, False),
        ({"todos": []}, False),
        ({"todos": "x"}, False),
        ({"merge": True, "todos": [todo(priority="high")]}, True),
        ([], False),
    ],
)
def test_it_claims_todo_write_calls_with_priorities_or_amp_statuses(args, fits):
    assert amp.fits("todo_write", args) is fits


def test_it_gives_the_model_amps_schemas():
    write, read_tool = amp.definitions()
    assert (write.name, read_tool.name) == ("todo_write", "todo_read")
    assert write.description.startswith("Update the todo list for the current session.")
    assert read_tool.description == "Read the current todo list for the session"
    assert "additionalProperties" not in json.dumps(write.input_schema)
    for definition in (write, read_tool):
        jsonschema.Draft7Validator.check_schema(definition.input_schema)
    validator = jsonschema.Draft7Validator(write.input_schema)
    assert validator.is_valid(PLAN)
    assert not validator.is_valid({"todos": [todo(status="pending", priority="high")]})
    assert jsonschema.Draft7Validator(read_tool.input_schema).is_valid({})
