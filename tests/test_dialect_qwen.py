"""Qwen Code's todo_write with `id` through the real URL."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

from todoweb.calls.errors import InvalidInput
from todoweb.dialects import qwen
from todoweb.plan.steps import Item


def modified(todos_json: str) -> str:
    return (
        "Todos have been modified successfully. Ensure that you continue to use the todo list to track your "
        "progress. Please proceed with the current tasks if applicable\n\n"
        "<system-reminder>\n"
        "Your todo list has changed. DO NOT mention this explicitly to the user. Here are the latest contents of "
        "your todo list:\n\n"
        f"{todos_json}. Continue on with the tasks at hand if applicable.\n"
        "</system-reminder>"
    )


CLEARED = (
    "Todo list has been cleared.\n\n<system-reminder>\nYour todo list is now empty. DO NOT mention this explicitly "
    "to the user. You have no pending tasks in your todo list.\n</system-reminder>"
)
UNCHANGED = (
    "Todo list is already up to date. No changes were needed.\n\n<system-reminder>\nYour todo list was not "
    "modified because it is already current. Continue with your existing tasks.\n</system-reminder>"
)

PLAN = {
    "todos": [
        {"id": "1", "content": "Read the failing test", "status": "completed"},
        {"id": "2", "content": "Fix the parser", "status": "in_progress"},
        {"id": "3", "content": "Run the suite", "status": "pending", "blockedBy": ["2"]},
    ]
}


def todo(step_id: Any = "1", content: Any = "a", status: Any = "pending", **extra: Any) -> dict[str, Any]:
    return {"id": step_id, "content": content, "status": status, **extra}


def forced(api, key: str, args: Any):
    """A call routed to Qwen whatever its shape (`{}` alone would be WeKnora's)."""
    return api.tool(key, {"tool": "todo_write", "dialect": "qwen", "input": args}, query="?reply=native")


def rejected(api, key: str, args: Any, message: str, *, revision: int | None = None) -> dict[str, Any]:
    response = forced(api, key, args)
    body = response.json()
    assert response.status_code == 422, body
    assert body["error"]["message"] == message
    assert body["reply"]["is_error"] is True and body["reply"]["content"] == message
    assert api.revision(key) == revision
    return body


def test_it_writes_the_list_and_answers_like_qwen(api):
    body = api.ok("q1", "todo_write", PLAN)
    assert body["dialect"] == "qwen"
    assert body["output"] == modified(
        '[{"id":"1","content":"Read the failing test","status":"completed"},'
        '{"id":"2","content":"Fix the parser","status":"in_progress"},'
        '{"id":"3","content":"Run the suite","status":"pending","blockedBy":["2"]}]'
    )
    steps = body["data"]["todos"]
    assert [(s["id"], s["content"], s["status"], s["blocked_by"]) for s in steps] == [
        ("1", "Read the failing test", "completed", []),
        ("2", "Fix the parser", "in_progress", []),
        ("3", "Run the suite", "pending", ["2"]),
    ]
    assert api.revision("q1") == 1


def test_it_clears_the_list(api):
    api.ok("q1", "todo_write", PLAN)
    body = api.ok("q1", "todo_write", {"todos": []})
    assert body["output"] == CLEARED
    assert body["data"]["todos"] == []
    assert api.revision("q1") == 2


def test_it_writes_nothing_when_the_list_is_unchanged(api):
    api.ok("q1", "todo_write", PLAN)
    body = api.ok("q1", "todo_write", PLAN)
    assert body["output"] == UNCHANGED
    assert [s["id"] for s in body["data"]["todos"]] == ["1", "2", "3"]
    assert api.revision("q1") == 1


def test_clearing_an_empty_list_is_already_up_to_date(api):
    body = api.ok("q1", "todo_write", {"todos": []})
    assert body["output"] == UNCHANGED
    assert api.revision("q1") in (None, 0)


def test_it_echoes_extra_keys_as_javascript_prints_them_and_stores_none(api):
    args = {"todos": [todo(note="x", weight=1.0, ratio=1.5e-7, **{"10": True, "2": None})]}
    body = api.ok("q1", "todo_write", args)
    assert body["output"] == modified(
        '[{"2":null,"10":true,"id":"1","content":"a","status":"pending","note":"x","weight":1,"ratio":1.5e-7}]'
    )
    step = body["data"]["todos"][0]
    assert (step["notes"], step["priority"]) == (None, None)


def test_it_keeps_omitted_dependencies_while_the_plan_is_active(api):
    api.ok("q1", "todo_write", PLAN)
    args = {"todos": [todo("2", "Fix the parser", "completed"), todo("3", "Run the suite", "in_progress")]}
    body = api.ok("q1", "todo_write", args)
    # "2" is still in the list, so "3" keeps depending on it.
    assert body["output"] == modified(
        '[{"id":"2","content":"Fix the parser","status":"completed"},'
        '{"id":"3","content":"Run the suite","status":"in_progress","blockedBy":["2"]}]'
    )
    assert body["data"]["todos"][1]["blocked_by"] == ["2"]


def test_kept_dependencies_are_cut_to_ids_still_listed(api):
    api.ok("q1", "todo_write", PLAN)
    body = api.ok("q1", "todo_write", {"todos": [todo("3", "Run the suite")]})
    assert body["output"] == modified('[{"id":"3","content":"Run the suite","status":"pending","blockedBy":[]}]')
    assert body["data"]["todos"][0]["blocked_by"] == []


def test_an_empty_blocked_by_removes_dependencies(api):
    api.ok("q1", "todo_write", PLAN)
    args = {"todos": [todo("2", "Fix the parser", "in_progress"), todo("3", "Run the suite", blockedBy=[])]}
    body = api.ok("q1", "todo_write", args)
    assert body["data"]["todos"][1]["blocked_by"] == []


def test_dependencies_are_not_kept_once_every_step_was_completed(api):
    done = {"todos": [todo("1", "a", "completed"), todo("2", "b", "completed", blockedBy=["1"])]}
    api.ok("q1", "todo_write", done)
    body = api.ok("q1", "todo_write", {"todos": [todo("1", "a"), todo("2", "b")]})
    assert body["output"] == modified(
        '[{"id":"1","content":"a","status":"pending"},{"id":"2","content":"b","status":"pending"}]'
    )


def test_kept_dependencies_that_would_make_a_cycle_are_dropped(api):
    api.ok("q1", "todo_write", {"todos": [todo("1", "a"), todo("2", "b", blockedBy=["1"])]})
    # "1" now depends on "2": keeping "2"'s old dependency on "1" would be a cycle.
    body = api.ok("q1", "todo_write", {"todos": [todo("1", "a", blockedBy=["2"]), todo("2", "b")]})
    assert [s["blocked_by"] for s in body["data"]["todos"]] == [["2"], []]


def test_a_kept_dependency_that_breaks_a_rule_fails_at_execution():
    # A list another dialect wrote may hold what Qwen never would: a step blocked by itself.
    current = [Item(id="1", content="a", status="pending", blocked_by=["1"])]
    with pytest.raises(InvalidInput) as raised:
        qwen.call("todo_write", {"todos": [todo("1", "a")]}, current)
    assert raised.value.message == (
        "Failed to modify todos. An error occurred during the operation.\n\n<system-reminder>\n"
        'Todo list modification failed with error: Todo "1" must not depend on itself.. '
        "You may need to retry or handle this error appropriately.\n</system-reminder>"
    )


NOT_AN_ARRAY = 'Parameter "todos" must be an array.'
NOT_AN_OBJECT = "Each todo must be an object."
BAD_ID = 'Each todo must have a non-empty "id" string of at most 500 characters.'
BAD_CONTENT = 'Each todo must have a non-empty "content" string.'
BAD_STATUS = 'Each todo must have a valid "status" (pending, in_progress, completed).'
BAD_BLOCKED_BY = 'Each todo "blockedBy" value must be an array of non-empty Todo IDs of at most 500 characters.'


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({}, NOT_AN_ARRAY),
        ({"todos": None}, NOT_AN_ARRAY),
        ({"todos": "[]"}, NOT_AN_ARRAY),
        ({"todos": {"0": todo()}}, NOT_AN_ARRAY),
        ([todo()], NOT_AN_ARRAY),
        ("todos", NOT_AN_ARRAY),
        (5, NOT_AN_ARRAY),
        (None, NOT_AN_ARRAY),
        ({"todos": [None]}, NOT_AN_OBJECT),
        ({"todos": ["a"]}, NOT_AN_OBJECT),
        ({"todos": [7]}, NOT_AN_OBJECT),
        ({"todos": [todo(), False]}, NOT_AN_OBJECT),
        ({"todos": [[]]}, BAD_ID),  # an array is an object to `typeof`
        ({"todos": [{"content": "a", "status": "pending"}]}, BAD_ID),
        ({"todos": [todo("")]}, BAD_ID),
        ({"todos": [todo(" \u3000\t")]}, BAD_ID),
        ({"todos": [todo(1)]}, BAD_ID),
        ({"todos": [todo("x" * 501)]}, BAD_ID),
        ({"todos": [todo("🎉" * 251)]}, BAD_ID),  # 502 UTF-16 units
        ({"todos": [todo(content=None)]}, BAD_CONTENT),
        ({"todos": [todo(content="")]}, BAD_CONTENT),
        ({"todos": [todo(content="\ufeff \u2028")]}, BAD_CONTENT),
        ({"todos": [todo(content=["a"])]}, BAD_CONTENT),
        ({"todos": [todo(status="done")]}, BAD_STATUS),
        ({"todos": [todo(status="PENDING")]}, BAD_STATUS),
        ({"todos": [todo(status=None)]}, BAD_STATUS),
        ({"todos": [{"id": "1", "content": "a"}]}, BAD_STATUS),
        ({"todos": [todo(blockedBy=None)]}, BAD_BLOCKED_BY),
        ({"todos": [todo(blockedBy="2")]}, BAD_BLOCKED_BY),
        ({"todos": [todo(blockedBy=[" "])]}, BAD_BLOCKED_BY),
        ({"todos": [todo(blockedBy=[2])]}, BAD_BLOCKED_BY),
        ({"todos": [todo(blockedBy=["x" * 501])]}, BAD_BLOCKED_BY),
        ({"todos": [todo("1"), todo("1", "b")]}, "Todo IDs must be unique within the array."),
        (
            {"todos": [todo("1"), todo("2", blockedBy=["1", "1"])]},
            'Todo "2" must not contain duplicate blockedBy references.',
        ),
        ({"todos": [todo("a", blockedBy=["a"])]}, 'Todo "a" must not depend on itself.'),
        ({"todos": [todo("a", blockedBy=["zz"])]}, 'Todo "a" references unknown dependency "zz".'),
        (
            {"todos": [todo("1", blockedBy=["3"]), todo("2", blockedBy=["1"]), todo("3", blockedBy=["2"])]},
            "Todo dependencies must not contain a cycle.",
        ),
    ],
)
def test_it_refuses_in_qwen_words_and_writes_nothing(api, args, message):
    api.ok("q1", "todo_write", PLAN)
    rejected(api, "q1", args, message, revision=1)


