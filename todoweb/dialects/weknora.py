"""WeKnora's `todo_write` with `steps`: its documented plan text, and the accept/reject rules of its Go source.

WeKnora validates in two phases and todoweb keeps both, in order:

1. The tool registry (`CastParams` then `ValidateParams`), top level only: `task`
   given as a number or boolean is cast to a string; `steps` missing or null, and a
   `task` that is still not a string, fail with `Parameter validation failed: …`
   plus the registry's hint.
2. Go's `json.Unmarshal` into `TodoWriteInput`: keys match case-insensitively, unknown
   keys are ignored, nulls leave the zero value (empty strings), and the first value
   of a wrong type fails with Go's `cannot unmarshal …` wording, without the hint.

Nothing checks statuses: any string is accepted and shown as given. The canonical
mapping below decides what the board stores; a status outside it is stored as
pending with an `unknown_status` warning.
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

from todoweb.calls.errors import InvalidInput
from todoweb.dialects.base import Outcome, ToolDefinition, describe, json_type
from todoweb.plan.steps import Item, Warning

NAME = "weknora"
TOOLS = ("todo_write",)
SHAPE = "{task?, steps: [{id, description, status}]}"

# The registry appends this to its own validation errors (not to Go decoding errors).
HINT = "\n\n[Analyze the error above and try a different approach.]"
DEFAULT_TASK = "未提供任务描述"

# WeKnora's status words → canonical. Anything else is accepted by the tool, so it is
# stored as pending (with a warning) rather than rejected.
CANONICAL = {
    "pending": "pending",
    "in_progress": "in_progress",
    "completed": "completed",
    "skipped": "cancelled",
    "failed": "failed",
    "blocked": "blocked",
}
EMOJI = {"pending": "⏳", "in_progress": "🔄", "completed": "✅", "skipped": "⏭️"}

# The registry's output cap (runes) and TruncateToolOutput's split.
MAX_OUTPUT = 24_000
MARKER_RESERVE = 200
HEAD_RATIO = 0.7

GO_INPUT = "tools.TodoWriteInput"
GO_STEP = "tools.PlanStep"
STEP_FIELDS = ("id", "description", "status")


def fits(tool: str, args: Any) -> bool:
    """WeKnora's `{steps}`. `todo_write` is also Cursor's (`merge`), Goose's (`content`),
    Amp's and Qwen Code's (`todos`): an object with none of those is WeKnora's, so a
    call without `steps` gets WeKnora's own "required parameter 'steps' is missing"."""
    if args is None:
        return True  # no arguments at all: WeKnora's own "steps is missing"
    if not isinstance(args, dict):
        return False
    return "steps" in args or not ({"todos", "content", "merge"} & args.keys())


def call(tool: str, args: Any, current: list[Item], *, raw: str | None = None, next_id: int = 1) -> Outcome:
    args, cast = registry_checks(args)
    task, steps = decode(args, sorted_keys=cast)
    task = task or DEFAULT_TASK
    items, warnings = [], []
    for index, step in enumerate(steps):
        status = CANONICAL.get(step["status"])
        if status is None:
            status = "pending"
            warnings.append(
                Warning(
                    "unknown_status",
                    f"Step {index + 1} ({step['id'] or 'no id'}): status '{step['status']}' is not a WeKnora status; "
                    "stored as pending",
                )
            )
        items.append(Item(content=step["description"], status=status, id=step["id"] or None))
    return Outcome(
        native=truncate(plan_text(task, steps)),
        items=items,
        # The default text is for the model; it must not overwrite a real title.
        title=task if task != DEFAULT_TASK and task.strip() else None,
        warnings=warnings,
        extra={
            "task": task,
            "steps": steps,
            "steps_json": go_json(steps),
            "total_steps": len(steps),
            "plan_created": True,
            "display_type": "plan",
        },
    )


