"""Gemini CLI's `write_todos` (items with `description`), as @google/gemini-cli-core 0.61 runs it.

The real tool checks a call in three phases, and the first failure wins:

1. its JSON Schema over the whole payload (ajv, draft-07, first error only, in
   ajv's words: `params/todos/0/status must be equal to one of the allowed values`);
2. each item in turn: a description that JavaScript's `trim()` leaves non-empty;
3. at most one `in_progress` item.

So a schema error at a later index beats an empty description at an earlier one.
ajv is reproduced with the `jsonschema` library: its errors come out in the order of
the schema's keywords, so the validating schema's keys are put in ajv's order first.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any

from todoweb.calls.errors import InvalidInput, InvalidJson
from todoweb.calls.jsonio import UNPARSED, json_error
from todoweb.dialects._javascript import JS_WHITESPACE
from todoweb.dialects.base import Outcome, ToolDefinition, describe
from todoweb.plan.steps import Item

if TYPE_CHECKING:
    from jsonschema import Draft7Validator
    from jsonschema.exceptions import ValidationError

NAME = "gemini"
TOOLS = ("write_todos",)
SHAPE = "{todos: [{description, status}]}"
# Gemini's API hands tools structured arguments; a non-object is judged by the
# schema (`params must be object`) whatever envelope carried it, so this module
# also takes OpenAI-form calls whose arguments text is a JSON array or scalar.
HANDLES_RAW = True

STATUSES = ("pending", "in_progress", "completed", "cancelled", "blocked")

# ajv (allErrors: false) checks `type` first, then `enum`, then the object keywords in
# its vocabulary order (`required`, `additionalProperties`, `properties`), then `items`.
AJV_ORDER = ("type", "enum", "required", "additionalProperties", "properties", "items")

ONE_IN_PROGRESS = 'Invalid parameters: Only one task can be "in_progress" at a time.'
EMPTY_DESCRIPTION = "Each todo must have a non-empty description string"


def fits(tool: str, args: Any) -> bool:
    """`write_todos` is also deepagents' name (items with `content`): this one is ours
    unless the items use `content` and none uses `description`. An empty or absent
    list, or a malformed call, stays with Gemini, whose errors then explain it."""
    todos = args.get("todos") if isinstance(args, dict) else None
    if not isinstance(todos, list):
        return True
    fields = [todo.keys() for todo in todos if isinstance(todo, dict)]
    return any("description" in keys for keys in fields) or not any("content" in keys for keys in fields)


def call(tool: str, args: Any, current: list[Item], *, raw: str | None = None, next_id: int = 1) -> Outcome:
    if args is UNPARSED:
        raise InvalidJson(f"The arguments are not valid JSON: {json_error(raw or '')}")
    problem = schema_error(args)
    if problem:
        raise InvalidInput(problem)
    todos = args["todos"]
    check_semantics(todos)
    items = [Item(content=todo["description"], status=todo["status"]) for todo in todos]
    return Outcome(native=reply(todos), items=items)


def schema_error(params: Any) -> str | None:
    # SchemaValidator refuses non-objects before ajv runs; an array is an object to
    # `typeof`, so it reaches ajv and fails its `type` keyword instead.
    if not isinstance(params, (dict, list)):
        return "Value of params must be an object"
    error = next(iter(validator().iter_errors(params)), None)
    if error is None:
        return None
    return f"params{''.join(f'/{pointer_part(part)}' for part in error.absolute_path)} {ajv_message(error)}"


def pointer_part(part: str | int) -> str:
    # ajv's instancePath is a JSON Pointer.
    return str(part).replace("~", "~0").replace("/", "~1")


def ajv_message(error: ValidationError) -> str:
    if error.validator == "type":
        return f"must be {error.validator_value}"
    if error.validator == "required":
        missing = next(name for name in error.validator_value if name not in error.instance)
        return f"must have required property '{missing}'"
    if error.validator == "additionalProperties":
        return "must NOT have additional properties"
    if error.validator == "enum":
        return "must be equal to one of the allowed values"
    return error.message  # not reached with this schema


def check_semantics(todos: list[dict[str, Any]]) -> None:
    # The tool's messages name no index; `details` does, for programs.
    for index, todo in enumerate(todos):
        if not todo["description"].strip(JS_WHITESPACE):
            raise InvalidInput(EMPTY_DESCRIPTION, details={"index": index})
    in_progress = [index for index, todo in enumerate(todos) if todo["status"] == "in_progress"]
    if len(in_progress) > 1:
        raise InvalidInput(ONE_IN_PROGRESS, details={"indexes": in_progress})


def reply(todos: list[dict[str, Any]]) -> str:
    if not todos:
        return "Successfully cleared the todo list."
    lines = "\n".join(f"{index}. [{todo['status']}] {todo['description']}" for index, todo in enumerate(todos, 1))
    return f"Successfully updated the todo list. The current list is now:\n{lines}"


def input_schema() -> dict[str, Any]:
    item = {
        "type": "object",
        "description": "One todo item.",
        "properties": {
            "description": {"type": "string", "description": "What the task is."},
            "status": {"type": "string", "description": "Where the task stands.", "enum": list(STATUSES)},
        },
        "required": ["description", "status"],
        "additionalProperties": False,
    }
    return {
        "type": "object",
        "properties": {
            "todos": {
                "type": "array",
                "description": "The whole todo list. It replaces the list you sent before.",
                "items": item,
            }
        },
        "required": ["todos"],
        "additionalProperties": False,
    }


def ajv_ordered(schema: Any) -> Any:
    """The schema with every object's keys in the order ajv evaluates them."""
    if isinstance(schema, list):
        return [ajv_ordered(value) for value in schema]
    if not isinstance(schema, dict):
        return schema
    rank = {keyword: index for index, keyword in enumerate(AJV_ORDER)}
    ordered = sorted(schema.items(), key=lambda pair: rank.get(pair[0], -1))
    # `properties` maps names to schemas: keep the names' order, order each schema.
    return {
        key: {name: ajv_ordered(sub) for name, sub in value.items()} if key == "properties" else ajv_ordered(value)
        for key, value in ordered
    }


@cache
def validator() -> Draft7Validator:
    """Made on the first call: jsonschema costs a process 4 MB, which a deployment whose
    agents never use Gemini CLI need not pay."""
    from jsonschema import Draft7Validator

    return Draft7Validator(ajv_ordered(input_schema()))


def definitions() -> list[ToolDefinition]:
    return [ToolDefinition(name="write_todos", description=describe(NAME, "write_todos"), input_schema=input_schema())]
