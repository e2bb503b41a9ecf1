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

import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

from django.http import HttpRequest, HttpResponse
from ninja import Query, Router
from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr

from todoweb.calls.answers import Answered
from todoweb.calls.envelopes import ToolCall, call_id
from todoweb.calls.errors import InvalidInput
from todoweb.calls.titles import cleaned, header_text
from todoweb.live import events
from todoweb.models import Question, Session
from todoweb.store import sql
from todoweb.store.database import in_database_thread
from todoweb.web.api.errors import CallFailed, error_response
from todoweb.web.api.lookups import SESSION_KEY, check_key
from todoweb.web.api.questions import MAX_WAIT, answered_within
from todoweb.web.api.quiet_hooks import nothing_to_tell
from todoweb.web.auth import check_token, digest_of, require_write, token_by_digest
from todoweb.web.recording import record_call, short_write
from todoweb.writes import messages, questions
from todoweb.writes.record import CallRequest, get_or_create_session

router = Router(tags=["hooks"])

BRANCH_HEADER = "X-Todoweb-Branch"
WORKDIR_MAX_CHARS = Session._meta.get_field("workdir").max_length
BRANCH_MAX_CHARS = Session._meta.get_field("branch").max_length

# How long a plan waits on the board for approval by default (the hook's own timeout,
# in its settings, must be longer).
PLAN_WAIT = 300


@dataclass(frozen=True)
class HookAgent:
    label: str  # how the board names the route: "Claude Code hook (Bash)"
    event: str  # the hook event that reports a finished tool call
    tools: dict[str, str | None]  # the todo tools recorded, each with its dialect (None: by name)
    summary: str  # the endpoint's, in the API docs
    description: str
    # Hook events after which the agent hands `hookSpecificOutput.additionalContext` to
    # its model, whatever the tool: people's messages go with the first of them.
    context_events: tuple[str, ...] = ()

    # The agent asks PreToolUse hooks whether to leave plan mode (ExitPlanMode).
    approves_plans: bool = False

    def tells_on_any_tool(self, hook: HookInput) -> bool:
        return hook.hook_event_name in self.context_events


# Claude Code: the TodoWrite snapshot and the Task* tools that replaced it
# (incremental, dialect `claude-tasks`). The others share tool names with other
# dialects, so their hooks name the dialect.
AGENTS = {
    "claude-code": HookAgent(
        "Claude Code",
        "PostToolUse",
        dict.fromkeys(["TodoWrite", "TaskCreate", "TaskUpdate", "TaskGet", "TaskList"]),
        "Claude Code PostToolUse hook",
        "Record a TodoWrite or Task* call from Claude Code's PostToolUse hook input.\n\n"
        "The session key is `session_id`; a subagent's calls (`agent_id`) go to the child session "
        "`<session_id>:<agent_id>`. The answer is the tool endpoint's; other tools and events get 200 "
        '`{"ok": true, "ignored": true, "reason": …}`.',
        # A failed tool fires PostToolUseFailure instead, which takes context too.
        context_events=("PostToolUse", "PostToolUseFailure"),
        approves_plans=True,
    ),
    "codex": HookAgent(
        "Codex",
        "PostToolUse",
        {"update_plan": "codex"},
        "Codex PostToolUse hook",
        "Record an update_plan call from Codex's PostToolUse hook input.",
        context_events=("PostToolUse",),
    ),
    "gemini-cli": HookAgent(
        "Gemini CLI",
        "AfterTool",
        {"write_todos": "gemini"},
        "Gemini CLI AfterTool hook",
        "Record a write_todos call from Gemini CLI's AfterTool hook input.",
        context_events=("AfterTool",),
    ),
    "qwen-code": HookAgent(
        "Qwen Code",
        "PostToolUse",
        {"todo_write": "qwen"},
        "Qwen Code PostToolUse hook",
        "Record a todo_write call from Qwen Code's PostToolUse hook input.",
        context_events=("PostToolUse", "PostToolUseFailure"),
    ),
    "opencode": HookAgent(
        "opencode",
        "tool.execute.after",
        {"todowrite": "opencode"},
        "opencode plugin (tool.execute.after)",
        "Record a todowrite call posted by todoweb's opencode plugin (integrations/opencode).",
        context_events=("tool.execute.after",),
    ),
}


