"""Real MCP clients, each as two conversations against a real todoweb (`manage.py
serve`): every conversation must be a board session of its own, with its own
revisions, whatever protocol version the client negotiates.

- the `mcp` SDK's `mcp.Client` (2.3) and fastmcp's `Client` (4.2) negotiate `auto`:
  they probe `server/discover` at the stateless version 2026-07-28 first;
- Pydantic AI (2.68) reaches MCP through fastmcp, driven here by its `FunctionModel`
  (no model service);
- the MCP Inspector CLI (2.12, npm) speaks the handshake by default and negotiates
  with `--protocol-era auto|modern`; each run of it is one conversation;
- mcp-remote (npm) is a stdio proxy to the HTTP server, driven by the SDK's stdio
  client; each process is one conversation.

The Python clients come from requirements-agents.txt (`make test-agents` installs it),
the npm ones from tests/agents/npm.py's installer; under CI=true a missing one fails.
The 401 tests check what these clients show for a refused token.
"""

from __future__ import annotations

import asyncio
import importlib
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.agents.conftest import failure_context, recorded, steps
from tests.agents.harness import run_cli
from tests.servers import require

INSPECTOR = ("@modelcontextprotocol/inspector", "2.12.0", "mcp-inspector")
MCP_REMOTE = ("mcp-remote", "0.15.1", "mcp-remote")
STATELESS_VERSION = "2026-07-28"
TIMEOUT = 60  # one conversation takes 1-3 s


def todos(conversation: str, status: str) -> dict[str, list[dict[str, str]]]:
    """One conversation's list: a step named after the conversation, so that a write
    that lands in another conversation's session shows."""
    return {"todos": [{"content": f"{conversation}: fix the bug", "status": status, "activeForm": "Fixing the bug"}]}


# Each conversation writes twice: its step started, then done.
STATUSES = ("in_progress", "completed")


def python_client(module: str) -> ModuleType:
    try:
        return importlib.import_module(module)
    except ImportError:
        require(False, f"{module} is not installed (`make test-agents` installs requirements-agents.txt)")
        raise


def run(coroutine: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coroutine, TIMEOUT))


def check_sessions(todoweb: Any, token: str, conversations: dict[str, int], context: str = "") -> dict[str, str]:
    """One board session per conversation, each holding only that conversation's
    writes (`conversations`: name → how many it made), numbered from 1; returns
    conversation → session key."""
    sessions = recorded(todoweb, token)
    context = f"{context}\n{json.dumps(sessions, indent=1)[:4000]}"
    assert len(sessions) == len(conversations), context
    found = {}
    for key, revisions in sessions.items():
        names = {content.split(":")[0] for revision in revisions for content, _ in steps(revision["todos"])}
        assert len(names) == 1, context
        [name] = names
        found[name] = key
        written = [(r["revision"], steps(r["todos"])) for r in revisions]
        assert written == [
            (n, [(f"{name}: fix the bug", status)]) for n, status in enumerate(STATUSES[: conversations[name]], 1)
        ], context
    assert set(found) == set(conversations), context
    return found


def test_two_conversations_of_the_sdks_client_are_two_board_sessions(todoweb, token):
    from mcp.client import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    async def conversations() -> list[str]:
        versions = []
        async with (
            create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http_a,
            create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http_b,
            Client(streamable_http_client(f"{todoweb.url}/mcp", http_client=http_a)) as a,
            Client(streamable_http_client(f"{todoweb.url}/mcp", http_client=http_b)) as b,
        ):
            for status in STATUSES:
                for name, client in (("a", a), ("b", b)):
                    result = await client.call_tool("TodoWrite", todos(name, status))
                    assert result.is_error is False, result
            versions += [a.session.protocol_version, b.session.protocol_version]
        return versions

    versions = run(conversations())
    keys = check_sessions(todoweb, token, {"a": 2, "b": 2}, todoweb.log()[-2000:])
    assert all(key.startswith("mcp-") for key in keys.values())
    # Offered the stateless version first, it was led to the handshake.
    assert STATELESS_VERSION not in versions


def test_two_conversations_of_fastmcp_are_two_board_sessions(todoweb, token):
    fastmcp = python_client("fastmcp")

    async def conversations() -> Any:
        a = fastmcp.Client(f"{todoweb.url}/mcp", auth=token)
        b = fastmcp.Client(f"{todoweb.url}/mcp?structured=1", auth=token)
        async with a, b:
            for status in STATUSES:
                for name, client in (("a", a), ("b", b)):
                    result = await client.call_tool("TodoWrite", todos(name, status))
                    assert result.is_error is False, result
            return result

    last = run(conversations())
    check_sessions(todoweb, token, {"a": 2, "b": 2}, todoweb.log()[-2000:])
    # fastmcp reads the structured content as the call's data.
    assert last.data["data"]["revision"] == 2 and last.data["dialect"] == "claude"


