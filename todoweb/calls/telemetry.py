"""Todo tool calls found in agents' OpenTelemetry exports (OTLP log records and
spans, decoded from protobuf or JSON into the same plain shape).

Agents export every tool call they make, arguments included, once their telemetry
points at an OTLP endpoint. Each known source names its event, the attributes that
hold the tool's name and arguments (always a JSON string), the session, the call id
and the order of events:

| source | record | tool, arguments | session | call id |
|---|---|---|---|---|
| Claude Code | log `claude_code.tool_result` | `tool_name`, `tool_input` | `session.id` | `tool_use_id` |
| Codex | log `codex.tool_result` | `tool_name`, `arguments` | `conversation.id` | `call_id` |
| Gemini CLI | log `gemini_cli.tool_call` | `function_name`, `function_args` | `session.id` | — |
| Qwen Code | log `qwen-code.tool_call` | `function_name`, `function_args` | `session.id` | — |
| opencode (AI SDK) | span `ai.toolCall` | `ai.toolCall.name`, `ai.toolCall.args` | `session.id` | `ai.toolCall.id` |
| GenAI conventions | span `execute_tool …` | `gen_ai.tool.name`, `gen_ai.tool.call.arguments` | `gen_ai.conversation.id` | `gen_ai.tool.call.id` |

Everything else in an export is dropped. Most exports hold nothing of the kind (metrics,
API request logs), so `may_hold_calls` looks for the sources' names in the raw bytes
(protobuf keeps strings as they are) before anything is decoded.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import orjson

# A record or span is decoded only when the export holds one of these.
MARKERS = (b"claude_code.tool_result", b"codex.tool_result", b".tool_call", b"ai.toolCall", b"execute_tool")


@dataclass(frozen=True)
class Source:
    label: str  # how the board names the route: "OpenTelemetry (Codex)"
    tool_key: str
    args_key: str
    session_keys: tuple[str, ...]
    call_id_key: str | None
    sequence_key: str | None
    # The todo tools recorded, each with its dialect (None: by name); None: every tool
    # a dialect knows by name.
    tools: dict[str, str | None] | None
    # Where to turn: the setting that keeps the arguments whole, for a truncated input.
    whole_input: str


LOG_SOURCES = {
    "claude_code.tool_result": Source(
        "Claude Code",
        "tool_name",
        "tool_input",
        ("session.id",),
        "tool_use_id",
        "event.sequence",
        {"TodoWrite": None, "TaskCreate": None, "TaskUpdate": None},
        "Claude Code's telemetry keeps only the first level of a tool's input (TodoWrite's items arrive as "
        "'<nested>'): use the Task* tools (Claude Code's default) or the PostToolUse hook",
    ),
    "codex.tool_result": Source(
        "Codex",
        "tool_name",
        "arguments",
        ("conversation.id",),
        "call_id",
        "tool_result_seq",
        {"update_plan": "codex"},
        "Codex sends the arguments whole",
    ),
    "gemini_cli.tool_call": Source(
        "Gemini CLI",
        "function_name",
        "function_args",
        ("session.id",),
        None,
        None,
        {"write_todos": "gemini"},
        "set telemetry.logPrompts to true in Gemini CLI's settings",
    ),
    "qwen-code.tool_call": Source(
        "Qwen Code",
        "function_name",
        "function_args",
        ("session.id",),
        None,
        None,
        {"todo_write": "qwen"},
        "set telemetry.logPrompts to true in Qwen Code's settings",
    ),
}
AI_SDK_SPAN = Source(
    "opencode",
    "ai.toolCall.name",
    "ai.toolCall.args",
    ("session.id", "ai.telemetry.metadata.sessionId"),
    "ai.toolCall.id",
    None,
    {"todowrite": "opencode"},
    "the AI SDK sends the arguments whole",
)
GENAI_SPAN = Source(
    "GenAI",
    "gen_ai.tool.name",
    "gen_ai.tool.call.arguments",
    ("gen_ai.conversation.id", "session.id"),
    "gen_ai.tool.call.id",
    None,
    None,
    "turn on the instrumentation's capture of tool call arguments whole",
)

# How exporters mark a value they cut: Claude Code's "<nested>" for anything below the
# first level, "…[N chars]" for a long string, "…[truncated]" for a long input; the
# GenAI instrumentations' "...[TRUNCATED: original length N]".
TRUNCATED = re.compile(r'"<nested>"|…\[\d+ chars\]|…\[truncated\]|\[TRUNCATED: original length \d+\]')


@dataclass(frozen=True)
class TelemetryCall:
    """One todo tool call an agent's telemetry reported."""

    source: Source
    session_key: str
    tool: str
    arguments: str  # the JSON text the exporter sent
    call_id: str | None
    time: int  # nanoseconds since the epoch
    sequence: int

    @property
    def truncated(self) -> bool:
        return TRUNCATED.search(self.arguments) is not None

    @property
    def dialect(self) -> str | None:
        return self.source.tools.get(self.tool) if self.source.tools is not None else None

    @property
    def idempotency_key(self) -> str:
        """The call id, so a hook and the export write once; the sources without one get
        a key of the event itself, so an export sent again writes nothing new."""
        if self.call_id:
            return self.call_id
        event = f"{self.source.label}\0{self.session_key}\0{self.time}\0{self.arguments}"
        return "otel-" + hashlib.sha256(event.encode()).hexdigest()[:40]

    def parsed_arguments(self) -> Any:
        return orjson.loads(self.arguments)