EXAMPLE = {
    "session_id": "8c35adc1-2f4e-4c55-9d0a-6f1b3a7e9d21",
    "transcript_path": "/home/me/.claude/projects/-home-me-shop/8c35adc1.jsonl",
    "cwd": "/home/me/shop",
    "permission_mode": "default",
    "hook_event_name": "PostToolUse",
    "tool_name": "TodoWrite",
    "tool_input": {"todos": [{"content": "Run the tests", "status": "in_progress", "activeForm": "Running the tests"}]},
    "tool_use_id": "toolu_01ABC",
}

# The token is checked in the view (read with the session in one query), as the tool
# endpoint does; the docs show the bearer scheme all the same.
SECURED = {"security": [{"TokenAuth": []}]}


class HookInput(BaseModel):
    # Claude Code adds fields over time (transcript_path, permission_mode,
    # tool_response, …): what todoweb does not use is ignored, never an error.
    model_config = ConfigDict(extra="ignore", json_schema_extra={"examples": [EXAMPLE]})

    session_id: str = Field(min_length=1, json_schema_extra={"pattern": f"^{SESSION_KEY.pattern}$"})
    hook_event_name: str | None = None
    cwd: str | None = None
    tool_name: str | None = None
    tool_input: Any = None
    tool_use_id: StrictStr | StrictInt | None = None
    agent_id: str | None = Field(None, json_schema_extra={"pattern": "^[A-Za-z0-9._:@-]{0,199}$"})
    agent_type: str | None = None
    tool_response: Any = None


def hook_endpoint(name: str, agent: HookAgent) -> Callable[..., Awaitable[HttpResponse]]:
    async def post_hook(
        request: HttpRequest,
        hook: HookInput,
        reply: Literal["checklist", "native"] | None = None,
        answer: Literal["full", "hook"] | None = None,
        wait: int = Query(PLAN_WAIT, ge=1, le=MAX_WAIT, description="ExitPlanMode: seconds to wait for approval"),
    ) -> HttpResponse:
        return await hook_response(request, name, HookPost.of_request(request, hook, reply, answer, wait))

    post_hook.__name__ = f"post_{name.replace('-', '_')}_hook"  # the operation's id in the OpenAPI schema
    post_hook.__doc__ = agent.description
    return post_hook


for _name, _agent in AGENTS.items():
    router.post(f"/hooks/{_name}", auth=None, openapi_extra=SECURED, summary=_agent.summary)(
        hook_endpoint(_name, _agent)
    )


@dataclass(frozen=True)
class HookPost:
    """A hook event as its agent posted it: the event, the query's choices, and the
    headers the board reads (the token's, and the git branch)."""

    hook: HookInput
    reply: str | None = None  # "checklist" or "native": the reply's form
    answer: str | None = None  # "hook": only what the agent's hook hands its model
    wait: int = PLAN_WAIT  # ExitPlanMode: seconds to wait for approval
    authorization: str = ""
    api_key: str = ""
    branch: str | None = None  # X-Todoweb-Branch, as sent

    @classmethod
    def of_request(
        cls, request: HttpRequest, hook: HookInput, reply: str | None, answer: str | None, wait: int
    ) -> HookPost:
        headers = request.headers
        authorization, api_key = headers.get("Authorization", ""), headers.get("X-Api-Key", "")
        return cls(hook, reply, answer, wait, authorization, api_key, headers.get(BRANCH_HEADER))

    def token_digest(self) -> str:
        """The digest of the hook's token (401 without one)."""
        return digest_of(self.authorization, self.api_key)


async def hook_response(request: HttpRequest, name: str, posted: HookPost) -> HttpResponse:
    """The hook's answer as a Django response, for the API's view."""
    try:
        answered = await record_hook(name, posted)
    except CallFailed as failed:
        return error_response(request, failed.error, call=failed.call)
    return answered.response()


