"""Real agent CLIs, installed from npm, drive a real todoweb end to end.

Each test installs a CLI (once, into `.cache/agents/`), points it at a scripted fake
model (`fake_model.py` and one module per API: `fake_anthropic.py`,
`fake_openai_responses.py`, …), configures it with its docs/agents.md recipe, runs it
headless on a task whose scripted model calls a todo tool three times, and checks
what todoweb recorded (the exact revisions) and what the board showed live.

Fixtures, for every agent's tests:

- `todoweb` (session): a `Deployment`, one `manage.py serve` process on a fresh
  SQLite database with a superuser (`.url`, `.env`, `.log()`, `.api(token)`: an
  httpx client with the token).
- `project` (function): a project slug of the test's own; `token`: a write token
  for it (both made by `manage.py createtoken`, as the README says).
- `board` (function): a `Board` (board.py): a staff member's dashboard socket,
  and the panel socket of each session of `project` as soon as it appears; open
  before the agent starts. `board.before_turn` is the fake model's `before_turn`:
  before answering turn n > 0 it waits until a panel showed revision n (so each
  revision is proven shown while the agent still runs) and records the outcome in
  `board.live[n]`; `board.gate(k)` does the same for a script whose first todo
  call comes at turn k (turn n waits for revision n - k). `board.shown()` gives
  each session's panel snapshots, `board.summaries` the dashboard's summaries
  (`board.dashboard_revisions()`: the revisions they went through, in order).
- `internet_trap` (function): an HTTP proxy that refuses and records every request;
  `agent_env` points HTTP(S)_PROXY at it. Assert `internet_trap.attempts == []`.
- `agent_home` / `agent_env` (function): a fresh HOME under tmp_path, and a minimal
  environment for the CLI (harness.agent_env: HOME, XDG folders, PATH with node,
  the trap as proxy, nothing of the test process's own). Add the CLI's own
  switches (model URL, key, telemetry and updates off) to a copy.
- `workdir` (function): an empty project folder (a git repository) to run the CLI in.
- `install_cli` (session): `install_cli(package, version, bin) -> InstalledCli`
  (npm.py); skips when node or npm is missing, except under CI=true, where it fails.

The fakes (fake_model.py): a `Script` of `Turn`s (text, `Call(name, input)`s,
`raw` wire-format items such as a Responses `tool_search_call`; `Call.namespace`
for a Responses tool inside a namespace) and an optional `before_turn`; each fake
is a context manager with `.url`, `.turns()` (the main conversation's requests,
each with its `.turn` and `.body`), `.errors` and `.log()`; its module offers
`offered_tools(request)` and `tool_results(request)`.

Helpers: `harness.run_cli(args, env=, cwd=, log_dir=, name=, timeout=, stdin=)`
runs the CLI (its own process group, killed at the timeout, output kept);
`recorded(todoweb, token)` reads back every session of the project with its
revisions; `steps(todos)` reduces a list to `(content, status)` pairs;
`failure_context(...)` joins the CLI's output, the fake's request log, the
trap's catches and the server's log for an assertion message.
"""

from __future__ import annotations

import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.agents.board import Board, login_cookie
from tests.agents.fake_model import FakeModelServer
from tests.agents.harness import InternetTrap, Run
from tests.agents.harness import agent_env as minimal_env
from tests.agents.npm import InstalledCli, node_available
from tests.agents.npm import install_cli as npm_install
from tests.servers import Server, base_env, create_token, manage, require

STAFF, STAFF_PASSWORD = "watcher", "a password for the agent tests"


class Deployment:
    def __init__(self, env: dict[str, str], server: Server):
        self.env = env
        self.server = server
        self.url = server.url

    def log(self) -> str:
        return self.server.output()

    def api(self, token: str) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers={"Authorization": f"Bearer {token}"}, timeout=10)


@pytest.fixture(scope="session")
def todoweb(tmp_path_factory) -> Iterator[Deployment]:
    folder = tmp_path_factory.mktemp("todoweb")
    env = base_env(
        DATABASE_URL=f"sqlite:///{folder / 'db.sqlite3'}",
        TODOWEB_RATE_LIMIT="0",
        DJANGO_SUPERUSER_USERNAME=STAFF,
        DJANGO_SUPERUSER_PASSWORD=STAFF_PASSWORD,
        DJANGO_SUPERUSER_EMAIL="watcher@example.com",
    )
    manage(env, "migrate")
    manage(env, "createsuperuser", "--noinput")
    server = Server.serve(env, folder / "server.log").start()
    yield Deployment(env, server)
    server.stop()


@pytest.fixture
def project() -> str:
    return f"agents-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def token(todoweb, project) -> str:
    return create_token(todoweb.env, project)


@pytest.fixture
def board(todoweb, project) -> Iterator[Board]:
    watcher = Board(todoweb.url, login_cookie(todoweb.url, STAFF, STAFF_PASSWORD), project).start()
    yield watcher
    watcher.stop()


@pytest.fixture
def internet_trap() -> Iterator[InternetTrap]:
    trap = InternetTrap().start()
    yield trap
    trap.stop()


@pytest.fixture
def agent_home(tmp_path) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    return home


@pytest.fixture
def agent_env(agent_home, internet_trap) -> dict[str, str]:
    return minimal_env(agent_home, internet_trap)


@pytest.fixture
def workdir(tmp_path) -> Path:
    folder = tmp_path / "shop"
    folder.mkdir()
    subprocess.run(["git", "init", "-q", str(folder)], check=True, env=os.environ | {"GIT_CONFIG_NOSYSTEM": "1"})
    return folder


@pytest.fixture(scope="session")
def install_cli():
    def install(package: str, version: str, bin: str) -> InstalledCli:
        require(node_available(), "node and npm are not installed (the agent CLIs come from npm)")
        cli = npm_install(package, version, bin)
        if cli.install_seconds:
            print(f"\ninstalled {package}@{version} in {cli.install_seconds:.1f} s")
        return cli

    return install


def recorded(todoweb: Deployment, token: str) -> dict[str, list[dict[str, Any]]]:
    """Every session of the token's project: its key → its revisions, oldest first."""
    with todoweb.api(token) as api:
        sessions = api.get("/api/v1/sessions", params={"limit": 200}).raise_for_status().json()["sessions"]
        found = {}
        for session in sessions:
            answer = api.get(f"/api/v1/sessions/{session['key']}/revisions", params={"limit": 200})
            found[session["key"]] = answer.raise_for_status().json()["revisions"]
        return found


def steps(todos: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(todo["content"], todo["status"]) for todo in todos]


def failure_context(
    run: Run | None, fake: FakeModelServer | None, trap: InternetTrap | None, todoweb: Deployment | None
) -> str:
    parts = []
    if run is not None:
        parts.append(run.describe())
    if fake is not None:
        parts.append(f"--- fake model requests ---\n{fake.log()}")
    if trap is not None:
        parts.append(f"--- internet trap ---\n{trap.attempts}")
    if todoweb is not None:
        parts.append(f"--- todoweb log (end) ---\n{todoweb.log()[-3000:]}")
    return "\n".join(parts)
