"""The MCP stdio transport, as much of it as a channel needs: JSON-RPC 2.0 messages,
one per line, read from stdin and written to stdout.

Why not the `mcp` SDK: a channel's messages are notifications outside MCP's own
schema (`notifications/claude/channel` and its permission pair). The SDK (2.x) sends
a server's notifications only as MCP's typed ones, and from outside a request only
through its private connection object; what a channel needs of MCP besides is an
`initialize` answer and `ping`. So this module speaks the line protocol itself, and
the package needs no more than httpx.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from typing import Any, BinaryIO

# The longest line read: a message bigger than this ends the connection.
LINE_LIMIT = 16 * 1024 * 1024

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601


class StdioPeer:
    """The MCP client at the other end of stdin and stdout (Claude Code)."""

    def __init__(self, reader: asyncio.StreamReader, out: BinaryIO):
        self.reader = reader
        self.out = out

    @classmethod
    async def open(cls) -> StdioPeer:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=LINE_LIMIT)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
        return cls(reader, sys.stdout.buffer)

    async def messages(self) -> AsyncIterator[dict[str, Any]]:
        """Each message the client sends, until it closes stdin. A line that is not a
        JSON-RPC message is answered with an error and skipped."""
        while line := await self.reader.readline():
            if not line.strip():
                continue
            try:
                message = json.loads(line)
            except ValueError:
                self.fail(None, PARSE_ERROR, "Parse error: not JSON")
                continue
            if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
                self.fail(None, INVALID_REQUEST, "Invalid request: not a JSON-RPC 2.0 message")
                continue
            yield message

    def send(self, message: dict[str, Any]) -> None:
        # One write of a whole line: messages from several tasks never interleave.
        self.out.write(json.dumps(message, ensure_ascii=False).encode() + b"\n")
        self.out.flush()

    def answer(self, request_id: Any, result: dict[str, Any]) -> None:
        self.send({"jsonrpc": "2.0", "id": request_id, "result": result})

    def fail(self, request_id: Any, code: int, message: str) -> None:
        self.send({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}})

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})
