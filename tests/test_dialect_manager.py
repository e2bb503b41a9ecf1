from __future__ import annotations

import jsonschema
import pytest

from todoweb.dialects import manager

# The TodoManager's documented strings, byte for byte: ASCII colon and comma after 错误 and the status.
STATUS_ERROR = '错误:无效状态 "{}",可选值: running, completed, failed'
MISSING_ERROR = '错误:未找到 ID 为 "{}" 的步骤。'
EMPTY_ERROR = "错误:必须提供至少一个步骤描述。"


def test_it_creates_numbered_pending_steps_in_the_seeds_words(api):
    body = api.ok("mg", "create_todos", {"items": ["搜索资料", "阅读文件", "写总结"]})
    assert body["dialect"] == "manager"
    assert body["output"] == "已创建 3 个步骤:\n执行计划:\n  [ ] #1 搜索资料\n  [ ] #2 阅读文件\n  [ ] #3 写总结"
    assert [(t["id"], t["content"], t["status"]) for t in body["data"]["todos"]] == [
        ("1", "搜索资料", "pending"),
        ("2", "阅读文件", "pending"),
        ("3", "写总结", "pending"),
    ]


def test_it_appends_with_ids_continuing(api):
    api.ok("mg", "create_todos", {"items": ["a", "b"]})
    api.ok("mg", "update_todo", {"id": "1", "status": "completed"})
    body = api.ok("mg", "create_todos", {"items": ["c"]})
    assert body["output"] == "已创建 1 个步骤:\n执行计划:\n  [x] #1 a\n  [ ] #2 b\n  [ ] #3 c"
    data = body["data"]
    assert data["revision"] == 3
    assert [t["id"] for t in data["todos"]] == ["1", "2", "3"]
    assert data["todos"][0]["completed_at"] is not None


def test_it_updates_one_step_and_restates_the_plan(api):
    api.ok("mg", "create_todos", {"items": ["a", "b", "c"]})
    running = api.ok("mg", "update_todo", {"id": "1", "status": "running"})
    assert running["output"] == '步骤 #1 "a" → running\n执行计划:\n  [>] #1 a\n  [ ] #2 b\n  [ ] #3 c'
    assert [t["status"] for t in running["data"]["todos"]] == ["in_progress", "pending", "pending"]
    assert running["data"]["todos"][0]["started_at"] is not None
    api.ok("mg", "update_todo", {"id": "1", "status": "completed"})
    failed = api.ok("mg", "update_todo", {"id": "2", "status": "failed"})
    assert failed["output"] == '步骤 #2 "b" → failed\n执行计划:\n  [x] #1 a\n  [!] #2 b\n  [ ] #3 c'
    assert [t["status"] for t in failed["data"]["todos"]] == ["completed", "failed", "pending"]
    assert failed["data"]["revision"] == 4


def test_it_rejects_statuses_other_than_running_completed_failed(api):
    api.ok("mg", "create_todos", {"items": ["a"]})
    for status in ("pending", "in_progress", "RUNNING", "done"):
        api.rejected("mg", "update_todo", {"id": "1", "status": status}, STATUS_ERROR.format(status), revision=1)
    api.rejected("mg", "update_todo", {"id": "1"}, STATUS_ERROR.format("undefined"), revision=1)
    api.rejected("mg", "update_todo", {"id": "1", "status": None}, STATUS_ERROR.format("null"), revision=1)


def test_it_checks_the_status_before_the_id(api):
    api.rejected("mg", "update_todo", {"id": "9", "status": "pending"}, STATUS_ERROR.format("pending"))


def test_it_rejects_an_unknown_id_and_changes_nothing(api):
    api.rejected("mg", "update_todo", {"id": "1", "status": "running"}, MISSING_ERROR.format("1"))
    api.ok("mg", "create_todos", {"items": ["a"]})
    api.rejected("mg", "update_todo", {"id": "2", "status": "running"}, MISSING_ERROR.format("2"), revision=1)
    api.rejected("mg", "update_todo", {"status": "running"}, MISSING_ERROR.format("undefined"), revision=1)
    state = api.get("/api/v1/sessions/mg").json()
    assert [t["status"] for t in state["todos"]] == ["pending"]


def test_it_reads_ids_as_javascripts_string_does(api):
    api.ok("mg", "create_todos", {"items": ["a", "b"]})
    assert api.ok("mg", "update_todo", {"id": 2, "status": "running"})["output"].startswith('步骤 #2 "b" → running')
    assert api.ok("mg", "update_todo", {"id": 1.0, "status": "running"})["output"].startswith('步骤 #1 "a" → running')


def test_it_requires_at_least_one_description(api):
    for args in ({"items": []}, {}, {"items": "a"}, {"items": None}, ["a"]):
        api.rejected("mg", "create_todos", args, EMPTY_ERROR)


def test_it_prints_non_string_descriptions_as_javascript_does(api):
    body = api.ok("mg", "create_todos", {"items": [1, None, {"a": 1}, ["x", "y"], True]})
    assert [t["content"] for t in body["data"]["todos"]] == ["1", "null", "[object Object]", "x,y", "true"]


def test_it_continues_after_the_highest_numeric_id_of_another_dialect(api):
    todos = [
        {"content": "x", "status": "completed", "activeForm": "X", "id": "7"},
        {"content": "y", "status": "pending", "activeForm": "Y", "id": "build"},
    ]
    assert api.call("mg", "TodoWrite", {"todos": todos}).status_code == 200
    body = api.ok("mg", "create_todos", {"items": ["z"]})
    assert body["output"] == "已创建 1 个步骤:\n执行计划:\n  [x] #7 x\n  [ ] #build y\n  [ ] #8 z"
    assert api.ok("mg", "update_todo", {"id": "build", "status": "running"})["data"]["todos"][1]["status"] == (
        "in_progress"
    )


def test_it_marks_blocked_and_cancelled_steps_from_other_dialects(api):
    steps = [
        {"id": "s1", "description": "a", "status": "blocked"},
        {"id": "s2", "description": "b", "status": "skipped"},
    ]
    assert api.call("mg", "todo_write", {"steps": steps}).status_code == 200
    body = api.ok("mg", "create_todos", {"items": ["c"]})
    assert body["output"] == "已创建 1 个步骤:\n执行计划:\n  [~] #s1 a\n  [-] #s2 b\n  [ ] #1 c"


def test_it_says_there_is_no_plan_for_an_empty_list():
    assert manager.plan_text([]) == "当前没有执行计划。"


def test_it_defines_schemas_that_accept_valid_input_only():
    create, update = manager.definitions()
    assert (create.name, update.name) == ("create_todos", "update_todo")
    assert "创建执行计划" in create.description and "running" in update.description
    jsonschema.validate({"items": ["a"]}, create.input_schema)
    jsonschema.validate({"id": "1", "status": "running"}, update.input_schema)
    for schema, invalid in (
        (create.input_schema, {"items": []}),
        (create.input_schema, {"items": [1]}),
        (update.input_schema, {"id": "1", "status": "pending"}),
        (update.input_schema, {"id": "1"}),
    ):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(invalid, schema)
