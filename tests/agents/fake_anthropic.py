"""A scripted model behind Anthropic's Messages API, as Claude Code calls it:
`POST /v1/messages` (streaming server-sent events when `stream` is set, else one
JSON message) and `POST /v1/messages/count_tokens`.

The main conversation is the one whose request offers tools; its step is the number
of assistant messages it already holds. Requests without tools are side calls.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

from tests.agents.fake_model import FakeModelServer, Reply, Request, Script, Turn


class FakeAnthropic(FakeModelServer):
    def __init__(self, script: Script):
        super().__init__(script)

    def handle(self, request: Request, reply: Reply) -> None:
        path = urlsplit(request.path).path
        body = request.body if isinstance(request.body, dict) else {}
        if request.method == "POST" and path.endswith("/v1/messages/count_tokens"):
            reply.json({"input_tokens": max(1, len(json.dumps(body)) // 4)})
            return
        if request.method != "POST" or not path.endswith("/v1/messages"):
            reply.empty()
            return
        if body.get("tools"):
            request.turn = sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")
            turn = self.script.answer(request.turn)
        else:
            turn = Turn(text=self.script.side_text)
        content = blocks(turn, step=request.turn)
        message = {
            "id": f"msg_fake_{len(self.requests)}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "claude-fake"),
            "content": content,
            "stop_reason": "tool_use" if turn.calls else "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 100, "output_tokens": 20},
        }
        headers = {"request-id": message["id"]}
        if body.get("stream"):
            reply.events(stream_events(message), headers=headers)
        else:
            reply.json(message, headers=headers)


def blocks(turn: Turn, *, step: int | None) -> list[dict[str, Any]]:
    content: list[dict[str, Any]] = []
    if turn.text:
        content.append({"type": "text", "text": turn.text})
    for i, call in enumerate(turn.calls):
        content.append({"type": "tool_use", "id": f"toolu_fake_{step}_{i}", "name": call.name, "input": call.input})
    return content


def stream_events(message: dict[str, Any]) -> list[tuple[str, Any]]:
    start = message | {"content": [], "stop_reason": None, "usage": {"input_tokens": 100, "output_tokens": 1}}
    events: list[tuple[str, Any]] = [("message_start", {"type": "message_start", "message": start})]
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            events.append(
                (
                    "content_block_start",
                    {"type": "content_block_start", "index": index, "content_block": block | {"text": ""}},
                )
            )
            delta = {"type": "text_delta", "text": block["text"]}
        else:
            events.append(
                (
                    "content_block_start",
                    {"type": "content_block_start", "index": index, "content_block": block | {"input": {}}},
                )
            )
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        events.append(("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}))
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                "usage": {"output_tokens": 20},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return events


# What the tests read from a request of the main conversation.


def offered_tools(request: Request) -> list[str]:
    return [tool.get("name", "") for tool in request.body.get("tools", [])]


def tool_results(request: Request) -> list[dict[str, Any]]:
    """The tool results the request hands back: {tool_use_id, text, is_error}."""
    messages = request.body.get("messages", [])
    if not messages or messages[-1].get("role") != "user" or isinstance(messages[-1].get("content"), str):
        return []
    results = []
    for block in messages[-1]["content"]:
        if block.get("type") != "tool_result":
            continue
        content = block.get("content")
        if isinstance(content, list):
            content = "\n".join(part.get("text", "") for part in content if part.get("type") == "text")
        results.append(
            {"tool_use_id": block.get("tool_use_id"), "text": content or "", "is_error": bool(block.get("is_error"))}
        )
    return results
