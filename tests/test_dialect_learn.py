from __future__ import annotations

import jsonschema
import pytest

from todoweb.dialects import learn


def write(api, key: str, items) -> dict:
    response = api.native(key, "todo", {"items": items})
    assert response.status_code == 200, response.content
    return response.json()


def item(text, status="pending", item_id=None) -> dict:
    return {"text": text, "status": status} | ({} if item_id is None else {"id": item_id})


def test_it_answers_the_seed_data_flow_with_the_seed_render(api):
    first = write(
        api,
        "ln",
        [
            {"id": "1", "text": "初始化 Express 项目", "status": "in_progress"},
            {"id": "2", "text": "实现用户注册 API", "status": "pending"},
            {"id": "3", "text": "实现用户登录 API", "status": "pending"},
        ],
    )
    assert first["dialect"] == "learn"
    assert first["output"] == (
        "[>] #1: 初始化 Express 项目\n[ ] #2: 实现用户注册 API\n[ ] #3: 实现用户登录 API\n\n(0/3 completed)"
    )
    second = write(
        api,
        "ln",
        [
            {"id": "1", "text": "初始化 Express 项目", "status": "completed"},
            {"id": "2", "text": "实现用户注册 API", "status": "in_progress"},
            {"id": "3", "text": "实现用户登录 API", "status": "pending"},
        ],
    )
    assert second["output"] == (
        "[x] #1: 初始化 Express 项目\n[>] #2: 实现用户注册 API\n[ ] #3: 实现用户登录 API\n\n(1/3 completed)"
    )
    data = second["data"]
    assert data["revision"] == 2
    assert [(t["id"], t["status"]) for t in data["todos"]] == [
        ("1", "completed"),
        ("2", "in_progress"),
        ("3", "pending"),
    ]
    assert data["todos"][0]["completed_at"] is not None


def test_it_renders_the_seed_render_example(api):
    body = write(
        api,
        "ln",
        [
            item("搭建项目结构", "pending", "1"),
            item("实现用户认证", "in_progress", "2"),
            item("编写数据库模型", "completed", "3"),
        ],
    )
    assert body["output"] == "[ ] #1: 搭建项目结构\n[>] #2: 实现用户认证\n[x] #3: 编写数据库模型\n\n(1/3 completed)"


def test_it_clears_the_list_with_no_todos(api):
    write(api, "ln", [item("a")])
    body = write(api, "ln", [])
    assert body["output"] == "No todos."
    assert body["data"]["todos"] == []
    assert body["data"]["revision"] == 2


def test_it_checks_the_item_count_before_anything_else(api):
    api.rejected("ln", "todo", {"items": [{}] * 21}, "Max 20 todos allowed")
    api.rejected("ln", "todo", {"items": "x" * 21}, "Max 20 todos allowed")
    assert write(api, "ln", [item(f"t{i}") for i in range(20)])["output"].endswith("(0/20 completed)")


def test_it_checks_text_before_status(api):
    api.rejected("ln", "todo", {"items": [{"id": "beta", "status": "nope"}]}, "Item beta: text required")
    api.rejected("ln", "todo", {"items": [item("a"), {"text": "  ", "status": "bad"}]}, "Item 2: text required")


def test_it_reports_a_bad_status_before_two_in_progress(api):
    items = [item("a", "in_progress"), item("b", "in_progress"), item("c", "nope")]
    api.rejected("ln", "todo", {"items": items}, "Item 3: invalid status 'nope'")
    items[2]["status"] = "pending"
    api.rejected("ln", "todo", {"items": items}, "Only one task can be in_progress at a time")


def test_it_names_the_callers_id_in_errors(api):
    write(api, "ln", [item("a")])
    api.rejected("ln", "todo", {"items": [item("a", "nope", "alpha")]}, "Item alpha: invalid status 'nope'", revision=1)
    api.rejected("ln", "todo", {"items": [item("a", "nope", 7)]}, "Item 7: invalid status 'nope'", revision=1)
    api.rejected("ln", "todo", {"items": [item("a", "nope")]}, "Item 1: invalid status 'nope'", revision=1)


def test_it_lower_cases_statuses_without_stripping_them(api):
    body = write(api, "ln", [item("a", "IN_PROGRESS"), item("b", "Completed")])
    assert [t["status"] for t in body["data"]["todos"]] == ["in_progress", "completed"]
    api.rejected("ln", "todo", {"items": [item("a", " pending")]}, "Item 1: invalid status ' pending'", revision=1)


