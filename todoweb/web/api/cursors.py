"""The `next_cursor` of a list ordered by time, newest first: where the next page starts."""

from __future__ import annotations

import base64
from datetime import UTC, datetime

from todoweb.calls.errors import InvalidInput

MAX_BIGINT = 2**63 - 1


def encode_cursor(moment: datetime, pk: int) -> str:
    return base64.urlsafe_b64encode(f"{moment.isoformat()}|{pk}".encode()).decode()


def decode_cursor(cursor: str) -> tuple[datetime, int]:
    """The position a `next_cursor` names; anything else is a 422, never a 500."""
    try:
        text, pk = base64.urlsafe_b64decode(cursor.encode()).decode().split("|")
        moment = datetime.fromisoformat(text)
        if moment.tzinfo is None or not 0 < int(pk) <= MAX_BIGINT:
            raise ValueError(cursor)
        # Normalising here, not in the query, keeps out-of-range offsets a 422.
        return moment.astimezone(UTC), int(pk)
    except (ValueError, UnicodeDecodeError, OverflowError):
        raise InvalidInput("Invalid cursor: pass back the next_cursor of a previous page") from None