@pytest.mark.parametrize(
    ("todos", "message"),
    [
        # Item by item, every check of one item before the next item.
        ([todo(status="done"), todo("")], BAD_STATUS),
        ([todo("1"), todo("1", status="done")], BAD_STATUS),
        # Per-item shape before uniqueness, uniqueness before dependencies, dependencies before cycles.
        ([todo("1"), todo("1"), None], NOT_AN_OBJECT),
        ([todo("1", blockedBy=["9"]), todo("1")], "Todo IDs must be unique within the array."),
        (
            [todo("1", blockedBy=["2"]), todo("2", blockedBy=["1", "9"])],
            'Todo "2" references unknown dependency "9".',
        ),
        # The first unknown dependency is named.
        ([todo("a", blockedBy=["y", "z"])], 'Todo "a" references unknown dependency "y".'),
    ],
)
def test_it_reports_the_first_problem_in_qwen_order(api, todos, message):
    rejected(api, "q1", {"todos": todos}, message)


def test_it_counts_ids_in_utf16_units(api):
    body = api.ok("q1", "todo_write", {"todos": [todo("🎉" * 250)]})
    assert body["data"]["todos"][0]["id"] == "🎉" * 250


@pytest.mark.parametrize("content", ["<script>alert(1)</script>", "修复解析器 🐛", "  padded  ", "\u200b"])
def test_it_stores_hostile_text_verbatim(api, content):
    body = api.ok("q1", "todo_write", {"todos": [todo("<b>", content)]})
    assert body["data"]["todos"][0]["content"] == content
    assert body["data"]["todos"][0]["id"] == "<b>"
    assert body["output"] == modified(
        f'[{{"id":"<b>","content":{json.dumps(content, ensure_ascii=False)},"status":"pending"}}]'
    )