def test_it_fills_in_missing_status_and_id(api):
    body = write(api, "ln", [{"text": "a"}, {"text": "b", "status": "completed"}])
    assert body["output"] == "[ ] #1: a\n[x] #2: b\n\n(1/2 completed)"
    assert [t["id"] for t in body["data"]["todos"]] == ["1", "2"]


def test_it_treats_present_nulls_as_python_does(api):
    body = write(api, "ln", [{"id": None, "text": "a", "status": "pending"}])
    assert body["output"] == "[ ] #None: a\n\n(0/1 completed)"
    api.rejected("ln", "todo", {"items": [{"text": "a", "status": None}]}, "Item 1: invalid status 'none'", revision=1)
    api.rejected("ln", "todo", {"items": [{"text": "a", "status": True}]}, "Item 1: invalid status 'true'", revision=1)


def test_it_rejects_a_null_text_instead_of_storing_none(api):
    # Deviation from the original, which stores the text "None" (an accident of str(None)).
    api.rejected("ln", "todo", {"items": [{"id": "x", "text": None, "status": "pending"}]}, "Item x: text required")


def test_it_coerces_other_text_types_with_str(api):
    body = write(api, "ln", [item(123), item(False), item({"a": 1}), item(1.5)])
    assert [t["content"] for t in body["data"]["todos"]] == ["123", "False", "{'a': 1}", "1.5"]


def test_it_strips_text_as_python_does(api):
    body = write(api, "ln", [item("  padded \n")])
    assert body["data"]["todos"][0]["content"] == "padded"
    api.rejected("ln", "todo", {"items": [item("\u3000")]}, "Item 1: text required", revision=1)
    api.rejected("ln", "todo", {"items": [item("\u00a0")]}, "Item 1: text required", revision=1)
    assert write(api, "ln", [item("\u200b")])["data"]["todos"][0]["content"] == "\u200b"


def test_it_accepts_duplicates_extra_fields_and_long_text(api, project):
    project.max_content_chars = 200_000
    project.save()
    long = "x" * 100_000
    body = write(
        api, "ln", [item("a", item_id="1"), item("a", item_id="1", status="completed") | {"extra": 1}, item(long)]
    )
    # The reply keeps the caller's ids; the stored steps get a unique id each.
    assert body["output"].splitlines()[:2] == ["[ ] #1: a", "[x] #1: a"]
    assert [t["id"] for t in body["data"]["todos"]] == ["1", "1#2", "3"]
    assert body["data"]["todos"][2]["content"] == long


def test_it_answers_non_list_items_with_pythons_errors(api):
    api.rejected("ln", "todo", {"items": "abc"}, "'str' object has no attribute 'get'")
    api.rejected("ln", "todo", {"items": None}, "object of type 'NoneType' has no len()")
    api.rejected("ln", "todo", {"items": 5}, "object of type 'int' has no len()")
    api.rejected("ln", "todo", {"items": {"a": {}}}, "'str' object has no attribute 'get'")
    api.rejected("ln", "todo", {"items": [item("a"), "b"]}, "'str' object has no attribute 'get'")
    api.rejected("ln", "todo", {"items": [None]}, "'NoneType' object has no attribute 'get'")
    api.rejected("ln", "todo", {"todos": []}, "'items'")
    api.rejected("ln", "todo", ["a"], "<lambda>() argument after ** must be a mapping, not list")


def test_it_clears_the_list_with_an_empty_string_or_object_as_the_original_does(api):
    write(api, "ln", [item("a")])
    assert write(api, "ln", "")["output"] == "No todos."
    write(api, "ln", [item("a")])
    assert write(api, "ln", {})["data"]["todos"] == []


def test_it_keeps_the_previous_list_on_any_error(api):
    write(api, "ln", [item("a", "in_progress")])
    api.rejected(
        "ln",
        "todo",
        {"items": [item("a", "in_progress"), item("b", "in_progress")]},
        "Only one task can be in_progress at a time",
        revision=1,
    )
    state = api.get("/api/v1/sessions/ln").json()
    assert [(t["content"], t["status"]) for t in state["todos"]] == [("a", "in_progress")]


@pytest.mark.parametrize("definition", learn.definitions(), ids=lambda d: d.name)
def test_it_defines_a_schema_that_accepts_valid_input_only(definition):
    assert definition.name == "todo"
    assert "replaces" in definition.description
    valid = {"items": [{"id": "1", "text": "a", "status": "in_progress"}]}
    jsonschema.validate(valid, definition.input_schema)
    for invalid in (
        {"items": [{"id": "1", "text": "a", "status": "done"}]},
        {"items": [{"id": "1", "text": "a"}]},
        {"items": [{"id": "1", "text": "a", "status": "pending"}] * 21},
        {},
    ):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(invalid, definition.input_schema)
