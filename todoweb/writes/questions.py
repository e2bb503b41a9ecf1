"""Questions the agent asks people: approve its plan, allow a tool. Asked with a
deadline (the agent's own prompt takes over after it); answered by the first member
who decides on the board or by API; watchers see both live."""

from __future__ import annotations

from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from todoweb.live import events
from todoweb.models import Question, Session
from todoweb.reads import questions_data

TEXT_MAX_CHARS = 20_000


def ask(
    session: Session,
    *,
    kind: str,
    wait: float,
    request_id: str = "",
    tool_name: str = "",
    text: str = "",
    detail: str = "",
) -> Question:
    with transaction.atomic():
        question = Question.objects.create(
            session=session,
            kind=kind,
            request_id=request_id[:64],
            tool_name=tool_name[:200],
            text=text[:TEXT_MAX_CHARS],
            detail=detail[:TEXT_MAX_CHARS],
            expires_at=timezone.now() + timedelta(seconds=wait),
        )
        events.publish_on_commit(questions_frames(session))
    return question


def decide(question: Question, *, decision: str, feedback: str = "", by: str = "") -> bool:
    """Answer the question, if no one has and it has not expired. True: this answer counts."""
    now = timezone.now()
    with transaction.atomic():
        answered = Question.objects.filter(pk=question.pk, decision="", expires_at__gt=now).update(
            decision=decision, feedback=feedback, decided_at=now, decided_by=by[:150]
        )
        if answered:
            events.publish_on_commit(questions_frames(question.session))
    return answered == 1


def expire(question: Question) -> None:
    """The agent stopped waiting: its own prompt asks instead; the board says so."""
    with transaction.atomic():
        Question.objects.filter(pk=question.pk, decision="").update(expires_at=timezone.now())
        events.publish_on_commit(questions_frames(question.session))


def questions_frames(session: Session) -> events.Frames:
    return events.frames(
        events.SessionQuestions(session=session.public_id, questions=questions_data(session)),
        events.session_group(session.public_id),
    )
