from __future__ import annotations

import json

import jsonschema
import pytest

from tests.conftest import assert_refused
from todoweb.dialects import resolve, weknora

HINT = "\n\n[Analyze the error above and try a different approach.]"

SEED_INPUT = {
    "task": "比较 WeKnora 与 LangChain、LlamaIndex",
    "steps": [
        {"id": "step1", "description": "搜索知识库中的 WeKnora 架构信息", "status": "pending"},
        {"id": "step2", "description": "使用 web_search 检索 LangChain 文档", "status": "pending"},
        {"id": "step3", "description": "使用 web_search 检索 LlamaIndex 文档", "status": "pending"},
        {"id": "step4", "description": "对比三个框架的核心特性", "status": "pending"},
    ],
}

# WeKnora's documented plan text, character for character (Go ends every line with "\n").
SEED_OUTPUT = """计划已创建

**任务**: 比较 WeKnora 与 LangChain、LlamaIndex

**计划步骤**:

  1. ⏳ [pending] 搜索知识库中的 WeKnora 架构信息
  2. ⏳ [pending] 使用 web_search 检索 LangChain 文档
  3. ⏳ [pending] 使用 web_search 检索 LlamaIndex 文档
  4. ⏳ [pending] 对比三个框架的核心特性

=== 任务进度 ===
总计:4 个任务
✅ 已完成:0 个
🔄 进行中:0 个
⏳ 待处理:4 个

=== ⚠️ 重要提醒 ===
**还有 4 个任务未完成!**

**必须完成所有任务后才能总结或得出结论。**

下一步操作:
- 开始处理 4 个待处理任务
- 按顺序完成每个任务,不要跳过
- 完成每个任务后,更新 todo_write 标记为 completed
- 只有在所有任务完成后,才能生成最终总结
"""


def step(description: str, status: str, step_id: str = "") -> dict[str, str]:
    return {"id": step_id, "description": description, "status": status}


def test_it_answers_the_seed_example_with_the_seed_text(api):
    response = api.native("wk", "todo_write", SEED_INPUT)
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["dialect"] == "weknora"
    assert body["output"] == SEED_OUTPUT
    assert body["reply"]["content"] == SEED_OUTPUT
    data = body["data"]
    assert data["session"]["title"] == "比较 WeKnora 与 LangChain、LlamaIndex"
    assert [t["id"] for t in data["todos"]] == ["step1", "step2", "step3", "step4"]
    assert {t["status"] for t in data["todos"]} == {"pending"}


def test_it_carries_weknoras_data_fields(api):
    data = api.native("wk", "todo_write", SEED_INPUT).json()["data"]
    assert data["task"] == SEED_INPUT["task"]
    assert data["steps"] == SEED_INPUT["steps"]
    assert json.loads(data["steps_json"]) == SEED_INPUT["steps"]
    assert data["total_steps"] == 4
    assert data["plan_created"] is True
    assert data["display_type"] == "plan"


def test_it_escapes_html_in_steps_json_as_go_does(api):
    args = {"steps": [step("a <b> & c", "pending", "s1")]}
    data = api.native("wk", "todo_write", args).json()["data"]
    assert data["steps_json"] == '[{"id":"s1","description":"a \\u003cb\\u003e \\u0026 c","status":"pending"}]'


def test_it_shows_progress_and_next_actions_while_work_remains(api):
    args = {"task": "t", "steps": [step("a", "completed"), step("b", "in_progress"), step("c", "pending")]}
    output = api.native("wk", "todo_write", args).json()["output"]
    assert "  1. ✅ [completed] a\n  2. 🔄 [in_progress] b\n  3. ⏳ [pending] c\n" in output
    assert "总计:3 个任务\n✅ 已完成:1 个\n🔄 进行中:1 个\n⏳ 待处理:1 个\n" in output
    assert output.endswith(
        "**还有 2 个任务未完成!**\n\n"
        "**必须完成所有任务后才能总结或得出结论。**\n\n"
        "下一步操作:\n"
        "- 继续完成当前进行中的任务\n"
        "- 开始处理 1 个待处理任务\n"
        "- 按顺序完成每个任务,不要跳过\n"
        "- 完成每个任务后,更新 todo_write 标记为 completed\n"
        "- 只有在所有任务完成后,才能生成最终总结\n"
    )


def test_it_says_all_done_when_nothing_remains(api):
    args = {"task": "t", "steps": [step("a", "completed"), step("b", "completed")]}
    output = api.native("wk", "todo_write", args).json()["output"]
    assert output.endswith(
        "=== ⚠️ 重要提醒 ===\n"
        "✅ **所有任务已完成!**\n\n"
        "现在可以:\n"
        "- 综合所有任务的发现\n"
        "- 生成完整的最终答案或报告\n"
        "- 确保所有方面都已充分研究\n"
    )


