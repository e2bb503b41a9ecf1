"""A scripted model behind OpenAI's Responses API, as Codex calls it:
`POST <base>/responses`, streamed as server-sent events (`response.created`,
`response.output_item.added` / `.done` per item, text deltas, `response.completed`).

The main conversation is a request that offers tools (in `tools`, or in an
`additional_tools` input item, as Codex's code mode does); its step is the number of
tool outputs (`function_call_output`, `custom_tool_call_output`) its input already
holds, since every step but the last ends with tool calls. `GET <base>/models`
answers an empty list.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

from tests.agents.fake_model import FakeModelServer, Reply, Request, Script, Turn

OUTPUTS = ("function_call_output", "custom_tool_call_output", "mcp_tool_call_output", "tool_search_output")


class FakeOpenAIResponses(FakeModelServer):
    def __init__(self, script: Script):
        super().__init__(script)

    def handle(self, request: Request, reply: Reply) -> None:
        path = urlsplit(request.path).path
        body = request.body if isinstance(request.body, dict) else {}
        if request.method == "GET" and path.endswith("/models"):
            reply.json({"object": "list", "data": [], "models": []})
            return
        if request.method != "POST" or not path.endswith("/responses"):
            reply.empty()
            return
        items = body.get("input") if isinstance(body.get("input"), list) else []
        # Models in Codex's code mode get their tools as an `additional_tools` input item.
        if body.get("tools") or any(item.get("type") == "additional_tools" for item in items):
            request.turn = sum(1 for item in items if item.get("type") in OUTPUTS)
            turn = self.script.answer(request.turn)
        else:
            turn = Turn(text=self.script.side_text)
        response_id = f"resp_fake_{len(self.requests)}"
        output = output_items(turn, step=request.turn)
        response = {
            "id": response_id,
            "object": "response",
            "created_at": int(request.at),
            "status": "in_progress",
            "model": body.get("model", "gpt-fake"),
            "output": [],
        }
        events: list[tuple[str, Any]] = [("response.created", {"type": "response.created", "response": response})]
        for index, item in enumerate(output):
            events.append(
                (
                    "response.output_item.added",
                    {"type": "response.output_item.added", "output_index": index, "item": item | added(item)},
                )
            )
            if item["type"] == "message":
                text = item["content"][0]["text"]
                delta = {"type": "response.output_text.delta", "item_id": item["id"], "output_index": index}
                events.append(("response.output_text.delta", delta | {"content_index": 0, "delta": text}))
            elif item["type"] == "function_call":
                delta = {"type": "response.function_call_arguments.delta", "item_id": item["id"], "output_index": index}
                events.append(("response.function_call_arguments.delta", delta | {"delta": item["arguments"]}))
            events.append(
                (
                    "response.output_item.done",
                    {"type": "response.output_item.done", "output_index": index, "item": item},
                )
            )
        usage = {
            "input_tokens": 100,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 20,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 120,
        }
        done = response | {"status": "completed", "output": output, "usage": usage}
        events.append(("response.completed", {"type": "response.completed", "response": done}))
        reply.events(events, headers={"x-request-id": response_id})


def output_items(turn: Turn, *, step: int | None) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if turn.text:
        items.append(
            {
                "type": "message",
                "id": f"msg_fake_{step}",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": turn.text, "annotations": []}],
            }
        )
    for i, call in enumerate(turn.calls):
        items.append(
            {
                "type": "function_call",
                "id": f"fc_fake_{step}_{i}",
                "call_id": f"call_fake_{step}_{i}",
                "name": call.name,
                "arguments": json.dumps(call.input),
                "status": "completed",
            }
            | ({"namespace": call.namespace} if call.namespace else {})
        )
    return items + [dict(item) for item in turn.raw]


def added(item: dict[str, Any]) -> dict[str, Any]:
    """An item as `output_item.added` shows it: not yet filled in."""
    if item["type"] == "message":
        return {"status": "in_progress", "content": []}
    if item["type"] == "function_call":
        return {"status": "in_progress", "arguments": ""}
    return {}


# What the tests read from a request of the main conversation.


def offered_tools(request: Request) -> list[str]:
    names = []
    for tool in request.body.get("tools", []):
        names.append(tool.get("name") or tool.get("type", ""))
        # A namespace groups tools (Codex's MCP servers, deferred tools).
        names += [
            f"{tool.get('name')}.{inner.get('name')}" for inner in tool.get("tools", []) if isinstance(inner, dict)
        ]
    return names


def tool_results(request: Request) -> list[dict[str, Any]]:
    """The tool outputs the request hands back after the model's last turn: {call_id, text}."""
    items = request.body.get("input") or []
    last_call = max(
        (i for i, item in enumerate(items) if item.get("type") in ("function_call", "custom_tool_call")), default=-1
    )
    results = []
    for item in items[last_call + 1 :]:
        if item.get("type") not in OUTPUTS:
            continue
        output = item.get("output")
        if isinstance(output, list):
            output = "\n".join(part.get("text", "") for part in output if isinstance(part, dict))
        elif isinstance(output, dict):
            output = output.get("content", json.dumps(output))
        results.append({"call_id": item.get("call_id"), "text": output or ""})
    return results
