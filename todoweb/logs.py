"""What todoweb's logs may hold: no secrets, and no flood of one repeated warning.

Share tokens travel in URLs (`/s/<id>/?share=…`, the panel's websocket), and a
client may put an API token in a query string by mistake: the server's access and
error logs print request lines whole. `RedactSecrets` sits on the loggers that print
them (settings.TODOWEB_REDACTED_LOGGERS). It is a logger filter, not a handler
filter, so it holds whoever configures the handlers later (uvicorn configures its
own after Django in `manage.py start`, before it with `uvicorn --workers`).
"""

from __future__ import annotations

import logging
import re
import time
from typing import Any

REDACTED = "[redacted]"
# Query parameters whose value is a credential, whatever it looks like.
SECRET_PARAMETER = re.compile(
    r"(?i)(\b(?:share|token|access_token|api[_-]?key|key|auth|authorization|password|secret|sessionid|csrftoken)=)"
    r"[^&\s\"';]+"
)
# todoweb's own tokens, wherever they appear: API tokens `tw_…`, share tokens `sh_…`.
TOKEN = re.compile(r"\b(?:tw|sh)_[A-Za-z0-9_-]{16,}")


def redact(text: str) -> str:
    return TOKEN.sub(REDACTED, SECRET_PARAMETER.sub(rf"\g<1>{REDACTED}", text))


def redact_value(value: Any) -> Any:
    return redact(value) if isinstance(value, str) else value


class RedactSecrets(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = redact_value(record.msg)
        if isinstance(record.args, dict):
            record.args = {key: redact_value(value) for key, value in record.args.items()}
        elif record.args:
            record.args = tuple(redact_value(arg) for arg in record.args)
        if record.exc_info and not record.exc_text:
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
        return True


class WithoutTraceback(logging.Filter):
    """One line per record: for errors whose cause is the request, not the code (a
    Host header outside ALLOWED_HOSTS), where a traceback of Django's internals
    tells the operator nothing and floods the log."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.exc_info = None
        record.exc_text = None
        return True


def install_redaction(logger_names: list[str]) -> None:
    for name in logger_names:
        logger = logging.getLogger(name)
        if not any(isinstance(f, RedactSecrets) for f in logger.filters):
            logger.addFilter(RedactSecrets())


class ThrottledLogger:
    """A logger for a warning that may repeat on every request: written at most once
    per `every` seconds, with the number of repeats left out."""

    def __init__(self, name: str, *, every: float):
        self.logger = logging.getLogger(name)
        self.every = every
        self.last = float("-inf")
        self.skipped = 0

    def warning(self, message: str, *, error: BaseException | None = None) -> None:
        """Log `message` (and the error's one-line summary, not its traceback: the
        cause is outside todoweb and the traceback would only repeat)."""
        now = time.monotonic()
        if now - self.last < self.every:
            self.skipped += 1
            return
        if error is not None:
            message = f"{message}: {type(error).__name__}: {error}"
        if self.skipped:
            message = f"{message} (and {self.skipped} times since the last report)"
        self.last, self.skipped = now, 0
        self.logger.warning(message)