@dataclass(frozen=True)
class HookCall:
    """A hook event as read: which agent sent it, and the session it goes to."""

    agent: HookAgent
    hook: HookInput
    session_key: str  # a subagent's calls go to its own session, under the main one
    route: str  # how the board names where the call came from

    @property
    def parent_key(self) -> str | None:
        return self.hook.session_id if self.hook.agent_id is not None else None

    def asks_plan_approval(self) -> bool:
        return self.agent.approves_plans and (self.hook.hook_event_name, self.hook.tool_name) == (
            "PreToolUse",
            "ExitPlanMode",
        )


def read_hook(name: str, hook: HookInput) -> HookCall:
    """The hook event of agent `name` (InvalidInput: its session key or agent id is not one)."""
    agent = AGENTS[name]
    check_key(hook.session_id)
    if hook.agent_id is not None and not SESSION_KEY.fullmatch(f"{hook.session_id}:{hook.agent_id}"):
        raise InvalidInput(
            "Invalid agent_id: the child session key '<session_id>:<agent_id>' must be 1-200 characters "
            "among letters, digits and . _ : @ -",
            details={"field": "agent_id"},
        )
    session_key = f"{hook.session_id}:{hook.agent_id}" if hook.agent_id is not None else hook.session_id
    return HookCall(agent, hook, session_key, f"{agent.label} hook ({hook.tool_name or hook.hook_event_name})")


async def record_hook(name: str, posted: HookPost) -> Answered:
    """The answer to a hook event of agent `name` (CallFailed: the error to answer).
    No Django request is needed: the agents' route answers hooks without making one."""
    hook, call = posted.hook, None
    try:
        read = read_hook(name, hook)
        if read.asks_plan_approval():
            approval = await plan_approval(posted.token_digest(), read.session_key, hook, posted.wait)
            return Answered(json.dumps(approval).encode())
        reason = ignored_because(read.agent, hook)
        if reason:
            only_hook_output = posted.answer == "hook"
            return Answered(await unrecorded_answer(posted.token_digest(), read, reason, only_hook_output))
        call = ToolCall(
            "anthropic",
            hook.tool_name,
            call_id(hook.tool_use_id),
            hook.tool_input,
            dialect=read.agent.tools[hook.tool_name],
        )
        write = CallRequest(
            session_key=read.session_key,
            call=call,
            reply_style=posted.reply,
            parent_key=read.parent_key,
            default_title=folder_name(hook.cwd),
            workdir=cleaned(hook.cwd)[:WORKDIR_MAX_CHARS] if hook.cwd else None,
            branch=branch_line(posted.branch),
            route=read.route,
        )
        recorded = (await record_call(posted.token_digest(), write)).answer
    except Exception as error:
        raise CallFailed(error, call) from error
    if posted.answer == "hook":
        return Answered(hook_answer(read, recorded.notice, {}, only_hook_output=True))
    # The model already has the tool's own answer: people's messages go in as context.
    extra = {"hookSpecificOutput": hook_output(read, recorded.notice)} if recorded.notice else {}
    return Answered(recorded.content(**extra), replayed=recorded.replayed)


async def unrecorded_answer(found_by: str, read: HookCall, reason: str, only_hook_output: bool) -> bytes:
    """The answer to a hook event the board records nothing of, for the token of
    digest `found_by`: with what people told the agent, if anything, for an agent that
    hands context to its model after any tool. No request is needed: the agents'
    route answers most of an agent's hooks this way, without making one."""
    tells = read.agent.tells_on_any_tool(read.hook)
    if nothing_to_tell(found_by, read.session_key if tells else None):
        notice = None  # read on the event loop: the usual case
    elif tells:
        notice, frames = await short_write()(tell_with_token, found_by, read.session_key, read.route)
        await events.asend(frames)
    else:
        require_write(await short_write()(token_by_digest, found_by))  # notes the token's use
        notice = None
    return hook_answer(read, notice, {"ok": True, "ignored": True, "reason": reason}, only_hook_output=only_hook_output)


def tell_with_token(found_by: str, session_key: str, route: str) -> tuple[str | None, events.Frames]:
    """What people told the agent of this session, if it has not heard it yet: the
    notice for its model, and the frames that show it told on the board. One query
    (the token, and whether there is anything to tell) when there is nothing to tell."""
    token, untold = sql.token_and_untold(found_by, session_key)
    require_write(check_token(token, found_by))
    if not untold:
        return None, []
    row = sql.session_row(token.project, session_key, idempotency_key=None)
    unseen = messages.untold(row) if row is not None else None
    if unseen is None:
        return None, []
    frames = messages.tell(row, route)
    if frames is None:
        return None, []  # another call told it
    return unseen.notice(row.current.todos if row.current else []), frames


