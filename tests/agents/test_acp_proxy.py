"""`todoweb-acp` between a scripted ACP client and real ACP agents (Qwen Code's
`qwen --acp`, Zed's `codex-acp`), each on a scripted fake model, against a real todoweb.

The client is built on the `agent-client-protocol` package, as an editor would use
it: initialize, `session/new`, one prompt. Two tee processes keep the bytes on both
sides of the proxy: one between the client and the proxy (what the client sent and
received), one between the proxy and the agent (what the agent received and sent).
Each test checks that

- every line passed unchanged both ways: the agent received exactly the client's
  lines plus the proxy's own prompts, and the client exactly the agent's lines less
  the answers to those prompts;
- the agent's plan is on the board, in the session named by the ACP session id;
- a person's edit made through the API once the first turn ended reaches the agent
  as the proxy's next prompt: the fake model's next request holds the notice, and
  the editor saw the agent's work in that turn.

And with todoweb unreachable, the session works through the proxy all the same.
"""

from __future__ import annotations

import asyncio
import json
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.agents.cli_support import DONE, PROMPT
from tests.agents.conftest import Deployment, recorded, steps
from tests.agents.fake_model import Call, Script, Turn
from tests.agents.fake_openai_chat import FakeOpenAIChat
from tests.agents.fake_openai_responses import FakeOpenAIResponses
from tests.agents.steering import messages
from tests.agents.test_codex import FUNCTION_MODEL, UPDATE_PLAN_RECIPE
from tests.agents.test_codex import OFFLINE as CODEX_OFFLINE
from tests.agents.test_qwen_code import AUTH, MODEL, OFFLINE, QWEN_CODE
from tests.agents.tunnel_trap import TunnellingTrap

acp = pytest.importorskip("acp", reason="the agent-client-protocol package is not installed")
from acp import PROTOCOL_VERSION, spawn_agent_process, text_block  # noqa: E402
from acp.schema import (  # noqa: E402
    AllowedOutcome,
    ClientCapabilities,
    FileSystemCapabilities,
    ReadTextFileResponse,
    RequestPermissionResponse,
    WriteTextFileResponse,
)

CODEX_ACP = ("@zed-industries/codex-acp", "0.16.0", "codex-acp")
PROXY = Path(sys.executable).parent / "todoweb-acp"
READ, FIX, TEST = "Read the checkout code", "Round the total once", "Run the tests"
REWORDED = "Round the total once and add a regression test"
NOTICE = f'The user changed the plan:\n- reworded "{FIX}" to "{REWORDED}"'
# How long a condition may take (an agent's start, a model turn) before a test fails.
DEADLINE = 90.0

# Copies stdin to the command's stdin and the command's stdout to stdout, keeping
# both in files: what passed on one side of the proxy, byte for byte.
TEE = r"""
import os, subprocess, sys, threading
inward, outward, command = sys.argv[1], sys.argv[2], sys.argv[4:]
child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
def copy(source, target, keep):
    with open(keep, "wb", buffering=0) as kept:
        while chunk := os.read(source, 65536):
            kept.write(chunk)
            try:
                os.write(target, chunk)
            except OSError:
                break
    if target != 1:
        child.stdin.close()
threading.Thread(target=copy, args=(0, child.stdin.fileno(), inward), daemon=True).start()
copy(child.stdout.fileno(), 1, outward)
sys.exit(child.wait())
"""


@pytest.fixture
def internet_trap():
    """The trap that also passes loopback CONNECTs on (Qwen Code sends every request
    through the proxy it is given)."""
    trap = TunnellingTrap().start()
    yield trap
    trap.stop()


# --- the agents ------------------------------------------------------------------


@dataclass
class Agent:
    command: list[str]
    env: dict[str, str]


def qwen_agent(install_cli, fake: FakeOpenAIChat, agent_env, agent_home, workdir) -> Agent:
    qwen = install_cli(*QWEN_CODE)
    (agent_home / ".qwen").mkdir(exist_ok=True)
    (agent_home / ".qwen" / "settings.json").write_text(json.dumps(OFFLINE | AUTH))
    env = agent_env | {"OPENAI_BASE_URL": f"{fake.url}/v1", "OPENAI_API_KEY": "sk-fake", "OPENAI_MODEL": MODEL}
    return Agent([str(qwen.executable), "--acp"], env)


