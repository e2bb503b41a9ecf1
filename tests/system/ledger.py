"""What agents sent, what they were answered, and what the database kept: the
bookkeeping that the multi-process and fault tests share.

Every write is a TodoWrite whose steps name its call id, so each stored revision can
be traced back to the one call that made it, and its data compared with what was sent.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass
from typing import Any

import httpx

Todo = dict[str, str]


@dataclass
class Write:
    """One tool call an agent sent; `revision` is set when it was answered 200."""

    session: str
    call_id: str
    todos: list[Todo]
    revision: int | None = None

    def body(self) -> dict[str, Any]:
        return {"tool": "TodoWrite", "id": self.call_id, "input": {"todos": self.todos}}


class Ledger:
    """Every write sent, by call id (unique across the whole test)."""

    def __init__(self, prefix: str = "call") -> None:
        self.prefix = prefix
        self.sent: dict[str, Write] = {}
        self.numbers = itertools.count(1)

    def new(self, session: str) -> Write:
        call_id = f"{self.prefix}-{next(self.numbers)}"
        todos = [
            {"content": f"{call_id} step {i}", "status": status, "activeForm": f"Doing {call_id} step {i}"}
            for i, status in enumerate(("completed", "in_progress", "pending"))
        ]
        write = self.sent[call_id] = Write(session, call_id, todos)
        return write

    def answered(self, write: Write, answer: dict[str, Any]) -> None:
        """Record a 200 answer: the revision it names must hold this call's list."""
        data = answer["data"]
        assert data["session"]["key"] == write.session, answer
        assert summary(data["todos"]) == expected(write), (write.call_id, data["todos"])
        assert write.revision in (None, data["revision"]), f"{write.call_id} answered two revisions"
        write.revision = data["revision"]

    def of(self, session: str) -> list[Write]:
        return [write for write in self.sent.values() if write.session == session]

    def answered_writes(self) -> list[Write]:
        return [write for write in self.sent.values() if write.revision is not None]


def summary(todos: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    return [(todo["content"], todo["status"], todo["active_form"]) for todo in todos]


def expected(write: Write) -> list[tuple[str, str, str]]:
    return [(todo["content"], todo["status"], todo["activeForm"]) for todo in write.todos]


def get_json(http: httpx.Client, url: str, *, within: float = 60) -> dict[str, Any]:
    """GET a JSON answer. A 503 (the database briefly out of reach, as the fault tests
    make it) is retried until `within` seconds have passed; anything else but 200 fails."""
    deadline = time.monotonic() + within
    while True:
        response = http.get(url)
        if response.status_code != 503 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert response.status_code == 200, (url, response.status_code, response.text)
    return response.json()


def stored_history(http: httpx.Client, session: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The session as `GET sessions/{key}` shows it, and all its revisions, oldest first."""
    current = get_json(http, f"/api/v1/sessions/{session}")
    revisions: list[dict[str, Any]] = []
    after = 0
    while True:
        page = get_json(http, f"/api/v1/sessions/{session}/revisions?after={after}&limit=200")
        revisions += page["revisions"]
        if page["next_cursor"] is None:
            return current, revisions
        after = int(page["next_cursor"])


def check_history(
    ledger: Ledger, session: str, current: dict[str, Any], revisions: list[dict[str, Any]], *, all_stored: bool
) -> None:
    """The session's history is whole and true to what was sent:

    - revisions are numbered 1..n with no gap or duplicate;
    - each is one call the agents sent, stored once, with that call's input and its
      complete list (no half revision);
    - every write answered 200 is the revision its answer named;
    - the current revision is the last one, with the last one's list;
    - with `all_stored`, every call sent is stored (none was left unanswered).
    """
    numbers = [revision["revision"] for revision in revisions]
    assert numbers == list(range(1, len(revisions) + 1)), f"{session}: revisions are not 1..n: {numbers}"

    stored: dict[str, int] = {}
    for revision in revisions:
        number, written = revision["revision"], revision["written"]
        call_id = written["call_id"]
        assert call_id in ledger.sent, f"{session} revision {number}: a call nobody sent ({call_id!r})"
        write = ledger.sent[call_id]
        assert write.session == session, f"{session} revision {number}: {call_id} was sent to {write.session}"
        assert call_id not in stored, f"{session}: {call_id} stored twice, as revisions {stored[call_id]} and {number}"
        stored[call_id] = number
        assert written["input"] == {"todos": write.todos}, f"{session} revision {number}: input differs"
        assert summary(revision["todos"]) == expected(write), f"{session} revision {number}: incomplete list"
        assert revision["counts"]["total"] == len(write.todos), f"{session} revision {number}: counts"

    for write in ledger.of(session):
        if write.revision is not None:
            assert stored.get(write.call_id) == write.revision, (
                f"{session}: {write.call_id} was answered 200 with revision {write.revision}, "
                f"but the database has it as {stored.get(write.call_id)}"
            )
    if all_stored:
        missing = sorted(write.call_id for write in ledger.of(session) if write.call_id not in stored)
        assert not missing, f"{session}: calls sent but not stored: {missing}"

    last = revisions[-1] if revisions else None
    assert current["revision"] == (last["revision"] if last else 0), f"{session}: current is not the last revision"
    assert summary(current["todos"]) == (summary(last["todos"]) if last else []), f"{session}: current list"
