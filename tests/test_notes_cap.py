"""What waits for the agent is capped as the edits' change list is: at most 20 notes
and 20,000 bytes of them; a note past that is refused (API and board) and changes
nothing, and the answer that tells the agent never carries more."""

from __future__ import annotations

from django.db.models import F
from django.db.models.functions import Greatest
from django.test import Client

from tests.test_steering import SESSION_ID, hook, messages, started
from todoweb.models import Message, Session

NOTES = f"/api/v1/sessions/{SESSION_ID}/messages"
FULL_NOTE = "x" * 2000  # the longest a note may be


def test_it_refuses_the_21st_note_waiting_until_the_agent_hears_them(api, member):
    started(api)
    for number in range(20):
        assert api.post(NOTES, {"text": f"note {number}"}).status_code == 201
    refused = api.post(NOTES, {"text": "one more"})
    assert refused.status_code == 409
    error = refused.json()["error"]
    assert error["code"] == "too_many_notes"
    assert "at most 20 notes and 20,000 bytes" in error["message"]
    assert error["details"] == {"waiting": 20, "max_notes": 20, "max_bytes": 20_000}

    # The board refuses it too, with the same error.
    board = Client()
    board.force_login(member)
    actions = f"/s/{Session.objects.get(key=SESSION_ID).public_id}/actions/"
    on_board = board.post(f"{actions}note", {"text": "from the board"}, content_type="application/json")
    assert (on_board.status_code, on_board.json()["error"]["code"]) == (409, "too_many_notes")
    assert len(messages(api)) == 20  # nothing was written

    # Once the agent heard them, notes are taken again.
    assert api.post("/api/v1/hooks/claude-code", hook()).status_code == 200
    assert api.post(NOTES, {"text": "after it heard"}).status_code == 201


def test_it_counts_the_bytes_that_wait_an_edits_note_included(api):
    started(api)
    for _ in range(9):
        assert api.post(NOTES, {"text": FULL_NOTE}).status_code == 201
    todos = [{"id": "1", "content": "Write the fix", "status": "completed"}, {"id": "2", "content": "Run the tests"}]
    edit = {"todos": todos, "note": "é" * 1000}  # 2,000 bytes: 20,000 in all
    assert api.post(f"/api/v1/sessions/{SESSION_ID}/edits", edit, headers={"If-Match": "1"}).status_code == 200
    refused = api.post(f"/api/v1/sessions/{SESSION_ID}/edits", edit | {"note": "!"}, headers={"If-Match": "2"})
    assert (refused.status_code, refused.json()["error"]["code"]) == (409, "too_many_notes")
    assert api.revision(SESSION_ID) == 2  # the refused edit left no revision
    # An edit without a note adds nothing that waits: it is taken.
    taken = api.post(f"/api/v1/sessions/{SESSION_ID}/edits", edit | {"note": None}, headers={"If-Match": "2"})
    assert taken.status_code == 200


def test_the_answer_that_tells_the_agent_carries_at_most_the_caps_bytes_of_notes(api):
    """300 notes of 2,000 characters waiting (as two people's notes at the same instant
    might leave more than the cap, or a database from before it) are told within the
    cap, the rest counted."""
    started(api)
    session = Session.objects.get(key=SESSION_ID)
    Message.objects.bulk_create(
        Message(session=session, kind="note", text=f"{number:03d}" + "y" * 1997) for number in range(300)
    )
    newest = Message.objects.latest("id").pk
    Session.objects.filter(pk=session.pk).update(last_message=Greatest(F("last_message"), newest))

    context = api.post("/api/v1/hooks/claude-code", hook()).json()["hookSpecificOutput"]["additionalContext"]
    told = [part for part in context.split("\n\n") if part.startswith("The user's note: ")]
    assert len(told) == 10  # 10 × 2,000 bytes
    assert sum(len(part.removeprefix("The user's note: ").encode()) for part in told) <= 20_000
    assert told[0].startswith("The user's note: 000") and told[-1].startswith("The user's note: 009")
    assert context.endswith("The user's notes: and 290 more notes (on the board)")
    assert len(context.encode()) < 21_000
