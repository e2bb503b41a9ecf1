"""A scripted model behind OpenAI's Chat Completions API, as OpenAI-compatible
clients call it (Qwen Code, opencode's openai-compatible provider):

- `POST …/chat/completions` — server-sent `chat.completion.chunk` events ending in
  `data: [DONE]` when `stream` is set (with a usage chunk when
  `stream_options.include_usage` asks for one), else one `chat.completion`;
- `GET …/models` — a model listing, for clients that look.

The main conversation is the one whose request offers tools; its step is the number
of assistant messages with tool calls it already holds. Requests without tools (a
CLI's titles, summaries, next-speaker checks) are side calls answered with
`script.side_text`.
"""

from __future__ import annotations

import json
import time
from typing import Any
from urllib.parse import urlsplit

from tests.agents.fake_model import FakeModelServer, Reply, Request, Script, Turn

USAGE = {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}


class FakeOpenAIChat(FakeModelServer):
    def __init__(self, script: Script, *, model: str = "fake-model"):
        super().__init__(script)
        self.model = model

    def handle(self, request: Request, reply: Reply) -> None:
        path = urlsplit(request.path).path.rstrip("/")
        body = request.body if isinstance(request.body, dict) else {}
        if request.method == "GET" and path.endswith("/models"):
            reply.json({"object": "list", "data": [{"id": self.model, "object": "model", "owned_by": "fake"}]})
            return
        if request.method != "POST" or not path.endswith("/chat/completions"):
            reply.empty()
            return
        if body.get("tools"):
            request.turn = steps_taken(body)
            turn = self.script.answer(request.turn)
        else:
            turn = Turn(text=self.script.side_text)
        completion_id = f"chatcmpl-fake-{len(self.requests)}"
        model = body.get("model") or self.model
        if body.get("stream"):
            usage = (body.get("stream_options") or {}).get("include_usage", False)
            reply.events([(None, chunk) for chunk in stream_chunks(turn, completion_id, model, request.turn, usage)])
            return
        message: dict[str, Any] = {"role": "assistant", "content": turn.text or None}
        if turn.calls:
            message["tool_calls"] = tool_calls(turn, request.turn)
        reply.json(
            {
                "id": completion_id,
                "object": "chat.completion",
                "created": int(time.time()),
                "model": model,
                "choices": [{"index": 0, "message": message, "finish_reason": finish_reason(turn)}],
                "usage": USAGE,
            }
        )


def steps_taken(body: dict[str, Any]) -> int:
    return sum(1 for m in body.get("messages") or [] if m.get("role") == "assistant" and m.get("tool_calls"))


def finish_reason(turn: Turn) -> str:
    return "tool_calls" if turn.calls else "stop"


def tool_calls(turn: Turn, step: int | None) -> list[dict[str, Any]]:
    return [
        {
            "id": f"call_fake_{step}_{i}",
            "type": "function",
            "function": {"name": call.name, "arguments": json.dumps(call.input)},
        }
        for i, call in enumerate(turn.calls)
    ]


def stream_chunks(turn: Turn, completion_id: str, model: str, step: int | None, usage: bool) -> list[Any]:
    """The answer as the API streams it: the role, the text, each tool call (its id
    and name first, then its arguments), the finish reason, the usage, [DONE]."""
    base = {"id": completion_id, "object": "chat.completion.chunk", "created": int(time.time()), "model": model}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return base | {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    chunks: list[Any] = [chunk({"role": "assistant", "content": ""})]
    if turn.text:
        chunks.append(chunk({"content": turn.text}))
    for i, call in enumerate(tool_calls(turn, step)):
        function = call["function"]
        opening = {
            "index": i,
            "id": call["id"],
            "type": "function",
            "function": {"name": function["name"], "arguments": ""},
        }
        chunks.append(chunk({"tool_calls": [opening]}))
        chunks.append(chunk({"tool_calls": [{"index": i, "function": {"arguments": function["arguments"]}}]}))
    chunks.append(chunk({}, finish_reason(turn)))
    if usage:
        chunks.append(base | {"choices": [], "usage": USAGE})
    chunks.append("[DONE]")
    return chunks


# What the tests read from a request of the main conversation.


def offered_tools(request: Request) -> list[str]:
    return [tool.get("function", {}).get("name", "") for tool in request.body.get("tools") or []]


def tool_results(request: Request) -> list[dict[str, Any]]:
    """The tool messages after the last assistant message: {tool_call_id, text}."""
    results = []
    for message in reversed(request.body.get("messages") or []):
        if message.get("role") != "tool":
            break
        content = message.get("content")
        if isinstance(content, list):
            content = "\n".join(part.get("text", "") for part in content if isinstance(part, dict))
        results.append({"tool_call_id": message.get("tool_call_id"), "text": content or ""})
    return results[::-1]