def test_it_accepts_several_in_progress_steps_and_leaves_the_rule_to_policy(api):
    body = api.ok("q1", "todo_write", {"todos": [todo("1", status="in_progress"), todo("2", status="in_progress")]})
    assert body["data"]["counts"]["in_progress"] == 2
    assert [w["code"] for w in body["data"]["warnings"]] == ["multiple_in_progress"]


def test_it_accepts_the_chat_completions_form(api):
    response = api.chat("q1", "todo_write", json.dumps(PLAN), query="?reply=native")
    body = response.json()
    assert response.status_code == 200, body
    assert body["dialect"] == "qwen"
    assert body["reply"] == {"role": "tool", "tool_call_id": "call_1", "content": body["output"]}
    assert body["output"].startswith("Todos have been modified successfully.")


def test_it_refuses_a_chat_call_in_qwen_words(api):
    response = api.chat("q1", "todo_write", json.dumps({"todos": [todo(status="done")]}), query="?reply=native")
    assert response.status_code == 422
    assert response.json()["reply"]["content"] == BAD_STATUS
    assert api.revision("q1") is None


@pytest.mark.parametrize(
    ("args", "fits"),
    [
        (PLAN, True),
        ({"todos": []}, True),
        ({"todos": "x"}, True),
        ({}, False),
        ({"steps": []}, False),
        ([PLAN], False),
    ],
)
def test_it_claims_todo_write_calls_that_carry_todos(args, fits):
    assert qwen.fits("todo_write", args) is fits


def test_it_gives_the_model_the_real_schema():
    (definition,) = qwen.definitions()
    assert definition.name == "todo_write"
    assert definition.description.startswith("Use this tool to create and manage a user-visible task list")
    schema = definition.input_schema
    jsonschema.Draft7Validator.check_schema(schema)
    assert schema["properties"]["todos"]["items"]["additionalProperties"] is False
    assert schema["properties"]["todos"]["items"]["required"] == ["content", "status", "id"]
    validator = jsonschema.Draft7Validator(schema)
    assert validator.is_valid(PLAN)
    assert not validator.is_valid({"todos": [todo(status="done")]})
