"""Questions the agent asks people: approve its plan, allow a tool. Asked with a
deadline (the agent's own prompt takes over after it); answered by the first member
who decides on the board or by API; watchers see both live.

Who waits for the answer is counted in the question's row (`waiters`): the hook
request that asked, and each `GET …?wait=` poll, whatever process serves it. When a
waiter hangs up and it was the last, the question is `abandoned`: no agent will read
an answer, so none is taken. A waiter that returns normally (answered, or its wait
over) leaves without abandoning it: an agent that polls again between waits is
still there."""

from __future__ import annotations

from datetime import timedelta

from django.db import transaction
from django.db.models import F
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
        answered = Question.objects.filter(
            pk=question.pk, decision="", expires_at__gt=now, abandoned_at__isnull=True
        ).update(decision=decision, feedback=feedback, decided_at=now, decided_by=by[:150])
        if answered:
            events.publish_on_commit(questions_frames(question.session))
    return answered == 1


def expire(question: Question) -> None:
    """The agent's wait is over: its own prompt asks instead; the board says so."""
    with transaction.atomic():
        Question.objects.filter(pk=question.pk, decision="", abandoned_at__isnull=True).update(
            expires_at=timezone.now()
        )
        events.publish_on_commit(questions_frames(question.session))


def start_waiting(question_id: int) -> None:
    """A request waits for the answer to this question."""
    Question.objects.filter(pk=question_id).update(waiters=F("waiters") + 1)


def stop_waiting(question: Question, *, hung_up: bool) -> bool:
    """A request stopped waiting; `hung_up`: its client went away before an answer
    came. True: it was the last waiter of an open question, which is now abandoned.
    One UPDATE decides it (the row's lock orders it against an answer or another
    waiter coming), so two processes never both see themselves last and an answer
    never lands on an abandoned question."""
    now = timezone.now()
    with transaction.atomic():
        abandoned = 0
        if hung_up:
            abandoned = Question.objects.filter(
                pk=question.pk, decision="", expires_at__gt=now, abandoned_at__isnull=True, waiters__lte=1
            ).update(abandoned_at=now, waiters=0)
        if not abandoned:
            Question.objects.filter(pk=question.pk, waiters__gt=0).update(waiters=F("waiters") - 1)
        else:
            events.publish_on_commit(questions_frames(question.session))
    return abandoned == 1


def questions_frames(session: Session) -> events.Frames:
    return events.frames(
        events.SessionQuestions(session=session.public_id, questions=questions_data(session)),
        events.session_group(session.public_id),
    )