def test_two_pydantic_ai_agents_are_two_board_sessions_and_read_their_checklist(todoweb, token):
    python_client("pydantic_ai")
    from pydantic_ai import Agent
    from pydantic_ai.mcp import MCPToolset
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    returned: dict[str, list[Any]] = {"a": [], "b": []}

    def model(name: str) -> FunctionModel:
        """A model that writes its list twice (started, then done), then answers."""

        def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            results = [part.content for m in messages for part in m.parts if isinstance(part, ToolReturnPart)]
            returned[name] = results
            if len(results) < len(STATUSES):
                return ModelResponse(parts=[ToolCallPart("TodoWrite", todos(name, STATUSES[len(results)]))])
            return ModelResponse(parts=[TextPart("The bug is fixed.")])

        return FunctionModel(respond)

    def agent(name: str) -> Any:
        toolset = MCPToolset(f"{todoweb.url}/mcp", headers={"Authorization": f"Bearer {token}"})
        return Agent(model(name), toolsets=[toolset])

    async def conversations() -> list[str]:
        results = await asyncio.gather(agent("a").run("Fix the bug."), agent("b").run("Fix the bug."))
        return [result.output for result in results]

    assert run(conversations()) == ["The bug is fixed.", "The bug is fixed."]
    check_sessions(todoweb, token, {"a": 2, "b": 2}, todoweb.log()[-2000:])
    # The model reads its checklist (with no structured content asked for, Pydantic AI
    # hands it the text).
    for name, results in returned.items():
        assert [result.splitlines()[:2] for result in results] == [
            ["Todo list updated: 0/1 completed (revision 1).", f"[>] {name}: fix the bug (Fixing the bug)"],
            ["Todo list updated: 1/1 completed (revision 2).", f"[x] {name}: fix the bug"],
        ]


def inspector_call(
    cli: Any, url: str, token: str, conversation: str, env: dict[str, str], tmp_path: Path, *extra: str
) -> Any:
    return run_cli(
        [
            str(cli.executable),
            "--cli",
            url,
            "--method",
            "tools/call",
            "--tool-name",
            "TodoWrite",
            "--tool-args-json",
            json.dumps(todos(conversation, "in_progress")),
            "--header",
            f"Authorization: Bearer {token}",
            "--format",
            "json",
            *extra,
        ],
        env=env,
        cwd=tmp_path,
        log_dir=tmp_path / "logs",
        name=f"inspector-{conversation}",
        timeout=TIMEOUT,
    )


@pytest.fixture
def inspector_env(agent_env, internet_trap) -> dict[str, str]:
    """The Inspector CLI 2.12 refuses to start with HTTP(S)_PROXY set ("the `undici`
    package could not be loaded"), so it runs without the trap as its proxy (Node's
    fetch takes no proxy from the environment anyway: the trap catches nothing of it)."""
    env = {name: value for name, value in agent_env.items() if name not in internet_trap.proxy_env}
    # Its secrets (OAuth state, none here) in memory: no keychain on a test machine.
    return env | {"MCP_INSPECTOR_SECRET_STORE": "memory"}


def test_conversations_of_the_inspector_cli_are_board_sessions_of_their_own(
    todoweb, token, install_cli, inspector_env, tmp_path
):
    """Each run is one conversation: two with the handshake (its default), two that
    negotiate (`--protocol-era auto`, led to the handshake), and one pinned to the
    stateless version that names its session."""
    cli = install_cli(*INSPECTOR)
    runs = {
        "a": (f"{todoweb.url}/mcp?structured=1",),
        "b": (f"{todoweb.url}/mcp?structured=1",),
        "c": (f"{todoweb.url}/mcp?structured=1", "--protocol-era", "auto"),
        "d": (f"{todoweb.url}/mcp?structured=1", "--protocol-era", "auto"),
        "e": (f"{todoweb.url}/mcp?session=inspector-e&structured=1", "--protocol-era", "modern"),
    }
    for name, (url, *extra) in runs.items():
        call = inspector_call(cli, url, token, name, inspector_env, tmp_path, *extra)
        context = failure_context(call, None, None, todoweb)
        assert call.returncode == 0, context
        result = json.loads(call.stdout)["result"]
        assert result["isError"] is False and result["structuredContent"]["data"]["revision"] == 1, context
    keys = check_sessions(todoweb, token, dict.fromkeys(runs, 1))
    assert keys["e"] == "inspector-e"
    assert all(keys[name].startswith("mcp-") for name in "abcd")


