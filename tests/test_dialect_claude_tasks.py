from __future__ import annotations

import jsonschema
import pytest

from todoweb.dialects import claude_tasks


def create(api, key: str, subject: str, **extra) -> dict:
    return api.ok(key, "TaskCreate", {"subject": subject, "description": f"About {subject}"} | extra)


def test_it_creates_tasks_with_server_ids(api):
    first = create(api, "ct", "Run tests", activeForm="Running tests")
    assert first["dialect"] == "claude-tasks"
    assert first["output"] == "Task #1 created successfully: Run tests"
    second = create(api, "ct", "Fix bug")
    assert second["output"] == "Task #2 created successfully: Fix bug"
    todos = second["data"]["todos"]
    assert second["data"]["revision"] == 2
    assert [(t["id"], t["content"], t["notes"], t["active_form"], t["status"]) for t in todos] == [
        ("1", "Run tests", "About Run tests", "Running tests", "pending"),
        ("2", "Fix bug", "About Fix bug", None, "pending"),
    ]


def test_it_continues_after_the_highest_numeric_id(api):
    todos = [{"content": "x", "status": "pending", "activeForm": "X", "id": "5"}]
    assert api.call("ct", "TodoWrite", {"todos": todos}).status_code == 200
    assert create(api, "ct", "y")["output"] == "Task #6 created successfully: y"


def test_it_updates_fields_and_names_them(api):
    create(api, "ct", "Run tests")
    body = api.ok("ct", "TaskUpdate", {"taskId": "1", "status": "in_progress"})
    assert body["output"] == "Updated task #1 status"
    assert body["data"]["todos"][0]["status"] == "in_progress"
    assert body["data"]["current"] == ["1"]
    body = api.ok(
        "ct",
        "TaskUpdate",
        {
            "taskId": "1",
            "subject": "Run all tests",
            "description": "d",
            "activeForm": "Running all tests",
            "owner": "me",
        },
    )
    assert body["output"] == "Updated task #1 subject, description, activeForm, owner"
    todo = body["data"]["todos"][0]
    assert (todo["content"], todo["notes"], todo["active_form"], todo["owner"]) == (
        "Run all tests",
        "d",
        "Running all tests",
        "me",
    )
    completed = api.ok("ct", "TaskUpdate", {"taskId": "1", "status": "completed"})
    assert completed["data"]["todos"][0]["completed_at"] is not None
    assert completed["data"]["revision"] == 4


def test_it_writes_nothing_when_nothing_changes(api):
    create(api, "ct", "a")
    body = api.ok("ct", "TaskUpdate", {"taskId": "1", "status": "pending"})
    assert body["output"] == "No changes to task #1"
    assert body["data"]["revision"] == 1


def test_it_deletes_a_task_and_what_waited_on_it(api):
    create(api, "ct", "a")
    create(api, "ct", "b")
    api.ok("ct", "TaskUpdate", {"taskId": "2", "addBlockedBy": ["1"]})
    body = api.ok("ct", "TaskUpdate", {"taskId": "1", "status": "deleted"})
    assert body["output"] == "Updated task #1 deleted"
    assert [(t["id"], t["blocked_by"]) for t in body["data"]["todos"]] == [("2", [])]
    assert body["data"]["revision"] == 4
    # Deleted on purpose: not shown as dropped, nor in the checklist reply.
    assert body["data"]["dropped"] == []
    checklist = api.call("ct", "TaskList", {}).json()["output"]
    assert "Dropped" not in checklist


def test_it_records_dependencies_both_ways(api):
    for subject in ("a", "b", "c"):
        create(api, "ct", subject)
    body = api.ok("ct", "TaskUpdate", {"taskId": "3", "addBlockedBy": ["1", "2", "1"]})
    assert body["output"] == "Updated task #3 blockedBy"
    body = api.ok("ct", "TaskUpdate", {"taskId": "1", "addBlocks": ["2", "99"]})
    assert body["output"] == "Updated task #1 blocks"
    assert {t["id"]: t["blocked_by"] for t in body["data"]["todos"]} == {"1": [], "2": ["1"], "3": ["1", "2"]}


def test_it_lists_tasks(api):
    assert api.ok("ct", "TaskList", {})["output"] == "No tasks found"
    create(api, "ct", "a")
    create(api, "ct", "b")
    api.ok("ct", "TaskUpdate", {"taskId": "2", "owner": "agent-1", "addBlockedBy": ["1"], "status": "in_progress"})
    body = api.ok("ct", "TaskList", {})
    assert body["output"] == "#1 [pending] a\n#2 [in_progress] b (agent-1) [blocked by #1]"
    assert body["data"]["revision"] == 3


