"""The incremental TodoManager (its documentation, in Chinese): `create_todos` appends, `update_todo` patches one step.

The TodoManager's tools answer their errors as plain strings; here those exact strings are
`InvalidInput` (HTTP 422, nothing written). Values are read the way the
TypeScript original reads them: `String(args.id)`, `String(args.status)`, and step
descriptions printed through a template literal, so a number or null is accepted
and shown as JavaScript would show it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from todoweb.calls.errors import InvalidInput
from todoweb.dialects.base import Outcome, ToolDefinition, describe, js_string, next_number
from todoweb.plan.steps import MARKERS, Item

NAME = "manager"
TOOLS = ("create_todos", "update_todo")
SHAPE = "create_todos {items: [string]}; update_todo {id, status}"

# update_todo accepts no way back to pending: a step only moves forward (its documentation).
UPDATE_STATUSES = ("running", "completed", "failed")
CANONICAL = {"running": "in_progress", "completed": "completed", "failed": "failed"}
# The TodoManager's four labels are todoweb's checklist markers, which also cover the
# canonical statuses only other dialects can set (blocked, cancelled).
LABELS = MARKERS


def fits(tool: str, args: Any) -> bool:
    return True


def call(tool: str, args: Any, current: list[Item], *, raw: str | None = None, next_id: int = 1) -> Outcome:
    args = args if isinstance(args, dict) else {}
    if tool == "create_todos":
        return create(args, current, next_id)
    return update(args, current)


def create(args: dict[str, Any], current: list[Item], next_id: int) -> Outcome:
    descriptions = args.get("items")
    if not isinstance(descriptions, list) or not descriptions:
        raise InvalidInput("错误:必须提供至少一个步骤描述。", details={"field": "items"})
    first = next_number(current, next_id)
    created = [
        Item(content=js_string(description), status="pending", id=str(first + offset))
        for offset, description in enumerate(descriptions)
    ]
    items = current + created
    return Outcome(native=f"已创建 {len(created)} 个步骤:\n{plan_text(items)}", items=items, patched=True)


def update(args: dict[str, Any], current: list[Item]) -> Outcome:
    step_id = js_value(args, "id")
    status = js_value(args, "status")
    # The TodoManager checks the status before it looks the step up.
    if status not in UPDATE_STATUSES:
        raise InvalidInput(
            f'错误:无效状态 "{status}",可选值: {", ".join(UPDATE_STATUSES)}', details={"field": "status"}
        )
    index = next((i for i, item in enumerate(current) if item.id == step_id), None)
    if index is None:
        raise InvalidInput(f'错误:未找到 ID 为 "{step_id}" 的步骤。', details={"id": step_id})
    items = list(current)
    items[index] = replace(current[index], status=CANONICAL[status])
    step = items[index]
    return Outcome(native=f'步骤 #{step.id} "{step.content}" → {status}\n{plan_text(items)}', items=items, patched=True)


def js_value(args: dict[str, Any], key: str) -> str:
    """`String(args[key])`: a missing key is "undefined"."""
    return js_string(args[key]) if key in args else "undefined"


def plan_text(items: list[Item]) -> str:
    """formatForPrompt, over the whole list (steps from other dialects included)."""
    if not items:
        return "当前没有执行计划。"
    lines = [f"  {LABELS[item.status]} #{item.id} {item.content}" for item in items]
    return "执行计划:\n" + "\n".join(lines)


def definitions() -> list[ToolDefinition]:
    return [
        ToolDefinition(
            name="create_todos",
            description=describe(NAME, "create_todos"),
            input_schema={
                "type": "object",
                "properties": {
                    "items": {
                        "type": "array",
                        "items": {"type": "string"},
                        "minItems": 1,
                        "description": "按执行顺序排列的步骤描述列表",
                    }
                },
                "required": ["items"],
                "additionalProperties": False,
            },
        ),
        ToolDefinition(
            name="update_todo",
            description=describe(NAME, "update_todo"),
            input_schema={
                "type": "object",
                "properties": {
                    "id": {"type": "string", "description": "步骤 ID(创建时分配的编号)"},
                    "status": {
                        "type": "string",
                        "enum": list(UPDATE_STATUSES),
                        "description": "新状态:running、completed 或 failed",
                    },
                },
                "required": ["id", "status"],
                "additionalProperties": False,
            },
        ),
    ]
