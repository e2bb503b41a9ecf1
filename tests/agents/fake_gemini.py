"""A scripted model behind the Gemini API (Generative Language API v1beta), as
Gemini CLI calls it through the @google/genai SDK:

- `POST /v1beta/models/<model>:streamGenerateContent?alt=sse` — server-sent events,
  each `data:` a GenerateContentResponse chunk;
- `POST /v1beta/models/<model>:generateContent` — one GenerateContentResponse;
- `POST /v1beta/models/<model>:countTokens` — `{"totalTokens": n}`;
- `GET /v1beta/models[/<model>]` — a model listing, for clients that look.

The main conversation is the one whose request offers function declarations; its
step is the number of `model` turns holding a function call already in its
`contents`. Anything else (the CLI's router, loop and next-speaker checks, titles)
is a side call answered with `script.side_text`, as JSON when the request asks for
JSON (`generationConfig.responseMimeType`).
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

from tests.agents.fake_model import FakeModelServer, Reply, Request, Script, Turn

USAGE = {"promptTokenCount": 100, "candidatesTokenCount": 20, "totalTokenCount": 120}


class FakeGemini(FakeModelServer):
    def __init__(self, script: Script, *, side_json: dict[str, Any] | None = None):
        super().__init__(script)
        # The answer to a side call that asks for JSON (Gemini CLI's model router
        # and its next-speaker check read fields of it).
        self.side_json = side_json if side_json is not None else {"reasoning": "fake", "next_speaker": "user"}

    def handle(self, request: Request, reply: Reply) -> None:
        path = urlsplit(request.path).path
        body = request.body if isinstance(request.body, dict) else {}
        if request.method == "GET" and "/models" in path:
            reply.json(
                {"models": [{"name": "models/gemini-2.5-flash", "supportedGenerationMethods": ["generateContent"]}]}
            )
            return
        if request.method != "POST" or ":" not in path:
            reply.empty()
            return
        model, method = path.rsplit("/", 1)[-1].split(":", 1)
        if method == "countTokens":
            reply.json({"totalTokens": max(1, len(json.dumps(body)) // 4)})
            return
        if method not in ("generateContent", "streamGenerateContent"):
            reply.empty()
            return
        if declared_functions(body):
            request.turn = steps_taken(body)
            turn = self.script.answer(request.turn)
            parts = model_parts(turn, step=request.turn)
        elif (body.get("generationConfig") or {}).get("responseMimeType") == "application/json":
            parts = [{"text": json.dumps(self.side_json)}]
        else:
            parts = [{"text": self.script.side_text}]
        response = {
            "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": USAGE,
            "modelVersion": model,
            "responseId": f"fake-{len(self.requests)}",
        }
        if method == "streamGenerateContent":
            reply.events([(None, chunk) for chunk in stream_chunks(response)])
        else:
            reply.json(response)


def declared_functions(body: dict[str, Any]) -> list[str]:
    names = []
    for tool in body.get("tools") or []:
        for declaration in tool.get("functionDeclarations") or []:
            names.append(declaration.get("name", ""))
    return names


def steps_taken(body: dict[str, Any]) -> int:
    """How many model turns with a function call the conversation holds: the step it is at."""
    return sum(
        1
        for content in body.get("contents") or []
        if content.get("role") == "model" and any("functionCall" in part for part in content.get("parts") or [])
    )


def model_parts(turn: Turn, *, step: int | None) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    if turn.text:
        parts.append({"text": turn.text})
    for i, call in enumerate(turn.calls):
        parts.append({"functionCall": {"id": f"call_fake_{step}_{i}", "name": call.name, "args": call.input}})
    return parts


def stream_chunks(response: dict[str, Any]) -> list[dict[str, Any]]:
    """The response as the API streams a short answer: one chunk carrying the parts,
    the finish reason and the usage."""
    return [response]


# What the tests read from a request of the main conversation.


def offered_tools(request: Request) -> list[str]:
    return declared_functions(request.body)


def tool_results(request: Request) -> list[dict[str, Any]]:
    """The function responses the request hands back (the last user turn): {name, response}."""
    contents = request.body.get("contents") or []
    if not contents:
        return []
    return [
        {"name": part["functionResponse"].get("name"), "response": part["functionResponse"].get("response")}
        for part in contents[-1].get("parts") or []
        if "functionResponse" in part
    ]
