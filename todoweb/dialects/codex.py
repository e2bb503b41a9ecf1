"""Codex's `update_plan`, as codex-rs parses it: `serde_json::from_str::<UpdatePlanArgs>`.

serde reads the arguments text as a stream and stops at the first problem, so the
error that wins is the first one *in the text*, worded by serde and placed by it
(`{"plan":[{"step":"a","status":"pending","priority":"high"}]}` gives "failed to parse
function arguments: unknown field `priority`, expected `step` or `status` at line 1
column 50"). `_serde_json` ports the parts of serde_json's deserializer that these structs
exercise; this module adds the structs:

    #[serde(deny_unknown_fields)] struct UpdatePlanArgs { #[serde(default)] explanation: Option<String>, plan: Vec<PlanItemArg> }
    #[serde(deny_unknown_fields)] struct PlanItemArg { step: String, status: StepStatus }
    #[serde(rename_all = "snake_case")] enum StepStatus { Pending, InProgress, Completed }

Quirks kept because serde has them: a struct may also be written as an array
(`["step", "pending"]`), duplicate keys are errors, and more than one `in_progress`
step is accepted (the "at most one" rule is only in the tool description; the
project policy decides).
"""

from __future__ import annotations

from typing import Any

from todoweb.calls.errors import InvalidInput, InvalidJson
from todoweb.calls.jsonio import UNPARSED, compact_json
from todoweb.dialects._serde_json import MISSING, Deserializer, SerdeError, one_of
from todoweb.dialects.base import Outcome, ToolDefinition, describe
from todoweb.plan.steps import Item

NAME = "codex"
TOOLS = ("update_plan",)
SHAPE = "{explanation?, plan: [{step, status}]}"
HANDLES_RAW = True

STATUSES = ("pending", "in_progress", "completed")
ARGS_FIELDS = ("explanation", "plan")
ITEM_FIELDS = ("step", "status")
PREFIX = "failed to parse function arguments: "
UPDATED = "Plan updated"


def fits(tool: str, args: Any) -> bool:
    return True


def call(tool: str, args: Any, current: list[Item], *, raw: str | None = None, next_id: int = 1) -> Outcome:
    # The model's own text where there is one (OpenAI forms); otherwise the input as
    # compact JSON, the form a model would most likely have written it in.
    text = raw if raw is not None else compact_json(args)
    try:
        explanation, plan = UpdatePlanArgsParser(text).update_plan_args()
    except SerdeError as exc:
        # Text that is not JSON at all is the envelope's 400; a well-formed call that
        # breaks the struct's rules is a 422, like every other dialect's refusal.
        error = InvalidJson if args is UNPARSED else InvalidInput
        raise error(PREFIX + str(exc), details={"line": exc.line, "column": exc.column}) from None
    items = [Item(content=step, status=status) for step, status in plan]
    title = explanation if explanation and explanation.strip() else None
    return Outcome(native=UPDATED, items=items, title=title)


