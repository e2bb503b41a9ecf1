"""`todoweb-channel`: a Claude Code channel that brings what people tell the agent on
the todoweb board into its running session at once, also while it is idle.

Claude Code starts it as a stdio MCP server (a `.mcp.json` entry) and, once allowed
to load it as a channel, shows the model each event the server pushes. The server
follows its session on todoweb (`GET /api/v1/events?session=<key>`, Server-Sent
Events); when a person's edit or note waits there, it claims it
(`POST /api/v1/sessions/<key>/tell`, so no other route tells it twice) and pushes
the notice as a `notifications/claude/channel` event. The board then shows the
message as told "via Claude Code channel".

With `--permission-relay`, Claude Code's permission prompts are put on the board as
questions (`POST .../questions`); the first member to allow or deny answers the
prompt (the terminal's own dialog stays open, and whichever answers first wins).

The session followed is Claude Code's own: Claude Code gives its MCP servers its
session id in `CLAUDE_CODE_SESSION_ID`, the key its hooks write the plan under.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
from typing import Any
from urllib.parse import quote

import httpx
from httpx_sse import aconnect_sse

from todoweb_client import __version__
from todoweb_client.stdio import METHOD_NOT_FOUND, StdioPeer

logger = logging.getLogger("todoweb-channel")

ROUTE = "Claude Code channel"
INSTRUCTIONS = (
    'Events from the todoweb channel (<channel source="todoweb">) come from people who watch '
    "your plan (your todo list) on the todoweb board and steer you from there. "
    'kind="edit": a person changed your plan; the event lists their changes and the plan as it '
    "now stands: carry on from that plan and keep it in your next todo update. "
    'kind="note": a person\'s message to you; take it into account in what you do next. '
    "The channel is one-way: there is nothing to reply to it."
)
# Seconds between tries while the session does not exist yet (it appears with the
# agent's first plan) or has been archived.
SESSION_POLL = 2.0
# Backoff after a failed connection, doubling up to the last.
BACKOFF = (1.0, 2.0, 5.0, 10.0, 30.0)
# The stream sends a comment every 15 s: this long without a byte means it is gone.
STREAM_READ_TIMEOUT = 45.0
# A question's answer is long-polled this long per request (the server's most).
ANSWER_POLL = 60


class Channel:
    def __init__(self, peer: StdioPeer, http: httpx.AsyncClient, *, session: str, relay: bool, relay_wait: int):
        self.peer = peer
        self.http = http
        self.session = session
        self.relay = relay
        self.relay_wait = relay_wait
        self.path = f"/api/v1/sessions/{quote(session, safe='')}"
        self.tasks: set[asyncio.Task] = set()

    async def serve(self) -> None:
        """Answer Claude Code until it closes stdin, following the session meanwhile."""
        self.spawn(self.follow())
        try:
            async for message in self.peer.messages():
                self.handle(message)
        finally:
            for task in self.tasks:
                task.cancel()
            await asyncio.gather(*self.tasks, return_exceptions=True)

    def spawn(self, coroutine: Any) -> None:
        task = asyncio.ensure_future(coroutine)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    # --- MCP -------------------------------------------------------------------

    def handle(self, message: dict[str, Any]) -> None:
        method, params = message.get("method"), message.get("params") or {}
        if "id" not in message:  # a notification
            if method == "notifications/claude/channel/permission_request" and self.relay:
                self.spawn(self.relay_permission(params))
            return
        if method == "initialize":
            self.peer.answer(message["id"], self.initialized(params))
        elif method == "ping":
            self.peer.answer(message["id"], {})
        elif method is not None:
            self.peer.fail(message["id"], METHOD_NOT_FOUND, f"Method not found: {method}")

    def initialized(self, params: dict[str, Any]) -> dict[str, Any]:
        experimental: dict[str, dict] = {"claude/channel": {}}
        if self.relay:
            experimental["claude/channel/permission"] = {}
        version = params.get("protocolVersion")
        return {
            # Only initialize, ping and notifications are used: any version the client speaks.
            "protocolVersion": version if isinstance(version, str) else "2025-06-18",
            "capabilities": {"experimental": experimental},
            "serverInfo": {"name": "todoweb", "version": __version__},
            "instructions": INSTRUCTIONS,
        }

    # --- following the session ---------------------------------------------------

    async def follow(self) -> None:
        """Follow the session's events for as long as the channel runs, reconnecting
        after any failure; a session that does not exist yet is waited for."""
        failures = 0
        while True:
            try:
                wait = await self.follow_once()
                failures = 0
            except (httpx.HTTPError, ValueError) as exc:
                wait = BACKOFF[min(failures, len(BACKOFF) - 1)]
                failures += 1
                logger.warning("todoweb stream failed (%s); reconnecting in %.0f s", exc, wait)
            await asyncio.sleep(wait)

    async def follow_once(self) -> float:
        """One connection to the stream; the seconds to wait before the next."""
        timeout = httpx.Timeout(10.0, read=STREAM_READ_TIMEOUT)
        params = {"session": self.session}
        async with aconnect_sse(self.http, "GET", "/api/v1/events", params=params, timeout=timeout) as source:
            status = source.response.status_code
            if status == 404:
                return SESSION_POLL
            if status != 200:
                await source.response.aread()
                logger.error("todoweb refused the stream: %s %s", status, source.response.text[:300])
                return BACKOFF[-1]
            logger.info("following session %s", self.session)
            async for event in source.aiter_sse():
                if event.event == "session.messages":
                    await self.tell_waiting(json.loads(event.data)["messages"])
                elif event.event in ("session.archived", "stream.ended"):
                    logger.info("the stream ended (%s)", event.event)
                    return SESSION_POLL
        return SESSION_POLL

    async def tell_waiting(self, messages: list[dict[str, Any]]) -> None:
        waiting = [message for message in messages if message.get("state") == "waiting"]
        if not waiting:
            return
        answer = await self.http.post(f"{self.path}/tell", json={"route": ROUTE})
        answer.raise_for_status()
        told = answer.json()
        if not told["told"]:  # another route told it first
            return
        kind = "edit" if any(message.get("kind") == "edit" for message in waiting) else "note"
        self.peer.notify(
            "notifications/claude/channel", {"content": told["notice"], "meta": {"kind": kind, "session": self.session}}
        )
        logger.info("told the session a person's %s", kind)

    # --- permission relay ----------------------------------------------------------

    async def relay_permission(self, request: dict[str, Any]) -> None:
        """Put one permission prompt on the board and pass a member's answer back."""
        try:
            request_id = str(request["request_id"])
            asked = await self.http.post(
                f"{self.path}/questions",
                json={
                    "kind": "permission",
                    "request_id": request_id[:64],
                    "tool_name": str(request.get("tool_name", ""))[:200],
                    "text": str(request.get("description", ""))[:20_000],
                    "detail": str(request.get("input_preview", ""))[:20_000],
                    "wait": self.relay_wait,
                },
            )
            asked.raise_for_status()
            question = asked.json()
            while question["state"] == "open":
                answer = await self.http.get(
                    f"{self.path}/questions/{question['id']}", params={"wait": ANSWER_POLL}, timeout=ANSWER_POLL + 15
                )
                answer.raise_for_status()
                question = answer.json()
        except (KeyError, httpx.HTTPError, ValueError) as exc:
            logger.warning("permission request not relayed: %s", exc)
            return
        if question["state"] in ("allowed", "denied"):
            behavior = "allow" if question["state"] == "allowed" else "deny"
            self.peer.notify(
                "notifications/claude/channel/permission", {"request_id": request_id, "behavior": behavior}
            )
            logger.info("a member answered %s to %s", behavior, question.get("tool"))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="todoweb-channel",
        description="A Claude Code channel: people's edits and notes on the todoweb board reach the session at once.",
    )
    parser.add_argument(
        "--url", default=os.environ.get("TODOWEB_URL", "http://127.0.0.1:8000"), help="todoweb's address (TODOWEB_URL)"
    )
    parser.add_argument(
        "--session",
        default=os.environ.get("TODOWEB_SESSION") or os.environ.get("CLAUDE_CODE_SESSION_ID"),
        help="the board session to follow (TODOWEB_SESSION; Claude Code's own CLAUDE_CODE_SESSION_ID by default)",
    )
    parser.add_argument(
        "--permission-relay", action="store_true", help="put Claude Code's permission prompts on the board"
    )
    parser.add_argument(
        "--relay-wait", type=int, default=600, help="seconds a permission question stays open on the board"
    )
    return parser.parse_args(argv)


async def run(args: argparse.Namespace, token: str) -> None:
    headers = {"Authorization": f"Bearer {token}", "User-Agent": f"todoweb-channel/{__version__}"}
    async with httpx.AsyncClient(base_url=args.url.rstrip("/"), headers=headers, timeout=10.0) as http:
        channel = Channel(
            await StdioPeer.open(), http, session=args.session, relay=args.permission_relay, relay_wait=args.relay_wait
        )
        await channel.serve()


def main(argv: list[str] | None = None) -> int:
    # stdout carries the protocol: everything said to people goes to stderr.
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="todoweb-channel: %(message)s")
    args = parse_args(argv)
    token = os.environ.get("TODOWEB_TOKEN", "")
    if not token:
        logger.error("TODOWEB_TOKEN is not set: give it a todoweb write token")
        return 2
    if not args.session:
        logger.error("no session to follow: Claude Code sets CLAUDE_CODE_SESSION_ID; otherwise pass --session")
        return 2
    if not 1 <= args.relay_wait <= 3600:
        logger.error("--relay-wait must be 1-3600 seconds")
        return 2
    asyncio.run(run(args, token))
    return 0


if __name__ == "__main__":
    sys.exit(main())