async def plan_approval(found_by: str, session_key: str, hook: HookInput, wait: int) -> dict[str, Any]:
    """Claude Code is about to leave plan mode: the plan waits on the board for a
    member's approval. Approved, Claude Code goes on (with the member's feedback as
    context); denied, the model reads why and plans again; with no answer in `wait`
    seconds, Claude Code asks its own prompt."""
    tool_input = hook.tool_input if isinstance(hook.tool_input, dict) else {}
    plan_text = tool_input.get("plan") if isinstance(tool_input.get("plan"), str) else ""
    question = await in_database_thread(ask_plan, found_by, session_key, plan_text or "", wait)
    answered = await answered_within(question, wait)
    output: dict[str, Any] = {"hookEventName": "PreToolUse"}
    feedback = answered["feedback"]
    if answered["state"] == "allowed":
        # An approval alone leaves ExitPlanMode asking: the input given back completes it.
        output |= {"permissionDecision": "allow", "updatedInput": tool_input}
        output["permissionDecisionReason"] = "Approved on the board" + (f": {feedback}" if feedback else "")
        if feedback:
            output["additionalContext"] = f"The user approved the plan and added: {feedback}"
    elif answered["state"] == "denied":
        output["permissionDecision"] = "deny"
        output["permissionDecisionReason"] = "The user did not approve the plan" + (f": {feedback}" if feedback else "")
    else:
        await in_database_thread(questions.expire, question)
        output["permissionDecision"] = "ask"
        output["permissionDecisionReason"] = f"No answer on the board within {wait} s"
    return {"hookSpecificOutput": output}


def ask_plan(found_by: str, session_key: str, plan_text: str, wait: int) -> Question:
    token = token_by_digest(found_by)
    require_write(token)
    session = get_or_create_session(token.project, session_key)
    return questions.ask(session, kind=Question.Kind.PLAN, tool_name="ExitPlanMode", text=plan_text, wait=wait)


def hook_output(read: HookCall, notice: str) -> dict[str, str]:
    return {"hookEventName": read.hook.hook_event_name or read.agent.event, "additionalContext": notice}


def hook_answer(read: HookCall, notice: str | None, body: dict[str, Any], *, only_hook_output: bool) -> bytes:
    """`body`, and what the agent's hook hands its model; with `?answer=hook`, only that
    (`{}` when there is nothing to tell), for agents whose command hooks read stdout
    strictly. JsonResponse's bytes, without its encoder's set-up: a hook on every tool
    call gets this answer."""
    output = {"hookSpecificOutput": hook_output(read, notice)} if notice else {}
    return json.dumps(output if only_hook_output else body | output).encode()


def ignored_because(agent: HookAgent, hook: HookInput) -> str | None:
    """Why the board records nothing of this hook event (None: it records the call)."""
    if hook.hook_event_name != agent.event:
        return f"Only {agent.event} hooks are recorded, not {hook.hook_event_name or 'a missing event name'}"
    if hook.tool_name not in agent.tools:
        return f"Tool '{hook.tool_name}' is not a todo tool; recorded: {', '.join(sorted(agent.tools))}"
    if isinstance(hook.tool_response, dict) and hook.tool_response.get("error"):
        return "The tool call failed in the agent: nothing changed"
    return None


def branch_line(value: str | None) -> str | None:
    """The git branch a hook names in X-Todoweb-Branch (a command hook can:
    `-H "X-Todoweb-Branch: $(git branch --show-current)"`), as one clean line."""
    if not value:
        return None
    try:
        text = header_text(value)
    except InvalidInput:
        text = value
    return cleaned(text)[:BRANCH_MAX_CHARS] or None


def folder_name(cwd: str | None) -> str | None:
    """The last folder of a POSIX or Windows path: the project the user works in."""
    if not cwd:
        return None
    return re.split(r"[\\/]", cwd.rstrip("\\/"))[-1] or None
