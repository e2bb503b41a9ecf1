"""The Claude Agent SDK on the board, in one line:

    options = ClaudeAgentOptions(hooks=todoweb_hooks("http://127.0.0.1:8000", token))

The hooks send every tool call's PostToolUse input to todoweb (as Claude Code's own
http hook does): TodoWrite and the Task* tools are recorded on the board under the
agent's session id, and a person's edit or note made on the board reaches the model
as context on the agent's next tool call of any kind. With `approve_plans=True`, a
plan the agent wants to leave plan mode with (ExitPlanMode) waits on the board for a
member's approval, up to `plan_wait` seconds, then falls back to the SDK's own
permission flow.

The board being down or slow never stops the agent: each hook is bounded by its
timeout and answers "no opinion" (`{}`) on any failure.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from claude_agent_sdk import HookContext, HookMatcher

from todoweb_client.client import DEFAULT_TIMEOUT, AsyncTodoweb

# The tools whose results the board needs (the rest only carry people's messages back).
TODO_TOOLS = frozenset({"TodoWrite", "TaskCreate", "TaskUpdate", "TaskGet", "TaskList"})
PLAN_WAIT = 300
# The most of a plan file put on the board.
PLAN_MAX_CHARS = 100_000

logger = logging.getLogger("todoweb_client")


def todoweb_hooks(
    url: str,
    token: str,
    *,
    approve_plans: bool = False,
    plan_wait: int = PLAN_WAIT,
    timeout: float = DEFAULT_TIMEOUT,
    client: AsyncTodoweb | None = None,
) -> dict[str, list[HookMatcher]]:
    """`ClaudeAgentOptions.hooks` that put the agent's plan on the board and bring
    people's edits back to its model. Merge with hooks of your own by adding to the
    lists."""
    board = client or AsyncTodoweb(url, token, timeout=timeout)

    async def after_tool(event: Any, tool_use_id: str | None, context: HookContext) -> Any:
        return await board.hook("claude-code", hook_input(event, tool_use_id))

    hooks = {
        "PostToolUse": [HookMatcher(matcher=None, hooks=[after_tool], timeout=timeout + 1)],
        "PostToolUseFailure": [HookMatcher(matcher=None, hooks=[after_tool], timeout=timeout + 1)],
    }
    if approve_plans:

        async def before_plan_ends(event: Any, tool_use_id: str | None, context: HookContext) -> Any:
            return await board.hook("claude-code", with_plan(hook_input(event, tool_use_id)), wait=plan_wait)

        hooks["PreToolUse"] = [
            HookMatcher(matcher="ExitPlanMode", hooks=[before_plan_ends], timeout=plan_wait + timeout + 5)
        ]
    return hooks


def hook_input(event: Any, tool_use_id: str | None) -> dict[str, Any]:
    """The SDK's hook input, as Claude Code's http hook would post it. Other tools'
    results (a file read, a command's output) stay in the agent: the board needs only
    the call."""
    body = dict(event)
    body.setdefault("tool_use_id", tool_use_id)
    if body.get("tool_name") not in TODO_TOOLS:
        body.pop("tool_response", None)
    return body


def with_plan(body: dict[str, Any]) -> dict[str, Any]:
    """ExitPlanMode's input with the plan in it. Newer Claude Code (as bundled with the
    SDK 0.2.188) calls ExitPlanMode with an empty input: the model wrote the plan to a
    plan file (`~/.claude/plans/<name>.md`) beforehand. The hook runs beside the agent,
    so it reads that file: the last one the session's transcript shows written."""
    tool_input = body.get("tool_input")
    if not isinstance(tool_input, dict) or tool_input.get("plan"):
        return body
    path = last_plan_file(body.get("transcript_path"))
    try:
        plan = Path(path).read_text(errors="replace")[:PLAN_MAX_CHARS] if path else ""
    except OSError as error:
        logger.warning("the plan file %s could not be read: %s", path, error)
        plan = ""
    return body | {"tool_input": tool_input | {"plan": plan}} if plan else body


def last_plan_file(transcript_path: Any) -> str | None:
    """The plan file the transcript's last Write or Edit of a `.claude/plans/` file names."""
    if not isinstance(transcript_path, str):
        return None
    found = None
    try:
        with open(transcript_path, encoding="utf-8", errors="replace") as transcript:
            for line in transcript:
                if '"tool_use"' in line and "/plans/" in line:
                    found = plan_file_in(line) or found
    except OSError:
        return None
    return found


def plan_file_in(line: str) -> str | None:
    try:
        entry = json.loads(line)
    except ValueError:
        return None
    content = (entry.get("message") or {}).get("content") if isinstance(entry, dict) else None
    found = None
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict) or block.get("type") != "tool_use" or block.get("name") not in ("Write", "Edit"):
            continue
        path = (block.get("input") or {}).get("file_path")
        if isinstance(path, str) and "/.claude/plans/" in path:
            found = path
    return found