def codex_agent(install_cli, fake: Any, agent_env, agent_home, workdir) -> Agent:
    codex_acp = install_cli(*CODEX_ACP)
    (agent_home / ".codex").mkdir(exist_ok=True)
    top, _, tables = CODEX_OFFLINE.partition("\n\n")
    provider = (
        f'[model_providers.scripted]\nname = "Scripted model"\nbase_url = "{fake.url}/v1"\n'
        'wire_api = "responses"\nenv_key = "SCRIPTED_API_KEY"\n'
    )
    config = [
        f'model = "{FUNCTION_MODEL}"',
        'model_provider = "scripted"',
        top,
        "",
        provider,
        tables,
        UPDATE_PLAN_RECIPE,
    ]
    (agent_home / ".codex" / "config.toml").write_text("\n".join(config))
    return Agent([str(codex_acp.executable)], agent_env | {"SCRIPTED_API_KEY": "sk-fake"})


def qwen_plan(*statuses: str) -> dict[str, Any]:
    return {
        "todos": [
            {"id": str(n), "content": c, "status": s}
            for n, (c, s) in enumerate(zip((READ, FIX, TEST), statuses, strict=True), 1)
        ]
    }


def codex_plan(*statuses: str) -> dict[str, Any]:
    return {"plan": [{"step": c, "status": s} for c, s in zip((READ, FIX, TEST), statuses, strict=True)]}


AGENTS = {
    "qwen": (qwen_agent, FakeOpenAIChat, "todo_write", qwen_plan),
    "codex": (codex_agent, FakeOpenAIResponses, "update_plan", codex_plan),
}


def script(tool: str, plan: Callable[..., dict[str, Any]]) -> Script:
    """Two todo calls, then the closing text; any later request (the proxy's turn) gets
    the closing text again."""
    return Script(
        [
            Turn(text="Let me track this.", calls=(Call(tool, plan("in_progress", "pending", "pending")),)),
            Turn(text="Reading done.", calls=(Call(tool, plan("completed", "in_progress", "pending")),)),
            Turn(text=DONE),
        ]
    )


# --- the client ------------------------------------------------------------------


@dataclass
class Editor:
    """A scripted ACP client: keeps every session update, allows every permission,
    reads and writes files as asked."""

    updates: list[Any] = field(default_factory=list)

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update)

    async def request_permission(self, options: list[Any], session_id: str, tool_call: Any, **kwargs: Any) -> Any:
        allow = next(o for o in options if o.kind.startswith("allow"))
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=allow.option_id))

    async def read_text_file(self, path: str, session_id: str, **kwargs: Any) -> Any:
        return ReadTextFileResponse(content=Path(path).read_text())

    async def write_text_file(self, content: str, path: str, session_id: str, **kwargs: Any) -> Any:
        Path(path).write_text(content)
        return WriteTextFileResponse()

    def on_connect(self, conn: Any) -> None:
        pass

    def kinds(self) -> list[str]:
        return [update.session_update for update in self.updates]


async def until(condition: Callable[[], Any], what: str, deadline: float = DEADLINE) -> Any:
    """Wait for `condition()` to be true (polled), failing after `deadline` seconds."""
    end = time.monotonic() + deadline
    while not (value := condition()):
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.1)
    return value


@dataclass
class Sides:
    """The bytes on each side of the proxy, split into lines (newline kept)."""

    folder: Path

    def lines(self, name: str) -> list[bytes]:
        data = (self.folder / name).read_bytes()
        parts = data.split(b"\n")
        return [part + b"\n" for part in parts[:-1]] + ([parts[-1]] if parts[-1] else [])

    @staticmethod
    def own(line: bytes) -> bool:
        message = json.loads(line)
        return str(message.get("id", "")).startswith("todoweb-")


