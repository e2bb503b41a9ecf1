"""Most of an agent's hook events are about tools the board does not track, and most
of those come with nothing to tell the agent: the answer is fixed once the token is
checked and the session is found to have no message the agent has not heard. On
SQLite that is read on the event loop's own thread (runtime.database.loop_reader),
without the hop to the database thread, which cost more than the read.

Only the plain case is answered there: a token that may write, whose use was noted
within the last minute, and nothing to tell. Anything else (no such token, a revoked
or read-only one, a use to note, a message to tell, a read that cannot be made on
the loop) takes the database thread's way, which answers it as always.
"""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime

from django.utils import timezone

from todoweb.models import ApiToken
from todoweb.store.database import loop_reader
from todoweb.store.sql import token_standing_sql
from todoweb.web.auth import check_rate, rate_counted_in_process, use_to_note


def nothing_to_tell(found_by: str, session_key: str | None) -> bool:
    """Whether the token of digest `found_by` may write, with nothing to tell the agent
    of session `session_key` (None: no session to ask of), as read on the event loop;
    the call is counted against the token's rate limit (429 past it). False: the
    database thread's way is to answer, and nothing was counted."""
    if not rate_counted_in_process():
        return False
    try:
        reader = loop_reader()
        row = reader.execute(token_standing_sql(), [session_key, found_by]).fetchone() if reader else None
    except sqlite3.Error:
        return False  # a busy or new database file: the database thread reads it
    if row is None:
        return False
    scope, active, last_used_at, untold = row
    if not active or scope != ApiToken.Scope.WRITE or untold or use_to_note(stored_time(last_used_at), timezone.now()):
        return False
    check_rate(found_by)
    return True


def stored_time(text: str | None) -> datetime | None:
    """A date and time as Django stores it in SQLite: UTC, without its zone."""
    return None if text is None else datetime.fromisoformat(text).replace(tzinfo=UTC)
