"""Agents' after-tool hooks: their hook input JSON, posted here unchanged (by the
agent's own http hook, one curl, or opencode's plugin), one endpoint per agent.

Claude Code, Codex and Qwen Code send PostToolUse input; Gemini CLI an AfterTool
input of the same shape without a call id; todoweb's opencode plugin the same fields.
The agent runs the hook after the tool ran, so the call already happened in the
agent: todoweb only records it. Nothing here may get in the user's way: tools and
events the board does not track are acknowledged with 200 and ignored, and the
README's curl discards the answer (Claude Code would try to read JSON on a hook's
stdout as hook output).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from django.http import HttpRequest, HttpResponse, JsonResponse
from ninja import Router
from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr

from ..auth import require_write
from ..envelopes import ToolCall, call_id
from ..errors import InvalidInput
from ..services import session_record_call
from .body import json_body, validated
from .lookups import SESSION_KEY, check_key

router = Router(tags=["hooks"])


@dataclass(frozen=True)
class HookAgent:
    event: str  # the hook event that reports a finished tool call
    tools: dict[str, str | None]  # the todo tools recorded, each with its dialect (None: by name)
    # The agent reads `hookSpecificOutput.additionalContext` in its hook's answer and
    # gives it to the model: how people's edits reach it (its http hook).
    reads_context: bool = False


# Claude Code: the TodoWrite snapshot and the Task* tools that replaced it
# (incremental, dialect `claude-tasks`). The others share tool names with other
# dialects, so their hooks name the dialect.
AGENTS = {
    "claude-code": HookAgent(
        "PostToolUse",
        dict.fromkeys(["TodoWrite", "TaskCreate", "TaskUpdate", "TaskGet", "TaskList"]),
        reads_context=True,
    ),
    "codex": HookAgent("PostToolUse", {"update_plan": "codex"}),
    "gemini-cli": HookAgent("AfterTool", {"write_todos": "gemini"}),
    "qwen-code": HookAgent("PostToolUse", {"todo_write": "qwen"}),
    "opencode": HookAgent("tool.execute.after", {"todowrite": "opencode"}),
}


class HookInput(BaseModel):
    # Claude Code adds fields over time (transcript_path, permission_mode,
    # tool_response, …): what todoweb does not use is ignored, never an error.
    model_config = ConfigDict(extra="ignore")

    session_id: str = Field(min_length=1, json_schema_extra={"pattern": f"^{SESSION_KEY.pattern}$"})
    hook_event_name: str | None = None
    cwd: str | None = None
    tool_name: str | None = None
    tool_input: Any = None
    tool_use_id: StrictStr | StrictInt | None = None
    agent_id: str | None = Field(None, json_schema_extra={"pattern": "^[A-Za-z0-9._:@-]{0,199}$"})
    agent_type: str | None = None
    tool_response: Any = None


HOOK_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {
                "schema": HookInput.model_json_schema(),
                "example": {
                    "session_id": "8c35adc1-2f4e-4c55-9d0a-6f1b3a7e9d21",
                    "transcript_path": "/home/me/.claude/projects/-home-me-shop/8c35adc1.jsonl",
                    "cwd": "/home/me/shop",
                    "permission_mode": "default",
                    "hook_event_name": "PostToolUse",
                    "tool_name": "TodoWrite",
                    "tool_input": {
                        "todos": [
                            {"content": "Run the tests", "status": "in_progress", "activeForm": "Running the tests"}
                        ]
                    },
                    "tool_use_id": "toolu_01ABC",
                },
            }
        },
    }
}


@router.post("/hooks/claude-code", openapi_extra=HOOK_BODY, summary="Claude Code PostToolUse hook")
def post_claude_code_hook(request: HttpRequest, reply: Literal["checklist", "native"] | None = None) -> HttpResponse:
    """Record a TodoWrite or Task* call from Claude Code's PostToolUse hook input.

    The session key is `session_id`; a subagent's calls (`agent_id`) go to the child
    session `<session_id>:<agent_id>`. The answer is the tool endpoint's; other tools
    and events get 200 `{"ok": true, "ignored": true, "reason": …}`."""
    return record_hook(request, "claude-code", reply)


@router.post("/hooks/codex", openapi_extra=HOOK_BODY, summary="Codex PostToolUse hook")
def post_codex_hook(request: HttpRequest, reply: Literal["checklist", "native"] | None = None) -> HttpResponse:
    """Record an update_plan call from Codex's PostToolUse hook input."""
    return record_hook(request, "codex", reply)


