"""Errors. Services and dialects raise domain errors (what went wrong); the API maps
them to HTTP answers in one place (`todoweb.api`). `ApiError` is for what only HTTP
knows: authentication, rate limits, request bodies.

Every error carries a stable `code` and a message worded for whoever must fix the
call: a program, a person, or a model reading its tool's own words.
"""

from __future__ import annotations

from typing import Any


class TodowebError(Exception):
    code = "error"

    def __init__(self, message: str, *, details: dict[str, Any] | None = None, data: dict[str, Any] | None = None):
        super().__init__(message)
        self.message = message
        self.details = details or {}
        self.data = data  # the current state, for answers that carry it (409)


class InvalidInput(TodowebError):
    """The call breaks its tool's rules or the project's policy; nothing is written."""

    code = "invalid_input"


class InvalidJson(InvalidInput):
    """The call's text is not JSON todoweb (or the tool) can read."""

    code = "invalid_json"


class UnknownTool(TodowebError):
    code = "unknown_tool"

    def __init__(self, tool: str):
        super().__init__(f"Tool '{tool}' not found", details={"tool": tool})


class IdempotencyConflict(TodowebError):
    code = "idempotency_conflict"


class RevisionConflict(TodowebError):
    """The caller expected another revision (If-Match): the answer carries the current data."""

    code = "revision_conflict"


class NotFound(TodowebError):
    code = "not_found"


class ApiError(TodowebError):
    """An answer only HTTP knows about (401, 403, 413, 415, 429, …), with its status."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        details: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ):
        super().__init__(message, details=details)
        self.status = status
        self.code = code
        self.headers = headers or {}