def check_passed_unchanged(sides: Sides, *, own_prompts: int) -> None:
    """The agent got exactly the client's lines and the proxy's prompts; the client got
    exactly the agent's lines but the answers to those prompts."""
    client_sent, agent_got = sides.lines("client.in"), sides.lines("agent.in")
    agent_sent, client_got = sides.lines("agent.out"), sides.lines("client.out")
    assert [line for line in agent_got if not Sides.own(line)] == client_sent
    prompts = [json.loads(line) for line in agent_got if Sides.own(line)]
    assert [p["method"] for p in prompts] == ["session/prompt"] * own_prompts, prompts
    assert [line for line in agent_sent if not Sides.own(line)] == client_got
    answers = [json.loads(line) for line in agent_sent if Sides.own(line)]
    assert sorted(a["id"] for a in answers) == sorted(p["id"] for p in prompts), answers
    assert len(client_sent) >= 3 and len(client_got) >= 3


def board_revisions(todoweb: Deployment, token: str, key: str) -> list[dict[str, Any]]:
    return recorded(todoweb, token).get(key, [])


def edit_second_step(todoweb: Deployment, token: str, key: str, revision: int) -> None:
    """Reword the second step, as a person on the board does."""
    with todoweb.api(token) as api:
        todos = api.get(f"/api/v1/sessions/{key}").raise_for_status().json()["todos"]
        edited = [{"id": t["id"], "content": t["content"], "status": t["status"]} for t in todos]
        edited[1]["content"] = REWORDED
        answer = api.post(f"/api/v1/sessions/{key}/edits", json={"todos": edited}, headers={"If-Match": str(revision)})
        assert answer.status_code == 200, answer.text


def user_texts(value: Any, *, of_user: bool = False) -> list[str]:
    """Every text in the user's messages of a request (Chat `messages`, Responses `input`)."""
    if isinstance(value, str):
        return [value] if of_user else []
    if isinstance(value, list):
        return [text for item in value for text in user_texts(item, of_user=of_user)]
    if isinstance(value, dict):
        of_user = of_user or value.get("role") == "user"
        return [text for item in value.values() for text in user_texts(item, of_user=of_user)]
    return []


def told(fake: FakeOpenAIChat) -> list[Any]:
    return [r for r in fake.turns() if any(NOTICE in text for text in user_texts(r.body))]


async def drive(agent: Agent, proxy_args: list[str], workdir: Path, logs: Path, session: Callable[..., Any]) -> Any:
    """Start tee → todoweb-acp → tee → agent, open one session, and hand it to `session`."""
    tee = logs / "tee.py"
    tee.write_text(TEE)
    command = [
        sys.executable, str(tee), str(logs / "client.in"), str(logs / "client.out"), "--",
        str(PROXY), *proxy_args, "--",
        sys.executable, str(tee), str(logs / "agent.in"), str(logs / "agent.out"), "--",
        *agent.command,
    ]  # fmt: skip
    editor = Editor()
    with (logs / "stderr.log").open("wb") as stderr:
        async with spawn_agent_process(
            editor, command[0], *command[1:], env=agent.env, cwd=workdir, transport_kwargs={"stderr": stderr.fileno()}
        ) as (conn, process):
            capabilities = ClientCapabilities(fs=FileSystemCapabilities(read_text_file=True, write_text_file=True))
            await asyncio.wait_for(
                conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=capabilities), DEADLINE
            )
            new = await asyncio.wait_for(conn.new_session(cwd=str(workdir), mcp_servers=[]), DEADLINE)
            return await session(conn, new.session_id, editor)


def context(logs: Path, fake: FakeOpenAIChat, todoweb: Deployment | None = None) -> str:
    parts = [f"--- stderr ---\n{(logs / 'stderr.log').read_text(errors='replace')[-5000:]}"]
    for name in ("client.in", "agent.in", "agent.out", "client.out"):
        if (logs / name).exists():
            parts.append(f"--- {name} ---\n{(logs / name).read_text(errors='replace')[-3000:]}")
    parts.append(f"--- fake model ---\n{fake.log()}")
    if todoweb is not None:
        parts.append(f"--- todoweb log (end) ---\n{todoweb.log()[-2000:]}")
    return "\n".join(parts)


