"""demo --url URL --token TOKEN [--rounds N] [--delay SECONDS]: simulated agents for the board.

A fixed cast, one agent per kind of agent tool, each on its own session
(`demo-<agent>`), posts real tool calls to a running todoweb over HTTP. Each one
works through its plan, a step every few seconds, then starts the same plan again
on the same session: the board keeps the same handful of cards however long it
runs, and a restart (same token, same project) picks the same sessions up again.

- Claude Code (TodoWrite, through its hook) hands one step to an Explore subagent:
  the child session `demo-claude-code:explore`, under its parent.
- Kimi (SetTodoList) and Roo Code (a markdown checklist) work straight through.
- Gemini CLI (write_todos) cancels a step it no longer needs.
- Codex (update_plan) rewrites its plan midway: the unstarted steps show as dropped.
- WeKnora (todo_write) fails a step: the run ends `failed` and stays so a minute.
- opencode (todowrite) writes its plan once and waits for an answer that never
  comes: with work left and no more writes, it goes `idle`.
"""

from __future__ import annotations

import heapq
import itertools
import random
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
from django.core.management.base import BaseCommand, CommandError, CommandParser

# Pauses, in beats of --delay seconds, each stretched or shrunk by up to half at random.
WORK = 2  # how long a step takes
CLEARED = 0.5  # between clearing the list and writing the new plan
DONE_HOLD = 8  # a finished run stays on the board this long before it starts again
FAILED_HOLD = 30  # a failed one longer: that is the card to notice

CLAUDE_CODE_FOLDER = "/home/dev/shop"


@dataclass
class Todo:
    content: str
    active_form: str
    status: str = "pending"
    priority: str = "medium"


@dataclass
class Beat:
    """Post `agent`'s list as it is now, then let its script rest `pause` beats."""

    agent: Agent
    pause: float = WORK


Script = Callable[["Agent"], Iterator[Beat]]


@dataclass
class Agent:
    key: str
    title: str
    tool: str
    encode: Callable[[Agent], dict[str, Any]]  # the tool's input for the current list
    plan: list[tuple[str, str]]  # (step, the step in the present continuous)
    script: Script
    loops: bool = True
    hook: bool = False  # posts Claude Code's PostToolUse hook input instead of the tool call
    todos: list[Todo] = field(default_factory=list)
    titled: bool = False  # title checked in this process

    def begin(self) -> Iterator[Beat]:
        """Clear the list, then write the plan with its first step started.

        The same steps written straight over the finished ones would be taken for
        the same steps, reopened, with their old start times; after an empty list
        they start afresh, so each run shows as a new one."""
        self.todos = []
        yield Beat(self, CLEARED)
        self.todos = [Todo(content, active) for content, active in self.plan]
        self.todos[0].status = "in_progress"
        yield Beat(self)

    def move_on(self, index: int, *, done: str = "completed") -> Iterator[Beat]:
        """Close the step before `index` (as `done`) and start `index`, in one write."""
        self.todos[index - 1].status = done
        self.todos[index].status = "in_progress"
        yield Beat(self)

    def finish(self) -> Iterator[Beat]:
        self.todos[-1].status = "completed"
        yield Beat(self, DONE_HOLD)


def straight_through(agent: Agent) -> Iterator[Beat]:
    yield from agent.begin()
    for index in range(1, len(agent.todos)):
        yield from agent.move_on(index)
    yield from agent.finish()


def cancels_step(at: int) -> Script:
    """Step `at` turns out not to be needed: cancelled, not done."""

    def script(agent: Agent) -> Iterator[Beat]:
        yield from agent.begin()
        for index in range(1, len(agent.todos)):
            yield from agent.move_on(index, done="cancelled" if index - 1 == at else "completed")
        yield from agent.finish()

    return script


def rewrites_plan(after: int, new_steps: list[tuple[str, str]]) -> Script:
    """When step `after` is done, the rest of the plan is replaced by `new_steps`. The
    steps it drops were never started, so the next run takes them up again off the
    dropped list without a past."""

    def script(agent: Agent) -> Iterator[Beat]:
        yield from agent.begin()
        for index in range(1, after + 1):
            yield from agent.move_on(index)
        agent.todos[after].status = "completed"
        agent.todos[after + 1 :] = [Todo(content, active) for content, active in new_steps]
        agent.todos[after + 1].status = "in_progress"
        yield Beat(agent)
        for index in range(after + 2, len(agent.todos)):
            yield from agent.move_on(index)
        yield from agent.finish()

    return script


