"""Cursor's todo_write with `merge` (rules and replies from Cursor's agent
code, error texts as zod 4.6.7 writes them) through the real URL."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

from tests.conftest import assert_refused
from todoweb.dialects import cursor
from todoweb.plan.steps import Item

TOOL = "todo_write"
SUCCESS = (
    "Successfully updated TODOs. Make sure to follow and update your TODO list as you make progress. "
    "Cancel and add new TODO tasks as needed when the user makes a correction or follow-up request."
)
NONE_IN_PROGRESS = " No TODOs are marked in-progress, make sure to mark them before starting the next."
LISTED = "\n\nHere are the latest contents of your todo list:\n"
CLEANUP = "\n\n<system_reminder>You have many finished todos. Consider cleaning up old ones.</system_reminder>"
NEEDS_CONTENT = "Invalid argument: must provide 'content' for new todos items"
PLAN = {
    "merge": False,
    "todos": [
        {"id": "state", "content": "Add state management", "status": "in_progress"},
        {"id": "styles", "content": "Implement styles", "status": "pending"},
        {"id": "toggle", "content": "Create toggle component", "status": "pending"},
    ],
}


def todo(id: Any = "1", content: Any = "a", status: Any = "pending", **extra: Any) -> dict[str, Any]:
    return {"id": id, "content": content, "status": status, **extra}


def write(api, key: str, args: Any, *, forced: bool = False):
    return api.call(key, TOOL, args, query="?reply=native" + ("&dialect=cursor" if forced else ""))


def ok(api, key: str, args: Any, *, forced: bool = False) -> dict:
    response = write(api, key, args, forced=forced)
    assert response.status_code == 200, response.content
    assert response.json()["dialect"] == "cursor"
    return response.json()


def rejected(api, key: str, args: Any, message: str, *, revision: int | None, forced: bool = False) -> None:
    response = write(api, key, args, forced=forced)
    body = assert_refused(response, message)
    assert body["reply"]["content"] == message
    assert api.revision(key) == revision


def steps(body: dict) -> list[tuple[str, str, str]]:
    return [(t["id"], t["content"], t["status"]) for t in body["data"]["todos"]]


def listed(*todos: tuple[str, str, str]) -> str:
    return LISTED + json.dumps([{"id": i, "content": c, "status": s} for i, c, s in todos], separators=(",", ":"))


def test_merge_false_replaces_the_list_and_answers_without_it(api):
    body = ok(api, "c1", PLAN)
    assert body["output"] == SUCCESS
    assert steps(body) == [
        ("state", "Add state management", "in_progress"),
        ("styles", "Implement styles", "pending"),
        ("toggle", "Create toggle component", "pending"),
    ]
    assert api.revision("c1") == 1


def test_merge_true_upserts_by_id_and_answers_with_the_whole_list(api):
    ok(api, "c1", PLAN)
    update = {
        "merge": True,
        "todos": [
            {"id": "state", "status": "completed"},
            {"id": "styles", "status": "in_progress"},
            todo("docs", "Write docs"),
        ],
    }
    body = ok(api, "c1", update)
    expected = [
        ("state", "Add state management", "completed"),
        ("styles", "Implement styles", "in_progress"),
        ("toggle", "Create toggle component", "pending"),
        ("docs", "Write docs", "pending"),
    ]
    assert steps(body) == expected
    assert body["output"] == SUCCESS + listed(*expected)
    assert body["data"]["dropped"] == []
    assert api.revision("c1") == 2


def test_the_in_progress_reminder_follows_the_resulting_list(api):
    assert ok(api, "c1", {"merge": False, "todos": [todo("1"), todo("2")]})["output"] == SUCCESS + NONE_IN_PROGRESS
    body = ok(api, "c1", {"merge": True, "todos": [{"id": "1", "status": "in_progress"}]})
    assert body["output"] == SUCCESS + listed(("1", "a", "in_progress"), ("2", "a", "pending"))
    body = ok(api, "c1", {"merge": True, "todos": [{"id": "1", "status": "completed"}]})
    assert body["output"] == SUCCESS + NONE_IN_PROGRESS + listed(("1", "a", "completed"), ("2", "a", "pending"))


def test_a_new_id_needs_content_when_merging(api):
    ok(api, "c1", PLAN)
    rejected(
        api,
        "c1",
        {"merge": True, "todos": [{"id": "state", "status": "completed"}, {"id": "new", "status": "pending"}]},
        NEEDS_CONTENT,
        revision=1,
    )
    rejected(api, "c1", {"merge": True, "todos": [todo("new", "")]}, NEEDS_CONTENT, revision=1)
    rejected(api, "c2", {"merge": True, "todos": [{"id": "1", "status": "pending"}]}, NEEDS_CONTENT, revision=None)


def test_a_repeated_new_id_takes_its_content_from_the_first(api):
    body = ok(api, "c1", {"merge": True, "todos": [todo("9", "x"), {"id": "9", "status": "cancelled"}]})
    assert steps(body) == [("9", "", "cancelled")]


def test_an_empty_content_keeps_the_ids_old_content(api):
    ok(api, "c1", PLAN)
    body = ok(api, "c1", {"merge": True, "todos": [todo("state", "", "completed")]})
    assert steps(body)[0] == ("state", "Add state management", "completed")
    body = ok(api, "c1", {"merge": False, "todos": [todo("styles", "", "pending"), todo("other", "", "pending")]})
    assert steps(body) == [("styles", "Implement styles", "pending"), ("other", "", "pending")]


def test_merge_false_keeps_a_repeated_id_twice(api):
    body = ok(api, "c1", {"merge": False, "todos": [todo("1", "a"), todo("1", "b")]})
    assert [(t["content"], t["status"]) for t in body["data"]["todos"]] == [("a", "pending"), ("b", "pending")]
    assert len({t["id"] for t in body["data"]["todos"]}) == 2


def test_an_empty_list_clears_with_merge_false_and_changes_nothing_with_merge_true(api):
    ok(api, "c1", PLAN)
    body = ok(api, "c1", {"merge": True, "todos": []})
    assert len(body["data"]["todos"]) == 3
    assert body["output"].startswith(SUCCESS + LISTED)
    body = ok(api, "c1", {"merge": False, "todos": []})
    assert body["output"] == SUCCESS
    assert body["data"]["todos"] == []


def test_merge_defaults_to_true_when_the_key_is_missing(api):
    ok(api, "c1", PLAN)
    body = ok(api, "c1", {"todos": [{"id": "toggle", "status": "cancelled"}]}, forced=True)
    assert steps(body)[2] == ("toggle", "Create toggle component", "cancelled")
    assert LISTED in body["output"]


@pytest.mark.parametrize(("merge", "replaced"), [("true", False), ("false", True)])
def test_merge_may_be_the_text_of_a_boolean(api, merge, replaced):
    ok(api, "c1", PLAN)
    body = ok(api, "c1", {"merge": merge, "todos": [todo("x", "X")]})
    assert len(body["data"]["todos"]) == (1 if replaced else 4)


def test_statuses_match_without_case_and_unknown_keys_are_dropped(api):
    body = ok(
        api,
        "c1",
        {
            "merge": False,
            "todos": [todo("1", "a", "In_Progress", dependencies=["2"]), todo("2", "b", "CANCELLED")],
            "extra": 1,
        },
    )
    assert steps(body) == [("1", "a", "in_progress"), ("2", "b", "cancelled")]


def test_todos_sent_as_json_text_are_decoded(api):
    text = json.dumps([todo("1", "a", "in_progress")])
    assert steps(ok(api, "c1", {"merge": False, "todos": text})) == [("1", "a", "in_progress")]
    assert steps(ok(api, "c2", {"merge": False, "todos": text + " ,]"})) == [("1", "a", "in_progress")]


def test_the_prompt_minimum_of_two_items_is_not_enforced(api):
    assert steps(ok(api, "c1", {"merge": False, "todos": [todo("1", "only")]})) == [("1", "only", "pending")]


def test_many_finished_todos_bring_the_cleanup_reminder(api):
    todos = [todo(str(i), f"t{i}", "completed") for i in range(21)] + [todo("next", "Next", "in_progress")]
    assert ok(api, "c1", {"merge": False, "todos": todos})["output"] == SUCCESS + CLEANUP
    todos = [todo(str(i), f"t{i}", "completed") for i in range(20)]
    assert ok(api, "c2", {"merge": False, "todos": todos})["output"] == SUCCESS


def test_only_the_fifty_newest_finished_todos_are_kept(api):
    old = [todo(f"old{i}", f"old {i}", "completed") for i in range(50)]
    ok(api, "c1", {"merge": False, "todos": [*old, todo("open", "Open", "pending")]})
    body = ok(api, "c1", {"merge": True, "todos": [todo("new", "New", "cancelled")]})
    ids = [t["id"] for t in body["data"]["todos"]]
    assert "old0" not in ids and ids[0] == "old1" and ids[-1] == "new"
    assert len(ids) == 51
    assert body["data"]["dropped"] == []  # pruned on purpose, and finished anyway


def test_other_dialects_statuses_pass_through_the_listing():
    current = [Item(id="1", content="a", status="failed"), Item(id="2", content="b", status="blocked")]
    outcome = cursor.call(TOOL, {"merge": True, "todos": []}, current)
    assert outcome.native == SUCCESS + listed(("1", "a", "failed"), ("2", "b", "blocked"))


def test_hostile_text_is_stored_and_listed_verbatim(api):
    content = '<img src=x onerror="alert(1)"> 实现开关 🌙 \\ \n'
    body = ok(api, "c1", {"merge": True, "todos": [todo("<id>", content, "in_progress")]})
    assert steps(body) == [("<id>", content, "in_progress")]
    assert body["output"].endswith(
        '[{"id":"<id>","content":"<img src=x onerror=\\"alert(1)\\"> 实现开关 🌙 \\\\ \\n","status":"in_progress"}]'
    )


ZOD_MERGE = """Invalid arguments: [
  {
    "code": "invalid_union",
    "errors": [],
    "note": "No matching discriminator",
    "discriminator": "merge",
    "options": [
      true,
      false
    ],
    "path": [
      "merge"
    ],
    "message": "Invalid discriminator value. Expected 'true' | 'false'"
  }
]"""

ZOD_ITEMS = """Invalid arguments: [
  {
    "expected": "string",
    "code": "invalid_type",
    "path": [
      "todos",
      0,
      "id"
    ],
    "message": "Invalid input: expected string, received number"
  },
  {
    "code": "invalid_value",
    "values": [
      "pending",
      "in_progress",
      "completed",
      "cancelled"
    ],
    "path": [
      "todos",
      0,
      "status"
    ],
    "message": "Invalid option: expected one of \\"pending\\"|\\"in_progress\\"|\\"completed\\"|\\"cancelled\\""
  },
  {
    "expected": "object",
    "code": "invalid_type",
    "path": [
      "todos",
      1
    ],
    "message": "Invalid input: expected object, received string"
  }
]"""

ZOD_CREATE = """Invalid arguments: [
  {
    "expected": "string",
    "code": "invalid_type",
    "path": [
      "todos",
      0,
      "content"
    ],
    "message": "Invalid input: expected string, received undefined"
  },
  {
    "expected": "object",
    "code": "invalid_type",
    "path": [
      "todos",
      1
    ],
    "message": "Invalid input: expected object, received number"
  },
  {
    "expected": "object",
    "code": "invalid_type",
    "path": [
      "todos",
      2
    ],
    "message": "Invalid input: expected object, received boolean"
  }
]"""


def zod_one(issue: str) -> str:
    return f"Invalid arguments: [\n  {{\n{issue}\n  }}\n]"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"merge": 1, "todos": []}, ZOD_MERGE),
        ({"merge": None, "todos": []}, ZOD_MERGE),
        ({"merge": "TRUE", "todos": []}, ZOD_MERGE),
        ({"merge": True, "todos": [{"id": 5, "status": "done"}, "x"]}, ZOD_ITEMS),
        ({"merge": False, "todos": [{"id": "1", "status": "pending"}, 7, True]}, ZOD_CREATE),
        (
            {"merge": True},
            zod_one(
                '    "expected": "array",\n    "code": "invalid_type",\n    "path": [\n      "todos"\n    ],\n'
                '    "message": "Invalid input: expected array, received undefined"'
            ),
        ),
        (
            {"merge": False, "todos": "not json"},
            zod_one(
                '    "expected": "array",\n    "code": "invalid_type",\n    "path": [\n      "todos"\n    ],\n'
                '    "message": "Invalid input: expected array, received string"'
            ),
        ),
        (
            {"merge": True, "todos": [{"id": "1", "content": None, "status": "pending"}]},
            zod_one(
                '    "expected": "string",\n    "code": "invalid_type",\n    "path": [\n      "todos",\n      0,\n'
                '      "content"\n    ],\n    "message": "Invalid input: expected string, received null"'
            ),
        ),
    ],
)
def test_it_refuses_what_zod_refuses_with_every_issue(api, args, message):
    ok(api, "c1", PLAN)
    rejected(api, "c1", args, message, revision=1)


@pytest.mark.parametrize(
    ("args", "shown"), [([], "array"), (None, "null"), ("x", "string"), (5, "number"), (True, "boolean")]
)
def test_arguments_that_are_not_an_object_fail_the_unions_own_check(api, args, shown):
    message = zod_one(
        '    "code": "invalid_type",\n    "expected": "object",\n    "path": [],\n'
        f'    "message": "Invalid input: expected object, received {shown}"'
    )
    rejected(api, "c1", args, message, revision=None, forced=True)


def test_a_long_list_of_issues_is_capped():
    with pytest.raises(Exception) as raised:
        cursor.call(TOOL, {"merge": False, "todos": ["x"] * 25}, [])
    assert raised.value.message.endswith("\n]\n… and 5 more issues")
    assert raised.value.details["count"] == 25


def test_it_accepts_the_chat_completions_form(api):
    response = api.tool(
        "c1",
        {"id": "call_1", "type": "function", "function": {"name": TOOL, "arguments": json.dumps(PLAN)}},
        query="?reply=native",
    )
    assert response.status_code == 200, response.json()
    assert response.json()["dialect"] == "cursor"
    assert response.json()["reply"] == {"role": "tool", "tool_call_id": "call_1", "content": SUCCESS}


def test_it_answers_in_the_checklist_style_by_default(api):
    response = api.call("c1", TOOL, PLAN)
    assert response.status_code == 200
    assert "Implement styles" in response.json()["output"]


@pytest.mark.parametrize(
    ("args", "fits"),
    [
        (PLAN, True),
        ({"merge": True}, True),
        ({"merge": None, "todos": []}, True),
        ({"todos": []}, False),
        ({"steps": []}, False),
        ([], False),
        (None, False),
    ],
)
def test_it_claims_todo_write_calls_with_merge(args, fits):
    assert cursor.fits(TOOL, args) is fits


def test_it_gives_the_model_cursors_schema():
    (definition,) = cursor.definitions()
    assert definition.name == TOOL
    assert "use merge=false to add new ones" in definition.description
    schema = definition.input_schema
    assert list(schema["properties"]) == ["merge", "todos"]
    assert "additionalProperties" not in json.dumps(schema)
    jsonschema.Draft7Validator.check_schema(schema)
    validator = jsonschema.Draft7Validator(schema)
    assert validator.is_valid(PLAN)
    assert validator.is_valid({"merge": True, "todos": [{"id": "1", "status": "completed"}]})
    assert not validator.is_valid({"merge": True, "todos": [todo(status="done")]})
    assert not validator.is_valid({"todos": []})
