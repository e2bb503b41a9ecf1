"""The Claude Code channel (`todoweb-channel`, clients/python) as Claude Code runs it:
a process speaking MCP on its stdin and stdout, here driven by the test in Claude
Code's place, against a real server. People's notes and edits reach it at once,
each told once; with the permission relay, a prompt becomes a question on the board
and a member's answer goes back."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.servers import Server, base_env, create_token, manage

CHANNEL = Path(__file__).resolve().parents[2] / ".venv" / "bin" / "todoweb-channel"
WITHIN = 15.0
HOSTILE = '<script>alert(1)</script> 请先修复登录 🚀 "quoted" \\ back'


@pytest.fixture(scope="module")
def todoweb(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("channel")
    env = base_env(DATABASE_URL=f"sqlite:///{tmp / 'db.sqlite3'}")
    manage(env, "migrate")
    with Server.serve(env, tmp / "server.log") as server:
        yield server, create_token(env)


class ChannelProcess:
    """`todoweb-channel` with pipes for stdin and stdout, as Claude Code starts it."""

    def __init__(self, url: str, token: str, session: str, *args: str):
        env = {k: v for k, v in os.environ.items() if not k.startswith("TODOWEB_")}
        env |= {"TODOWEB_URL": url, "TODOWEB_TOKEN": token, "CLAUDE_CODE_SESSION_ID": session}
        self.process = subprocess.Popen(
            [str(CHANNEL), *args], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        self.lines: queue.Queue[dict[str, Any]] = queue.Queue()
        self.next_id = 0
        threading.Thread(target=self.read, daemon=True).start()

    def read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(json.loads(line))

    def send(self, message: dict[str, Any] | bytes) -> None:
        assert self.process.stdin is not None
        data = message if isinstance(message, bytes) else json.dumps(message).encode()
        self.process.stdin.write(data + b"\n")
        self.process.stdin.flush()

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params or {}})
        return self.expect(lambda message: message.get("id") == self.next_id)

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def expect(self, wanted, within: float = WITHIN) -> dict[str, Any]:
        """The next message that `wanted` accepts (others are kept for later)."""
        deadline = time.monotonic() + within
        skipped = []
        try:
            while True:
                try:
                    message = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
                except queue.Empty:
                    raise AssertionError(f"nothing wanted came within {within} s; came: {skipped}") from None
                if wanted(message):
                    return message
                skipped.append(message)
        finally:
            for message in skipped:
                self.lines.put(message)

    def handshake(self) -> dict[str, Any]:
        answer = self.request(
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "claude-code", "version": "2"},
            },
        )
        self.notify("notifications/initialized", {})
        return answer["result"]

    def close(self) -> str:
        """Close stdin as Claude Code does on exit; what the process said on stderr."""
        assert self.process.stdin is not None and self.process.stderr is not None
        self.process.stdin.close()
        self.process.wait(timeout=10)
        return self.process.stderr.read().decode()


def channel_event(message: dict[str, Any]) -> bool:
    return message.get("method") == "notifications/claude/channel"


def plan(http: httpx.Client, key: str, *steps: tuple[str, str]) -> int:
    todos = [{"content": content, "status": status, "activeForm": content} for content, status in steps]
    answer = http.post(f"/api/v1/sessions/{key}/tool", json={"tool": "TodoWrite", "input": {"todos": todos}})
    assert answer.status_code == 200, answer.text
    return answer.json()["data"]["revision"]


def messages(http: httpx.Client, key: str) -> list[dict[str, Any]]:
    answer = http.get(f"/api/v1/sessions/{key}/messages")
    assert answer.status_code == 200, answer.text
    return answer.json()["messages"]


@pytest.fixture
def http(todoweb):
    server, token = todoweb
    with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {token}"}, timeout=10) as client:
        yield client


def test_it_declares_a_channel_and_speaks_json_rpc(todoweb):
    server, token = todoweb
    channel = ChannelProcess(server.url, token, "handshake")
    try:
        result = channel.handshake()
        assert result["capabilities"] == {"experimental": {"claude/channel": {}}}
        assert result["protocolVersion"] == "2025-06-18"
        assert "todoweb" in result["instructions"] and 'kind="edit"' in result["instructions"]
        assert channel.request("ping") == {"jsonrpc": "2.0", "id": 2, "result": {}}
        assert channel.request("tools/call", {"name": "x"})["error"]["code"] == -32601
        channel.send(b"{not json")
        assert channel.expect(lambda message: "error" in message and message["id"] is None)["error"]["code"] == -32700
        assert channel.request("ping")["result"] == {}  # still serving
    finally:
        channel.close()


def test_a_persons_note_and_edit_reach_the_session_at_once_each_told_once(todoweb, http):
    server, token = todoweb
    key = "channel-note"
    # Two channels follow the session before it exists (it appears with the first plan).
    first, second = ChannelProcess(server.url, token, key), ChannelProcess(server.url, token, key)
    try:
        first.handshake()
        second.handshake()
        revision = plan(http, key, ("Read the code", "in_progress"), ("Fix the bug", "pending"))

        assert http.post(f"/api/v1/sessions/{key}/messages", json={"text": HOSTILE}).status_code in (200, 201)
        event = next(channel.expect(channel_event) for channel in race(first, second))
        assert HOSTILE in event["params"]["content"]
        assert event["params"]["meta"] == {"kind": "note", "session": key}
        note = messages(http, key)[-1]
        assert note["state"] == "told" and note["told_via"] == "Claude Code channel", note

        edited = [
            {"content": "Read the code", "status": "completed"},
            {"content": "Fix the bug", "status": "in_progress"},
            {"content": "Add a regression test", "status": "pending"},
        ]
        answer = http.post(
            f"/api/v1/sessions/{key}/edits", json={"todos": edited}, headers={"If-Match": f'"{revision}"'}
        )
        assert answer.status_code in (200, 201), answer.text
        event = next(channel.expect(channel_event) for channel in race(first, second))
        assert "Add a regression test" in event["params"]["content"]
        assert event["params"]["meta"]["kind"] == "edit"
        assert messages(http, key)[-1]["state"] == "told"
    finally:
        logs = first.close() + second.close()
    # Each message was pushed by one channel only.
    told = [line for line in logs.splitlines() if "told the session" in line]
    assert len(told) == 2, logs


def race(*channels: ChannelProcess):
    """The channel that got the event: whichever it is, exactly one gets each."""
    deadline = time.monotonic() + WITHIN
    while time.monotonic() < deadline:
        for channel in channels:
            if any(channel_event(message) for message in list(channel.lines.queue)):
                yield channel
                return
        time.sleep(0.02)
    raise AssertionError("no channel pushed the event")


def test_the_permission_relay_puts_the_prompt_on_the_board_and_passes_the_answer_back(todoweb, http):
    server, token = todoweb
    key = "channel-relay"
    plan(http, key, ("Clean the build", "in_progress"))
    channel = ChannelProcess(server.url, token, key, "--permission-relay")
    try:
        capabilities = channel.handshake()["capabilities"]["experimental"]
        assert capabilities == {"claude/channel": {}, "claude/channel/permission": {}}
        channel.notify(
            "notifications/claude/channel/permission_request",
            {
                "request_id": "abcde",
                "tool_name": "Bash",
                "description": "Delete the build folder",
                "input_preview": '{"command": "rm -rf build"}',
            },
        )
        question = wait_for_question(http, key)
        assert question["kind"] == "permission" and question["tool"] == "Bash" and question["state"] == "open"
        assert question["text"] == "Delete the build folder" and "rm -rf build" in question["detail"]
        answer = http.post(
            f"/api/v1/sessions/{key}/questions/{question['id']}/answer",
            json={"decision": "deny", "feedback": "Not the build folder"},
        )
        assert answer.status_code == 200, answer.text
        relayed = channel.expect(lambda message: message.get("method") == "notifications/claude/channel/permission")
        assert relayed["params"] == {"request_id": "abcde", "behavior": "deny"}
    finally:
        channel.close()


def wait_for_question(http: httpx.Client, key: str) -> dict[str, Any]:
    deadline = time.monotonic() + WITHIN
    while time.monotonic() < deadline:
        questions = http.get(f"/api/v1/sessions/{key}/questions").json()["questions"]
        if questions:
            return questions[-1]
        time.sleep(0.05)
    raise AssertionError("the permission request never became a question")


def test_without_a_token_or_a_session_it_says_what_is_missing(todoweb):
    server, _ = todoweb
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TODOWEB_", "CLAUDE_CODE_"))}
    run = subprocess.run([str(CHANNEL)], env=env | {"TODOWEB_URL": server.url}, capture_output=True, timeout=10)
    assert run.returncode == 2 and b"TODOWEB_TOKEN is not set" in run.stderr
    run = subprocess.run([str(CHANNEL)], env=env | {"TODOWEB_TOKEN": "x"}, capture_output=True, timeout=10)
    assert run.returncode == 2 and b"CLAUDE_CODE_SESSION_ID" in run.stderr