@pytest.mark.parametrize("name", sorted(AGENTS))
def test_it_records_the_plan_and_brings_a_persons_edit_back_as_a_prompt(
    name, install_cli, todoweb, token, internet_trap, agent_env, agent_home, workdir, tmp_path
):
    """The agent's two plans land on the board; the person's edit after the first turn
    comes back as the proxy's prompt, which the fake model reads.

    Seen failing with the telling switched off (the proxy's `deliver` returning at
    once): no request of the fake model holds the notice ("timed out waiting for the
    notice to reach the model"), and the agent got no prompt of the proxy's own."""
    make_agent, fake_model, tool, plan = AGENTS[name]
    logs = tmp_path / "logs"
    logs.mkdir()
    with (
        fake_model(script(tool, plan), model=MODEL) if fake_model is FakeOpenAIChat else fake_model(script(tool, plan))
    ) as fake:
        agent = make_agent(install_cli, fake, agent_env, agent_home, workdir)

        async def session(conn: Any, key: str, editor: Editor) -> dict[str, Any]:
            answer = await asyncio.wait_for(conn.prompt(session_id=key, prompt=[text_block(PROMPT)]), DEADLINE)
            seen = len(editor.updates)
            revisions = await until(
                lambda: len(board_revisions(todoweb, token, key)) >= 2 and board_revisions(todoweb, token, key),
                "the plans on the board",
            )
            edit_second_step(todoweb, token, key, revisions[-1]["revision"])
            await until(lambda: told(fake), "the notice to reach the model")
            # The editor sees the agent's work in the proxy's turn: its closing text.
            await until(
                lambda: any(
                    u.session_update == "agent_message_chunk" and DONE in getattr(u.content, "text", "")
                    for u in editor.updates[seen:]
                ),
                "the proxy's turn shown to the editor",
            )
            await until(
                lambda: b"todoweb-" in (logs / "agent.out").read_bytes(), "the agent's answer to the proxy's prompt"
            )
            return {"key": key, "stop": answer.stop_reason, "kinds": editor.kinds()}  # fmt: skip

        try:
            outcome = asyncio.run(
                drive(agent, ["--url", todoweb.url, "--token", token, "--poll", "0.2"], workdir, logs, session)
            )
        except BaseException as error:
            raise AssertionError(context(logs, fake, todoweb)) from error
        where = context(logs, fake, todoweb)
        assert outcome["stop"] == "end_turn", where
        assert "plan" in outcome["kinds"], where
        check_passed_unchanged(Sides(logs), own_prompts=1)

        revisions = recorded(todoweb, token)
        key = outcome["key"]
        assert list(revisions) == [key], where
        written = [r for r in revisions[key] if r["author"] == "agent"]
        assert [(r["written"]["tool"], r["written"]["dialect"]) for r in written] == [("acp_plan", "acp")] * 2, where
        assert steps(written[0]["todos"]) == [(READ, "in_progress"), (FIX, "pending"), (TEST, "pending")], where
        assert steps(written[1]["todos"]) == [(READ, "completed"), (FIX, "in_progress"), (TEST, "pending")], where
        assert revisions[key][-1]["author"] == "user", where
        assert revisions[key][-1]["session"]["title"] == "shop", where  # the folder of session/new
        [prompt] = told(fake)
        assert prompt.turn is not None, where
        [message] = messages(todoweb, token, key)
        assert (message["state"], message["told_via"]) == ("told", "ACP proxy"), message
        assert internet_trap.attempts == [], where


class HeldChat(FakeOpenAIChat):
    """The Chat fake, holding its answer to the request that carries the notice until
    `release` is set: the proxy's turn runs as long as the test needs."""

    def __init__(self, script: Script, **kwargs: Any):
        super().__init__(script, **kwargs)
        self.release = threading.Event()

    def handle(self, request: Any, reply: Any) -> None:
        if isinstance(request.body, dict) and any(NOTICE in t for t in user_texts(request.body)):
            self.release.wait(DEADLINE)
        super().handle(request, reply)