@router.post("/hooks/gemini-cli", openapi_extra=HOOK_BODY, summary="Gemini CLI AfterTool hook")
def post_gemini_cli_hook(request: HttpRequest, reply: Literal["checklist", "native"] | None = None) -> HttpResponse:
    """Record a write_todos call from Gemini CLI's AfterTool hook input."""
    return record_hook(request, "gemini-cli", reply)


@router.post("/hooks/qwen-code", openapi_extra=HOOK_BODY, summary="Qwen Code PostToolUse hook")
def post_qwen_code_hook(request: HttpRequest, reply: Literal["checklist", "native"] | None = None) -> HttpResponse:
    """Record a todo_write call from Qwen Code's PostToolUse hook input."""
    return record_hook(request, "qwen-code", reply)


@router.post("/hooks/opencode", openapi_extra=HOOK_BODY, summary="opencode plugin (tool.execute.after)")
def post_opencode_hook(request: HttpRequest, reply: Literal["checklist", "native"] | None = None) -> HttpResponse:
    """Record a todowrite call posted by todoweb's opencode plugin (integrations/opencode)."""
    return record_hook(request, "opencode", reply)


def record_hook(request: HttpRequest, name: str, reply: str | None) -> HttpResponse:
    agent = AGENTS[name]
    require_write(request.auth)
    hook = validated(HookInput, json_body(request))
    check_key(hook.session_id)
    if hook.agent_id is not None and not SESSION_KEY.fullmatch(f"{hook.session_id}:{hook.agent_id}"):
        raise InvalidInput(
            "Invalid agent_id: the child session key '<session_id>:<agent_id>' must be 1-200 characters "
            "among letters, digits and . _ : @ -",
            details={"field": "agent_id"},
        )
    if hook.hook_event_name != agent.event:
        return ignored(f"Only {agent.event} hooks are recorded, not {hook.hook_event_name or 'a missing event name'}")
    if hook.tool_name not in agent.tools:
        return ignored(f"Tool '{hook.tool_name}' is not a todo tool; recorded: {', '.join(sorted(agent.tools))}")
    if isinstance(hook.tool_response, dict) and hook.tool_response.get("error"):
        return ignored("The tool call failed in the agent: nothing changed")

    call = ToolCall(
        "anthropic", hook.tool_name, call_id(hook.tool_use_id), hook.tool_input, dialect=agent.tools[hook.tool_name]
    )
    request.tool_call = call  # so that an error answer carries the `reply` too
    # A subagent's calls go to its own session, under the main one.
    child = hook.agent_id is not None
    answer = session_record_call(
        project=request.auth.project,
        session_key=f"{hook.session_id}:{hook.agent_id}" if child else hook.session_id,
        parent_key=hook.session_id if child else None,
        call=call,
        reply_style=reply or request.auth.project.reply_style,
        default_title=folder_name(hook.cwd),
    )
    if answer.notice and agent.reads_context:
        # The model already has the tool's own answer: people's edits go in as context.
        context = {"hookEventName": agent.event, "additionalContext": answer.notice}
        return answer.response(hookSpecificOutput=context)
    return answer.response()


def ignored(reason: str) -> JsonResponse:
    return JsonResponse({"ok": True, "ignored": True, "reason": reason})


def folder_name(cwd: str | None) -> str | None:
    """The last folder of a POSIX or Windows path: the project the user works in."""
    if not cwd:
        return None
    return re.split(r"[\\/]", cwd.rstrip("\\/"))[-1] or None
