"""Claude Code with todoweb's channel (`todoweb-channel`, docs/agents.md's recipe): a
person's note reaches an idle Claude Code session at once, with no tool call, and a
permission prompt is answered from the board.

Channels are a research preview: they need an interactive session (not `-p`), so
Claude Code runs in a tmux terminal here, started with
`--dangerously-load-development-channels server:todoweb`, whose warning the test
confirms as a person would. Claude Code turns channels and their permission relay on
by feature flags it keeps in ~/.claude.json (`tengu_harbor`,
`tengu_harbor_permissions`; seeded here as Claude Code caches them) and reads
no feature flag at all when DO_NOT_TRACK, DISABLE_TELEMETRY or
CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC is set: this test leaves those unset, and
the internet trap refuses whatever Claude Code then tries to send out.
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.agents.fake_anthropic import FakeAnthropic, tool_results
from tests.agents.fake_model import Call, Request, Script, Turn
from tests.agents.test_claude_code import CLAUDE_CODE, HTTP_HOOK, at
from tests.servers import IN_CI, require

CHANNEL = Path(__file__).resolve().parents[2] / ".venv" / "bin" / "todoweb-channel"
FLAG = "--dangerously-load-development-channels"
README_URL = "http://127.0.0.1:8000"
# docs/agents.md's .mcp.json for the channel, verbatim; the test swaps in the server's
# address and the installed command's path.
CHANNEL_MCP_JSON = {
    "mcpServers": {
        "todoweb": {
            "command": "todoweb-channel",
            "env": {"TODOWEB_URL": "http://127.0.0.1:8000", "TODOWEB_TOKEN": "${TODOWEB_TOKEN}"},
        }
    }
}
RELAY_MCP_JSON = {
    "mcpServers": {
        "todoweb": {
            "command": "todoweb-channel",
            "args": ["--permission-relay"],
            "env": {"TODOWEB_URL": "http://127.0.0.1:8000", "TODOWEB_TOKEN": "${TODOWEB_TOKEN}"},
        }
    }
}
NOTE = "Use the staging database, not <b>production</b> 请 🚀"
WITHIN = 60.0


@pytest.fixture(scope="module")
def claude(install_cli):
    if IN_CI:
        assert shutil.which("tmux"), "CI=true: tmux must be installed (.ci/run installs it)"
    require(shutil.which("tmux") is not None, "tmux is not installed (Claude Code's channels need a terminal)")
    return install_cli(*CLAUDE_CODE)


class Terminal:
    """A tmux terminal of its own (its own server socket) running one command."""

    def __init__(self, log: Path):
        self.socket = f"todoweb-{uuid.uuid4().hex[:8]}"
        self.log = log

    def tmux(self, *args: str) -> str:
        return subprocess.run(
            ["tmux", "-L", self.socket, *args], capture_output=True, text=True, check=False, timeout=10
        ).stdout

    def start(self, command: str) -> None:
        subprocess.run(
            ["tmux", "-L", self.socket, "new-session", "-d", "-x", "160", "-y", "50", command], check=True, timeout=10
        )

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p")

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", *keys)

    def type(self, text: str, sent: Callable[[], Any]) -> None:
        """Type `text` at the prompt and press Enter until `sent()` says it went."""
        deadline = time.monotonic() + WITHIN
        while text not in self.screen():
            assert time.monotonic() < deadline, f"the prompt never took {text!r}:\n{self.screen()}"
            self.keys("C-u", text)  # a prompt still starting may drop keys: type it again
            time.sleep(0.5)
        while not sent():
            assert time.monotonic() < deadline, f"the prompt was never sent:\n{self.screen()}"
            self.keys("Enter")  # an Enter right after the text can be taken as part of it
            time.sleep(1)

    def wait_for(self, text: str, within: float = WITHIN) -> None:
        deadline = time.monotonic() + within
        while text not in self.screen():
            assert time.monotonic() < deadline, f"{text!r} never showed:\n{self.screen()}"
            time.sleep(0.2)

    def stop(self) -> None:
        self.log.write_text(self.screen())
        self.tmux("kill-server")


def until(condition: Callable[[], Any], what: str, within: float = WITHIN) -> Any:
    deadline = time.monotonic() + within
    while not (found := condition()):
        assert time.monotonic() < deadline, what
        time.sleep(0.2)
    return found


def at_server(recipe: Any, url: str) -> Any:
    return json.loads(
        json.dumps(recipe).replace(README_URL, url).replace('"todoweb-channel"', json.dumps(str(CHANNEL)))
    )


@pytest.fixture
def claude_in_a_terminal(claude, agent_home, agent_env, workdir, todoweb, token, tmp_path) -> Iterator[Callable]:
    terminals: list[Terminal] = []

    def start(fake: FakeAnthropic, mcp_json: dict, *flags: str) -> Terminal:
        # What a person's Claude Code has by now: onboarding done, the folder trusted,
        # the API key approved, and the feature flags it last fetched.
        (agent_home / ".claude.json").write_text(
            json.dumps(
                {
                    "hasCompletedOnboarding": True,
                    "theme": "dark",
                    "customApiKeyResponses": {"approved": ["sk-ant-fake"], "rejected": []},
                    "cachedGrowthBookFeatures": {"tengu_harbor": True, "tengu_harbor_permissions": True},
                    "projects": {str(workdir): {"hasTrustDialogAccepted": True}},
                }
            )
        )
        (workdir / ".mcp.json").write_text(json.dumps(at_server(mcp_json, todoweb.url)))
        settings = at(todoweb.url, HTTP_HOOK) | {"enableAllProjectMcpServers": True}
        (workdir / ".claude").mkdir(exist_ok=True)
        (workdir / ".claude" / "settings.json").write_text(json.dumps(settings))
        env = agent_env | {
            "ANTHROPIC_BASE_URL": fake.url,
            "ANTHROPIC_API_KEY": "sk-ant-fake",
            "TODOWEB_TOKEN": token,
            "CLAUDE_CODE_ENABLE_TASKS": "false",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "TERM": "xterm-256color",
        }
        for name in ("DO_NOT_TRACK", "NO_COLOR"):
            env.pop(name, None)
        assigned = " ".join(f"{name}={shlex.quote(value)}" for name, value in env.items())
        command = f"cd {shlex.quote(str(workdir))} && exec env -i {assigned} {claude.executable} {' '.join(flags)}"
        terminal = Terminal(tmp_path / f"screen-{len(terminals)}.txt")
        terminals.append(terminal)
        terminal.start(command)
        if FLAG in flags:
            terminal.wait_for("I am using this for local development")
            terminal.keys("Enter")
        terminal.wait_for("? for shortcuts")
        return terminal

    yield start
    for terminal in terminals:
        terminal.stop()


def request_at(fake: FakeAnthropic, turn: int) -> Request | None:
    return next((request for request in fake.turns() if request.turn == turn), None)


def said(request: Request) -> str:
    """Everything said to the model since its last answer, as text."""
    texts = []
    for message in reversed(request.body["messages"]):
        if message["role"] == "assistant":
            break
        content = message["content"]
        blocks = [{"text": content}] if isinstance(content, str) else content
        texts += [block.get("text", "") for block in blocks if isinstance(block, dict)]
    return "\n".join(reversed(texts))


def plan_turns(*rest: Turn) -> Script:
    todos = [{"content": "Fix the bug", "status": "in_progress", "activeForm": "Fixing the bug"}]
    return Script([Turn(text="Let me plan.", calls=(Call("TodoWrite", {"todos": todos}),)), *rest])


def test_a_note_reaches_an_idle_session_through_the_channel_at_once(claude_in_a_terminal, todoweb, token, tmp_path):
    """Fails as: without the flag (or with DO_NOT_TRACK=1) Claude Code says "Channels are
    not currently available", the model is never asked again and the note stays waiting."""
    script = plan_turns(Turn(text="Waiting for you."), Turn(text="Using the staging database."))
    with FakeAnthropic(script) as fake, todoweb.api(token) as api:
        terminal = claude_in_a_terminal(fake, CHANNEL_MCP_JSON, FLAG, "server:todoweb")
        terminal.wait_for("messages from server:todoweb inject directly")
        terminal.type("Fix the bug in the checkout", sent=lambda: request_at(fake, 0))
        terminal.wait_for("Waiting for you.")  # the turn is over: Claude Code is idle
        key = until(lambda: [s["key"] for s in api.get("/api/v1/sessions").json()["sessions"]], "no session")[0]

        sent_at = time.monotonic()
        assert api.post(f"/api/v1/sessions/{key}/messages", json={"text": NOTE}).status_code == 201
        asked = until(lambda: request_at(fake, 2), f"the model was not asked again:\n{terminal.screen()}")
        reached_in = time.monotonic() - sent_at
        assert '<channel source="todoweb"' in said(asked) and NOTE in said(asked), said(asked)
        assert 'kind="note"' in said(asked)
        terminal.wait_for("Using the staging database.")
        note = api.get(f"/api/v1/sessions/{key}/messages").json()["messages"][-1]
        assert note["state"] == "told" and note["told_via"] == "Claude Code channel", note
        print(f"\nnote to idle Claude Code: the model was asked {reached_in:.2f} s after the note")