def fails_step(at: int) -> Script:
    """Step `at` fails as it is tried and the steps after it cannot run: nothing is
    left to do, so the session is `failed`.

    It fails straight from pending, in the write that closes the step before it: a
    step never started has no start time, so the next run, which takes it up again
    off the dropped list, does not show it running since the last one."""

    def script(agent: Agent) -> Iterator[Beat]:
        yield from agent.begin()
        for index in range(1, at):
            yield from agent.move_on(index)
        agent.todos[at - 1].status = "completed"
        agent.todos[at].status = "failed"
        for todo in agent.todos[at + 1 :]:
            todo.status = "cancelled"
        yield Beat(agent, FAILED_HOLD)

    return script


def delegates_step(at: int, child: Agent) -> Script:
    """Step `at` is handed to a subagent, which runs its own plan meanwhile (on its
    own session, under this one) and reports back."""

    def script(agent: Agent) -> Iterator[Beat]:
        yield from agent.begin()
        for index in range(1, at + 1):
            yield from agent.move_on(index)
        yield from child.script(child)
        for index in range(at + 1, len(agent.todos)):
            yield from agent.move_on(index)
        yield from agent.finish()

    return script


def waits_for_an_answer(agent: Agent) -> Iterator[Beat]:
    """Half done, it asks a person something and stops writing."""
    agent.todos = [Todo(content, active) for content, active in agent.plan]
    for todo in agent.todos[:2]:
        todo.status = "completed"
    agent.todos[2].status = "in_progress"
    agent.todos[2].priority = "high"  # the rest waits on the answer
    yield Beat(agent, 0)


# Each tool's input for the agent's list, with the tool's own status words.


def todo_write(agent: Agent) -> dict[str, Any]:
    return {"todos": [{"content": t.content, "status": t.status, "activeForm": t.active_form} for t in agent.todos]}


def set_todo_list(agent: Agent) -> dict[str, Any]:
    words = {"completed": "done"}
    return {"todos": [{"title": t.content, "status": words.get(t.status, t.status)} for t in agent.todos]}


def weknora_todo_write(agent: Agent) -> dict[str, Any]:
    words = {"cancelled": "skipped"}
    steps = [
        {"id": f"step{n}", "description": t.content, "status": words.get(t.status, t.status)}
        for n, t in enumerate(agent.todos, start=1)
    ]
    return {"task": agent.title, "steps": steps}


def update_plan(agent: Agent) -> dict[str, Any]:
    return {"explanation": agent.title, "plan": [{"step": t.content, "status": t.status} for t in agent.todos]}


def write_todos(agent: Agent) -> dict[str, Any]:
    return {"todos": [{"description": t.content, "status": t.status} for t in agent.todos]}


def update_todo_list(agent: Agent) -> dict[str, Any]:
    marks = {"completed": "[x]", "in_progress": "[-]", "pending": "[ ]"}
    return {"todos": "\n".join(f"{marks[t.status]} {t.content}" for t in agent.todos)}


def todowrite(agent: Agent) -> dict[str, Any]:
    return {"todos": [{"content": t.content, "status": t.status, "priority": t.priority} for t in agent.todos]}