def test_it_gets_one_task(api):
    create(api, "ct", "a")
    create(api, "ct", "b")
    api.ok("ct", "TaskUpdate", {"taskId": "2", "addBlockedBy": ["1"], "owner": "me"})
    assert api.ok("ct", "TaskGet", {"taskId": "1"})["output"] == (
        "Task #1: a\nStatus: pending\nDescription: About a\nBlocks: #2"
    )
    body = api.ok("ct", "TaskGet", {"taskId": "2"})
    assert body["output"] == "Task #2: b\nStatus: pending\nDescription: About b\nOwner: me\nBlocked by: #1"
    assert body["data"]["revision"] == 3


def test_it_rejects_an_unknown_task_id(api):
    create(api, "ct", "a")
    api.rejected("ct", "TaskUpdate", {"taskId": "9", "status": "completed"}, "Task #9 not found", revision=1)
    api.rejected("ct", "TaskGet", {"taskId": "9"}, "Task #9 not found", revision=1)
    api.rejected("new", "TaskUpdate", {"taskId": "1", "status": "completed"}, "Task #1 not found")


def test_it_validates_inputs_like_claude_code(api):
    create(api, "ct", "a")
    cases = [
        (
            "TaskCreate",
            {"description": "d"},
            "TaskCreate failed due to the following issue:\nThe required parameter `subject` is missing",
        ),
        (
            "TaskCreate",
            {"subject": 1, "description": "d", "priority": "high"},
            "TaskCreate failed due to the following issues:\n"
            "The parameter `subject` type is expected as `string` but provided as `number`\n"
            "An unexpected parameter `priority` was provided",
        ),
        (
            "TaskUpdate",
            {"taskId": "1", "status": "done"},
            "TaskUpdate failed due to the following issue:\n"
            "The parameter `status` must be one of pending, in_progress, completed, deleted, not 'done'",
        ),
        (
            "TaskUpdate",
            {"taskId": 1},
            "TaskUpdate failed due to the following issue:\n"
            "The parameter `taskId` type is expected as `string` but provided as `number`",
        ),
        (
            "TaskUpdate",
            {"taskId": "1", "addBlockedBy": [2]},
            "TaskUpdate failed due to the following issue:\nThe parameter `addBlockedBy` must be an array of strings",
        ),
        ("TaskGet", {}, "TaskGet failed due to the following issue:\nThe required parameter `taskId` is missing"),
        (
            "TaskList",
            {"all": True},
            "TaskList failed due to the following issue:\nAn unexpected parameter `all` was provided",
        ),
    ]
    for tool, args, message in cases:
        api.rejected("ct", tool, args, message, revision=1)


@pytest.mark.parametrize("definition", claude_tasks.definitions(), ids=lambda d: d.name)
def test_it_defines_schemas_that_accept_valid_input_only(definition):
    valid = {
        "TaskCreate": {"subject": "a", "description": "b", "activeForm": "c"},
        "TaskUpdate": {"taskId": "1", "status": "deleted", "addBlocks": ["2"]},
        "TaskGet": {"taskId": "1"},
        "TaskList": {},
    }[definition.name]
    invalid = {
        "TaskCreate": {"subject": "a"},
        "TaskUpdate": {"taskId": "1", "status": "done"},
        "TaskGet": {"taskId": 1},
        "TaskList": {"x": 1},
    }[definition.name]
    assert definition.description
    jsonschema.validate(valid, definition.input_schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(invalid, definition.input_schema)


def test_it_never_reuses_the_id_of_a_deleted_task(api):
    create(api, "ct", "a")
    create(api, "ct", "b")
    api.ok("ct", "TaskUpdate", {"taskId": "2", "status": "deleted"})
    body = create(api, "ct", "c")
    assert body["output"] == "Task #3 created successfully: c"
    assert api.ok("ct", "TaskUpdate", {"taskId": "3", "status": "in_progress"})["output"] == "Updated task #3 status"


def test_it_keeps_the_counter_safe_from_huge_caller_ids(api):
    todos = [{"content": "x", "status": "pending", "activeForm": "x", "id": "99999999999999"}]
    assert api.call("ct", "TodoWrite", {"todos": todos}).status_code == 200
    assert create(api, "ct", "a")["output"] == "Task #1 created successfully: a"
