"""What the agent's side asks the board and hears back: people's messages not told yet
(`POST sessions/{key}/tell`, for a route of its own such as the Claude Code channel),
and questions for people to decide (a plan to approve, a tool to allow), which it
may wait on."""

from __future__ import annotations

import asyncio
from typing import Any, Literal

from django.http import HttpRequest, JsonResponse
from django.utils import timezone
from ninja import Query, Router, Schema
from pydantic import BaseModel, ConfigDict, Field

from todoweb.calls.errors import ApiError, NotFound
from todoweb.live import events
from todoweb.models import Question, Session
from todoweb.reads import question_data, questions_data
from todoweb.store import sql
from todoweb.store.database import in_database_thread
from todoweb.web.api.lookups import check_key, get_session
from todoweb.web.auth import require_write, token_auth
from todoweb.writes import messages, questions
from todoweb.writes.record import get_or_create_session

router = Router(tags=["steering"])

# The longest a question may wait for people, and a request for its answer.
MAX_WAIT = 3600
MAX_POLL = 60
# How often a waiting request looks for the answer.
POLL_EVERY = 0.5


class Tell(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [{"route": "Claude Code channel"}]})

    route: str = Field("API", min_length=1, max_length=60, description="How the agent hears it, for the board")


@router.post("/sessions/{session_key}/tell", summary="What people told the agent that it has not heard yet")
def post_tell(request: HttpRequest, session_key: str, tell: Tell) -> dict[str, Any]:
    """Marks people's messages told (by `route`) and answers the notice to hand the
    model: `{"told": true, "notice": "…"}`; `{"told": false, "notice": null}` when there
    is nothing new (or another call of the agent's told it first)."""
    require_write(request.auth)
    check_key(session_key)
    row = sql.session_row(request.auth.project, session_key, idempotency_key=None)
    unseen = messages.untold(row) if row is not None else None
    frames = messages.tell(row, tell.route) if unseen else None
    if frames is None:
        return {"told": False, "notice": None}
    events.publish_on_commit(frames)
    return {"told": True, "notice": unseen.notice(row.current.todos if row.current else [])}


class NewQuestion(BaseModel):
    """A question for people: a plan to approve, or a tool call to allow."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "kind": "permission",
                    "request_id": "abcde",
                    "tool_name": "Bash",
                    "text": "Delete the build folder",
                    "detail": '{"command": "rm -rf build"}',
                    "wait": 300,
                }
            ]
        },
    )

    kind: Literal["plan", "permission"]
    request_id: str = Field("", max_length=64, description="The agent's own id for the question")
    tool_name: str = Field("", max_length=200)
    text: str = Field("", max_length=questions.TEXT_MAX_CHARS, description="The plan, or what the tool would do")
    detail: str = Field("", max_length=questions.TEXT_MAX_CHARS, description="The tool's input, as the agent shows it")
    wait: int = Field(600, ge=1, le=MAX_WAIT, description="Seconds the agent waits for an answer")


@router.post("/sessions/{session_key}/questions", response={201: dict}, summary="Ask people to decide")
def post_question(request: HttpRequest, session_key: str, question: NewQuestion) -> tuple[int, dict[str, Any]]:
    """The question shows on the session's panel at once; wait for the answer with
    `GET sessions/{key}/questions/{id}?wait=`. The session is created if it does not
    exist yet."""
    require_write(request.auth)
    session = get_or_create_session(request.auth.project, check_key(session_key))
    asked = questions.ask(session, **question.model_dump())
    return 201, question_data(asked, now=timezone.now())


@router.get("/sessions/{session_key}/questions", summary="The agent's questions to people, and their answers")
def list_questions(request: HttpRequest, session_key: str) -> dict[str, Any]:
    return {"questions": questions_data(get_session(request.auth, session_key)), "next_cursor": None}


class Wait(Schema):
    wait: float = Field(0, ge=0, le=MAX_POLL, description="Seconds to wait for an answer to an open question")


@router.get(
    "/sessions/{session_key}/questions/{question_id}",
    auth=None,
    openapi_extra={"security": [{"TokenAuth": []}]},
    summary="One question; with ?wait=, once answered (or when the wait ends)",
)
async def get_question(request: HttpRequest, session_key: str, question_id: int, query: Query[Wait]) -> JsonResponse:
    question = await in_database_thread(found_question, request, session_key, question_id)
    return JsonResponse(await answered_within(question, query.wait))


async def answered_within(question: Question, wait: float) -> dict[str, Any]:
    """The question as it stands once answered or expired, or when `wait` seconds pass."""
    loop = asyncio.get_running_loop()
    until = loop.time() + wait
    while True:
        data = await in_database_thread(current_question, question.pk)
        if data["state"] != "open" or loop.time() >= until:
            return data
        await asyncio.sleep(min(POLL_EVERY, max(0.0, until - loop.time())))


def found_question(request: HttpRequest, session_key: str, question_id: int) -> Question:
    token = token_auth(request)
    session = get_session(token, session_key)
    question = Question.objects.filter(session=session, pk=question_id).select_related("session").first()
    if question is None:
        raise NotFound(f"Session '{session_key}' has no question {question_id}")
    return question


def current_question(question_id: int) -> dict[str, Any]:
    return question_data(Question.objects.get(pk=question_id), now=timezone.now())


class Answer(BaseModel):
    model_config = ConfigDict(
        extra="forbid", json_schema_extra={"examples": [{"decision": "deny", "feedback": "Not on main"}]}
    )

    decision: Literal["allow", "deny"]
    feedback: str = Field("", max_length=2000)


@router.post("/sessions/{session_key}/questions/{question_id}/answer", summary="Answer a question for people")
def post_answer(request: HttpRequest, session_key: str, question_id: int, answer: Answer) -> dict[str, Any]:
    """The first answer counts; a question answered already, or no longer waited on, is a 409."""
    require_write(request.auth)
    session = get_session(request.auth, session_key)
    return answer_question(session, question_id, answer, by=request.auth.name or "API")


def answer_question(session: Session, question_id: int, answer: Answer, *, by: str) -> dict[str, Any]:
    """Shared with the board's action."""
    question = Question.objects.filter(session=session, pk=question_id).select_related("session").first()
    if question is None:
        raise NotFound(f"No question {question_id} in this session")
    if not questions.decide(question, decision=answer.decision, feedback=answer.feedback, by=by):
        current = question_data(Question.objects.get(pk=question.pk), now=timezone.now())
        raise ApiError(409, "already_answered", f"This question is {current['state']}: it takes no answer now")
    return question_data(Question.objects.get(pk=question.pk), now=timezone.now())
