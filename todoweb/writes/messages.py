"""People's messages to the agent, and telling them: an edit of the plan or a note is
told to the agent once, by the first of its calls that comes, whatever the route (a
todo call, a hook on any tool, the MCP server, the channel). The board shows each
message's way: waiting, told (when, and by which route), kept in a revision.

Once: a call tells the messages after `told_message` up to `last_message` only if it
moves `told_message` from the value it read (a compare-and-set); an agent's write
does the same in its own update (writes.revisions).

What waits for the agent is capped as the edits' change list is (plan.edits:
past 20 changes the rest are counted): at most 20 notes and 20,000 bytes of them
(an edit's note counts; an edit without one does not) wait at a time, and a note
past that is refused until the agent has heard them. The answer that tells them
carries at most as much: should more wait all the same (two people's notes at the
same instant), the rest are counted, `and N more notes`, as changes are.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import F
from django.db.models.functions import Greatest
from django.utils import timezone

from todoweb.calls.errors import ApiError
from todoweb.live import events
from todoweb.models import Message, Revision, Session
from todoweb.plan import edits
from todoweb.reads import messages_data
from todoweb.store.sql import SessionRow

# What may wait for the agent at a time, and what one answer tells it: as many notes
# as the edits' change list shows (plan.edits.MAX_LISTED), and their bytes (UTF-8).
NOTES_WAITING_MAX = edits.MAX_LISTED
NOTES_WAITING_MAX_BYTES = 20_000


def untold(row: SessionRow, seen: list[dict[str, Any]] | None = None) -> edits.Unseen | None:
    """What people told the agent that it has not heard yet (None: nothing). `seen`:
    `seen_before_edits(session)`, when the caller has it already."""
    session = row.session
    if session.pk is None or session.last_message <= session.told_message:
        return None
    notes = Message.objects.filter(session=session, id__gt=session.told_message, id__lte=session.last_message)
    shown, more = within_cap([text for text in notes.values_list("text", flat=True) if text])
    if seen is None:
        seen = seen_before_edits(session)
    changes = edits.between(seen, row.current.todos if row.current else []) if seen is not None else []
    return edits.Unseen(seen or [], changes, shown, more_notes=more)


def within_cap(notes: list[str]) -> tuple[list[str], int]:
    """The first notes that fit in one answer (the cap's count and bytes), and how
    many more there are."""
    kept, size = [], 0
    for note in notes:
        size += len(note.encode())
        if len(kept) == NOTES_WAITING_MAX or size > NOTES_WAITING_MAX_BYTES:
            break
        kept.append(note)
    return kept, len(notes) - len(kept)


def check_room(session: Session, text: str) -> None:
    """Refuses a note past what may wait for the agent (ApiError 409, nothing written).
    The session's row is locked first (PostgreSQL), so that two notes at once do not
    both see room for one."""
    told = Session.objects.select_for_update().filter(pk=session.pk).values_list("told_message", flat=True)
    waiting = [
        note
        for note in Message.objects.filter(session=session, id__gt=told[0] if told else 0)
        .exclude(text="")
        .values_list("text", flat=True)
    ]
    count, size = len(waiting) + 1, sum(len(note.encode()) for note in waiting) + len(text.encode())
    if count > NOTES_WAITING_MAX or size > NOTES_WAITING_MAX_BYTES:
        raise ApiError(
            409,
            "too_many_notes",
            f"Too much waits for the agent: {len(waiting)} notes not heard yet, and this one would make "
            f"{size:,} bytes (at most {NOTES_WAITING_MAX} notes and {NOTES_WAITING_MAX_BYTES:,} bytes wait at a "
            "time). The agent hears them on its next call; leave this note after that. Nothing was saved.",
            details={"waiting": len(waiting), "max_notes": NOTES_WAITING_MAX, "max_bytes": NOTES_WAITING_MAX_BYTES},
        )


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
    """A person's message to the agent, to be told on its next call (ApiError 409: a
    note past what may wait for the agent; call it in the transaction of the write)."""
    with transaction.atomic():
        if text:
            check_room(session, text)
        message = Message.objects.create(session=session, kind=kind, revision=revision, text=text, author=author)
        Session.objects.filter(pk=session.pk).update(last_message=Greatest(F("last_message"), message.pk))
    events.publish_on_commit(messages_frames(session))
    return message


def messages_frames(session: Session) -> events.Frames:
    return events.frames(
        events.SessionMessages(session=session.public_id, messages=messages_data(session)),
        events.session_group(session.public_id),
    )
