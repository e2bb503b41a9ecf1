"""opencode's (and Kilo's) todowrite / todoread through the real URL."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

from todoweb.dialects import opencode

PLAN = {
    "todos": [
        {"content": "Read the failing test", "status": "completed", "priority": "high"},
        {"content": "Fix the parser", "status": "in_progress", "priority": "high"},
        {"content": "Run the suite", "status": "pending", "priority": "medium"},
        {"content": "Rewrite the docs", "status": "cancelled", "priority": "low"},
    ]
}

# JSON.stringify(todos, null, 2), as opencode answers.
PLAN_REPLY = """[
  {
    "content": "Read the failing test",
    "status": "completed",
    "priority": "high"
  },
  {
    "content": "Fix the parser",
    "status": "in_progress",
    "priority": "high"
  },
  {
    "content": "Run the suite",
    "status": "pending",
    "priority": "medium"
  },
  {
    "content": "Rewrite the docs",
    "status": "cancelled",
    "priority": "low"
  }
]"""


def todo(content: Any = "a", status: Any = "pending", priority: Any = "high", **extra: Any) -> dict[str, Any]:
    return {"content": content, "status": status, "priority": priority, **extra}


def invalid(issue: str, tool: str = "todowrite") -> str:
    return (
        f"The {tool} tool was called with invalid arguments: SchemaError({issue}).\n"
        "Please rewrite the input so it satisfies the expected schema."
    )


def test_a_todowrite_call_meant_for_claude_codes_todowrite_says_so(api):
    """`todowrite` is one letter's case away from `TodoWrite`: when the input is a
    TodoWrite plan, the refusal says which tool it fits."""
    plan = {"todos": [{"content": "Fix the bug", "status": "in_progress", "activeForm": "Fixing the bug"}]}
    message = api.call("s1", "todowrite", plan).json()["error"]["message"]
    assert message.endswith(
        "\n\nThis input fits the tool 'TodoWrite' (claude), not 'todowrite': check the tool's name."
    )
    refused = api.call("s1", "todowrite", {"todos": [{"content": "x", "status": "pending"}]}).json()["error"]["message"]
    assert "This input fits" not in refused  # no priority, and no activeForm either: it fits neither


def test_it_writes_the_list_and_answers_like_opencode(api):
    body = api.ok("o1", "todowrite", PLAN)
    assert body["dialect"] == "opencode"
    assert body["output"] == PLAN_REPLY
    assert [(s["content"], s["status"], s["priority"]) for s in body["data"]["todos"]] == [
        (t["content"], t["status"], t["priority"]) for t in PLAN["todos"]
    ]
    assert body["data"]["warnings"] == []
    assert api.revision("o1") == 1


def test_it_clears_the_list(api):
    api.ok("o1", "todowrite", PLAN)
    body = api.ok("o1", "todowrite", {"todos": []})
    assert body["output"] == "[]"
    assert body["data"]["todos"] == []
    assert api.revision("o1") == 2


def test_it_drops_extra_keys_and_answers_fields_in_schema_order(api):
    args = {"todos": [{"priority": "low", "id": "1", "status": "pending", "content": "a", "note": 5}], "x": 1}
    body = api.ok("o1", "todowrite", args)
    assert body["output"] == '[\n  {\n    "content": "a",\n    "status": "pending",\n    "priority": "low"\n  }\n]'
    step = body["data"]["todos"][0]
    assert (step["content"], step["priority"], step["notes"]) == ("a", "low", None)


@pytest.mark.parametrize("status", ["done", "PENDING", "blocked", "", "in-progress"])
def test_it_keeps_an_unknown_status_as_pending_with_a_warning(api, status):
    body = api.ok("o1", "todowrite", {"todos": [todo("a", "completed"), todo("b", status)]})
    assert f'"status": {json.dumps(status)}' in body["output"]  # the reply shows it as sent
    assert [s["status"] for s in body["data"]["todos"]] == ["completed", "pending"]
    (warning,) = body["data"]["warnings"]
    assert warning["code"] == "unknown_status"
    assert f"'{status}'" in warning["message"]


def test_it_accepts_any_priority_and_empty_text(api):
    body = api.ok("o1", "todowrite", {"todos": [todo("", "pending", "urgent!!")]})
    assert (body["data"]["todos"][0]["content"], body["data"]["todos"][0]["priority"]) == ("", "urgent!!")


def test_it_accepts_the_list_as_a_json_string_as_kilo_does(api):
    body = api.ok("o1", "todowrite", {"todos": json.dumps(PLAN["todos"])})
    assert body["output"] == PLAN_REPLY
    assert len(body["data"]["todos"]) == 4


@pytest.mark.parametrize(
    ("args", "issue"),
    [
        ({}, 'Missing key\n  at ["todos"]'),
        ({"Todos": []}, 'Missing key\n  at ["todos"]'),
        ({"todos": None}, 'Expected array, got null\n  at ["todos"]'),
        ({"todos": 5}, 'Expected array, got 5\n  at ["todos"]'),
        ({"todos": {"a": [1, 2]}}, 'Expected array, got {"a":[1,2]}\n  at ["todos"]'),
        ({"todos": [None]}, 'Expected Todo, got null\n  at ["todos"][0]'),
        ({"todos": [todo(), ["a"]]}, 'Expected Todo, got ["a"]\n  at ["todos"][1]'),
        ({"todos": [todo(), "x"]}, 'Expected Todo, got "x"\n  at ["todos"][1]'),
        ({"todos": [{"status": "pending"}]}, 'Missing key\n  at ["todos"][0]["content"]'),
        ({"todos": [{"content": "a", "priority": "high"}]}, 'Missing key\n  at ["todos"][0]["status"]'),
        ({"todos": [{"content": "a", "status": "pending"}]}, 'Missing key\n  at ["todos"][0]["priority"]'),
        ({"todos": [todo(content=5)]}, 'Expected string, got 5\n  at ["todos"][0]["content"]'),
        ({"todos": [todo(content=None)]}, 'Expected string, got null\n  at ["todos"][0]["content"]'),
        ({"todos": [todo(status=1.5)]}, 'Expected string, got 1.5\n  at ["todos"][0]["status"]'),
        ({"todos": [todo(status=True)]}, 'Expected string, got true\n  at ["todos"][0]["status"]'),
        ({"todos": [todo(priority=1.0)]}, 'Expected string, got 1\n  at ["todos"][0]["priority"]'),
        (
            {"todos": [todo(priority={"10": 1, "2": "b"})]},
            'Expected string, got {"2":"b","10":1}\n  at ["todos"][0]["priority"]',
        ),
        # The first issue in schema order: content before status, item 0 before item 1.
        (
            {"todos": [{"status": 1, "content": 2, "priority": 3}]},
            'Expected string, got 2\n  at ["todos"][0]["content"]',
        ),
        ({"todos": [todo(status=None), todo(content=None)]}, 'Expected string, got null\n  at ["todos"][0]["status"]'),
        ({"todos": [todo(), {"content": "b"}]}, 'Missing key\n  at ["todos"][1]["status"]'),
        # Kilo's JSON-string list is judged as the list it holds.
        ({"todos": "{}"}, 'Expected array, got {}\n  at ["todos"]'),
        ({"todos": '[{"content":"a"}]'}, 'Missing key\n  at ["todos"][0]["status"]'),
        ({"todos": "x"}, 'SyntaxError: Expecting value: line 1 column 1 (char 0)\n  at ["todos"]'),
    ],
)
def test_it_refuses_with_opencodes_schema_error(api, args, issue):
    api.ok("o1", "todowrite", PLAN)
    api.rejected("o1", "todowrite", args, invalid(issue), revision=1)


@pytest.mark.parametrize(
    ("args", "issue"),
    [
        ([], "Expected object, got []"),
        ([todo()], 'Expected object, got [{"content":"a","status":"pending","priority":"high"}]'),
        ("todos", 'Expected object, got "todos"'),
        (None, "Expected object, got null"),
        (7, "Expected object, got 7"),
    ],
)
def test_it_refuses_input_that_is_not_an_object(api, args, issue):
    api.rejected("o1", "todowrite", args, invalid(issue))


def test_it_quotes_hostile_values_as_javascript_does(api):
    bad = {"todos": [todo(content=['<b>"x"</b>', "中文🎉", "\n"])]}
    api.rejected(
        "o1",
        "todowrite",
        bad,
        invalid('Expected string, got ["<b>\\"x\\"</b>","中文🎉","\\n"]\n  at ["todos"][0]["content"]'),
    )


@pytest.mark.parametrize("content", ["<script>alert(1)</script>", "修复解析器 🐛", "  padded\n  ", "\u202e"])
def test_it_stores_hostile_text_verbatim(api, content):
    body = api.ok("o1", "todowrite", {"todos": [todo(content)]})
    assert body["data"]["todos"][0]["content"] == content
    assert json.loads(body["output"]) == [todo(content)]


def test_it_reads_the_current_list_without_writing(api):
    api.ok("o1", "todowrite", PLAN)
    body = api.ok("o1", "todoread", {})
    assert body["output"] == PLAN_REPLY
    assert api.revision("o1") == 1


def test_it_reads_an_empty_list(api):
    body = api.ok("o1", "todoread", {})
    assert body["output"] == "[]"
    assert api.revision("o1") in (None, 0)


def test_it_reads_steps_other_dialects_wrote(api):
    api.call("o1", "write_todos", {"todos": [{"description": "Ask about the API", "status": "blocked"}]})
    body = api.ok("o1", "todoread", {})
    assert json.loads(body["output"]) == [{"content": "Ask about the API", "status": "blocked", "priority": None}]


def test_it_refuses_a_read_that_is_not_an_object(api):
    api.rejected("o1", "todoread", [], invalid("Expected object, got []", tool="todoread"))


def test_it_accepts_several_in_progress_steps_and_leaves_the_rule_to_policy(api):
    body = api.ok("o1", "todowrite", {"todos": [todo("a", "in_progress"), todo("b", "in_progress")]})
    assert [w["code"] for w in body["data"]["warnings"]] == ["multiple_in_progress"]


def test_it_accepts_the_chat_completions_form(api):
    response = api.chat("o1", "todowrite", json.dumps(PLAN), query="?reply=native")
    body = response.json()
    assert response.status_code == 200, body
    assert body["reply"] == {"role": "tool", "tool_call_id": "call_1", "content": PLAN_REPLY}


def test_it_refuses_a_chat_call_in_opencode_words(api):
    response = api.chat("o1", "todowrite", '{"todos": [{"content": "a"}]}', query="?reply=native")
    assert response.status_code == 422
    assert response.json()["reply"]["content"] == invalid('Missing key\n  at ["todos"][0]["status"]')
    assert api.revision("o1") is None


def test_it_gives_the_model_the_real_schemas():
    write, read = opencode.definitions()
    assert (write.name, read.name) == ("todowrite", "todoread")
    assert write.description.startswith("Create and maintain a structured task list for the current coding session.")
    assert read.description == "Use this tool to read your todo list"
    for definition in (write, read):
        jsonschema.Draft7Validator.check_schema(definition.input_schema)
    validator = jsonschema.Draft7Validator(write.input_schema)
    assert validator.is_valid(PLAN)
    assert validator.is_valid({"todos": [todo(status="anything", extra=1)]})
    assert not validator.is_valid({"todos": [{"content": "a", "status": "pending"}]})
