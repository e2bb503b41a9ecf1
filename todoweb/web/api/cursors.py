"""Lists ordered by time, newest first, a page at a time: `newest_first`, and its
`next_cursor`, where the next page starts."""

from __future__ import annotations

import base64
from datetime import UTC, datetime
from typing import Any

from django.db.models import Q, QuerySet

from todoweb.calls.errors import InvalidInput

MAX_BIGINT = 2**63 - 1


def newest_first(rows: QuerySet, cursor: str | None, limit: int) -> tuple[list[Any], str | None]:
    """A page of `rows` (which have `updated_at`), from `cursor` on, and the next page's cursor (None: the last)."""
    if cursor:
        updated_at, pk = decode_cursor(cursor)
        rows = rows.filter(Q(updated_at__lt=updated_at) | Q(updated_at=updated_at, pk__lt=pk))
    page = list(rows.order_by("-updated_at", "-pk")[: limit + 1])
    if len(page) <= limit:
        return page, None
    page = page[:limit]
    return page, encode_cursor(page[-1].updated_at, page[-1].pk)


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
