"""Gemini CLI's write_todos with `description` through the real URL."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

from tests.conftest import assert_refused
from todoweb.calls.errors import InvalidInput
from todoweb.calls.jsonio import UNPARSED
from todoweb.dialects import gemini

PLAN = {
    "todos": [
        {"description": "Read the failing test", "status": "completed"},
        {"description": "Fix the parser", "status": "in_progress"},
        {"description": "Run the suite", "status": "pending"},
        {"description": "Ask about the API", "status": "blocked"},
        {"description": "Rewrite the docs", "status": "cancelled"},
    ]
}


def chat(arguments: str) -> dict[str, Any]:
    return {"id": "call_1", "type": "function", "function": {"name": "write_todos", "arguments": arguments}}


def todo(description: Any = "a", status: Any = "pending", **extra: Any) -> dict[str, Any]:
    return {"description": description, "status": status, **extra}


def test_it_writes_the_list_and_answers_like_gemini(api):
    response = api.call("g1", "write_todos", PLAN, query="?reply=native")
    body = response.json()
    assert response.status_code == 200, body
    assert body["ok"] is True
    assert body["dialect"] == "gemini"
    assert body["output"] == (
        "Successfully updated the todo list. The current list is now:\n"
        "1. [completed] Read the failing test\n"
        "2. [in_progress] Fix the parser\n"
        "3. [pending] Run the suite\n"
        "4. [blocked] Ask about the API\n"
        "5. [cancelled] Rewrite the docs"
    )
    assert [(t["content"], t["status"]) for t in body["data"]["todos"]] == [
        (t["description"], t["status"]) for t in PLAN["todos"]
    ]
    assert api.revision("g1") == 1


def test_it_clears_the_list(api):
    api.call("g1", "write_todos", PLAN)
    response = api.call("g1", "write_todos", {"todos": []}, query="?reply=native")
    assert response.status_code == 200
    assert response.json()["output"] == "Successfully cleared the todo list."
    assert response.json()["data"]["todos"] == []
    assert api.revision("g1") == 2


def test_it_keeps_the_description_verbatim(api):
    response = api.call("g1", "write_todos", {"todos": [todo("  spaced out  ")]}, query="?reply=native")
    assert response.json()["data"]["todos"][0]["content"] == "  spaced out  "
    assert response.json()["output"].endswith("\n1. [pending]   spaced out  ")


def test_it_accepts_the_chat_completions_form(api):
    response = api.tool("g1", chat(json.dumps(PLAN)), query="?reply=native")
    assert response.status_code == 200, response.json()
    assert response.json()["reply"]["role"] == "tool"
    assert response.json()["reply"]["content"].startswith("Successfully updated the todo list.")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({}, "params must have required property 'todos'"),
        ({"items": []}, "params must have required property 'todos'"),
        ({"todos": "x"}, "params/todos must be array"),
        ({"todos": None}, "params/todos must be array"),
        ({"todos": ["x"]}, "params/todos/0 must be object"),
        ({"todos": [None]}, "params/todos/0 must be object"),
        ({"todos": [{"description": "a"}]}, "params/todos/0 must have required property 'status'"),
        ({"todos": [{"status": "pending"}]}, "params/todos/0 must have required property 'description'"),
        ({"todos": [todo(status="done")]}, "params/todos/0/status must be equal to one of the allowed values"),
        ({"todos": [todo(status="PENDING")]}, "params/todos/0/status must be equal to one of the allowed values"),
        ({"todos": [todo(status=1)]}, "params/todos/0/status must be string"),
        ({"todos": [todo(priority="high")]}, "params/todos/0 must NOT have additional properties"),
        ({"todos": [todo(description=5)]}, "params/todos/0/description must be string"),
        ({"todos": [todo(description=None)]}, "params/todos/0/description must be string"),
        ({"todos": [], "note": "x"}, "params must NOT have additional properties"),
        ([], "params must be object"),
        ([{"description": "a", "status": "pending"}], "params must be object"),
        (5, "Value of params must be an object"),
        ("todos", "Value of params must be an object"),
        (None, "Value of params must be an object"),
    ],
)
def test_it_reports_the_schema_error_in_ajv_words(api, args, message):
    api.call("g1", "write_todos", PLAN)
    assert_refused(api.call("g1", "write_todos", args), message)
    assert api.revision("g1") == 1


@pytest.mark.parametrize(
    ("todos", "message"),
    [
        # required before additionalProperties before properties, as ajv checks them.
        ([{"priority": 1, "description": 5}], "params/todos/0 must have required property 'status'"),
        ([todo(description=5, extra=1)], "params/todos/0 must NOT have additional properties"),
        ([todo(description=5, status="bad")], "params/todos/0/description must be string"),
        # An earlier item's problem wins over a later one's.
        ([todo(status="bad"), "x"], "params/todos/0/status must be equal to one of the allowed values"),
        # The schema runs over the whole list before any semantic check.
        (
            [todo(description=""), todo(status="bad")],
            "params/todos/1/status must be equal to one of the allowed values",
        ),
        (
            [todo(status="in_progress"), todo(status="in_progress"), todo(status="nope")],
            "params/todos/2/status must be equal to one of the allowed values",
        ),
        # Then item by item, then the in_progress count.
        (
            [todo(status="in_progress"), todo(status="in_progress"), todo(description=" ")],
            "Each todo must have a non-empty description string",
        ),
    ],
)
def test_it_reports_the_first_problem_in_gemini_order(api, todos, message):
    assert_refused(api.call("g1", "write_todos", {"todos": todos}), message)
    assert api.revision("g1") is None


def test_it_puts_the_top_level_schema_before_the_items():
    with pytest.raises(InvalidInput) as raised:
        gemini.call("write_todos", {"todos": [todo(status="bad")], "x": 1}, [])
    assert raised.value.message == "params must NOT have additional properties"


@pytest.mark.parametrize("description", ["", " ", "\t\n", "\u3000", "\u00a0", "\ufeff", "\u2028 \u2003"])
def test_it_rejects_descriptions_that_js_trim_empties(api, description):
    response = api.call("g1", "write_todos", {"todos": [todo("ok"), todo(description)]})
    assert_refused(response, "Each todo must have a non-empty description string")
    assert response.json()["error"]["details"] == {"index": 1}
    assert api.revision("g1") is None


@pytest.mark.parametrize("description", ["\u200b", "\x1c", "\u0085"])
def test_it_keeps_descriptions_that_js_trim_does_not_empty(api, description):
    response = api.call("g1", "write_todos", {"todos": [todo(description)]})
    assert response.status_code == 200, response.json()
    assert response.json()["data"]["todos"][0]["content"] == description


def test_it_rejects_two_in_progress_whatever_the_project_policy(api, project):
    project.single_in_progress = "off"
    project.save()
    todos = [todo("a", "in_progress"), todo("b"), todo("c", "in_progress")]
    response = api.call("g1", "write_todos", {"todos": todos})
    assert_refused(response, 'Invalid parameters: Only one task can be "in_progress" at a time.')
    assert response.json()["error"]["details"] == {"indexes": [0, 2]}
    assert api.revision("g1") is None


def test_it_has_no_item_limit_of_its_own(api):
    todos = [todo(f"step {i}") for i in range(60)]
    response = api.call("g1", "write_todos", {"todos": todos})
    assert response.status_code == 200, response.json()
    assert response.json()["data"]["counts"]["total"] == 60


def test_it_judges_a_chat_array_by_the_schema(api):
    assert_refused(api.tool("g1", chat("[]")), "params must be object")
    assert_refused(api.tool("g1", chat("5")), "Value of params must be an object")


def test_it_refuses_arguments_that_are_not_json(api):
    response = api.tool("g1", chat('{"todos": [}'))
    body = response.json()
    assert response.status_code == 400
    assert body["error"]["code"] == "invalid_json"
    assert body["error"]["message"].startswith("The arguments are not valid JSON: Expecting value")
    assert api.revision("g1") is None


def test_it_refuses_empty_arguments_text():
    with pytest.raises(InvalidInput) as raised:
        gemini.call("write_todos", UNPARSED, [], raw="")
    assert raised.value.code == "invalid_json"


@pytest.mark.parametrize(
    ("args", "fits"),
    [
        ({"todos": [{"description": "a", "status": "pending"}]}, True),
        ({"todos": []}, True),
        ({}, True),
        ({"todos": "x"}, True),
        ({"todos": ["x"]}, True),
        ({"todos": [{"content": "a", "status": "pending"}]}, False),
        ({"todos": [{"content": "a"}, {"description": "b"}]}, True),
    ],
)
def test_it_claims_write_todos_calls_that_use_description(args, fits):
    assert gemini.fits("write_todos", args) is fits


def test_it_gives_the_model_the_real_schema():
    (definition,) = gemini.definitions()
    assert definition.name == "write_todos"
    assert "in_progress" in definition.description
    schema = definition.input_schema
    assert schema["additionalProperties"] is False
    assert schema["properties"]["todos"]["items"]["additionalProperties"] is False
    jsonschema.Draft7Validator.check_schema(schema)
    validator = jsonschema.Draft7Validator(schema)
    assert validator.is_valid(PLAN)
    assert validator.is_valid({"todos": []})
    assert not validator.is_valid({"todos": [todo(status="done")]})
    assert not validator.is_valid({"todos": [todo(id="1")]})
