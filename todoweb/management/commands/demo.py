"""demo --url URL --token TOKEN [--rounds N] [--delay SECONDS]: simulated agents for the board.

Several agents, each speaking a different tool dialect, work through realistic
plans over the real HTTP API: steps start and finish, one step fails, one plan is
rewritten midway (dropping an unfinished step), and a Claude Code session spawns
a subagent through the hook endpoint. Dialects that this server does not know yet
(422 unknown_tool) fall back to TodoWrite, and a missing hook endpoint falls back
to plain tool calls, so the demo runs against any version of todoweb.
"""

from __future__ import annotations

import itertools
import random
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
from django.core.management.base import BaseCommand, CommandError, CommandParser

KIMI = {"pending": "pending", "in_progress": "in_progress", "completed": "done"}
WEKNORA = {"pending": "pending", "in_progress": "in_progress", "completed": "completed", "failed": "failed"}


@dataclass
class Step:
    content: str
    active: str
    status: str = "pending"


@dataclass
class Plan:
    title: str
    steps: list[Step]

    def start(self, index: int) -> None:
        self.steps[index].status = "in_progress"

    def finish(self, index: int, status: str = "completed") -> None:
        self.steps[index].status = status


@dataclass
class Agent:
    """One simulated agent: a dialect, a session key and a script of plan changes."""

    name: str
    dialect: str
    key: str
    plan: Plan
    script: Iterator[None] = field(init=False)
    parent_key: str | None = None
    agent_id: str | None = None
    hook: bool = False

    def payload(self) -> dict[str, Any]:
        """The tool call in this agent's own dialect (plain `{tool, id, input}` form)."""
        steps, title = self.plan.steps, self.plan.title
        if self.dialect == "kimi":
            tool = "SetTodoList"
            args = {"todos": [{"title": s.content, "status": KIMI.get(s.status, "pending")} for s in steps]}
        elif self.dialect == "codex":
            tool = "update_plan"
            args = {
                "explanation": title,
                "plan": [{"step": s.content, "status": "pending" if s.status == "failed" else s.status} for s in steps],
            }
        elif self.dialect == "weknora":
            tool = "todo_write"
            args = {
                "task": title,
                "steps": [
                    {"id": f"step{i + 1}", "description": s.content, "status": WEKNORA[s.status]}
                    for i, s in enumerate(steps)
                ],
            }
        elif self.dialect == "learn":
            tool = "todo"
            args = {
                "items": [
                    {"id": str(i + 1), "text": s.content, "status": "pending" if s.status == "failed" else s.status}
                    for i, s in enumerate(steps)
                ]
            }
        else:
            return self.todo_write()
        return {"tool": tool, "id": f"call_{uuid.uuid4().hex[:16]}", "input": args}

    def todo_write(self) -> dict[str, Any]:
        todos = [
            # TodoWrite has no "failed": the failed step stays visible as pending.
            {"content": s.content, "status": "pending" if s.status == "failed" else s.status, "activeForm": s.active}
            for s in self.plan.steps
        ]
        return {"tool": "TodoWrite", "id": f"toolu_{uuid.uuid4().hex[:16]}", "input": {"todos": todos}}


def walk(agent: Agent, *, fail_at: int | None = None, rewrite_at: int | None = None) -> Iterator[None]:
    """Start and finish each step in turn; optionally fail one or rewrite the plan."""
    index = 0
    while index < len(agent.plan.steps):
        agent.plan.start(index)
        yield
        if index == fail_at:
            agent.plan.finish(index, "failed")
            yield
            # The agent retries the failed step with a different approach.
            agent.plan.steps.insert(index + 1, Step("Retry with a smaller batch size", "Retrying with smaller batches"))
            index += 1
            continue
        if index == rewrite_at:
            # Rewrite: the rest of the plan is replaced; the old unfinished steps
            # show up on the board as dropped.
            done = agent.plan.steps[: index + 1]
            done[-1].status = "completed"
            agent.plan.steps = done + [
                Step("Switch the parser to the streaming API", "Switching the parser to the streaming API"),
                Step("Benchmark memory on the 2 GB fixture", "Benchmarking memory"),
                Step("Write the migration note", "Writing the migration note"),
            ]
            index += 1
            yield
            continue
        agent.plan.finish(index)
        index += 1
        yield


