"""OpenHands' task_tracker (the V1 SDK) through the real URL."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pydantic
import pytest

from tests.conftest import assert_refused
from todoweb.dialects import openhands
from todoweb.plan.steps import Item

TOOL = "task_tracker"
PLAN = {
    "command": "plan",
    "task_list": [
        {"id": "t1", "title": "Read the failing test", "status": "done", "notes": "tests/test_api.py"},
        {"id": "t2", "title": "Fix the parser", "status": "in_progress"},
        {"id": "t3", "title": "Run the suite", "status": "todo"},
    ],
}
VIEW_OF_PLAN = (
    "# Task List\n\n1. ✅ Read the failing test\n   tests/test_api.py\n\n2. 🔄 Fix the parser\n\n3. ⏳ Run the suite"
)
NO_LIST = 'No task list found. Use the "plan" command to create one.'
# pydantic's links name its own minor version.
DOCS = "https://errors.pydantic.dev/{}/v".format(".".join(pydantic.VERSION.split(".")[:2]))


def chat(arguments: str) -> dict[str, Any]:
    return {"id": "call_1", "type": "function", "function": {"name": TOOL, "arguments": arguments}}


def task(title: Any = "a", status: Any = "todo", **extra: Any) -> dict[str, Any]:
    return {"title": title, "status": status, **extra}


def invalid(errors: list[tuple[str, str, str]], keys: list[str]) -> str:
    """The SDK's message around pydantic's text: (location, message with its [...] part, url tail)."""
    blocks = "".join(f"\n{loc}\n  {msg}\n    For further information visit {DOCS}/{kind}" for loc, msg, kind in errors)
    count = f"{len(errors)} validation error{'s' if len(errors) > 1 else ''}"
    return f"Error validating tool 'task_tracker': {count} for TaskTrackerAction{blocks}. Parameters provided: {keys!r}"


def test_plan_writes_the_list_and_answers_like_openhands(api):
    body = api.ok("o1", TOOL, PLAN)
    assert body["dialect"] == "openhands"
    assert body["output"] == "Task list has been updated with 3 item(s)."
    todos = body["data"]["todos"]
    assert [(t["id"], t["content"], t["status"], t["notes"]) for t in todos] == [
        ("t1", "Read the failing test", "completed", "tests/test_api.py"),
        ("t2", "Fix the parser", "in_progress", None),
        ("t3", "Run the suite", "pending", None),
    ]
    assert api.revision("o1") == 1


def test_view_answers_the_list_in_openhands_words_and_writes_nothing(api):
    api.ok("o1", TOOL, PLAN)
    body = api.ok("o1", TOOL, {"command": "view"})
    assert body["output"] == VIEW_OF_PLAN
    assert len(body["data"]["todos"]) == 3
    assert api.revision("o1") == 1


@pytest.mark.parametrize(
    "args",
    [
        {},  # V1 defaults `command` to view
        {"command": None},  # nulls are dropped before validation
        {"command": "view", "task_list": [task("ignored")]},
        [],  # anything but an object reads as {}
        5,
        "plan",
        None,
    ],
)
def test_these_are_views(api, args):
    api.ok("o1", TOOL, PLAN)
    assert api.ok("o1", TOOL, args)["output"] == VIEW_OF_PLAN
    assert api.revision("o1") == 1


def test_view_of_nothing_says_so(api):
    assert api.ok("o1", TOOL, {"command": "view"})["output"] == NO_LIST
    assert api.revision("o1") in (None, 0)


@pytest.mark.parametrize(
    "args", [{"command": "plan"}, {"command": "plan", "task_list": []}, {"command": "plan", "task_list": None}]
)
def test_plan_without_tasks_clears_the_list(api, args):
    api.ok("o1", TOOL, PLAN)
    body = api.ok("o1", TOOL, args)
    assert body["output"] == "Task list has been updated with 0 item(s)."
    assert body["data"]["todos"] == []
    assert api.revision("o1") == 2
    assert api.ok("o1", TOOL, {"command": "view"})["output"] == NO_LIST


def test_status_and_notes_default_and_item_extras_are_ignored(api):
    body = api.ok("o1", TOOL, {"command": "plan", "task_list": [{"title": "a", "priority": "high", "owner": "x"}]})
    (todo,) = body["data"]["todos"]
    assert (todo["content"], todo["status"], todo["notes"], todo["priority"], todo["owner"]) == (
        "a",
        "pending",
        None,
        None,
        None,
    )


def test_ids_are_kept_as_step_ids_only_when_they_are_text(api):
    tasks = [task("a", id="x"), task("b", id=7), task("c", id=""), task("d")]
    ids = [t["id"] for t in api.ok("o1", TOOL, {"command": "plan", "task_list": tasks})["data"]["todos"]]
    assert ids[0] == "x"
    assert "x" not in ids[1:] and len(set(ids)) == 4


def test_meta_fields_are_taken_out_before_validation(api):
    args = {**PLAN, "summary": "Plan the fix", "security_risk": "HIGH", "kind": "TaskTrackerAction"}
    assert api.ok("o1", TOOL, args)["output"] == "Task list has been updated with 3 item(s)."
    args = {**PLAN, "security_riks": "LOW"}  # one of the SDK's known typos
    assert api.ok("o2", TOOL, args)["output"] == "Task list has been updated with 3 item(s)."


def test_a_task_list_sent_as_json_text_is_decoded(api):
    text = json.dumps(PLAN["task_list"])
    assert api.ok("o1", TOOL, {"command": "plan", "task_list": text})["output"].endswith("3 item(s).")
    garbage = text + "</parameter>"
    assert api.ok("o2", TOOL, {"command": "plan", "task_list": garbage})["output"].endswith("3 item(s).")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            {"command": "PLAN"},
            invalid(
                [
                    (
                        "command",
                        "Input should be 'view' or 'plan' [type=literal_error, input_value='PLAN', input_type=str]",
                        "literal_error",
                    )
                ],
                ["command"],
            ),
        ),
        (
            {"command": "plan", "task_list": [task(status="completed")]},
            invalid(
                [
                    (
                        "task_list.0.status",
                        "Input should be 'todo', 'in_progress' or 'done' [type=literal_error, input_value='completed', input_type=str]",
                        "literal_error",
                    )
                ],
                ["command", "task_list"],
            ),
        ),
        (
            {"command": "plan", "task_list": [{"status": "done"}]},
            invalid(
                [
                    (
                        "task_list.0.title",
                        "Field required [type=missing, input_value={'status': 'done'}, input_type=dict]",
                        "missing",
                    )
                ],
                ["command", "task_list"],
            ),
        ),
        (
            {"command": "plan", "task_list": [task(title=5)]},
            invalid(
                [
                    (
                        "task_list.0.title",
                        "Input should be a valid string [type=string_type, input_value=5, input_type=int]",
                        "string_type",
                    )
                ],
                ["command", "task_list"],
            ),
        ),
        (
            {"command": "plan", "task_list": "not json"},
            invalid(
                [
                    (
                        "task_list",
                        "Input should be a valid list [type=list_type, input_value='not json', input_type=str]",
                        "list_type",
                    )
                ],
                ["command", "task_list"],
            ),
        ),
        (
            {"command": "plan", "task_list": [task(), "x"], "mode": "fast"},
            invalid(
                [
                    (
                        "task_list.1",
                        "Input should be a valid dictionary or instance of TaskItem [type=model_type, input_value='x', input_type=str]",
                        "model_type",
                    ),
                    (
                        "mode",
                        "Extra inputs are not permitted [type=extra_forbidden, input_value='fast', input_type=str]",
                        "extra_forbidden",
                    ),
                ],
                ["command", "task_list", "mode"],
            ),
        ),
    ],
)
def test_it_refuses_what_pydantic_refuses_in_the_sdks_words(api, args, message):
    api.ok("o1", TOOL, PLAN)
    api.rejected("o1", TOOL, args, message, revision=1)


def test_a_wrong_kind_fails_the_discriminator_before_any_field():
    with pytest.raises(Exception) as raised:
        openhands.call(TOOL, {"command": "plan", "task_list": [{}], "kind": "Other"}, [])
    assert raised.value.message == (
        "Error validating tool 'task_tracker': 1 validation error for TaskTrackerAction\n"
        "  Assertion failed,  [type=assertion_error, input_value={'command': 'plan', 'task_list': [{}]}, input_type=dict]\n"
        f"    For further information visit {DOCS}/assertion_error. Parameters provided: ['command', 'task_list', 'kind']"
    )


def test_every_error_is_reported_but_the_message_is_capped(api):
    tasks = [{"status": "nope"} for _ in range(30)]
    response = api.call("o1", TOOL, {"command": "plan", "task_list": tasks})
    body = assert_refused(response)
    message = body["error"]["message"]
    assert message.startswith("Error validating tool 'task_tracker': 60 validation errors for TaskTrackerAction\n")
    assert "… and 40 more errors. Parameters provided: ['command', 'task_list']" in message
    assert body["error"]["details"]["count"] == 60


def test_hostile_text_is_stored_and_shown_verbatim(api):
    title = "<script>alert(1)</script> 修复解析器 🚀"
    notes = '<b>注意</b> & "quotes" 🧪'
    body = api.ok("o1", TOOL, {"command": "plan", "task_list": [task(title, "in_progress", notes=notes)]})
    assert (body["data"]["todos"][0]["content"], body["data"]["todos"][0]["notes"]) == (title, notes)
    assert api.ok("o1", TOOL, {"command": "view"})["output"] == f"# Task List\n\n1. 🔄 {title}\n   {notes}"


def test_the_view_is_stripped_like_the_sdks():
    current = [Item(content="  a", status="completed"), Item(content="b  ", status="pending", notes="n  ")]
    assert openhands.call(TOOL, {}, current).native == "# Task List\n\n1. ✅   a\n\n2. ⏳ b  \n   n"


def test_the_view_shows_other_dialects_statuses_with_the_default_icon():
    current = [Item(content=s, status=s) for s in ("failed", "blocked", "cancelled")]
    assert openhands.call(TOOL, {}, current).native == "# Task List\n\n1. ⏳ failed\n\n2. ⏳ blocked\n\n3. ⏳ cancelled"


def test_it_accepts_the_chat_completions_form(api):
    response = api.tool("o1", chat(json.dumps(PLAN)), query="?reply=native")
    assert response.status_code == 200, response.json()
    assert response.json()["reply"] == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": "Task list has been updated with 3 item(s).",
    }


def test_chat_arguments_with_raw_control_characters_are_repaired(api):
    response = api.tool("o1", chat('{"command": "plan", "task_list": [{"title": "a\tb"}]}'), query="?reply=native")
    assert response.status_code == 200, response.json()
    assert response.json()["data"]["todos"][0]["content"] == "a\tb"


@pytest.mark.parametrize("arguments", ["[]", "5", "null", '"plan"'])
def test_chat_arguments_that_are_not_an_object_are_a_view(api, arguments):
    response = api.tool("o1", chat(arguments), query="?reply=native")
    assert response.status_code == 200, response.json()
    assert response.json()["output"] == NO_LIST


@pytest.mark.parametrize(
    ("arguments", "reason"),
    [
        ('{"command": "plan",}', "Expecting property name enclosed in double quotes: line 1 column 20 (char 19)"),
        ("", "Expecting value: line 1 column 1 (char 0)"),
        ('{"command": "view"', "Expecting ',' delimiter: line 1 column 19 (char 18)"),
    ],
)
def test_unparseable_arguments_are_refused_in_the_sdks_words(api, arguments, reason):
    response = api.tool("o1", chat(arguments))
    body = assert_refused(response, status=400, code="invalid_json")
    assert body["error"]["message"] == f"Error validating tool 'task_tracker': {reason}. Arguments: unparseable JSON"
    assert api.revision("o1") is None


def test_it_answers_in_the_checklist_style_by_default(api):
    response = api.call("o1", TOOL, PLAN)
    assert response.status_code == 200
    assert "Fix the parser" in response.json()["output"]
    assert response.json()["output"] != "Task list has been updated with 3 item(s)."


def test_it_gives_the_model_the_sdks_schema():
    (definition,) = openhands.definitions()
    assert definition.name == TOOL
    assert "todo: Not yet initiated" in definition.description
    schema = definition.input_schema
    assert list(schema["properties"]) == ["summary", "command", "task_list"]
    assert schema["additionalProperties"] is False
    assert "additionalProperties" not in schema["properties"]["task_list"]["items"]
    jsonschema.Draft7Validator.check_schema(schema)
    validator = jsonschema.Draft7Validator(schema)
    assert validator.is_valid(PLAN)
    assert validator.is_valid({})
    assert not validator.is_valid({"command": "plan", "task_list": [task(status="completed")]})
    assert not validator.is_valid({"command": "plan", "extra": 1})