def cast() -> list[Agent]:
    """The demo's agents, each with its session key, plan and script (the subagent
    runs inside its parent's)."""
    explore = Agent(
        key="demo-claude-code:explore",
        title="Explore: rounding call sites",
        tool="TodoWrite",
        encode=todo_write,
        hook=True,
        plan=[
            ("Search for round() on money amounts", "Searching for round() on money amounts"),
            ("List the currency helpers", "Listing the currency helpers"),
            ("Summarise the call sites", "Summarising the call sites"),
        ],
        script=straight_through,
    )
    return [
        Agent(
            key="demo-claude-code",
            title=CLAUDE_CODE_FOLDER.rsplit("/", 1)[1],  # the hook names the session after the folder
            tool="TodoWrite",
            encode=todo_write,
            hook=True,
            plan=[
                ("Find where prices are rounded", "Finding where prices are rounded"),
                ("Map every rounding call site", "Mapping every rounding call site"),
                ("Fix the rounding for JPY", "Fixing the rounding for JPY"),
                ("Add a test for zero-decimal currencies", "Adding a test for zero-decimal currencies"),
                ("Run the checkout tests", "Running the checkout tests"),
            ],
            script=delegates_step(1, explore),
        ),
        Agent(
            key="demo-kimi",
            title="Translate the onboarding guide",
            tool="SetTodoList",
            encode=set_todo_list,
            plan=[
                ("Extract the strings", "Extracting the strings"),
                ("Translate the glossary", "Translating the glossary"),
                ("Translate chapters 1-3", "Translating chapters 1-3"),
                ("Proofread", "Proofreading"),
            ],
            script=straight_through,
        ),
        Agent(
            key="demo-codex",
            title="Fix the CSV import running out of memory",
            tool="update_plan",
            encode=update_plan,
            plan=[
                ("Reproduce with the 2 GB fixture", "Reproducing with the 2 GB fixture"),
                ("Profile the import", "Profiling the import"),
                ("Cache parsed rows in a dict", "Caching parsed rows"),
                ("Tune the garbage collector", "Tuning the garbage collector"),
            ],
            script=rewrites_plan(
                1,
                [
                    ("Switch the parser to the streaming API", "Switching the parser to the streaming API"),
                    ("Benchmark memory on the 2 GB fixture", "Benchmarking memory"),
                    ("Write the migration note", "Writing the migration note"),
                ],
            ),
        ),
        Agent(
            key="demo-weknora",
            title="Re-index the knowledge base",
            tool="todo_write",
            encode=weknora_todo_write,
            plan=[
                ("Export the documents", "Exporting the documents"),
                ("Embed the chunks", "Embedding the chunks"),
                ("Upload the vectors to the index", "Uploading the vectors"),
                ("Verify search quality", "Verifying search quality"),
            ],
            script=fails_step(2),
        ),
        Agent(
            key="demo-gemini",
            title="Upgrade the project to Node 22",
            tool="write_todos",
            encode=write_todos,
            plan=[
                ("Bump the engines field", "Bumping the engines field"),
                ("Drop the legacy OpenSSL flag", "Dropping the legacy OpenSSL flag"),
                ("Update the CI matrix", "Updating the CI matrix"),
                ("Run the test suite", "Running the test suite"),
            ],
            script=cancels_step(1),
        ),
        Agent(
            key="demo-roo",
            title="Add dark mode to the settings page",
            tool="update_todo_list",
            encode=update_todo_list,
            plan=[
                ("Read the theme tokens", "Reading the theme tokens"),
                ("Add the colour-scheme media query", "Adding the colour-scheme media query"),
                ("Fix the contrast of the form fields", "Fixing the contrast of the form fields"),
                ("Take screenshots in both modes", "Taking screenshots in both modes"),
            ],
            script=straight_through,
        ),
        Agent(
            key="demo-opencode",
            title="Migrate the auth module to the new SDK",
            tool="todowrite",
            encode=todowrite,
            plan=[
                ("Read the SDK changelog", "Reading the SDK changelog"),
                ("Port the token refresh", "Porting the token refresh"),
                ("Ask which OAuth scopes to keep", "Waiting for an answer on the OAuth scopes"),
                ("Port the logout flow", "Porting the logout flow"),
            ],
            script=waits_for_an_answer,
            loops=False,
        ),
    ]


def lifetime(agent: Agent, rounds: int) -> Iterator[Beat]:
    """The agent's script, run `rounds` times (0: forever) or once if it does not loop."""
    runs = range(1) if not agent.loops else itertools.count() if rounds <= 0 else range(rounds)
    for _ in runs:
        yield from agent.script(agent)