def steps(*pairs: tuple[str, str]) -> list[Step]:
    return [Step(content, active) for content, active in pairs]


def cast(round_number: int) -> list[Agent]:
    """The agents of one round; session keys carry the round so every round is new."""
    r = round_number
    run = uuid.uuid4().hex[:6]
    agents = [
        Agent(
            "claude",
            "claude",
            f"demo-{run}-claude-r{r}",
            Plan(
                "Add rate limiting to the public API",
                steps(
                    ("Read the existing middleware", "Reading the existing middleware"),
                    ("Add a token bucket per API key", "Adding a token bucket per API key"),
                    ("Return 429 with Retry-After", "Returning 429 with Retry-After"),
                    ("Write tests for the limiter", "Writing tests for the limiter"),
                    ("Update the API docs", "Updating the API docs"),
                ),
            ),
        ),
        Agent(
            "kimi",
            "kimi",
            f"demo-{run}-kimi-r{r}",
            Plan(
                "Translate the onboarding guide",
                steps(
                    ("Extract the strings", "Extracting the strings"),
                    ("Translate the glossary", "Translating the glossary"),
                    ("Translate chapters 1-3", "Translating chapters 1-3"),
                    ("Proofread", "Proofreading"),
                ),
            ),
        ),
        Agent(
            "codex",
            "codex",
            f"demo-{run}-codex-r{r}",
            Plan(
                "Fix the CSV import running out of memory",
                steps(
                    ("Reproduce with the 2 GB fixture", "Reproducing with the 2 GB fixture"),
                    ("Profile the import", "Profiling the import"),
                    ("Cache parsed rows in a dict", "Caching parsed rows"),
                    ("Tune the garbage collector", "Tuning the garbage collector"),
                ),
            ),
        ),
        Agent(
            "weknora",
            "weknora",
            f"demo-{run}-weknora-r{r}",
            Plan(
                "Re-index the knowledge base",
                steps(
                    ("Export the documents", "Exporting the documents"),
                    ("Embed the chunks", "Embedding the chunks"),
                    ("Upload the vectors", "Uploading the vectors"),
                    ("Verify search quality", "Verifying search quality"),
                ),
            ),
        ),
        Agent(
            "claude-code",
            "claude",
            f"demo-{run}-cc-r{r}",
            Plan(
                "shop",
                steps(
                    ("Find where prices are rounded", "Finding where prices are rounded"),
                    ("Fix the rounding for JPY", "Fixing the rounding for JPY"),
                    ("Run the checkout tests", "Running the checkout tests"),
                ),
            ),
            hook=True,
        ),
    ]
    agents[0].script = walk(agents[0])
    agents[1].script = walk(agents[1])
    agents[2].script = walk(agents[2], rewrite_at=1)
    agents[3].script = walk(agents[3], fail_at=1)
    agents[4].script = with_subagent(agents, agents[4])
    return agents


def with_subagent(agents: list[Agent], parent: Agent) -> Iterator[None]:
    """The Claude Code session starts an Explore subagent after its first step."""
    main = walk(parent)
    next(main)
    yield
    child = Agent(
        "subagent",
        "claude",
        f"{parent.key}:explore-1",
        Plan(
            "Explore: rounding call sites",
            steps(
                ("Search for round() on money", "Searching for round() on money"),
                ("List the currency helpers", "Listing the currency helpers"),
            ),
        ),
        parent_key=parent.key,
        agent_id="explore-1",
        hook=True,
    )
    child.script = walk(child)
    agents.append(child)
    yield from main


