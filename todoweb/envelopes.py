"""The four shapes a tool call arrives in, and the reply each one expects back.

1. Anthropic `tool_use` block          → `tool_result` block
2. OpenAI Chat Completions tool call   → `{"role": "tool", …}` message
3. OpenAI Responses `function_call`    → `function_call_output` item
4. plain `{"tool", "id", "input"}`     → `{"tool_use_id", "content", "is_error"}`
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from .dialects.base import UNPARSED, compact_json
from .errors import ApiError
from .jsonio import check_text, reject_constant

EXPECTED = (
    "a tool_use block {type, id, name, input}, a Chat Completions tool call {id, type, function: {name, arguments}}, "
    "a Responses function_call {type, call_id, name, arguments} or {tool, id, input}"
)


@dataclass(frozen=True)
class ToolCall:
    form: str  # "anthropic" | "chat" | "responses" | "plain"
    tool: str
    call_id: str | None
    args: Any  # the tool input; UNPARSED when the arguments text is not JSON
    raw: str | None = None  # the arguments text, for the two OpenAI forms

    def fingerprint(self) -> str:
        # The call id is part of the body: reusing an Idempotency-Key for another
        # call must not hand that call the first one's reply.
        body = [self.tool, self.call_id, self.raw if self.args is UNPARSED else self.args]
        return hashlib.sha256(compact_json(body).encode()).hexdigest()

    def reply(self, content: str, *, is_error: bool = False) -> dict[str, Any]:
        if self.form == "anthropic":
            return {"type": "tool_result", "tool_use_id": self.call_id, "content": content, "is_error": is_error}
        if self.form == "chat":
            return {"role": "tool", "tool_call_id": self.call_id, "content": content}
        if self.form == "responses":
            return {"type": "function_call_output", "call_id": self.call_id, "output": content}
        return {"tool_use_id": self.call_id, "content": content, "is_error": is_error}


def parse_call(body: Any) -> ToolCall:
    if not isinstance(body, dict):
        raise ApiError(422, "invalid_input", f"The body must be a JSON object: {EXPECTED}")
    if body.get("type") == "tool_use":
        return ToolCall(
            "anthropic", tool_name(body.get("name"), "name"), call_id(body.get("id")), body.get("input", {})
        )
    if isinstance(body.get("function"), dict):
        function = body["function"]
        call = ToolCall("chat", tool_name(function.get("name"), "function.name"), call_id(body.get("id")), None)
        return with_arguments(call, function.get("arguments"), "function.arguments")
    if body.get("type") == "function_call":
        call = ToolCall("responses", tool_name(body.get("name"), "name"), call_id(body.get("call_id")), None)
        return with_arguments(call, body.get("arguments"), "arguments")
    if "tool" in body:
        return ToolCall("plain", tool_name(body.get("tool"), "tool"), call_id(body.get("id")), body.get("input", {}))
    raise ApiError(422, "invalid_input", f"Unrecognised tool call. Expected {EXPECTED}")


def sniff_call(body: bytes) -> ToolCall | None:
    """The call a body names, if it names one: lets any error answer carry a `reply`."""
    try:
        return parse_call(json.loads(body))
    except (ValueError, RecursionError, ApiError):
        return None


def tool_name(value: Any, field: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ApiError(422, "invalid_input", f"'{field}' must be a non-empty string naming the tool")
    return value


def call_id(value: Any) -> str | None:
    if value is None or value == "":
        return None
    if isinstance(value, (str, int)) and not isinstance(value, bool) and len(str(value)) <= 200:
        return str(value)
    raise ApiError(422, "invalid_input", "The tool call id must be a string of at most 200 characters")


def with_arguments(call: ToolCall, value: Any, field: str) -> ToolCall:
    """The call with its arguments text decoded (an OpenAI call carries JSON as a string)."""
    if value is None:
        value = ""
    if not isinstance(value, str):
        error = ApiError(400, "invalid_json", f"'{field}' must be a string holding a JSON object")
        error.reply_to = call
        raise error
    return ToolCall(call.form, call.tool, call.call_id, decode(value), value)


def decode(raw: str) -> Any:
    try:
        value = json.loads(raw, parse_constant=reject_constant)
    except (ValueError, RecursionError):
        return UNPARSED
    check_text(value)
    return value