def test_it_counts_only_the_three_documented_statuses(api):
    args = {"steps": [step("a", "skipped"), step("b", "failed"), step("c", "weird"), step("d", "completed")]}
    response = api.native("wk", "todo_write", args)
    assert response.status_code == 200
    output = response.json()["output"]
    assert "  1. ⏭️ [skipped] a\n  2. ⏳ [failed] b\n  3. ⏳ [weird] c\n  4. ✅ [completed] d\n" in output
    assert "总计:4 个任务\n✅ 已完成:1 个\n🔄 进行中:0 个\n⏳ 待处理:0 个\n" in output
    assert "✅ **所有任务已完成!**" in output


def test_it_maps_statuses_to_canonical_ones(api):
    statuses = ["pending", "in_progress", "completed", "skipped", "failed", "blocked", "Pending", "done"]
    args = {"steps": [step(f"s{i}", status) for i, status in enumerate(statuses)]}
    data = api.native("wk", "todo_write", args).json()["data"]
    assert [t["status"] for t in data["todos"]] == [
        "pending",
        "in_progress",
        "completed",
        "cancelled",
        "failed",
        "blocked",
        "pending",
        "pending",
    ]
    warnings = data["warnings"]
    assert [w["code"] for w in warnings] == ["unknown_status", "unknown_status"]
    assert "'Pending'" in warnings[0]["message"] and "'done'" in warnings[1]["message"]


def test_it_accepts_several_in_progress_and_blank_descriptions(api, project):
    project.single_in_progress = "off"
    project.save()
    args = {"steps": [step("   ", "in_progress"), step("", "in_progress")]}
    response = api.native("wk", "todo_write", args)
    assert response.status_code == 200
    assert "  1. 🔄 [in_progress]    \n  2. 🔄 [in_progress] \n" in response.json()["output"]


def test_it_uses_the_default_task_when_none_is_given(api):
    for key, args in (("a", {"steps": []}), ("b", {"task": "", "steps": []}), ("c", {"task": None, "steps": []})):
        body = api.native(key, "todo_write", args).json()
        assert body["output"].startswith("计划已创建\n\n**任务**: 未提供任务描述\n\n")
        assert body["data"]["task"] == "未提供任务描述"
        assert body["data"]["session"]["title"] == ""


def test_it_keeps_a_blank_task_as_is(api):
    body = api.native("wk", "todo_write", {"task": "   ", "steps": []}).json()
    assert body["output"].startswith("计划已创建\n\n**任务**:    \n\n")


def test_it_answers_empty_steps_with_the_guidance_text(api):
    api.native("wk", "todo_write", SEED_INPUT)
    body = api.native("wk", "todo_write", {"task": "研究 X", "steps": []}).json()
    assert body["output"] == (
        "计划已创建\n\n"
        "**任务**: 研究 X\n\n"
        "注意:未提供具体步骤。建议创建 3-7 个检索任务以系统化研究。\n\n"
        "建议的检索流程(专注于检索任务,不包含总结):\n"
        "1. 使用 grep_chunks 搜索关键词定位相关文档\n"
        "2. 使用 knowledge_search 进行语义搜索获取相关内容\n"
        "3. 使用 list_knowledge_chunks 获取关键文档的完整内容\n"
        "4. 使用 web_search 获取补充信息(如需要)\n"
        "\n注意:总结和综合由 thinking 工具处理,不要在此处添加总结任务。\n"
    )
    assert body["data"]["revision"] == 2
    assert body["data"]["todos"] == []
    assert body["data"]["total_steps"] == 0


def test_it_rejects_missing_or_null_steps_with_the_registry_wording(api):
    message = "Parameter validation failed: required parameter 'steps' is missing" + HINT
    api.rejected("wk", "todo_write", {"task": "t"}, message)
    api.rejected("wk", "todo_write", {"task": "t", "steps": None}, message)
    api.rejected("wk", "todo_write", None, message)
    # The registry's required check is case-sensitive, unlike Go's decoding.
    api.rejected("wk", "todo_write", {"Steps": []}, message)


def test_it_reports_every_registry_problem_together(api):
    message = (
        "Parameter validation failed: required parameter 'steps' is missing; "
        "parameter 'task' should be type 'string'" + HINT
    )
    api.rejected("wk", "todo_write", {"task": ["x"]}, message)
    api.rejected(
        "wk",
        "todo_write",
        {"task": {"a": 1}, "steps": []},
        "Parameter validation failed: parameter 'task' should be type 'string'" + HINT,
    )


def test_it_casts_numbers_and_booleans_in_task(api):
    assert api.native("a", "todo_write", {"task": 42, "steps": []}).json()["data"]["task"] == "42"
    assert api.native("b", "todo_write", {"task": True, "steps": []}).json()["data"]["task"] == "true"
    assert api.native("c", "todo_write", {"task": 1.5, "steps": []}).json()["data"]["task"] == "1.5"
    assert api.native("d", "todo_write", {"task": 1e21, "steps": []}).json()["data"]["task"] == "1000000000000000000000"