def registry_checks(args: Any) -> tuple[Any, bool]:
    """CastParams + ValidateParams. Both skip arguments that are not a JSON object
    (Go's unmarshal into a map fails), except `null`, which reads as an empty map."""
    if args is None:
        args = {}
    elif not isinstance(args, dict):
        return args, False
    cast = False
    task = args.get("task")
    if isinstance(task, (bool, int, float)):
        try:
            args = {**args, "task": go_format(task)}
        except OverflowError:
            # Beyond float64: Go cannot read the arguments into a map, so both
            # registry steps are skipped and Unmarshal reports the number.
            return args, False
        cast = True
    errors = []
    if args.get("steps") is None:
        errors.append("required parameter 'steps' is missing")
    if args.get("task") is not None and not isinstance(args["task"], str):
        errors.append("parameter 'task' should be type 'string'")
    if errors:
        raise InvalidInput(
            "Parameter validation failed: " + "; ".join(errors) + HINT,
            details={"fields": [e.split("'")[1] for e in errors]},
        )
    return args, cast


def go_format(value: bool | int | float) -> str:
    """strconv.FormatFloat(v, 'f', -1, 64) / "true" / "false", as CastParams writes them."""
    if isinstance(value, bool):
        return "true" if value else "false"
    # Go holds every JSON number as float64: shortest round-trip digits, no exponent.
    return format(Decimal(repr(float(value))).normalize(), "f")


def decode(args: Any, *, sorted_keys: bool) -> tuple[str, list[dict[str, str]]]:
    """json.Unmarshal into TodoWriteInput; the first wrong type wins, as Go reports it.

    After a cast the registry re-marshals the arguments from a Go map, which sorts
    every object's keys; `sorted_keys` keeps that order for which error comes first.
    """
    if not isinstance(args, dict):
        raise InvalidInput(
            f"Failed to parse args: json: cannot unmarshal {go_kind(args)} into Go value of type {GO_INPUT}"
        )
    task: str = ""
    steps: list[Any] = []
    for key, value in ordered(args, sorted_keys):
        field = match_field(key, ("task", "steps"))
        if field is None or value is None:  # unknown keys are ignored; null leaves the zero value
            if field == "steps":
                steps = []
            continue
        if field == "task":
            if not isinstance(value, str):
                raise type_error(value, "task", "string")
            task = value
        elif not isinstance(value, list):
            raise type_error(value, "steps", f"[]{GO_STEP}")
        else:
            steps = [decode_step(index, element, sorted_keys) for index, element in enumerate(value)]
    return task, steps


def decode_step(index: int, element: Any, sorted_keys: bool) -> dict[str, str]:
    step = dict.fromkeys(STEP_FIELDS, "")
    if element is None:  # a null element is a zero PlanStep: `  2. ⏳ [] `
        return step
    if not isinstance(element, dict):
        raise type_error(element, f"steps.{index}", GO_STEP)
    for key, value in ordered(element, sorted_keys):
        field = match_field(key, STEP_FIELDS)
        if field is None or value is None:
            continue
        if not isinstance(value, str):
            raise type_error(value, f"steps.{index}.{field}", "string")
        step[field] = value
    return step


def ordered(obj: dict[str, Any], sorted_keys: bool) -> list[tuple[str, Any]]:
    return sorted(obj.items()) if sorted_keys else list(obj.items())


def match_field(key: str, fields: tuple[str, ...]) -> str | None:
    """encoding/json matches keys to fields case-insensitively (`ID`, `Description`)."""
    folded = key.casefold()
    return next((field for field in fields if field == folded), None)


def type_error(value: Any, path: str, go_type: str) -> InvalidInput:
    return InvalidInput(
        f"Failed to parse args: json: cannot unmarshal {go_kind(value)} into Go struct field "
        f"TodoWriteInput.{path} of type {go_type}",
        details={"field": path},
    )


def go_kind(value: Any) -> str:
    """The JSON kind in Go's unmarshal errors: "bool" where JSON Schema says "boolean"."""
    kind = json_type(value)
    return {"boolean": "bool", "null": "object"}.get(kind, kind)


