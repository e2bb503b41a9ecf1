"""A tool call's answer, serialised once.

The answer's JSON is built once with orjson. The same bytes are stored for replays
and sent as the HTTP answer (with the reply for the model spliced in), and the live
snapshot reuses the bytes of the answer's `data`: the snapshot is that data with its
type in front.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson
from django.http import HttpResponse

from todoweb.calls.envelopes import ToolCall


@dataclass(frozen=True)
class Answer:
    body: bytes  # {"ok": true, "tool", "dialect", "output", "data"}, without the reply
    reply: dict[str, Any]
    replayed: bool = False
    notice: str | None = None  # people's edits the agent was told of first (plan.edits)

    def content(self, **extra: Any) -> bytes:
        """The HTTP answer's bytes; `extra` fields (a hook's output for its agent) go at the end."""
        added = orjson.dumps(extra)[1:-1] if extra else b""
        return self.body[:-1] + b',"reply":' + orjson.dumps(self.reply) + (b"," + added if added else b"") + b"}"


@dataclass(frozen=True)
class Answered:
    """An answer as sent (200, JSON): its bytes, and whether it replays an earlier
    call's. What the agents' route sends without a Django response."""

    content: bytes
    replayed: bool = False

    def response(self) -> HttpResponse:
        """As a Django response (for the API's views), marked when it replays."""
        response = HttpResponse(self.content, content_type="application/json")
        if self.replayed:
            response["Idempotent-Replayed"] = "true"
        return response


def answer(
    call: ToolCall, dialect: str, output: str, data_json: bytes, extra: dict[str, Any], *, notice: str | None = None
) -> Answer:
    """The answer around `data_json` (the data shape's bytes) and the dialect's extra
    fields; `notice`, people's edits the agent is told of, comes first in the output."""
    if notice:
        output = f"{notice}\n\n{output}"
    if extra:
        data_json = data_json[:-1] + b"," + orjson.dumps(extra)[1:]
    head = orjson.dumps({"ok": True, "tool": call.tool, "dialect": dialect, "output": output})
    return Answer(head[:-1] + b',"data":' + data_json + b"}", call.reply(output), notice=notice)


def replayed(call: ToolCall, first: dict[str, Any]) -> Answer:
    """The first answer to a call, with its reply in the form of this request."""
    return Answer(orjson.dumps(first), call.reply(first["output"]), replayed=True)


def snapshot_text(data_json: bytes) -> str:
    """The `session.snapshot` event for the data shape's bytes (events.SessionSnapshot)."""
    return '{"type":"session.snapshot",' + data_json[1:].decode()