def test_the_inspector_cli_pinned_to_the_stateless_version_is_told_to_name_a_session(
    todoweb, token, install_cli, inspector_env, tmp_path
):
    cli = install_cli(*INSPECTOR)
    call = inspector_call(
        cli, f"{todoweb.url}/mcp", token, "pinned", inspector_env, tmp_path, "--protocol-era", "modern"
    )
    context = failure_context(call, None, None, todoweb)
    assert call.returncode != 0, context
    assert "?session=<key>" in call.stdout + call.stderr, context
    assert recorded(todoweb, token) == {}


def remote_conversation(cli: Any, todoweb: Any, token: str, name: str, env: dict[str, str], *extra: str) -> None:
    """One mcp-remote process between the SDK's stdio client and todoweb, writing twice."""
    from mcp.client import Client
    from mcp.client.stdio import StdioServerParameters

    # mcp-remote's own recipe: the header's value comes from the environment.
    args = [f"{todoweb.url}/mcp", "--header", "Authorization:${TODOWEB_AUTH}", *extra]
    params = StdioServerParameters(
        command=str(cli.executable), args=args, env=env | {"TODOWEB_AUTH": f"Bearer {token}"}
    )

    async def conversation() -> None:
        async with Client(params) as client:
            for status in STATUSES:
                result = await client.call_tool("TodoWrite", todos(name, status))
                assert result.is_error is False, result

    run(conversation())


def test_two_mcp_remote_conversations_are_two_board_sessions(todoweb, token, install_cli, agent_env, internet_trap):
    cli = install_cli(*MCP_REMOTE)
    remote_conversation(cli, todoweb, token, "a", agent_env)
    # mcp-remote's own negotiation (`--protocol auto`) probes the stateless version too.
    remote_conversation(cli, todoweb, token, "b", agent_env, "--protocol", "auto")
    keys = check_sessions(todoweb, token, {"a": 2, "b": 2}, todoweb.log()[-2000:])
    assert all(key.startswith("mcp-") for key in keys.values())
    assert internet_trap.attempts == []


REFUSED = "Unknown or revoked API token"
WRONG_FORM = (
    "The Authorization header holds a token without its scheme: "
    "send 'Authorization: Bearer <token>' (or 'X-Api-Key: <token>')"
)


def refusal(raised: BaseException) -> str:
    """The message of the MCPError a client raised, alone or in its task group."""
    from mcp.shared.exceptions import MCPError

    if isinstance(raised, BaseExceptionGroup):
        matched, _ = raised.split(MCPError)
        assert matched is not None, raised
        return refusal(matched.exceptions[0])
    assert isinstance(raised, MCPError), raised
    return raised.message


@pytest.mark.parametrize(
    ("headers", "reason"),
    [({"Authorization": "Bearer tw_revoked-or-never-made"}, REFUSED), ({"Authorization": "tw_abc"}, WRONG_FORM)],
)
def test_fastmcp_shows_why_its_token_was_refused(todoweb, headers, reason):
    fastmcp = python_client("fastmcp")
    from fastmcp.client.transports import StreamableHttpTransport

    async def connect() -> BaseException:
        with pytest.raises(BaseException) as raised:
            async with fastmcp.Client(StreamableHttpTransport(f"{todoweb.url}/mcp", headers=headers)):
                pass
        return raised.value

    assert refusal(run(connect())) == reason


def test_the_inspector_cli_shows_why_its_token_was_refused(
    todoweb, install_cli, inspector_env, internet_trap, tmp_path
):
    """The Inspector CLI takes any 401 for an OAuth challenge: run without a terminal it
    stops there unless told `--stored-auth-only` (its flag for non-interactive runs),
    with which it shows the server's reason."""
    cli = install_cli(*INSPECTOR)
    call = inspector_call(
        cli, f"{todoweb.url}/mcp", "tw_revoked-or-never-made", "refused", inspector_env, tmp_path, "--stored-auth-only"
    )
    context = failure_context(call, None, None, todoweb)
    assert call.returncode != 0, context
    error = json.loads(
        call.stdout.strip().splitlines()[-1] if call.stdout.strip() else call.stderr.strip().splitlines()[-1]
    )
    assert REFUSED in error["error"]["message"], context
