"""Errors. Services and dialects raise domain errors (what went wrong); the API maps
them to HTTP answers in one place (`todoweb.web.api.errors`). `ApiError` is for what only HTTP
knows: authentication, rate limits, request bodies.

Every error carries a stable `code` and a message worded for whoever must fix the
call: a program, a person, or a model reading its tool's own words.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


class TodowebError(Exception):
    code = "error"

    def __init__(self, message: str, *, details: dict[str, Any] | None = None, data: dict[str, Any] | None = None):
        super().__init__(message)
        self.message = message
        self.details = details or {}
        self.data = data  # the current state, for answers that carry it (409)

    def add(self, text: str) -> None:
        """A paragraph more in the message (a hint on how to fix the call)."""
        self.message = f"{self.message}\n\n{text}"
        self.args = (self.message,)


class InvalidInput(TodowebError):
    """The call breaks its tool's rules or the project's policy; nothing is written."""

    code = "invalid_input"


class InvalidJson(InvalidInput):
    """The call's text is not JSON todoweb (or the tool) can read."""

    code = "invalid_json"


class UnknownTool(TodowebError):
    code = "unknown_tool"

    def __init__(self, tool: str, *, closest: str | None = None):
        message = f"Tool '{tool}' not found" + (f". Did you mean '{closest}'?" if closest else "")
        super().__init__(message, details={"tool": tool} | ({"closest": closest} if closest else {}))


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


# A request that breaks a rule once per item: the answer names the first few.
MAX_REPORTED = 20
# Where in the request a problem is: parts that name the request, not the field.
REQUEST_PARTS = {"body", "payload", "query", "path", "header"}


def first_problem(errors: Sequence[Mapping[str, Any]]) -> InvalidInput:
    """A refusal by a pydantic model (a request body, a query) as one line a person or
    a model can act on, the field then what is wrong with it; every problem (the first
    MAX_REPORTED) in `details`."""
    listed = [
        {
            "loc": ".".join(str(part) for part in error.get("loc", ()) if part not in REQUEST_PARTS),
            "type": error.get("type", ""),
            "msg": error.get("msg", "invalid value"),
        }
        for error in errors
    ]
    first = listed[0] if listed else {"loc": "", "msg": "Invalid request"}
    message = f"{first['loc']}: {first['msg']}" if first["loc"] else first["msg"]
    return InvalidInput(message, details={"errors": listed[:MAX_REPORTED], "count": len(listed)})
