"""`todoweb-acp`: a stdio proxy between an ACP client (an editor such as Zed) and an
ACP agent, that puts the agent's plan on a todoweb board and brings people's edits
back to the agent.

    todoweb-acp [--url URL] [--token TOKEN] -- <agent command …>

The editor starts `todoweb-acp` instead of the agent; the proxy starts the agent and
relays the newline-delimited JSON-RPC of the Agent Client Protocol both ways. Every
line passes byte for byte: the proxy reads raw lines, writes the same bytes on, and
parses a copy only to look at it. What it does besides:

- Records: each agent→client `session/update` whose update is a `plan` (or a
  `plan_update` of an item plan) is posted to todoweb as a call of the `acp_plan`
  tool, in the session named by the ACP `sessionId`. Posts run in the background, one
  session's in order, and never hold a line back; a board that is down or refuses a
  plan is logged on stderr and nothing else happens.
- Tells: people's edits and notes reach the agent as a user turn of the proxy's own,
  a `session/prompt` with the notice as its text, sent once the agent's turn in that
  session has ended (the protocol has no other way into a running agent). The notice
  comes from the answer to a plan the proxy posted (todoweb tells people's edits to
  the first write after them) or from `POST …/tell`, asked after each turn and every
  `--poll` seconds while the session is idle. The proxy's prompts use ids of their
  own (`todoweb-<random>-<n>`), which no client uses: the agent's answer to them is
  not passed on, its `session/update`s during that turn are (the editor shows the
  agent's work).
- Queues: a client `session/prompt` that comes while a proxy turn runs in the same
  session is held until that turn ends, then sent on unchanged (agents run one prompt
  per session at a time, and some refuse or cancel on a second). A `session/cancel`
  for that session is passed on (it ends the proxy's turn) and answers the held
  prompts with `stopReason: cancelled`, as the agent would have.

Without a token, or with todoweb unreachable, the proxy is a plain relay.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import signal
import sys
import threading
import uuid
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from todoweb_client import __version__
from todoweb_client.client import session_path

logger = logging.getLogger("todoweb-acp")

TOOL = "acp_plan"
ROUTE = "ACP proxy"
# The acp dialect's reply with `?reply=native`: any other answer carries people's words.
RECORDED = "Plan recorded."
# The longest line looked at; a longer one is passed on in parts, unparsed.
LINE_LIMIT = 64 * 1024 * 1024
DEFAULT_POLL = 3.0
HTTP_TIMEOUT = 5.0
# How long the last plans may take to land once the agent has gone.
FLUSH_ON_EXIT = 3.0


def key_of(request_id: Any) -> str:
    """A JSON-RPC id as a dictionary key: 1 and "1" are different ids."""
    return json.dumps(request_id)


def look(line: bytes) -> dict[str, Any] | None:
    """A parsed copy of one line, when it is a JSON-RPC object; None otherwise."""
    try:
        message = json.loads(line)
    except ValueError:
        return None
    return message if isinstance(message, dict) else None


def plan_entries(params: Any) -> list[Any] | None:
    """The entries of a `session/update` that carries an item plan, else None."""
    update = params.get("update") if isinstance(params, dict) else None
    if not isinstance(update, dict):
        return None
    if update.get("sessionUpdate") == "plan":
        entries = update.get("entries")
    elif update.get("sessionUpdate") == "plan_update":
        plan = update.get("plan")
        entries = plan.get("entries") if isinstance(plan, dict) and plan.get("type") == "items" else None
    else:
        return None
    return entries if isinstance(entries, list) else None


def notice_in(answer: Any) -> str | None:
    """People's words in the answer to a posted plan: with `?reply=native`, the answer
    is the fixed line or, after a merge, todoweb's checklist; anything else starts with
    the notice, which the whole output (notice, then the plan as merged) passes on."""
    if not isinstance(answer, dict) or answer.get("ok") is not True:
        return None
    output = answer.get("output")
    if not isinstance(output, str) or output == RECORDED or output.startswith("Todo list "):
        return None
    return output


async def lines(reader: asyncio.StreamReader) -> AsyncIterator[tuple[bytes, bool]]:
    """Each line as read, newline included, and whether it may be looked at: a line
    longer than LINE_LIMIT comes in parts that are only passed on."""
    whole = True
    while True:
        try:
            line = await reader.readuntil(b"\n")
        except asyncio.IncompleteReadError as end:
            if end.partial:
                yield end.partial, whole
            return
        except asyncio.LimitOverrunError as over:
            yield await reader.readexactly(over.consumed), False
            whole = False
            continue
        yield line, whole
        whole = True


class Output:
    """Our stdout, toward the editor: an asyncio pipe where it is one, else plain writes."""

    def __init__(self, writer: asyncio.StreamWriter | None):
        self.writer = writer

    @classmethod
    async def open(cls) -> Output:
        loop = asyncio.get_running_loop()
        try:
            transport, protocol = await loop.connect_write_pipe(
                asyncio.streams.FlowControlMixin, os.fdopen(sys.stdout.fileno(), "wb", buffering=0, closefd=False)
            )
        except (OSError, ValueError):  # a regular file: write it directly
            return cls(None)
        return cls(asyncio.StreamWriter(transport, protocol, None, loop))

    async def write(self, data: bytes) -> None:
        if self.writer is None:
            sys.stdout.buffer.write(data)
            sys.stdout.buffer.flush()
            return
        self.writer.write(data)
        await self.writer.drain()

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


@dataclass
class Session:
    """What the proxy knows of one ACP session."""

    key: str
    title: str | None = None
    turn: str | None = None  # the id (key_of) of the prompt that runs, client's or ours
    own_turn: bool = False
    held: deque[tuple[str, bytes]] = field(default_factory=deque)  # client prompts held during our turn
    notices: list[str] = field(default_factory=list)  # people's words not yet sent
    on_board: bool = False  # a plan was recorded: people can edit it
    plans: asyncio.Queue[list[Any]] = field(default_factory=asyncio.Queue)
    recorder: asyncio.Task[None] | None = None


class Proxy:
    """The relay between the editor (`client_in`, `client_out`) and the agent process."""

    def __init__(
        self,
        agent: asyncio.subprocess.Process,
        client_in: asyncio.StreamReader,
        client_out: Output,
        http: httpx.AsyncClient | None,
        *,
        poll: float,
    ):
        assert agent.stdin is not None and agent.stdout is not None
        self.agent = agent
        self.agent_in = agent.stdin
        self.agent_out = agent.stdout
        self.client_in = client_in
        self.client_out = client_out
        self.http = http
        self.poll = poll
        self.sessions: dict[str, Session] = {}
        self.prompts: dict[str, str] = {}  # client prompt id → session id
        self.new_sessions: dict[str, str | None] = {}  # session/new id → the folder's name
        self.own_prefix = f"todoweb-{uuid.uuid4().hex[:8]}-"
        self.own_count = 0
        self.tasks: set[asyncio.Task[Any]] = set()
        self.unreachable_logged = False

    # --- running ---------------------------------------------------------------

    async def run(self) -> int:
        """Relay until the agent's output ends; the agent's exit code."""
        to_agent = asyncio.ensure_future(self.relay_client())
        if self.http is not None and self.poll > 0:
            self.spawn(self.poll_idle())
        try:
            await self.relay_agent()
        finally:
            to_agent.cancel()
            await self.flush()
            for task in list(self.tasks):
                task.cancel()
            await asyncio.gather(to_agent, *self.tasks, return_exceptions=True)
            self.client_out.close()
        return await self.agent.wait()

    def spawn(self, coroutine: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(coroutine)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def flush(self) -> None:
        """Let the plans already seen reach the board (briefly) before the proxy ends."""
        waits = [session.plans.join() for session in self.sessions.values() if session.recorder is not None]
        if waits:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.gather(*waits), FLUSH_ON_EXIT)

    def session(self, key: str) -> Session:
        if key not in self.sessions:
            self.sessions[key] = Session(key)
        return self.sessions[key]

    async def to_agent(self, data: bytes) -> None:
        try:
            self.agent_in.write(data)
            await self.agent_in.drain()
        except (ConnectionError, RuntimeError) as error:
            logger.debug("the agent's input is closed: %s", error)

    # --- editor → agent --------------------------------------------------------

    async def relay_client(self) -> None:
        async for line, whole in lines(self.client_in):
            message = look(line) if whole else None
            if message is not None and self.from_client(message, line):
                continue  # held: sent on when the proxy's turn ends
            await self.to_agent(line)
        with contextlib.suppress(ConnectionError, RuntimeError, OSError):
            self.agent_in.close()

    def from_client(self, message: dict[str, Any], line: bytes) -> bool:
        """Look at one client message; True when it is held back for now."""
        method, params = message.get("method"), message.get("params")
        session_id = params.get("sessionId") if isinstance(params, dict) else None
        if method == "session/new" and "id" in message:
            cwd = params.get("cwd") if isinstance(params, dict) else None
            self.new_sessions[key_of(message["id"])] = Path(cwd).name if isinstance(cwd, str) and cwd else None
        elif method == "session/prompt" and "id" in message and isinstance(session_id, str):
            session, prompt = self.session(session_id), key_of(message["id"])
            self.prompts[prompt] = session_id
            if session.own_turn:
                session.held.append((prompt, line))
                logger.info("a prompt waits for the board's turn to end in session %s", session_id)
                return True
            session.turn = prompt
        elif method == "session/cancel" and isinstance(session_id, str) and session_id in self.sessions:
            self.cancel_held(self.sessions[session_id])
        return False

    def cancel_held(self, session: Session) -> None:
        """Answer the prompts held for `session` as cancelled, as the agent would."""
        while session.held:
            prompt, _ = session.held.popleft()
            del self.prompts[prompt]
            answer = {"jsonrpc": "2.0", "id": json.loads(prompt), "result": {"stopReason": "cancelled"}}
            self.spawn(self.client_out.write(json.dumps(answer).encode() + b"\n"))

    # --- agent → editor --------------------------------------------------------

    async def relay_agent(self) -> None:
        async for line, whole in lines(self.agent_out):
            message = look(line) if whole else None
            if message is not None and self.from_agent(message):
                continue  # the answer to the proxy's own prompt
            await self.client_out.write(line)

    def from_agent(self, message: dict[str, Any]) -> bool:
        """Look at one agent message; True when it is the proxy's own and not passed on."""
        method, params = message.get("method"), message.get("params")
        if method == "session/update" and isinstance(params, dict) and isinstance(params.get("sessionId"), str):
            entries = plan_entries(params)
            if entries is not None and self.http is not None:
                self.record(self.session(params["sessionId"]), entries)
            return False
        if method is not None or "id" not in message:
            return False
        answered = key_of(message["id"])
        if answered in self.new_sessions:
            title = self.new_sessions.pop(answered)
            result = message.get("result")
            if isinstance(result, dict) and isinstance(result.get("sessionId"), str):
                self.session(result["sessionId"]).title = title
            return False
        session_id = self.prompts.pop(answered, None)
        if session_id is None:
            return False
        session = self.session(session_id)
        own = session.own_turn and session.turn == answered
        if own and "error" in message:
            logger.warning("the agent refused the board's prompt: %s", message["error"])
        if session.turn == answered:
            session.turn, session.own_turn = None, False
            self.spawn(self.turn_ended(session))
        return own

    async def turn_ended(self, session: Session) -> None:
        """A turn ended: send on the prompts held back, else tell people's words."""
        if session.held:
            prompt, line = session.held.popleft()
            session.turn = prompt
            await self.to_agent(line)
            return
        if self.http is None:
            return
        # The turn's last plans first: their answers may carry people's words already.
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(session.plans.join(), HTTP_TIMEOUT * 2)
        if session.on_board:
            await self.ask_tell(session)
        await self.deliver(session)

    # --- the board -------------------------------------------------------------

    def record(self, session: Session, entries: list[Any]) -> None:
        session.plans.put_nowait(entries)
        if session.recorder is None:
            session.recorder = asyncio.ensure_future(self.recorder(session))
            self.tasks.add(session.recorder)

    async def recorder(self, session: Session) -> None:
        """Post one session's plans, in order."""
        assert self.http is not None
        while True:
            entries = await session.plans.get()
            try:
                await self.post_plan(session, entries)
            except Exception:  # never let one plan stop the next
                logger.exception("a plan was not recorded")
            finally:
                session.plans.task_done()

    async def post_plan(self, session: Session, entries: list[Any]) -> None:
        assert self.http is not None
        params = {"reply": "native"}
        if session.title and not session.on_board:
            params["title"] = session.title  # the first write only: a rename on the board holds
        try:
            response = await self.http.post(
                f"{session_path(session.key)}/tool", params=params, json={"tool": TOOL, "input": {"entries": entries}}
            )
        except httpx.HTTPError as error:
            self.unreachable(error)
            return
        try:
            answer = response.json()
        except ValueError:
            answer = None
        if response.status_code != 200:
            logger.warning("todoweb did not record the plan (%s): %s", response.status_code, response.text[:300])
            return
        session.on_board = True
        notice = notice_in(answer)
        if notice:
            session.notices.append(notice)
            await self.deliver(session)

    async def ask_tell(self, session: Session) -> None:
        assert self.http is not None
        try:
            response = await self.http.post(f"{session_path(session.key)}/tell", json={"route": ROUTE})
            told = response.json() if response.status_code == 200 else {}
        except (httpx.HTTPError, ValueError) as error:
            self.unreachable(error)
            return
        if isinstance(told, dict) and told.get("told") and isinstance(told.get("notice"), str):
            session.notices.append(told["notice"])

    def unreachable(self, error: Exception) -> None:
        # Logged once: a board that stays down must not fill the editor's log.
        level = logging.DEBUG if self.unreachable_logged else logging.WARNING
        logger.log(level, "todoweb is unreachable (%s); the agent runs on without the board", error)
        self.unreachable_logged = True

    async def poll_idle(self) -> None:
        """Ask for people's words now and then in the sessions where no turn runs."""
        while True:
            await asyncio.sleep(self.poll)
            for session in list(self.sessions.values()):
                if session.on_board and session.turn is None and not session.held:
                    await self.ask_tell(session)
                    await self.deliver(session)

    async def deliver(self, session: Session) -> None:
        """Send people's words as the proxy's own prompt, if no turn runs in the session."""
        if not session.notices or session.turn is not None or self.agent.returncode is not None:
            return
        text = "\n\n".join(session.notices)
        session.notices.clear()
        self.own_count += 1
        own = f"{self.own_prefix}{self.own_count}"
        session.turn, session.own_turn = key_of(own), True
        self.prompts[key_of(own)] = session.key
        prompt = {
            "jsonrpc": "2.0",
            "id": own,
            "method": "session/prompt",
            "params": {"sessionId": session.key, "prompt": [{"type": "text", "text": text}]},
        }
        logger.info("telling the agent of people's words in session %s", session.key)
        await self.to_agent(json.dumps(prompt, ensure_ascii=False).encode() + b"\n")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="todoweb-acp",
        usage="todoweb-acp [--url URL] [--token TOKEN] [--poll SECONDS] -- <agent command …>",
        description="An ACP proxy: the agent's plan goes on the todoweb board, people's edits come back as prompts.",
    )
    parser.add_argument(
        "--url", default=os.environ.get("TODOWEB_URL", "http://127.0.0.1:8000"), help="todoweb's address (TODOWEB_URL)"
    )
    parser.add_argument("--token", default=os.environ.get("TODOWEB_TOKEN", ""), help="a write token (TODOWEB_TOKEN)")
    parser.add_argument(
        "--poll",
        type=float,
        default=float(os.environ.get("TODOWEB_ACP_POLL", DEFAULT_POLL)),
        help="seconds between asks for people's words while a session is idle; 0: only after turns",
    )
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the agent's command, after --")
    args = parser.parse_args(argv)
    if args.command[:1] == ["--"]:
        args.command = args.command[1:]
    if not args.command:
        parser.error("give the agent's command after --, e.g. todoweb-acp -- qwen --acp")
    return args