def test_it_rejects_wrong_item_types_with_gos_wording_and_no_hint(api):
    api.native("wk", "todo_write", SEED_INPUT)
    cases = [
        (
            {"steps": [{"id": 1, "description": "a", "status": "pending"}]},
            "TodoWriteInput.steps.0.id of type string",
            "number",
        ),
        ({"steps": [step("a", "pending"), {"status": True}]}, "TodoWriteInput.steps.1.status of type string", "bool"),
        ({"steps": ["a"]}, "TodoWriteInput.steps.0 of type tools.PlanStep", "string"),
        ({"steps": "abc"}, "TodoWriteInput.steps of type []tools.PlanStep", "string"),
        ({"steps": {"a": 1}}, "TodoWriteInput.steps of type []tools.PlanStep", "object"),
        ({"Task": 5, "steps": []}, "TodoWriteInput.task of type string", "number"),
    ]
    for args, where, kind in cases:
        message = f"Failed to parse args: json: cannot unmarshal {kind} into Go struct field {where}"
        api.rejected("wk", "todo_write", args, message, revision=1)


def test_it_reports_the_first_wrong_type_in_text_order(api):
    args = {"steps": [{"status": 1, "id": [2]}]}
    message = "Failed to parse args: json: cannot unmarshal number into Go struct field TodoWriteInput.steps.0.status of type string"
    api.rejected("wk", "todo_write", args, message)


def test_it_rejects_arguments_that_are_not_an_object(api):
    # `todo_write` is several tools' name: an array fits none of them.
    body = assert_refused(api.call("wk", "todo_write", [1]))
    assert body["error"]["message"].startswith("Input for 'todo_write' fits no known format. Expected one of: weknora:")
    # Forced to WeKnora, it answers in Go's words.
    message = "Failed to parse args: json: cannot unmarshal array into Go value of type tools.TodoWriteInput"
    body = assert_refused(api.call("wk", "todo_write", [1], query="?dialect=weknora"), message)
    assert api.revision("wk") is None


def test_it_matches_item_keys_case_insensitively_and_ignores_unknown_ones(api):
    args = {"steps": [{"ID": "s1", "DESCRIPTION": "a", "Status": "in_progress", "extra": 1}, None, {}]}
    body = api.native("wk", "todo_write", args).json()
    assert "  1. 🔄 [in_progress] a\n  2. ⏳ [] \n  3. ⏳ [] \n" in body["output"]
    assert body["data"]["steps"] == [
        {"id": "s1", "description": "a", "status": "in_progress"},
        {"id": "", "description": "", "status": ""},
        {"id": "", "description": "", "status": ""},
    ]
    assert [t["id"] for t in body["data"]["todos"]][0] == "s1"


def test_it_replaces_the_list_on_every_call(api):
    api.native("wk", "todo_write", SEED_INPUT)
    updated = {"task": SEED_INPUT["task"], "steps": [dict(s) for s in SEED_INPUT["steps"]]}
    updated["steps"][0]["status"] = "completed"
    updated["steps"][1]["status"] = "in_progress"
    del updated["steps"][3]
    data = api.native("wk", "todo_write", updated).json()["data"]
    assert data["revision"] == 2
    assert [(t["id"], t["status"]) for t in data["todos"]] == [
        ("step1", "completed"),
        ("step2", "in_progress"),
        ("step3", "pending"),
    ]
    assert [d["id"] for d in data["dropped"]] == ["step4"]


def test_it_truncates_long_output_as_the_registry_does(api, project):
    project.max_content_chars = 30_000
    project.save()
    text = "字" * 30_000
    output = api.native("wk", "todo_write", {"task": "t", "steps": [step(text, "pending")]}).json()["output"]
    full = weknora.plan_text("t", [step(text, "pending")])
    marker = f"\n\n... [output truncated: {len(full)} → 24000 chars, showing first 16660 + last 7140] ...\n\n"
    assert output == full[:16660] + marker + full[-7140:]


def test_it_leaves_cursors_todo_write_to_another_dialect():
    assert weknora.fits("todo_write", {"steps": []})
    assert weknora.fits("todo_write", {"task": "t"})
    assert weknora.fits("todo_write", {"todos": [], "steps": []})
    assert not weknora.fits("todo_write", {"merge": True, "todos": []})
    assert resolve("todo_write", {"steps": []}) is weknora


@pytest.mark.parametrize("definition", weknora.definitions(), ids=lambda d: d.name)
def test_it_defines_a_schema_that_accepts_valid_input_only(definition):
    assert definition.name == "todo_write"
    assert definition.description.startswith("Use this tool")
    jsonschema.validate(SEED_INPUT, definition.input_schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"task": "t"}, definition.input_schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"steps": [{"id": "1", "description": "a"}]}, definition.input_schema)
