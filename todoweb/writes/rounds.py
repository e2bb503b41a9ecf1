"""The nag reminder of learn-claude-code's s03 lesson, kept server-side.

An agent loop reports each of its turns; todoweb counts the turns since the model
last used its todo tool and hands back the reminder to inject once it has gone
three turns without one. A todo write through the tool endpoint also resets the
counter (writes.revisions.advance_session), so a backend that posts its todo calls here
may report `used_todo: false` every turn and still get the lesson's behaviour.
"""

from __future__ import annotations

from django.db import transaction
from django.db.models import F

from todoweb.models import Project, Session
from todoweb.writes.record import get_or_create_session

# learn-claude-code s03: `if rounds_since_todo >= 3: inject <reminder>`.
REMIND_AFTER = 3
REMINDER = "<reminder>Update your todos.</reminder>"


def session_record_round(*, project: Project, session_key: str, used_todo: bool) -> Session:
    """Count one agent turn: back to 0 if it used the todo tool, else one more.

    The session is created when it does not exist yet (an agent may report turns
    before its first todo write); it stays `empty` until a write gives it steps.
    """
    with transaction.atomic():
        session = get_or_create_session(project, session_key)
        rows = Session.objects.filter(pk=session.pk)
        # One UPDATE with F(): the database adds, so concurrent turns are never lost,
        # and the row stays locked until commit, so the re-read below sees our value.
        rows.update(rounds_since_todo=0 if used_todo else F("rounds_since_todo") + 1)
        session.refresh_from_db(fields=["rounds_since_todo"])
    return session


def reminder_for(rounds_since_todo: int) -> str | None:
    return REMINDER if rounds_since_todo >= REMIND_AFTER else None