def may_hold_calls(body: bytes) -> bool:
    # Every marker says "tool": one pass over the body settles most exports.
    return b"tool" in body and any(marker in body for marker in MARKERS)


# An attribute list as OTLP/JSON writes it: [{"key": …, "value": {"stringValue": …}}].
# Protobuf exports are converted to the same shape before they get here.
Attributes = list[dict[str, Any]]


def attribute_value(value: Any) -> Any:
    if not isinstance(value, dict) or not value:
        return None
    kind, found = next(iter(value.items()))
    if kind == "intValue":
        try:
            return int(found)  # a string in proto3 JSON, a number from most JavaScript exporters
        except (TypeError, ValueError):
            return None
    return found if kind in ("stringValue", "boolValue", "doubleValue") else None


def attributes(items: Any) -> dict[str, Any]:
    if not isinstance(items, list):
        return {}
    return {
        item["key"]: attribute_value(item.get("value")) for item in items if isinstance(item, dict) and "key" in item
    }


def calls_in_logs(export: dict[str, Any]) -> list[TelemetryCall]:
    """The todo tool calls of an ExportLogsServiceRequest, oldest first per session."""
    found = []
    for resource, record in each(export, "resourceLogs", "scopeLogs", "logRecords"):
        fields = attributes(record.get("attributes"))
        body = attribute_value(record.get("body"))
        # Codex, Gemini CLI and Qwen Code name the event in `event.name`; Claude Code in the body.
        names = [name for name in (fields.get("event.name"), body) if isinstance(name, str)]
        source = next((LOG_SOURCES[name] for name in names if name in LOG_SOURCES), None)
        if source is None:
            continue
        time = nanoseconds(record.get("timeUnixNano")) or nanoseconds(record.get("observedTimeUnixNano"))
        call = telemetry_call(source, fields, resource, time or iso_nanoseconds(fields.get("event.timestamp")))
        if call is not None:
            found.append(call)
    return in_order(found)


def calls_in_traces(export: dict[str, Any]) -> list[TelemetryCall]:
    """The todo tool calls of an ExportTraceServiceRequest, oldest first per session."""
    found = []
    for resource, span in each(export, "resourceSpans", "scopeSpans", "spans"):
        name = span.get("name")
        if not isinstance(name, str):
            continue
        fields = attributes(span.get("attributes"))
        if name == "ai.toolCall":
            source = AI_SDK_SPAN
        elif name.startswith("execute_tool") or fields.get("gen_ai.operation.name") == "execute_tool":
            source = GENAI_SPAN
        else:
            continue
        call = telemetry_call(source, fields, resource, nanoseconds(span.get("startTimeUnixNano")))
        if call is not None:
            found.append(call)
    return in_order(found)


def each(
    export: dict[str, Any], outer: str, middle: str, inner: str
) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    """Every record (or span) of an export with its resource's attributes."""
    for group in export.get(outer) or () if isinstance(export, dict) else ():
        if not isinstance(group, dict):
            continue
        resource = attributes((group.get("resource") or {}).get("attributes"))
        for scope in group.get(middle) or ():
            for item in (scope.get(inner) or ()) if isinstance(scope, dict) else ():
                if isinstance(item, dict):
                    yield resource, item


def telemetry_call(source: Source, fields: dict[str, Any], resource: dict[str, Any], time: int) -> TelemetryCall | None:
    tool = fields.get(source.tool_key)
    arguments = fields.get(source.args_key)
    if not isinstance(tool, str) or not isinstance(arguments, str):
        return None
    if source.tools is not None and tool not in source.tools:
        return None
    session = next((value for key in source.session_keys if (value := fields.get(key) or resource.get(key))), None)
    if not isinstance(session, str) or not session:
        return None
    call_id = fields.get(source.call_id_key) if source.call_id_key else None
    sequence = fields.get(source.sequence_key) if source.sequence_key else None
    return TelemetryCall(
        source,
        session,
        tool,
        arguments,
        str(call_id) if call_id not in (None, "") else None,
        time,
        sequence if isinstance(sequence, int) else 0,
    )


def in_order(calls: Iterable[TelemetryCall]) -> list[TelemetryCall]:
    """By session, then as the agent made them: by time, then by the agent's own
    sequence (events of one millisecond)."""
    return sorted(calls, key=lambda call: (call.session_key, call.time, call.sequence))


def nanoseconds(value: Any) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0


def iso_nanoseconds(value: Any) -> int:
    if not isinstance(value, str):
        return 0
    try:
        return int(datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1_000_000_000)
    except ValueError:
        return 0