class UpdatePlanArgsParser(Deserializer):
    """`UpdatePlanArgs` and `PlanItemArg`, as serde's derived code reads them."""

    def update_plan_args(self) -> tuple[str | None, list[tuple[str, str]]]:
        """`serde_json::from_str`: the value, then nothing but whitespace."""
        value = self.deserialize_struct("struct UpdatePlanArgs", self.args_from_map, self.args_from_seq)
        if self.parse_whitespace() is not None:
            raise self.peek_error("trailing characters")
        return value

    def args_from_map(self) -> tuple[str | None, list[tuple[str, str]]]:
        explanation: Any = MISSING
        plan: Any = MISSING
        for key in self.map_keys(ARGS_FIELDS):
            if key == "explanation":
                if explanation is not MISSING:
                    raise SerdeError("duplicate field `explanation`")
                self.parse_object_colon()
                explanation = self.deserialize_option_string()
            else:
                if plan is not MISSING:
                    raise SerdeError("duplicate field `plan`")
                self.parse_object_colon()
                plan = self.deserialize_plan()
        if plan is MISSING:
            raise SerdeError("missing field `plan`")
        return (None if explanation is MISSING else explanation), plan

    def args_from_seq(self) -> tuple[str | None, list[tuple[str, str]]]:
        expecting = "struct UpdatePlanArgs with 2 elements"
        first = [True]
        explanation = None  # #[serde(default)]: a missing element is None, not an error
        if self.next_element(first):
            explanation = self.deserialize_option_string()
        if not self.next_element(first):
            raise SerdeError(f"invalid length 1, expected {expecting}")
        return explanation, self.deserialize_plan()

    def plan_item_from_map(self) -> tuple[str, str]:
        step: Any = MISSING
        status: Any = MISSING
        for key in self.map_keys(ITEM_FIELDS):
            if key == "step":
                if step is not MISSING:
                    raise SerdeError("duplicate field `step`")
                self.parse_object_colon()
                step = self.deserialize_string("a string")
            else:
                if status is not MISSING:
                    raise SerdeError("duplicate field `status`")
                self.parse_object_colon()
                status = self.deserialize_status()
        # The derived code checks the fields in declaration order.
        if step is MISSING:
            raise SerdeError("missing field `step`")
        if status is MISSING:
            raise SerdeError("missing field `status`")
        return step, status

    def plan_item_from_seq(self) -> tuple[str, str]:
        expecting = "struct PlanItemArg with 2 elements"
        first = [True]
        if not self.next_element(first):
            raise SerdeError(f"invalid length 0, expected {expecting}")
        step = self.deserialize_string("a string")
        if not self.next_element(first):
            raise SerdeError(f"invalid length 1, expected {expecting}")
        return step, self.deserialize_status()

    def deserialize_plan(self) -> list[tuple[str, str]]:
        """`Vec<PlanItemArg>`: deserialize_seq with the Vec visitor."""
        peek = self.parse_whitespace()
        if peek is None:
            raise self.peek_error("EOF while parsing a value")
        if peek != ord("["):
            raise self.peek_invalid_type("a sequence")
        self.eat_char()
        items: list[tuple[str, str]] = []
        first = [True]
        try:
            while self.next_element(first):
                items.append(
                    self.deserialize_struct("struct PlanItemArg", self.plan_item_from_map, self.plan_item_from_seq)
                )
        except SerdeError as exc:
            self.end_seq(quiet=True)
            raise self.fix_position(exc) from None
        self.end_seq()
        return items

    def deserialize_status(self) -> str:
        """deserialize_enum for StepStatus: `"pending"`, or serde's map form `{"pending": null}`."""
        peek = self.parse_whitespace()
        if peek == ord('"'):
            return self.variant_identifier()
        if peek != ord("{"):
            raise self.peek_error("expected value" if peek is not None else "EOF while parsing a value")
        self.eat_char()
        variant = self.variant_identifier()
        self.parse_object_colon()
        self.deserialize_unit()
        peek = self.parse_whitespace()
        if peek == ord("}"):
            self.eat_char()
            return variant
        raise self.error("expected value" if peek is not None else "EOF while parsing an object")

    def variant_identifier(self) -> str:
        variant = self.deserialize_string("variant identifier")
        if variant not in STATUSES:
            # Placed right after the string's closing quote (deserialize_str's fix_position).
            raise self.error(f"unknown variant `{variant}`, expected {one_of(STATUSES)}")
        return variant


def definitions() -> list[ToolDefinition]:
    # codex-rs's own schema: `status` is a plain string there, its values only named
    # in the description, and both objects close with additionalProperties: false.
    item = {
        "type": "object",
        "properties": {
            "step": {"type": "string"},
            "status": {"type": "string", "description": "One of: pending, in_progress, completed"},
        },
        "required": ["step", "status"],
        "additionalProperties": False,
    }
    schema = {
        "type": "object",
        "properties": {
            "explanation": {"type": "string"},
            "plan": {"type": "array", "description": "The list of steps", "items": item},
        },
        "required": ["plan"],
        "additionalProperties": False,
    }
    return [ToolDefinition(name="update_plan", description=describe(NAME, "update_plan"), input_schema=schema)]