class Demo:
    def __init__(self, client: httpx.Client, out, *, seed: int | None = None):
        self.client = client
        self.out = out
        self.unknown: set[str] = set()  # dialects this server does not know: TodoWrite instead
        self.no_hook = False
        self.random = random.Random(seed)

    def send(self, agent: Agent) -> None:
        if agent.hook and not self.no_hook:
            if self.send_hook(agent):
                return
        payload = agent.payload() if agent.dialect not in self.unknown else agent.todo_write()
        response = self.client.post(f"/api/v1/sessions/{agent.key}/tool", json=payload)
        if response.status_code == 422 and response.json().get("error", {}).get("code") == "unknown_tool":
            self.out.write(f"  {agent.dialect}: tool '{payload['tool']}' unknown here, using TodoWrite")
            self.unknown.add(agent.dialect)
            response = self.client.post(f"/api/v1/sessions/{agent.key}/tool", json=agent.todo_write())
        self.check(agent, response)
        if response.json().get("data", {}).get("revision") == 1 and agent.dialect in ("claude", "kimi"):
            # These tools carry no title: set one, as a person would in the admin.
            self.client.patch(f"/api/v1/sessions/{agent.key}", json={"title": agent.plan.title})

    def send_hook(self, agent: Agent) -> bool:
        """A Claude Code PostToolUse hook call; False when this server has no hook endpoint."""
        key = agent.parent_key or agent.key
        body = {
            "session_id": key,
            "cwd": f"/home/dev/{agent.plan.title if agent.parent_key is None else 'shop'}",
            "hook_event_name": "PostToolUse",
            "tool_name": "TodoWrite",
            "tool_input": agent.todo_write()["input"],
            "tool_use_id": f"toolu_{uuid.uuid4().hex[:16]}",
        }
        if agent.agent_id:
            body |= {"agent_id": agent.agent_id, "agent_type": "Explore"}
        response = self.client.post("/api/v1/hooks/claude-code", json=body)
        if response.status_code in (404, 405):
            self.out.write("  no Claude Code hook endpoint here: posting the tool calls directly")
            self.no_hook = True
            return False
        self.check(agent, response)
        return True

    def check(self, agent: Agent, response: httpx.Response) -> None:
        if response.status_code >= 400:
            self.out.write(f"  {agent.name}: HTTP {response.status_code} {response.text[:200]}")
            if response.status_code == 401:
                raise CommandError("The token was refused (401): pass a write token with --token")

    def run_round(self, number: int, delay: float) -> None:
        agents = cast(number)
        self.out.write(f"Round {number}: {', '.join(a.name for a in agents)}")
        while True:
            active = [a for a in agents if not getattr(a, "done", False)]
            if not active:
                return
            for agent in active:
                # Agents work at different speeds.
                if self.random.random() > 0.75:
                    continue
                try:
                    next(agent.script)
                except StopIteration:
                    agent.done = True
                    continue
                self.send(agent)
            if delay:
                time.sleep(delay * self.random.uniform(0.6, 1.4))


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
    help = "Drive simulated agents (several dialects, a subagent) through the HTTP API, for the live board."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--url", default="http://127.0.0.1:8000", help="todoweb's base URL")
        parser.add_argument("--token", required=True, help="a raw write token (manage.py createtoken demo)")
        parser.add_argument("--rounds", type=int, default=0, help="rounds to run; 0 = forever")
        parser.add_argument("--delay", type=float, default=1.5, help="seconds between steps")
        parser.add_argument("--seed", type=int, default=None, help=argparse_hidden())

    def handle(self, *args, url: str, token: str, rounds: int, delay: float, seed: int | None, **options) -> None:
        client = make_client(url.rstrip("/"), token)
        wait_until_up(client)
        self.stdout.write(f"Demo agents posting to {url} (Ctrl-C to stop)")
        demo = Demo(client, self.stdout, seed=seed)
        numbers = itertools.count(1) if rounds <= 0 else range(1, rounds + 1)
        try:
            for number in numbers:
                demo.run_round(number, delay)
                if delay:
                    time.sleep(delay * 3)
        except KeyboardInterrupt:
            pass
        except httpx.TransportError as exc:
            raise CommandError(f"Lost the server at {url}: {exc}") from exc
        finally:
            client.close()


def argparse_hidden() -> str:
    import argparse

    return argparse.SUPPRESS
