"""The five shapes a tool call arrives in, and the reply each one expects back.

1. Anthropic `tool_use` block          → `tool_result` block
2. OpenAI Chat Completions tool call   → `{"role": "tool", …}` message
3. OpenAI Responses `function_call`    → `function_call_output` item
4. plain `{"tool", "id", "input"}`     → `{"tool_use_id", "content", "is_error"}`
5. LangChain `tool_call`               → a `ToolMessage` as a dict (`{"type": "tool", …}`)
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from typing import Any

from todoweb.calls.errors import InvalidInput, InvalidJson
from todoweb.calls.jsonio import UNPARSED, JsonError, UnacceptableJson, compact_json, parse
from todoweb.calls.titles import call_title
from todoweb.calls.titles import checked as checked_title

EXPECTED = (
    "a tool_use block {type, id, name, input}, a Chat Completions tool call {id, type, function: {name, arguments}}, "
    "a Responses function_call {type, call_id, name, arguments}, a LangChain tool_call {type, id, name, args} "
    "or {tool, id, input}"
)


@dataclass(frozen=True)
class ToolCall:
    form: str  # "anthropic" | "chat" | "responses" | "langchain" | "plain"
    tool: str
    call_id: str | None
    args: Any  # the tool input; UNPARSED when the arguments text is not JSON todoweb accepts
    raw: str | None = None  # the arguments text, for the two OpenAI forms
    # Why `args` is UNPARSED: raised unless the dialect reads the raw text itself.
    args_problem: InvalidInput | None = field(default=None, compare=False)
    dialect: str | None = None  # the dialect the caller forced (`?dialect=`, or the plain form's field)
    title: str | None = None  # the session's title the caller gave with the call (calls.titles), cleaned

    def fingerprint(self) -> str:
        # The call id is part of the body: reusing an Idempotency-Key for another
        # call must not hand that call the first one's reply.
        body = [self.tool, self.call_id, self.raw if self.args is UNPARSED else self.args]
        if self.dialect:
            body.append(self.dialect)
        if self.title:
            # Last and only when given: the keys of calls without a title keep their fingerprint.
            body.append({"title": self.title})
        return hashlib.sha256(compact_json(body).encode()).hexdigest()

    def reply(self, content: str, *, is_error: bool = False) -> dict[str, Any]:
        if self.form == "anthropic":
            return {"type": "tool_result", "tool_use_id": self.call_id, "content": content, "is_error": is_error}
        if self.form == "chat":
            return {"role": "tool", "tool_call_id": self.call_id, "content": content}
        if self.form == "responses":
            return {"type": "function_call_output", "call_id": self.call_id, "output": content}
        if self.form == "langchain":
            # What LangChain's convert_to_messages() reads as a ToolMessage.
            return {
                "type": "tool",
                "tool_call_id": self.call_id,
                "name": self.tool,
                "content": content,
                "status": "error" if is_error else "success",
            }
        return {"tool_use_id": self.call_id, "content": content, "is_error": is_error}


def parse_call(body: Any, *, dialect: str | None = None) -> ToolCall:
    """The tool call a body carries; `dialect` (the `?dialect=` parameter) forces a
    dialect, as the plain form's `"dialect"` field does."""
    if not isinstance(body, dict):
        raise InvalidInput(f"The body must be a JSON object: {EXPECTED}")
    call = envelope(body)
    if call.form == "plain" and dialect is None and body.get("dialect") is not None:
        dialect = body["dialect"]
        if not isinstance(dialect, str):
            raise InvalidInput("'dialect' must be a string naming a dialect")
    return replace(call, dialect=dialect) if dialect else call


def with_title(call: ToolCall, body: dict[str, Any], *, header: str | None, query: str | None) -> ToolCall:
    """The call with the session title its caller gave: the plain form's `"title"`, else
    the X-Todoweb-Title header, else `?title=` (calls.titles); each one given is checked."""
    title = call_title(header, query)
    if call.form == "plain" and "title" in body:
        title = checked_title(body["title"], "'title'") or title
    return replace(call, title=title) if title else call


def envelope(body: dict[str, Any]) -> ToolCall:
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
    if body.get("type") == "tool_call":
        return ToolCall("langchain", tool_name(body.get("name"), "name"), call_id(body.get("id")), body.get("args", {}))
    if "tool" in body:
        return ToolCall("plain", tool_name(body.get("tool"), "tool"), call_id(body.get("id")), body.get("input", {}))
    raise InvalidInput(f"Unrecognised tool call. Expected {EXPECTED}")


def tool_name(value: Any, field: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(f"'{field}' must be a non-empty string naming the tool")
    return value


def call_id(value: Any) -> str | None:
    if value is None or value == "":
        return None
    if isinstance(value, (str, int)) and not isinstance(value, bool) and len(str(value)) <= 200:
        return str(value)
    raise InvalidInput("The tool call id must be a string of at most 200 characters")


def with_arguments(call: ToolCall, value: Any, where: str) -> ToolCall:
    """The call with its arguments text decoded (an OpenAI call carries JSON as a string).
    Text todoweb cannot take is kept as UNPARSED, with the reason: some tools read it
    their own way (see the dialects' HANDLES_RAW)."""
    if value is None:
        value = ""
    if not isinstance(value, str):
        problem = InvalidJson(f"'{where}' must be a string holding a JSON object")
        return ToolCall(call.form, call.tool, call.call_id, UNPARSED, None, args_problem=problem)
    try:
        args = parse(value, what="The arguments text")
    except JsonError as exc:
        return ToolCall(call.form, call.tool, call.call_id, UNPARSED, value, args_problem=InvalidJson(str(exc)))
    except UnacceptableJson as exc:
        return ToolCall(call.form, call.tool, call.call_id, UNPARSED, value, args_problem=InvalidInput(str(exc)))
    return ToolCall(call.form, call.tool, call.call_id, args, value)