async def stdin_reader() -> asyncio.StreamReader:
    """Our stdin, from the editor: an asyncio pipe where it is one, else read in a thread."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=LINE_LIMIT)
    try:
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    except ValueError:  # a regular file

        def pump() -> None:
            while chunk := os.read(sys.stdin.fileno(), 65536):
                loop.call_soon_threadsafe(reader.feed_data, chunk)
            loop.call_soon_threadsafe(reader.feed_eof)

        threading.Thread(target=pump, daemon=True).start()
    return reader


async def run(args: argparse.Namespace) -> int:
    client_in, client_out = await stdin_reader(), await Output.open()
    agent = await asyncio.create_subprocess_exec(
        *args.command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, limit=LINE_LIMIT
    )
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        loop.add_signal_handler(signum, forward_signal(agent, signum))
    http = None
    if args.token:
        headers = {"Authorization": f"Bearer {args.token}", "User-Agent": f"todoweb-acp/{__version__}"}
        http = httpx.AsyncClient(base_url=args.url.rstrip("/"), headers=headers, timeout=HTTP_TIMEOUT)
    else:
        logger.warning("TODOWEB_TOKEN is not set: relaying only, nothing goes on the board")
    try:
        proxy = Proxy(agent, client_in, client_out, http, poll=args.poll)
        return await proxy.run()
    finally:
        if http is not None:
            await http.aclose()


def forward_signal(agent: asyncio.subprocess.Process, signum: int) -> Callable[[], None]:
    def forward() -> None:
        if agent.returncode is None:
            agent.send_signal(signum)

    return forward


def main(argv: list[str] | None = None) -> int:
    # stdout carries the protocol: everything said to people goes to stderr.
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="todoweb-acp: %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)
    args = parse_args(argv)
    try:
        return asyncio.run(run(args))
    except FileNotFoundError as error:
        logger.error("cannot start the agent: %s", error)
        return 127


if __name__ == "__main__":
    sys.exit(main())
