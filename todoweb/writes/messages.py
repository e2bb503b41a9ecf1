"""People's messages to the agent, and telling them: an edit of the plan or a note is
told to the agent once, by the first of its calls that comes, whatever the route (a
todo call, a hook on any tool, the MCP server, the channel). The board shows each
message's way: waiting, told (when, and by which route), kept in a revision.

Once: a call tells the messages after `told_message` up to `last_message` only if it
moves `told_message` from the value it read (a compare-and-set); an agent's write
does the same in its own update (writes.revisions).
"""

from __future__ import annotations

from typing import Any

from django.db.models import F
from django.db.models.functions import Greatest
from django.utils import timezone

from todoweb.live import events
from todoweb.models import Message, Revision, Session
from todoweb.plan import edits
from todoweb.reads import messages_data
from todoweb.store.sql import SessionRow


def untold(row: SessionRow, seen: list[dict[str, Any]] | None = None) -> edits.Unseen | None:
    """What people told the agent that it has not heard yet (None: nothing). `seen`:
    `seen_before_edits(session)`, when the caller has it already."""
    session = row.session
    if session.pk is None or session.last_message <= session.told_message:
        return None
    notes = Message.objects.filter(session=session, id__gt=session.told_message, id__lte=session.last_message)
    notes = [text for text in notes.values_list("text", flat=True) if text]
    if seen is None:
        seen = seen_before_edits(session)
    changes = edits.between(seen, row.current.todos if row.current else []) if seen is not None else []
    return edits.Unseen(seen or [], changes, notes)


def seen_before_edits(session: Session) -> list[dict[str, Any]] | None:
    """The plan as the agent last saw it in a todo tool's answer, when people edited it
    since (None: the agent's side saw the current plan). An edit told only as context
    beside another tool's result (a hook, the channel) leaves the agent's next whole
    list to be merged with it: that list may have been made before the notice came."""
    if session.pk is None or session.agent_revision >= session.revision:
        return None
    return (
        Revision.objects.filter(session=session, number=session.agent_revision).values_list("todos", flat=True).first()
        or []
    )


def tell(row: SessionRow, route: str, *, shows_plan: bool = False) -> events.Frames | None:
    """Mark what the session's agent had not heard as told, by `route`, if no other call
    told it since the session was read; the frames that show it on the board (None:
    another call tells it). `shows_plan`: the answer is a todo tool's, which shows the
    agent the whole current plan (its next list is its own, not merged)."""
    session = row.session
    seen = {"agent_revision": Greatest(F("agent_revision"), session.revision)} if shows_plan else {}
    claimed = Session.objects.filter(pk=session.pk, told_message=session.told_message).update(
        told_message=session.last_message, **seen
    )
    if claimed != 1:
        return None
    return mark_told(session, after=session.told_message, upto=session.last_message, route=route)


def mark_told(session: Session, *, after: int, upto: int, route: str) -> events.Frames:
    """The messages after `after` up to `upto` were told by `route`; the frames that show it."""
    Message.objects.filter(session=session, id__gt=after, id__lte=upto, told_at__isnull=True).update(
        told_at=timezone.now(), told_via=route[:60]
    )
    return messages_frames(session)


def add(session: Session, *, kind: str, text: str, author: str, revision: int | None = None) -> Message:
    """A person's message to the agent, to be told on its next call."""
    message = Message.objects.create(session=session, kind=kind, revision=revision, text=text, author=author)
    Session.objects.filter(pk=session.pk).update(last_message=Greatest(F("last_message"), message.pk))
    events.publish_on_commit(messages_frames(session))
    return message


def messages_frames(session: Session) -> events.Frames:
    return events.frames(
        events.SessionMessages(session=session.public_id, messages=messages_data(session)),
        events.session_group(session.public_id),
    )
