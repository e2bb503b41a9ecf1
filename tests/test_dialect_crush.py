"""Crush's todos through the real URL."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

from todoweb.dialects import crush

PLAN = {
    "todos": [
        {"content": "Read the failing test", "status": "completed", "active_form": "Reading the failing test"},
        {"content": "Fix the parser", "status": "in_progress", "active_form": "Fixing the parser"},
        {"content": "Run the suite", "status": "pending", "active_form": "Running the suite"},
        {"content": "Update the docs", "status": "pending", "active_form": ""},
    ]
}


def updated(pending: int, in_progress: int, completed: int) -> str:
    return (
        "Todo list updated successfully.\n\n"
        f"Status: {pending} pending, {in_progress} in progress, {completed} completed\n"
        "Todos have been modified successfully. Ensure that you continue to use the todo list to track your "
        "progress. Please proceed with the current tasks if applicable."
    )


def todo(content: Any = "a", status: Any = "pending", active_form: Any = "doing a", **extra: Any) -> dict[str, Any]:
    return {"content": content, "status": status, "active_form": active_form, **extra}


def test_it_writes_the_list_and_answers_like_crush(api):
    body = api.ok("r1", "todos", PLAN)
    assert body["dialect"] == "crush"
    assert body["output"] == updated(2, 1, 1)
    steps = body["data"]["todos"]
    assert [(s["content"], s["status"], s["active_form"]) for s in steps] == [
        ("Read the failing test", "completed", "Reading the failing test"),
        ("Fix the parser", "in_progress", "Fixing the parser"),
        ("Run the suite", "pending", "Running the suite"),
        ("Update the docs", "pending", None),
    ]
    assert api.revision("r1") == 1


@pytest.mark.parametrize("args", [{"todos": []}, {"todos": None}])
def test_it_clears_the_list(api, args):
    api.ok("r1", "todos", PLAN)
    body = api.ok("r1", "todos", args)
    assert body["output"] == updated(0, 0, 0)
    assert body["data"]["todos"] == []
    assert api.revision("r1") == 2


def test_it_decodes_as_go_does(api):
    # Case-insensitive keys, unknown keys and nulls ignored, missing fields empty.
    args = {
        "todos": [
            {"CONTENT": "a", "Status": "pending", "ACTIVE_FORM": "doing a", "activeForm": "x", "priority": 1},
            {"content": "b", "status": "completed", "active_form": None},
            {"ſtatus": "in_progress", "content": ""},
        ],
        "extra": [1, 2],
    }
    body = api.ok("r1", "todos", args)
    assert body["output"] == updated(1, 1, 1)
    assert [(s["content"], s["status"], s["active_form"]) for s in body["data"]["todos"]] == [
        ("a", "pending", "doing a"),
        ("b", "completed", None),
        ("", "in_progress", None),
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({}, "missing required parameter: todos"),
        ({"Todos": []}, "missing required parameter: todos"),
        (None, "missing required parameter: todos"),
        ([], "invalid JSON input: json: cannot unmarshal array into Go value of type map[string]interface {}"),
        ("todos", "invalid JSON input: json: cannot unmarshal string into Go value of type map[string]interface {}"),
        (5, "invalid JSON input: json: cannot unmarshal number into Go value of type map[string]interface {}"),
        (True, "invalid JSON input: json: cannot unmarshal bool into Go value of type map[string]interface {}"),
        (
            {"todos": "x"},
            "invalid parameters: json: cannot unmarshal string into Go struct field TodosParams.todos of type "
            "[]tools.TodoItem",
        ),
        (
            {"todos": {}},
            "invalid parameters: json: cannot unmarshal object into Go struct field TodosParams.todos of type "
            "[]tools.TodoItem",
        ),
        (
            {"todos": ["x"]},
            "invalid parameters: json: cannot unmarshal string into Go struct field TodosParams.todos of type "
            "tools.TodoItem",
        ),
        (
            {"todos": [[]]},
            "invalid parameters: json: cannot unmarshal array into Go struct field TodosParams.todos of type "
            "tools.TodoItem",
        ),
        (
            {"todos": [todo(content=5)]},
            "invalid parameters: json: cannot unmarshal number into Go struct field TodoItem.todos.content of type "
            "string",
        ),
        (
            {"todos": [todo(), todo(status=True)]},
            "invalid parameters: json: cannot unmarshal bool into Go struct field TodoItem.todos.status of type string",
        ),
        (
            {"todos": [todo(active_form={"a": 1})]},
            "invalid parameters: json: cannot unmarshal object into Go struct field TodoItem.todos.active_form of "
            "type string",
        ),
        # The first wrong type in the text wins over a bad status anywhere.
        (
            {"todos": [todo(status="done"), todo(content=[1])]},
            "invalid parameters: json: cannot unmarshal array into Go struct field TodoItem.todos.content of type "
            "string",
        ),
        ({"todos": [todo("Write tests", "done")]}, 'invalid status "done" for todo "Write tests"'),
        ({"todos": [todo(status="PENDING")]}, 'invalid status "PENDING" for todo "a"'),
        ({"todos": [todo(status="in-progress")]}, 'invalid status "in-progress" for todo "a"'),
        ({"todos": [{"content": "x"}]}, 'invalid status "" for todo "x"'),
        ({"todos": [None]}, 'invalid status "" for todo ""'),
        ({"todos": [todo(), todo("b", "todo"), todo("c", "nope")]}, 'invalid status "todo" for todo "b"'),
        # Go's %q: printable Unicode as it is, the rest escaped.
        (
            {"todos": [todo('say "hi"\n\tnow\u00a0中文🎉\x01', "bad\\")]},
            'invalid status "bad\\\\" for todo "say \\"hi\\"\\n\\tnow\\u00a0中文🎉\\x01"',
        ),
    ],
)
def test_it_refuses_in_crush_words_and_writes_nothing(api, args, message):
    api.ok("r1", "todos", PLAN)
    api.rejected("r1", "todos", args, message, revision=1)


def test_it_reads_repeated_keys_from_the_models_own_text(api):
    # Go decodes the second list into the items the first one left: "c" keeps "pending".
    text = '{"todos":[{"content":"a","status":"pending","active_form":"x"},{"content":"b"}],"todos":[{"content":"c"}]}'
    body = api.chat("r1", "todos", text, query="?reply=native").json()
    assert body["output"] == updated(1, 0, 0)
    assert [(s["content"], s["active_form"]) for s in body["data"]["todos"]] == [("c", "x")]


def test_a_repeated_key_with_a_wrong_type_is_refused(api):
    text = '{"todos":"x","todos":[{"content":"a","status":"pending","active_form":""}]}'
    response = api.chat("r1", "todos", text, query="?reply=native")
    assert response.status_code == 422
    assert response.json()["reply"]["content"] == (
        "invalid parameters: json: cannot unmarshal string into Go struct field TodosParams.todos of type "
        "[]tools.TodoItem"
    )
    assert api.revision("r1") is None


@pytest.mark.parametrize("text", ['{"todos": [}', "", "{'todos': []}", '{"todos": NaN}'])
def test_it_refuses_arguments_that_are_not_json_in_crush_words(api, text):
    response = api.chat("r1", "todos", text, query="?reply=native")
    body = response.json()
    assert response.status_code == 400, body
    assert body["error"]["code"] == "invalid_json"
    assert body["reply"]["content"] == (
        "Tool call failed: arguments were not valid JSON. Please check your tool call format and try again."
    )
    assert api.revision("r1") is None


def test_it_refuses_json_that_no_database_stores(api):
    response = api.chat("r1", "todos", '{"todos": [{"content": "a\\u0000", "status": "pending"}]}')
    assert response.status_code == 422
    assert response.json()["error"]["message"] == "Text may not contain the NUL character (\\u0000)"
    assert api.revision("r1") is None


def test_it_judges_chat_arguments_that_are_not_an_object(api):
    response = api.chat("r1", "todos", "[1, 2]", query="?reply=native")
    assert response.status_code == 422
    assert response.json()["reply"]["content"] == (
        "invalid JSON input: json: cannot unmarshal array into Go value of type map[string]interface {}"
    )


@pytest.mark.parametrize("content", ["<script>alert(1)</script>", "修复解析器 🐛", "  padded  ", ""])
def test_it_stores_hostile_text_verbatim(api, content):
    body = api.ok("r1", "todos", {"todos": [todo(content, active_form=content)]})
    assert body["data"]["todos"][0]["content"] == content


def test_it_accepts_several_in_progress_steps_and_leaves_the_rule_to_policy(api):
    body = api.ok("r1", "todos", {"todos": [todo("a", "in_progress"), todo("b", "in_progress")]})
    assert body["output"] == updated(0, 2, 0)
    assert [w["code"] for w in body["data"]["warnings"]] == ["multiple_in_progress"]


def test_it_accepts_the_chat_completions_form(api):
    response = api.chat("r1", "todos", json.dumps(PLAN), query="?reply=native")
    body = response.json()
    assert response.status_code == 200, body
    assert body["reply"] == {"role": "tool", "tool_call_id": "call_1", "content": updated(2, 1, 1)}


def test_it_gives_the_model_the_real_schema():
    (definition,) = crush.definitions()
    assert definition.name == "todos"
    assert definition.description.startswith("Manage a structured task list for multi-step work")
    schema = definition.input_schema
    jsonschema.Draft7Validator.check_schema(schema)
    assert schema["properties"]["todos"]["items"]["required"] == ["content", "status", "active_form"]
    validator = jsonschema.Draft7Validator(schema)
    assert validator.is_valid(PLAN)
    assert not validator.is_valid({"todos": [{"content": "a", "status": "pending"}]})