def plan_text(task: str, steps: list[dict[str, str]]) -> str:
    """generatePlanOutput, in the documentation's Chinese (its example plan, punctuation as it prints it)."""
    out = "计划已创建\n\n"
    out += f"**任务**: {task}\n\n"
    if not steps:
        # The documentation elides this list ("// ... 列出推荐工具"); completed from WeKnora's Chinese source.
        out += "注意:未提供具体步骤。建议创建 3-7 个检索任务以系统化研究。\n\n"
        out += "建议的检索流程(专注于检索任务,不包含总结):\n"
        out += "1. 使用 grep_chunks 搜索关键词定位相关文档\n"
        out += "2. 使用 knowledge_search 进行语义搜索获取相关内容\n"
        out += "3. 使用 list_knowledge_chunks 获取关键文档的完整内容\n"
        out += "4. 使用 web_search 获取补充信息(如需要)\n"
        out += "\n注意:总结和综合由 thinking 工具处理,不要在此处添加总结任务。\n"
        return out

    # Only the three documented statuses are counted: skipped, failed or unknown
    # steps count as neither done nor remaining (so they can read "all completed").
    pending = sum(step["status"] == "pending" for step in steps)
    in_progress = sum(step["status"] == "in_progress" for step in steps)
    completed = sum(step["status"] == "completed" for step in steps)
    remaining = pending + in_progress

    out += "**计划步骤**:\n\n"
    for number, step in enumerate(steps, start=1):
        emoji = EMOJI.get(step["status"], "⏳")
        out += f"  {number}. {emoji} [{step['status']}] {step['description']}\n"

    out += "\n=== 任务进度 ===\n"
    out += f"总计:{len(steps)} 个任务\n"
    out += f"✅ 已完成:{completed} 个\n"
    out += f"🔄 进行中:{in_progress} 个\n"
    out += f"⏳ 待处理:{pending} 个\n"

    out += "\n=== ⚠️ 重要提醒 ===\n"
    if remaining > 0:
        out += f"**还有 {remaining} 个任务未完成!**\n\n"
        out += "**必须完成所有任务后才能总结或得出结论。**\n\n"
        out += "下一步操作:\n"
        if in_progress > 0:
            out += "- 继续完成当前进行中的任务\n"
        if pending > 0:
            out += f"- 开始处理 {pending} 个待处理任务\n"
            out += "- 按顺序完成每个任务,不要跳过\n"
        out += "- 完成每个任务后,更新 todo_write 标记为 completed\n"
        out += "- 只有在所有任务完成后,才能生成最终总结\n"
    else:
        # The documentation shows only the first line of this list; the rest is WeKnora's source.
        out += "✅ **所有任务已完成!**\n\n"
        out += "现在可以:\n"
        out += "- 综合所有任务的发现\n"
        out += "- 生成完整的最终答案或报告\n"
        out += "- 确保所有方面都已充分研究\n"
    return out


def truncate(output: str, limit: int = MAX_OUTPUT) -> str:
    """The registry's TruncateToolOutput: counted in runes, 70 % head + 30 % tail."""
    if len(output) <= limit:
        return output
    usable = limit - MARKER_RESERVE
    head = int(usable * HEAD_RATIO)
    tail = usable - head
    marker = f"\n\n... [output truncated: {len(output)} → {limit} chars, showing first {head} + last {tail}] ...\n\n"
    return output[:head] + marker + output[len(output) - tail :]


def go_json(value: Any) -> str:
    """Go's json.Marshal: compact, raw UTF-8, but <, >, & and U+2028/U+2029 escaped."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    for char, escaped in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(char, escaped)
    return text


def definitions() -> list[ToolDefinition]:
    step = {
        "type": "object",
        "properties": {
            "id": {"type": "string", "description": "Unique identifier for this step (e.g., 'step1', 'step2')"},
            "description": {
                "type": "string",
                "description": "Clear description of what to investigate or accomplish in this step",
            },
            "status": {
                "type": "string",
                "description": "Current status: pending (not started), in_progress (executing), completed (finished)",
            },
        },
        "required": list(STEP_FIELDS),
        "additionalProperties": False,
    }
    return [
        ToolDefinition(
            name="todo_write",
            description=describe(NAME, "todo_write"),
            input_schema={
                "type": "object",
                "properties": {
                    "task": {
                        "type": "string",
                        "description": "The complex task or question you need to create a plan for",
                    },
                    "steps": {
                        "type": "array",
                        "items": step,
                        "description": "Array of research plan steps with status tracking",
                    },
                },
                "required": ["steps"],
                "additionalProperties": False,
            },
        )
    ]
