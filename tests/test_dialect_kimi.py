"""Kimi CLI's SetTodoList through the real URL."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

from tests.conftest import assert_refused
from todoweb.calls.errors import InvalidInput
from todoweb.calls.jsonio import UNPARSED
from todoweb.dialects import kimi
from todoweb.plan.steps import Item

# The tool description's example of a full snapshot.
SEED_SNAPSHOT = {
    "todos": [
        {"title": "梳理需求", "status": "done"},
        {"title": "实现主流程", "status": "in_progress"},
        {"title": "补充测试", "status": "pending"},
    ]
}


def chat(arguments: str) -> dict[str, Any]:
    return {"id": "call_1", "type": "function", "function": {"name": "SetTodoList", "arguments": arguments}}


def test_it_accepts_the_seed_snapshot(api):
    response = api.call("k1", "SetTodoList", SEED_SNAPSHOT, query="?reply=native")
    body = response.json()
    assert response.status_code == 200, body
    assert body["ok"] is True
    assert body["dialect"] == "kimi"
    assert body["output"] == "Todo list updated"
    assert [(t["content"], t["status"]) for t in body["data"]["todos"]] == [
        ("梳理需求", "completed"),
        ("实现主流程", "in_progress"),
        ("补充测试", "pending"),
    ]
    # The display block speaks Kimi's words again.
    assert body["data"]["display"] == {"type": "todo", "items": SEED_SNAPSHOT["todos"]}
    assert api.revision("k1") == 1


def test_it_rejects_the_seed_error_example_with_every_error(api):
    response = api.call("k1", "SetTodoList", {"todos": [{"title": "", "status": "working"}]})
    body = response.json()
    assert response.status_code == 422
    assert body["ok"] is False
    message = body["error"]["message"]
    assert message.startswith("Error validating JSON arguments: 2 validation errors for Params\n")
    assert "todos.0.title\n  String should have at least 1 character [type=string_too_short" in message
    assert (
        "todos.0.status\n  Input should be 'pending', 'in_progress' or 'done' "
        "[type=literal_error, input_value='working', input_type=str]" in message
    )
    assert body["reply"]["is_error"] is True
    assert body["reply"]["content"] == message
    assert api.revision("k1") is None


def test_it_reports_errors_in_every_item_not_only_the_first(api):
    api.call("k1", "SetTodoList", {"todos": [{"title": "a", "status": "pending"}]})
    todos = [
        {"title": "ok", "status": "pending"},
        {"title": 7, "status": "done"},
        {"title": "x", "status": "completed"},
        {"status": "pending"},
    ]
    response = api.call("k1", "SetTodoList", {"todos": todos})
    message = response.json()["error"]["message"]
    assert response.status_code == 422
    assert message.startswith("Error validating JSON arguments: 3 validation errors for Params\n")
    assert (
        "todos.1.title\n  Input should be a valid string [type=string_type, input_value=7, input_type=int]" in message
    )
    assert "todos.2.status\n  Input should be 'pending', 'in_progress' or 'done'" in message
    assert "todos.3.title\n  Field required [type=missing" in message
    assert api.revision("k1") == 1


@pytest.mark.parametrize("status", ["completed", "Done", "PENDING", " pending", "in-progress"])
def test_it_rejects_statuses_outside_the_three_exact_words(api, status):
    response = api.call("k1", "SetTodoList", {"todos": [{"title": "a", "status": status}]})
    assert response.status_code == 422
    assert "Input should be 'pending', 'in_progress' or 'done'" in response.json()["error"]["message"]
    assert api.revision("k1") is None


@pytest.mark.parametrize("title", ["   ", "\t\n", "\u3000", "x"])
def test_it_counts_characters_not_words_in_the_title(api, title):
    response = api.call("k1", "SetTodoList", {"todos": [{"title": title, "status": "pending"}]})
    assert response.status_code == 200, response.json()
    assert response.json()["data"]["todos"][0]["content"] == title


def test_it_accepts_several_in_progress_and_long_lists(api, project):
    project.single_in_progress = "off"
    project.save()
    todos = [{"title": f"t{i}", "status": "in_progress" if i < 3 else "pending"} for i in range(30)]
    response = api.call("k1", "SetTodoList", {"todos": todos}, query="?reply=native")
    assert response.status_code == 200, response.json()
    assert response.json()["output"] == "Todo list updated"
    assert response.json()["data"]["counts"]["in_progress"] == 3


def test_it_ignores_extra_fields_at_both_levels(api):
    payload = {"todos": [{"title": "a", "status": "done", "priority": "high"}], "note": "x"}
    response = api.call("k1", "SetTodoList", payload)
    assert response.status_code == 200, response.json()
    todo = response.json()["data"]["todos"][0]
    assert (todo["content"], todo["status"], todo["priority"]) == ("a", "completed", None)


@pytest.mark.parametrize("args", [{}, {"todos": None}, {"items": [{"title": "a", "status": "done"}]}])
def test_it_reads_when_todos_is_not_usable(api, args):
    api.call("k1", "SetTodoList", SEED_SNAPSHOT)
    response = api.call("k1", "SetTodoList", args, query="?reply=native")
    body = response.json()
    assert response.status_code == 200, body
    assert body["output"] == "Current todo list:\n- [done] 梳理需求\n- [in_progress] 实现主流程\n- [pending] 补充测试"
    assert api.revision("k1") == 1


def test_it_reads_on_empty_arguments_text(api):
    api.call("k1", "SetTodoList", SEED_SNAPSHOT)
    response = api.tool("k1", chat(""), query="?reply=native")
    assert response.status_code == 200, response.json()
    assert response.json()["output"].startswith("Current todo list:\n- [done] 梳理需求")
    assert response.json()["reply"] == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": response.json()["output"],
    }
    assert api.revision("k1") == 1


def test_it_reads_an_empty_list(api):
    response = api.call("k1", "SetTodoList", {}, query="?reply=native")
    assert response.status_code == 200, response.json()
    assert response.json()["output"] == "Todo list is empty."
    assert api.revision("k1") in (None, 0)


def test_it_clears_the_list_with_an_empty_array(api):
    api.call("k1", "SetTodoList", SEED_SNAPSHOT)
    response = api.call("k1", "SetTodoList", {"todos": []}, query="?reply=native")
    assert response.status_code == 200
    assert response.json()["output"] == "Todo list updated"
    assert response.json()["data"]["todos"] == []
    assert api.revision("k1") == 2
    read = api.call("k1", "SetTodoList", {}, query="?reply=native")
    assert read.json()["output"] == "Todo list is empty."


def test_it_answers_in_the_checklist_style_by_default(api):
    response = api.call("k1", "SetTodoList", SEED_SNAPSHOT)
    assert response.status_code == 200
    assert response.json()["output"] != "Todo list updated"
    assert "实现主流程" in response.json()["output"]


def test_it_rejects_arguments_that_are_not_json(api):
    response = api.tool("k1", chat('{"todos": [}'))
    assert_refused(
        response,
        "Error parsing JSON arguments: Expecting value: line 1 column 12 (char 11)",
        status=400,
        code="invalid_json",
    )
    assert response.json()["reply"]["content"] == response.json()["error"]["message"]
    assert api.revision("k1") is None


def test_it_accepts_raw_control_characters_in_strings_as_kosong_does(api):
    # kosong parses with strict=False: a literal tab inside a string is fine.
    response = api.tool("k1", chat('{"todos": [{"title": "a\tb", "status": "pending"}]}'))
    assert response.status_code == 200, response.json()
    assert response.json()["data"]["todos"][0]["content"] == "a\tb"


def test_it_refuses_a_raw_nul_even_though_kosong_would_parse_it(api):
    response = api.tool("k1", chat('{"todos": [{"title": "a\x00b", "status": "pending"}]}'))
    assert response.status_code == 422
    assert "NUL" in response.json()["error"]["message"]
    assert api.revision("k1") is None


@pytest.mark.parametrize(
    ("arguments", "shown"),
    [
        ("[]", "input_value=[], input_type=list"),
        ("5", "input_value=5, input_type=int"),
        ("null", "input_type=NoneType"),
    ],
)
def test_it_rejects_arguments_that_are_not_an_object_as_pydantic_does(api, arguments, shown):
    response = api.tool("k1", chat(arguments))
    message = response.json()["error"]["message"]
    assert response.status_code == 422
    assert message.startswith(
        "Error validating JSON arguments: 1 validation error for Params\n"
        "  Input should be a valid dictionary or instance of Params [type=model_type"
    )
    assert shown in message
    assert api.revision("k1") is None


def test_it_rejects_a_todos_value_that_is_not_a_list(api):
    response = api.call("k1", "SetTodoList", {"todos": {"title": "a", "status": "done"}})
    assert response.status_code == 422
    assert "todos\n  Input should be a valid list [type=list_type" in response.json()["error"]["message"]


def test_it_lists_what_other_dialects_wrote_in_kimi_words():
    current = [
        Item(content="a", status="completed"),
        Item(content="b", status="failed"),
        Item(content="c", status="blocked"),
        Item(content="d", status="cancelled"),
        Item(content="e", status="in_progress"),
    ]
    outcome = kimi.call("SetTodoList", {}, current)
    assert outcome.items is None
    assert outcome.native == (
        "Current todo list:\n- [done] a\n- [failed] b\n- [blocked] c\n- [cancelled] d\n- [in_progress] e"
    )


def test_it_parses_unparsed_text_itself():
    outcome = kimi.call("SetTodoList", UNPARSED, [], raw='{"todos": [{"title": "a\nb", "status": "done"}]}')
    assert outcome.items == [Item(content="a\nb", status="completed")]
    with pytest.raises(InvalidInput) as raised:
        kimi.call("SetTodoList", UNPARSED, [], raw="{")
    assert raised.value.code == "invalid_json"
    assert raised.value.message.startswith("Error parsing JSON arguments: ")


def test_it_gives_the_model_the_pydantic_schema():
    (definition,) = kimi.definitions()
    assert definition.name == "SetTodoList"
    assert "whole list" in definition.description
    schema = definition.input_schema
    assert "$defs" not in json.dumps(schema) and "$ref" not in json.dumps(schema)
    assert "additionalProperties" not in json.dumps(schema)
    jsonschema.Draft7Validator.check_schema(schema)
    validator = jsonschema.Draft7Validator(schema)
    assert validator.is_valid(SEED_SNAPSHOT)
    assert validator.is_valid({})
    assert validator.is_valid({"todos": None})
    assert not validator.is_valid({"todos": [{"title": "", "status": "done"}]})
    assert not validator.is_valid({"todos": [{"title": "a", "status": "completed"}]})