class Demo:
    def __init__(
        self,
        client: httpx.Client,
        out,
        *,
        delay: float,
        seed: int | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.client = client
        self.out = out
        self.delay = delay
        self.random = random.Random(seed)
        self.clock = clock
        self.sleep = sleep

    def run(self, agents: list[Agent], rounds: int) -> None:
        """Every agent on its own clock; one thread that sleeps until the next is due."""
        start = self.clock()
        due = [
            (start + self.random.uniform(0, WORK) * self.delay, number, lifetime(agent, rounds))
            for number, agent in enumerate(agents)
        ]
        heapq.heapify(due)
        while due:
            when, number, beats = heapq.heappop(due)
            self.sleep(max(0.0, when - self.clock()))
            beat = next(beats, None)
            if beat is None:
                continue
            self.post(beat.agent)
            heapq.heappush(due, (self.clock() + self.seconds(beat.pause), number, beats))

    def seconds(self, beats: float) -> float:
        return beats * self.delay * self.random.uniform(0.5, 1.5)

    def post(self, agent: Agent) -> None:
        if agent.hook:
            response = self.client.post("/api/v1/hooks/claude-code", json=hook_input(agent))
        else:
            call = {"tool": agent.tool, "id": f"call_{uuid.uuid4().hex[:16]}", "input": agent.encode(agent)}
            response = self.client.post(f"/api/v1/sessions/{agent.key}/tool", json=call)
        if self.refused(agent, response):
            return
        if not agent.titled:
            # Most tools carry no title: set it once, as a person would on the board.
            if response.json()["data"]["session"]["title"] != agent.title:
                self.refused(agent, self.client.patch(f"/api/v1/sessions/{agent.key}", json={"title": agent.title}))
            agent.titled = True

    def refused(self, agent: Agent, response: httpx.Response) -> bool:
        if response.status_code < 400:
            return False
        if response.status_code == 401:
            raise CommandError("The token was refused (401): pass a write token with --token")
        self.out.write(f"  {agent.key}: HTTP {response.status_code} {response.text[:200]}")
        return True


def hook_input(agent: Agent) -> dict[str, Any]:
    """Claude Code's PostToolUse hook input for the agent's call. A subagent's carries
    its `agent_id`: its session key is `<session_id>:<agent_id>`."""
    session_id, _, agent_id = agent.key.partition(":")
    body = {
        "session_id": session_id,
        "cwd": CLAUDE_CODE_FOLDER,
        "hook_event_name": "PostToolUse",
        "tool_name": agent.tool,
        "tool_input": agent.encode(agent),
        "tool_use_id": f"toolu_{uuid.uuid4().hex[:16]}",
    }
    if agent_id:
        body |= {"agent_id": agent_id, "agent_type": "Explore"}
    return body


def make_client(url: str, token: str) -> httpx.Client:
    return httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=30)


def wait_until_up(client: httpx.Client, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            if client.get("/healthz").status_code == 200:
                return
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            raise CommandError(f"{client.base_url}healthz did not answer within {timeout:.0f} s")
        time.sleep(0.25)


class Command(BaseCommand):
    help = "Drive a fixed set of simulated agents (one per tool, a subagent) through the HTTP API, for the live board."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--url", default="http://127.0.0.1:8000", help="todoweb's base URL")
        parser.add_argument("--token", required=True, help="a raw write token (manage.py createtoken demo)")
        parser.add_argument("--rounds", type=int, default=0, help="times each agent runs its plan; 0 = forever")
        parser.add_argument("--delay", type=float, default=2.0, help="seconds in a beat: a step takes about two")
        parser.add_argument("--seed", type=int, default=None, help="seed for the pauses' jitter")

    def handle(self, *args, url: str, token: str, rounds: int, delay: float, seed: int | None, **options) -> None:
        client = make_client(url.rstrip("/"), token)
        agents = cast()
        try:
            wait_until_up(client)
            self.stdout.write(f"Demo agents posting to {url}: {', '.join(agent.key for agent in agents)}")
            Demo(client, self.stdout, delay=delay, seed=seed).run(agents, rounds)
        except KeyboardInterrupt:
            pass
        except httpx.TransportError as exc:
            raise CommandError(f"Lost the server at {url}: {exc}") from exc
        finally:
            client.close()
