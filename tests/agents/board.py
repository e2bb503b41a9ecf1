"""The board as a staff member sees it while an agent runs: the dashboard socket,
and each new session's panel socket, opened as soon as the dashboard shows it.

Runs its own event loop on a thread, so that a test (or a fake model's
`before_turn`) can wait on it while a CLI runs in a subprocess.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable, Coroutine
from typing import Any

import httpx
from websockets.asyncio.client import connect


def login_cookie(url: str, username: str, password: str) -> str:
    """The `sessionid` cookie of a login through the site's own form."""
    with httpx.Client(base_url=url, timeout=10) as http:
        page = http.get("/accounts/login/")
        form = {"username": username, "password": password, "csrfmiddlewaretoken": http.cookies["csrftoken"]}
        answer = http.post("/accounts/login/", data=form, headers={"Referer": str(page.url)})
        assert answer.status_code == 302, answer.text
        return http.cookies["sessionid"]


class Board:
    """What a logged-in staff member's browser receives for one project's sessions.

    `summaries`: each `session.summary` event of the project (dashboard);
    `snapshots[public_id]`: each `session.snapshot` event of that session (panel);
    `seen_at[(public_id, revision)]`: when the panel first showed that revision."""

    def __init__(self, url: str, cookie: str, project: str):
        self.url = url
        self.ws_url = url.replace("http://", "ws://")
        self.cookie = cookie
        self.project = project
        self.summaries: list[dict[str, Any]] = []
        self.snapshots: dict[str, list[dict[str, Any]]] = {}
        self.seen_at: dict[tuple[str, int], float] = {}
        self.failures: list[str] = []
        self.live: dict[int, bool] = {}
        self.changed = threading.Condition()
        self.ready = threading.Event()
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.tasks: list[asyncio.Task] = []

    def start(self, timeout: float = 15) -> Board:
        self.thread.start()
        self.loop.call_soon_threadsafe(self.spawn, self.dashboard())
        if not self.ready.wait(timeout):
            raise AssertionError(f"the dashboard socket did not open: {self.failures}")
        return self

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self.close(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        self.loop.close()

    async def close(self) -> None:
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)

    def spawn(self, coroutine: Coroutine[Any, Any, None]) -> None:
        self.tasks.append(self.loop.create_task(coroutine))

    @property
    def headers(self) -> dict[str, str]:
        return {"Cookie": f"sessionid={self.cookie}"}

    async def dashboard(self) -> None:
        try:
            async with connect(f"{self.ws_url}/ws/dashboard/", origin=self.url, additional_headers=self.headers) as ws:
                async for text in ws:
                    event = json.loads(text)
                    if event["type"] == "dashboard.snapshot":
                        for summary in event["sessions"]:
                            self.on_summary(summary)
                        self.ready.set()
                    elif event["type"] == "session.summary":
                        self.on_summary(event["session"])
        except Exception as error:  # noqa: BLE001 - reported to the test
            self.fail(f"dashboard socket: {error!r}")

    def on_summary(self, summary: dict[str, Any]) -> None:
        if summary["project"] != self.project:
            return
        with self.changed:
            self.summaries.append(summary)
            new = summary["id"] not in self.snapshots
            if new:
                self.snapshots[summary["id"]] = []
            self.changed.notify_all()
        if new:
            self.spawn(self.panel(summary["id"]))

    async def panel(self, public_id: str) -> None:
        try:
            url = f"{self.ws_url}/ws/sessions/{public_id}/"
            async with connect(url, origin=self.url, additional_headers=self.headers) as ws:
                async for text in ws:
                    event = json.loads(text)
                    if event["type"] == "session.snapshot":
                        with self.changed:
                            self.snapshots[public_id].append(event)
                            self.seen_at.setdefault((public_id, event["revision"]), time.monotonic())
                            self.changed.notify_all()
        except Exception as error:  # noqa: BLE001
            self.fail(f"panel socket {public_id}: {error!r}")

    def fail(self, message: str) -> None:
        with self.changed:
            self.failures.append(message)
            self.changed.notify_all()

    # What tests ask.

    def wait_for(self, revision: int, *, timeout: float = 15) -> bool:
        """Wait until a panel of the project showed `revision` (or a later one)."""
        deadline = time.monotonic() + timeout
        with self.changed:
            while not self.showed(revision):
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self.failures:
                    return False
                self.changed.wait(remaining)
            return True

    def before_turn(self, turn: int) -> None:
        """A fake model's `before_turn` when every turn but the last writes once:
        turn n comes after the agent's n-th todo call, so the board must show
        revision n before the model answers."""
        self.gate(0)(turn)

    def gate(self, first_write: int) -> Callable[[int], None]:
        """`before_turn` for a script whose first todo call is made at turn
        `first_write` (after, say, a tool search): turn n waits for revision
        n - first_write."""

        def before_turn(turn: int) -> None:
            revision = turn - first_write
            if revision > 0:
                # Once a revision failed to show, the test fails: waiting again only slows it.
                late = not all(self.live.values())
                self.live[revision] = self.wait_for(revision, timeout=0 if late else 15)

        return before_turn

    def showed(self, revision: int) -> bool:
        return any(e["revision"] >= revision for events in self.snapshots.values() for e in events)

    def dashboard_revisions(self) -> list[int]:
        """The revisions the dashboard's summaries went through, in order (a summary
        repeated by the hub's reconciliation counts once)."""
        with self.changed:
            revisions = [summary["revision"] for summary in self.summaries]
        return [r for i, r in enumerate(revisions) if i == 0 or r != revisions[i - 1]]

    def shown(self) -> dict[str, list[dict[str, Any]]]:
        """Per session id, the panel's snapshots (a copy)."""
        with self.changed:
            return {key: list(events) for key, events in self.snapshots.items()}
