"""The one error type of the API, carried to the `{"ok": false, "error": …}` answer."""

from __future__ import annotations

from typing import Any


class ApiError(Exception):
    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        details: dict[str, Any] | None = None,
        data: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ):
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.details = details or {}
        self.data = data
        self.headers = headers or {}
        # The tool call this error answers, when the body named one before failing.
        self.reply_to = None

    def body(self) -> dict[str, Any]:
        answer: dict[str, Any] = {
            "ok": False,
            "error": {"code": self.code, "message": self.message, "details": self.details},
        }
        if self.data is not None:
            answer["data"] = self.data
        return answer
