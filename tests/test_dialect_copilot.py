"""VS Code Copilot Chat's manage_todo_list through the real URL."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

from todoweb.dialects import copilot

SMALL = "Warning: Small todo list (<3 items). This task might not need a todo list."
LARGE = "Warning: Large todo list (>10 items). Consider keeping the list focused and actionable."
MANY = "Warning: Did you mean to update so many todos at the same time? Consider working on them one by one."

PLAN = {
    "operation": "write",
    "todoList": [
        {"id": 1, "title": "Read the failing test", "description": "tests/test_parser.py", "status": "completed"},
        {"id": 2, "title": "Fix the parser", "description": "", "status": "in-progress"},
        {"id": 3, "title": "Run the suite", "description": "  make test  ", "status": "not-started"},
    ],
}
PLAN_READ = (
    "# Todo List\n\n"
    "- [x] Read the failing test\n  - tests/test_parser.py\n"
    "- [-] Fix the parser\n"
    "- [ ] Run the suite\n  - make test"
)


def todo(step_id: Any = 1, title: Any = "a", status: Any = "not-started", **extra: Any) -> dict[str, Any]:
    return {"id": step_id, "title": title, "description": "", "status": status, **extra}


def write(todos: list[Any], **extra: Any) -> dict[str, Any]:
    return {"operation": "write", "todoList": todos, **extra}


def test_it_writes_the_list_and_answers_like_vscode(api):
    body = api.ok("c1", "manage_todo_list", PLAN)
    assert body["dialect"] == "copilot"
    assert body["output"] == "Successfully wrote todo list"
    steps = body["data"]["todos"]
    assert [(s["id"], s["content"], s["status"], s["notes"]) for s in steps] == [
        ("1", "Read the failing test", "completed", "tests/test_parser.py"),
        ("2", "Fix the parser", "in_progress", None),
        ("3", "Run the suite", "pending", "  make test  "),
    ]
    assert api.revision("c1") == 1


def test_it_reads_the_list_as_a_markdown_task_list(api):
    api.ok("c1", "manage_todo_list", PLAN)
    body = api.ok("c1", "manage_todo_list", {"operation": "read"})
    assert body["output"] == PLAN_READ
    assert api.revision("c1") == 1


def test_a_read_ignores_a_todo_list(api):
    api.ok("c1", "manage_todo_list", PLAN)
    body = api.ok("c1", "manage_todo_list", {"operation": "read", "todoList": [todo(9, "other")]})
    assert body["output"] == PLAN_READ
    assert api.revision("c1") == 1


def test_it_reads_an_empty_list(api):
    body = api.ok("c1", "manage_todo_list", {"operation": "read"})
    assert body["output"] == "No todo list found."
    assert api.revision("c1") in (None, 0)


def test_it_reads_steps_other_dialects_wrote(api):
    todos = [{"description": "a", "status": "blocked"}, {"description": "b", "status": "in_progress"}]
    api.call("c1", "write_todos", {"todos": todos})
    body = api.ok("c1", "manage_todo_list", {"operation": "read"})
    assert body["output"] == "# Todo List\n\n- [ ] a\n- [-] b"


def test_it_advises_on_small_and_large_lists(api):
    assert api.ok("c1", "manage_todo_list", write([todo()]))["output"] == f"Successfully wrote todo list\n\n{SMALL}"
    assert api.ok("c2", "manage_todo_list", write([]))["output"] == f"Successfully wrote todo list\n\n{SMALL}"
    three = [todo(i, f"t{i}") for i in range(1, 4)]
    assert api.ok("c3", "manage_todo_list", write(three))["output"] == "Successfully wrote todo list"
    eleven = [todo(i, f"t{i}") for i in range(1, 12)]
    assert (
        api.ok("c4", "manage_todo_list", write(eleven))["output"] == f"Successfully wrote todo list\n\n{LARGE}\n{MANY}"
    )


def test_it_counts_changes_index_by_index(api):
    four = [todo(i, f"t{i}") for i in range(1, 5)]
    api.ok("c1", "manage_todo_list", write(four))
    # One status changed: no advice.
    one = [*four[:3], todo(4, "t4", "in-progress")]
    assert api.ok("c1", "manage_todo_list", write(one))["output"] == "Successfully wrote todo list"
    # Titles moved by one index: every index changed.
    shifted = [todo(0, "t0"), *one]
    assert api.ok("c1", "manage_todo_list", write(shifted))["output"] == f"Successfully wrote todo list\n\n{MANY}"


def test_a_missing_operation_means_write(api):
    body = api.ok("c1", "manage_todo_list", {"todoList": [todo()]})
    assert body["output"] == f"Successfully wrote todo list\n\n{SMALL}"
    assert api.revision("c1") == 1


@pytest.mark.parametrize("status", ["pending", "in_progress", "done", None, 3])
def test_it_keeps_an_unknown_status_as_pending_with_a_warning(api, status):
    body = api.ok("c1", "manage_todo_list", write([todo(1, "a", "completed"), todo(2, "b", status)]))
    assert [s["status"] for s in body["data"]["todos"]] == ["completed", "pending"]
    (warning,) = body["data"]["warnings"]
    assert warning["code"] == "unknown_status"
    read = api.ok("c1", "manage_todo_list", {"operation": "read"})
    assert read["output"] == "# Todo List\n\n- [x] a\n- [ ] b"


def test_it_stores_what_javascript_prints_for_odd_values(api):
    todos = [{"id": 1.5, "status": "not-started"}, {"id": "x", "title": 7, "description": 0, "status": "completed"}]
    body = api.ok("c1", "manage_todo_list", write(todos))
    assert [(s["id"], s["content"], s["notes"]) for s in body["data"]["todos"]] == [
        ("1.5", "undefined", None),
        ("x", "7", None),
    ]


def test_it_accepts_repeated_ids(api):
    body = api.ok("c1", "manage_todo_list", write([todo(1, "a"), todo(1, "b"), todo(1, "c")]))
    assert [s["id"] for s in body["data"]["todos"]] == ["1", "1#2", "1#3"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"operation": None, "todoList": [todo()]}, "Error: operation parameter is required"),
        ({"operation": "", "todoList": [todo()]}, "Error: operation parameter is required"),
        ({"operation": "delete", "todoList": [todo()]}, "Error: Unknown operation"),
        ({"operation": "WRITE", "todoList": [todo()]}, "Error: Unknown operation"),
        ({"operation": "write"}, "Error: todoList is required for write operation"),
        ({"operation": "write", "todoList": None}, "Error: todoList is required for write operation"),
        ({}, "Error: todoList is required for write operation"),
        ([], "Error: todoList is required for write operation"),
        ("write", "Error: todoList is required for write operation"),
        (None, "Error: Cannot read properties of null (reading 'operation')"),
        (write("abc"), "Error: newTodos.filter is not a function"),
        (write({"0": todo()}), "Error: newTodos.filter is not a function"),
        (write(""), "Error: items.map is not a function"),
        (write([todo(), None]), "Error: Cannot read properties of null (reading 'id')"),
        (write([todo(), {"title": "no id"}]), "Error: Cannot read properties of undefined (reading 'toString')"),
        (write([todo(None)]), "Error: Cannot read properties of null (reading 'toString')"),
        (write(["a"]), "Error: Cannot read properties of undefined (reading 'toString')"),
        # A broken list fails while VS Code prepares the call, whatever the operation.
        ({"operation": "read", "todoList": [None]}, "Error: Cannot read properties of null (reading 'id')"),
        ({"operation": "delete", "todoList": 5}, "Error: items.map is not a function"),
    ],
)
def test_it_refuses_in_vscode_words_and_writes_nothing(api, args, message):
    api.ok("c1", "manage_todo_list", PLAN)
    api.rejected("c1", "manage_todo_list", args, message, revision=1)


def test_on_an_empty_list_a_broken_list_fails_when_mapped(api):
    api.rejected("c1", "manage_todo_list", write("abc"), "Error: items.map is not a function")


@pytest.mark.parametrize("title", ["<img src=x onerror=alert(1)>", "修复解析器 🐛", "  padded  "])
def test_it_stores_hostile_text_verbatim(api, title):
    body = api.ok("c1", "manage_todo_list", write([todo(1, title, description=title)]))
    assert (body["data"]["todos"][0]["content"], body["data"]["todos"][0]["notes"]) == (title, title)
    read = api.ok("c1", "manage_todo_list", {"operation": "read"})
    assert read["output"] == f"# Todo List\n\n- [ ] {title}\n  - {title.strip()}"


def test_it_accepts_several_in_progress_steps_and_leaves_the_rule_to_policy(api):
    body = api.ok("c1", "manage_todo_list", write([todo(1, "a", "in-progress"), todo(2, "b", "in-progress")]))
    assert [w["code"] for w in body["data"]["warnings"]] == ["multiple_in_progress"]


def test_it_accepts_the_chat_completions_form(api):
    response = api.chat("c1", "manage_todo_list", json.dumps(PLAN), query="?reply=native")
    body = response.json()
    assert response.status_code == 200, body
    assert body["reply"] == {"role": "tool", "tool_call_id": "call_1", "content": body["output"]}
    read = api.chat("c1", "manage_todo_list", '{"operation": "read"}', call_id="call_2", query="?reply=native")
    assert read.json()["reply"]["content"] == PLAN_READ


def test_it_refuses_a_chat_call_in_vscode_words(api):
    response = api.chat("c1", "manage_todo_list", '{"operation": "nope", "todoList": []}', query="?reply=native")
    assert response.status_code == 422
    assert response.json()["reply"]["content"] == "Error: Unknown operation"
    assert api.revision("c1") is None


def test_it_gives_the_model_the_real_schema():
    (definition,) = copilot.definitions()
    assert definition.name == "manage_todo_list"
    assert definition.description.startswith("Manage a structured todo list to track progress")
    schema = definition.input_schema
    jsonschema.Draft7Validator.check_schema(schema)
    assert schema["properties"]["todoList"]["items"]["required"] == ["id", "title", "description", "status"]
    validator = jsonschema.Draft7Validator(schema)
    assert validator.is_valid(PLAN)
    assert validator.is_valid({"operation": "read"})
    assert not validator.is_valid({"operation": "write", "todoList": [todo(status="pending")]})