def test_a_client_prompt_during_the_proxys_turn_waits_for_its_end(
    install_cli, todoweb, token, internet_trap, agent_env, agent_home, workdir, tmp_path
):
    """The editor prompts while the proxy's own turn runs: its prompt is held (the agent
    has not got it), then sent on unchanged once that turn ended, and answered.

    Seen failing with the holding switched off (`from_client` never holding): the
    prompt went straight to Qwen Code while the proxy's turn ran ("timed out waiting
    for the prompt to be held")."""
    logs = tmp_path / "logs"
    logs.mkdir()
    second = "Now also check the receipts."
    with HeldChat(script("todo_write", qwen_plan), model=MODEL) as fake:
        agent = qwen_agent(install_cli, fake, agent_env, agent_home, workdir)

        async def session(conn: Any, key: str, editor: Editor) -> dict[str, Any]:
            await asyncio.wait_for(conn.prompt(session_id=key, prompt=[text_block(PROMPT)]), DEADLINE)
            revisions = await until(lambda: board_revisions(todoweb, token, key)[1:], "the plans on the board")
            edit_second_step(todoweb, token, key, revisions[-1]["revision"])
            await until(
                lambda: (
                    fake.requests
                    and any(NOTICE in t for r in fake.requests if isinstance(r.body, dict) for t in user_texts(r.body))
                ),
                "the proxy's turn to start",
            )
            prompting = asyncio.ensure_future(conn.prompt(session_id=key, prompt=[text_block(second)]))
            await until(lambda: b"a prompt waits" in (logs / "stderr.log").read_bytes(), "the prompt to be held")
            held = second.encode() not in (logs / "agent.in").read_bytes()
            fake.release.set()
            answer = await asyncio.wait_for(prompting, DEADLINE)
            return {"held": held, "stop": answer.stop_reason}  # fmt: skip

        try:
            outcome = asyncio.run(
                drive(agent, ["--url", todoweb.url, "--token", token, "--poll", "0.2"], workdir, logs, session)
            )
        except BaseException as error:
            raise AssertionError(context(logs, fake, todoweb)) from error
        where = context(logs, fake, todoweb)
        assert outcome == {"held": True, "stop": "end_turn"}, where
        check_passed_unchanged(Sides(logs), own_prompts=1)
        agent_got = Sides(logs).lines("agent.in")
        [own] = [n for n, line in enumerate(agent_got) if Sides.own(line)]
        [client] = [n for n, line in enumerate(agent_got) if second.encode() in line]
        assert own < client, where  # the editor's prompt went after the proxy's
        assert any(second in t for r in fake.turns() for t in user_texts(r.body)), where


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_with_todoweb_unreachable_the_session_works_through_the_proxy(
    install_cli, internet_trap, agent_env, agent_home, workdir, tmp_path
):
    """Nothing answers at the board's address: the prompt runs to its end, the editor
    gets the plan, every line passes unchanged, and the proxy says once on stderr
    that the board is unreachable.

    Seen failing with the connection errors not caught where a plan is posted: the
    recorder logged a traceback for each plan and never said the board was
    unreachable (`stderr.count("todoweb is unreachable") == 1` failed with 0); the
    relay itself went on."""
    logs = tmp_path / "logs"
    logs.mkdir()
    with FakeOpenAIChat(script("todo_write", qwen_plan), model=MODEL) as fake:
        agent = qwen_agent(install_cli, fake, agent_env, agent_home, workdir)

        async def session(conn: Any, key: str, editor: Editor) -> dict[str, Any]:
            answer = await asyncio.wait_for(conn.prompt(session_id=key, prompt=[text_block(PROMPT)]), DEADLINE)
            return {"stop": answer.stop_reason, "kinds": editor.kinds()}

        url = f"http://127.0.0.1:{free_port()}"
        try:
            outcome = asyncio.run(
                drive(agent, ["--url", url, "--token", "tw_nothing", "--poll", "0.2"], workdir, logs, session)
            )
        except BaseException as error:
            raise AssertionError(context(logs, fake)) from error
        where = context(logs, fake)
        assert outcome["stop"] == "end_turn", where
        assert outcome["kinds"].count("plan") == 2, where
        check_passed_unchanged(Sides(logs), own_prompts=0)
        stderr = (logs / "stderr.log").read_text()
        assert stderr.count("todoweb is unreachable") == 1, where
        assert "Traceback" not in stderr, where
        assert internet_trap.attempts == [], where
