"""What people do to a session, from the board, the API or the admin: edit the plan,
rename, close or reopen, archive. Each writes in one transaction and publishes to
watchers once it commits."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from todoweb.calls.errors import RevisionConflict
from todoweb.live import events
from todoweb.models import Message, Revision, Session, ShareLink
from todoweb.plan.edits import PlanEdit
from todoweb.reads import plan_data, session_summary
from todoweb.store import sql
from todoweb.writes import messages, revisions
from todoweb.writes.policy import apply_policy, check_storable
from todoweb.writes.revisions import Change


def session_edit(session: Session, edit: PlanEdit, *, if_match: int, user: Any = None) -> dict[str, Any]:
    """A person's edit of the plan: the whole list as they want it, made on revision
    `if_match`. Appends a revision marked `author: user` and returns its data; the
    agent is told on its next call (writes.messages)."""
    project = session.project
    items = [step.as_item() for step in edit.todos]
    check_storable(items, edit.note)
    apply_policy(project, items)
    with revisions.locked():
        row = sql.session_row(project, session.key, idempotency_key=None, for_update=True)
        if row.session.revision != if_match:
            raise RevisionConflict(
                f"The plan changed while you were editing: you edited revision {if_match}, "
                f"the session is at revision {row.session.revision}",
                details={"expected": if_match, "current": row.session.revision},
                data=plan_data(row.session, row.current),
            )
        kept = {item.id for item in items}
        change = Change(
            items=items,
            tool="edit",
            dialect=row.session.dialect,
            raw_input={**edit.model_dump(mode="json", exclude_none=True), "user": getattr(user, "username", None)},
            author=Revision.Author.USER,
            # A step the person took out is not work the agent lost: not "dropped".
            removed=[step["id"] for step in (row.current.todos if row.current else []) if step["id"] not in kept],
        )
        new = revisions.new_revision(row, change, now=timezone.now())
        events.publish_on_commit(revisions.append(new))
        author = getattr(user, "username", "") or ""
        messages.add(
            row.session, kind=Message.Kind.EDIT, text=edit.note or "", author=author, revision=new.revision.number
        )
    return new.data


def session_note(session: Session, text: str, *, user: Any = None) -> Message:
    """A person's note to the agent, with no change to the plan: told on its next call."""
    with transaction.atomic():
        return messages.add(session, kind=Message.Kind.NOTE, text=text, author=getattr(user, "username", "") or "")


def session_change(session: Session, *, title: str | None = None, closed: bool | None = None) -> Session:
    """Rename, close or reopen. Sends the new state to watchers."""
    with transaction.atomic():
        session = (
            Session.objects.with_current()
            .select_for_update(of=("self",))
            .select_related("project", "parent")
            .get(pk=session.pk)
        )
        if title is not None:
            session.title = title
        if closed is not None:
            session.closed_at = (session.closed_at or timezone.now()) if closed else None
        session.save(update_fields=["title", "closed_at"])
        state_event = events.SessionState(
            session=session.public_id, revision=session.revision, state=session.state, title=session.title
        )
        events.publish_on_commit(
            events.session_frames(
                public_id=session.public_id,
                project_id=session.project_id,
                session_event=state_event,
                summary=session_summary(session),
            )
        )
    return session


def session_archive(session: Session) -> None:
    """Hide a session (kept until pruned): dashboards drop it, share links end with it
    (revoked: an agent's write brings the session back, not its links)."""
    with transaction.atomic():
        now = timezone.now()
        archived = Session.objects.filter(pk=session.pk, archived_at__isnull=True).update(archived_at=now)
        if archived:
            ShareLink.objects.filter(session=session, revoked_at__isnull=True).update(revoked_at=now)
            events.publish_on_commit(events.archived_frames(public_id=session.public_id, project_id=session.project_id))
