from __future__ import annotations

from datetime import timedelta
from io import StringIO

from django.core.management import call_command
from django.utils import timezone

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