def test_a_permission_prompt_is_answered_from_the_board(claude_in_a_terminal, todoweb, token, workdir):
    """Fails as: without --permission-relay the channel declares no permission capability,
    no question reaches the board and the terminal's own prompt waits."""
    bash = Call("Bash", {"command": "touch approved.txt", "description": "Create a file"})
    script = plan_turns(Turn(text="Creating it.", calls=(bash,)), Turn(text="Done."))
    with FakeAnthropic(script) as fake, todoweb.api(token) as api:
        terminal = claude_in_a_terminal(fake, RELAY_MCP_JSON, FLAG, "server:todoweb", "--permission-mode", "default")
        terminal.wait_for("messages from server:todoweb inject directly")
        terminal.type("Create approved.txt", sent=lambda: request_at(fake, 0))

        def open_question() -> dict[str, Any] | None:
            for session in api.get("/api/v1/sessions").json()["sessions"]:
                questions = api.get(f"/api/v1/sessions/{session['key']}/questions").json()["questions"]
                if questions and questions[-1]["state"] == "open":
                    return session["key"], questions[-1]
            return None

        key, question = until(open_question, f"no question on the board:\n{terminal.screen()}")
        assert question["kind"] == "permission" and question["tool"] == "Bash", question
        assert "touch approved.txt" in question["detail"] + question["text"], question
        answer = api.post(f"/api/v1/sessions/{key}/questions/{question['id']}/answer", json={"decision": "allow"})
        assert answer.status_code == 200, answer.text
        answered = until(lambda: request_at(fake, 2), f"the tool never ran:\n{terminal.screen()}")
        assert [result["is_error"] for result in tool_results(answered)] == [False], tool_results(answered)
        assert (workdir / "approved.txt").exists()
