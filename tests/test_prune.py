from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.utils import timezone

from tests.conftest import Api
from todoweb.models import Revision, Session


def plan(status: str) -> dict:
    return {"todos": [{"content": "a", "status": status, "activeForm": "doing a"}]}


def test_it_prunes_old_revisions_but_keeps_the_current_one(api):
    for status in ("pending", "in_progress", "completed"):
        api.call("s1", "TodoWrite", plan(status))
    Revision.objects.update(created_at=timezone.now() - timedelta(days=100))
    out = StringIO()
    call_command("prune", "--days", "90", stdout=out)
    assert list(Revision.objects.values_list("number", flat=True)) == [3]
    assert "2 revisions" in out.getvalue()
    assert api.get("/api/v1/sessions/s1").json()["todos"][0]["status"] == "completed"


def test_it_deletes_long_archived_sessions_only(api):
    api.call("old", "TodoWrite", plan("pending"))
    api.call("recent", "TodoWrite", plan("pending"))
    api.delete("/api/v1/sessions/old")
    api.delete("/api/v1/sessions/recent")
    Session.objects.filter(key="old").update(archived_at=timezone.now() - timedelta(days=91))
    call_command("prune", stdout=StringIO())
    assert list(Session.objects.values_list("key", flat=True)) == ["recent"]


def test_it_changes_nothing_on_a_dry_run(api):
    api.call("s1", "TodoWrite", plan("pending"))
    api.call("s1", "TodoWrite", plan("completed"))
    Revision.objects.update(created_at=timezone.now() - timedelta(days=100))
    out = StringIO()
    call_command("prune", "--dry-run", stdout=out)
    assert Revision.objects.count() == 2
    assert out.getvalue().startswith("Would delete")


def test_it_keeps_the_revisions_an_unseen_edit_is_told_from(api):
    """The agent is told a person's edit as the change from the revision it last saw:
    prune keeps that one, however old, or a reword would be told as new steps."""
    api.call("s1", "TodoWrite", {"todos": [{"content": "Write the fix", "status": "pending", "activeForm": "x"}]})
    api.call("s1", "TodoWrite", {"todos": [{"content": "Write the fix", "status": "in_progress", "activeForm": "x"}]})
    edited = api.post(
        "/api/v1/sessions/s1/edits",
        {"todos": [{"id": "1", "content": "Write the fix and its test", "status": "in_progress"}]},
        headers={"If-Match": "2"},
    )
    assert edited.status_code == 200
    Revision.objects.update(created_at=timezone.now() - timedelta(days=100))
    call_command("prune", "--days", "90", stdout=StringIO())
    assert list(Revision.objects.order_by("number").values_list("number", flat=True)) == [2, 3]
    reply = api.call("s1", "TodoRead", {}).json()["reply"]["content"]
    assert 'reworded "Write the fix" to "Write the fix and its test"' in reply
    assert "added" not in reply


@pytest.mark.parametrize("days", ["-1", "1000000000"])
def test_it_refuses_a_number_of_days_out_of_range(db, days):
    with pytest.raises(CommandError, match="--days must be between 0 and 36500"):
        call_command("prune", "--days", days, stdout=StringIO())


ROUNDS = 15
WRITERS = 4


@pytest.mark.django_db(transaction=True)
def test_prune_never_deletes_a_write_that_brought_an_archived_session_back(token):
    """Agents write to sessions that keep being archived (a write brings an archived
    session back) while prune runs over and over: every write answered stays, and
    prune never fails."""
    done = threading.Event()
    failures: list[BaseException] = []

    def prune_until_done() -> int:
        runs = 0
        try:
            while not done.is_set():
                call_command("prune", "--days", "0", stdout=StringIO())
                runs += 1
        except BaseException as error:  # noqa: BLE001 - the test reports any failure of prune
            failures.append(error)
        finally:
            connection.close()
        return runs

    def write_and_archive(n: int) -> tuple[str, int, str]:
        agent = Api(token)
        key = f"revived-{n}"
        try:
            for round_ in range(ROUNDS):
                content = f"writer {n}, round {round_}"
                answer = agent.call(
                    key, "TodoWrite", {"todos": [{"content": content, "status": "pending", "activeForm": "x"}]}
                )
                assert answer.status_code == 200, answer.content
                if round_ < ROUNDS - 1:
                    agent.delete(f"/api/v1/sessions/{key}")
            return key, answer.json()["data"]["revision"], content
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=WRITERS + 1) as pool:
        pruner = pool.submit(prune_until_done)
        written = list(pool.map(write_and_archive, range(WRITERS)))
        done.set()
        assert pruner.result() > 0
    assert failures == []
    for key, revision, content in written:
        session = Session.objects.with_current().get(key=key)
        assert session.archived_at is None
        assert (session.revision, session.current.todos[0]["content"]) == (revision, content)
