"""Steps are rows: after any write, a session's `Step` rows are its last revision's
list, column for column; a write changes only the rows of the steps it changed; the
migration fills them from existing revisions; and a whole database round-trips
through dumpdata and loaddata."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest
from django.apps import apps
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from todoweb.models import Revision, Session, Step

PLAN = [
    {"content": "Read <b>the</b> code", "status": "completed", "activeForm": "Reading the code"},
    {"content": "修复 the bug 🐛", "status": "in_progress", "activeForm": "Fixing the bug"},
    {"content": "Write the tests", "status": "pending", "activeForm": "Writing the tests"},
]


def as_rows(key: str) -> list[dict[str, Any]]:
    return [
        {
            "id": step.step_id,
            "position": step.position,
            "content": step.content,
            "active_form": step.active_form or None,
            "status": step.status,
            "priority": step.priority or None,
            "owner": step.owner or None,
            "first_seen_at": step.first_seen_at,
            "started_at": step.started_at,
            "completed_at": step.completed_at,
            "duration_s": step.duration_s,
            "reopened": step.reopened,
        }
        for step in Step.objects.filter(session__key=key).order_by("position")
    ]


def as_plan(api, key: str) -> list[dict[str, Any]]:
    """The session's current steps as the API answers them, in the rows' columns."""
    todos = api.client.get(f"/api/v1/sessions/{key}", headers=api.headers).json()["todos"]

    def moment(text: str | None) -> datetime | None:
        return datetime.fromisoformat(text) if text else None

    return [
        {
            "id": step["id"],
            "position": step["position"],
            "content": step["content"],
            "active_form": step["active_form"],
            "status": step["status"],
            "priority": step["priority"],
            "owner": step["owner"],
            "first_seen_at": moment(step["first_seen_at"]),
            "started_at": moment(step["started_at"]),
            "completed_at": moment(step["completed_at"]),
            "duration_s": step["duration_s"],
            "reopened": step["reopened"],
        }
        for step in todos
    ]


def write(api, key: str, todos: list[dict[str, Any]]) -> None:
    response = api.call(key, "TodoWrite", {"todos": todos})
    assert response.status_code == 200, response.content


def test_it_writes_a_new_session_s_plan_as_rows(api):
    write(api, "s1", PLAN)
    rows = as_rows("s1")
    assert rows == as_plan(api, "s1")
    assert [row["content"] for row in rows] == [step["content"] for step in PLAN]
    assert rows[0]["completed_at"] is not None and rows[1]["started_at"] is not None


def test_after_every_kind_of_change_the_rows_are_the_last_revision_s_list(api):
    write(api, "s1", PLAN)
    moved_on = [dict(PLAN[0]), dict(PLAN[1], status="completed"), dict(PLAN[2], status="in_progress")]
    write(api, "s1", moved_on)
    assert as_rows("s1") == as_plan(api, "s1")
    reordered = [moved_on[2], moved_on[0]]  # one step gone, the rest reordered
    write(api, "s1", reordered)
    assert as_rows("s1") == as_plan(api, "s1")
    assert [row["content"] for row in as_rows("s1")] == ["Write the tests", "Read <b>the</b> code"]
    reopened = [dict(moved_on[0], status="in_progress"), moved_on[2]]
    write(api, "s1", reopened)
    assert as_rows("s1") == as_plan(api, "s1")
    assert as_rows("s1")[0]["reopened"] == 1
    write(api, "s1", [])
    assert as_rows("s1") == as_plan(api, "s1") == []


def test_incremental_tools_and_people_s_edits_keep_the_rows_too(api):
    assert api.call("s2", "TaskCreate", {"subject": "Plan", "description": "plan it"}).status_code == 200
    assert api.call("s2", "TaskCreate", {"subject": "Build", "description": "build it"}).status_code == 200
    assert api.call("s2", "TaskUpdate", {"taskId": "1", "status": "in_progress", "owner": "ada"}).status_code == 200
    assert as_rows("s2") == as_plan(api, "s2")
    assert as_rows("s2")[0]["owner"] == "ada"
    current = Session.objects.get(key="s2").revision
    todos = [{"id": "2", "content": "Build it well", "status": "pending"}, {"content": "Ship", "status": "pending"}]
    edited = api.post("/api/v1/sessions/s2/edits", {"todos": todos}, headers={"If-Match": str(current)})
    assert edited.status_code == 200, edited.content
    assert as_rows("s2") == as_plan(api, "s2")
    assert [row["content"] for row in as_rows("s2")] == ["Build it well", "Ship"]


def test_a_write_touches_only_the_rows_of_the_steps_it_changed(api):
    write(api, "s1", PLAN)
    kept = {step.step_id: step.pk for step in Step.objects.filter(session__key="s1")}
    with CaptureQueriesContext(connection) as queries:
        write(api, "s1", [PLAN[0], dict(PLAN[1], status="completed"), PLAN[2]])
    after = {step.step_id: step.pk for step in Step.objects.filter(session__key="s1")}
    assert after["1"] == kept["1"] and after["3"] == kept["3"]  # unchanged rows stay as they were
    assert after["2"] != kept["2"]  # the changed one written anew
    step_statements = [query["sql"] for query in queries.captured_queries if "todoweb_step" in query["sql"]]
    assert len(step_statements) == 2  # one DELETE, one INSERT
    with CaptureQueriesContext(connection) as queries:
        write(api, "s1", [PLAN[0], dict(PLAN[1], status="completed"), PLAN[2]])  # the same list again
    assert not [query for query in queries.captured_queries if "todoweb_step" in query["sql"]]


def test_a_refused_write_changes_no_row(api):
    write(api, "s1", PLAN)
    before = as_rows("s1")
    refused = api.call("s1", "TodoWrite", {"todos": [{"content": "x", "status": "done", "activeForm": "x"}]})
    assert refused.status_code == 422
    assert as_rows("s1") == before


def test_the_migration_fills_the_rows_from_each_session_s_last_revision(api):
    write(api, "s1", PLAN)
    write(api, "s1", [dict(PLAN[0]), dict(PLAN[1], status="completed")])
    write(api, "s3", PLAN[:1])
    expected = {key: as_rows(key) for key in ("s1", "s3")}
    Step.objects.all().delete()
    migration = __import__("todoweb.migrations.0018_step", fromlist=["rows_from_last_revisions"])
    migration.rows_from_last_revisions(apps, None)
    assert {key: as_rows(key) for key in ("s1", "s3")} == expected


def to_the_millisecond(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            name: value.replace(microsecond=value.microsecond // 1000 * 1000) if isinstance(value, datetime) else value
            for name, value in row.items()
        }
        for row in rows
    ]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("form", ["xml", "json"])
def test_a_database_round_trips_through_dumpdata_and_loaddata(token, tmp_path, form):
    # Django's JSON keeps times to the millisecond (as JavaScript's do); XML and YAML keep them whole.
    from tests.conftest import Api

    api = Api(token)
    write(api, "s1", PLAN)
    write(api, "s1", [dict(PLAN[0]), dict(PLAN[1], status="completed")])
    revisions = list(Revision.objects.order_by("pk").values_list("todos", "raw_input", "response"))
    rows = as_rows("s1")
    fixture = tmp_path / f"dump.{form}"
    call_command("dumpdata", "todoweb", format=form, output=str(fixture), verbosity=0)
    call_command("flush", interactive=False, verbosity=0)
    assert not Revision.objects.exists()
    call_command("loaddata", str(fixture), verbosity=0)
    assert list(Revision.objects.order_by("pk").values_list("todos", "raw_input", "response")) == revisions
    assert isinstance(revisions[0][0], list) and isinstance(revisions[0][1], dict)
    if form == "json":
        assert to_the_millisecond(as_rows("s1")) == to_the_millisecond(rows)
    else:
        assert as_rows("s1") == rows


def get_steps(api, query: str = "") -> Any:
    return api.client.get(f"/api/v1/steps{query}", headers=api.headers)


def test_the_steps_list_answers_the_project_s_current_steps_across_sessions(api, read_api, other_api):
    write(api, "s1", PLAN)
    write(api, "s2", [{"content": "Deploy 部署", "status": "in_progress", "activeForm": "Deploying"}])
    other_api.call(
        "theirs", "TodoWrite", {"todos": [{"content": "Secret", "status": "in_progress", "activeForm": "x"}]}
    )
    answer = get_steps(read_api, "?status=in_progress")
    assert answer.status_code == 200
    body = answer.json()
    assert {(step["session"]["key"], step["content"]) for step in body["steps"]} == {
        ("s1", "修复 the bug 🐛"),
        ("s2", "Deploy 部署"),
    }
    (one,) = [step for step in body["steps"] if step["session"]["key"] == "s1"]
    data = api.client.get("/api/v1/sessions/s1", headers=api.headers).json()
    assert {name: value for name, value in one.items() if name != "session"} == data["todos"][1]
    assert one["session"]["state"] == "active" and body["next_cursor"] is None
    both = get_steps(read_api, "?status=completed&status=pending").json()["steps"]
    assert sorted(step["status"] for step in both) == ["completed", "pending"]
    found = get_steps(read_api, "?q=WRITING").json()["steps"]  # the active form, any case
    assert [step["content"] for step in found] == ["Write the tests"]


def test_the_steps_list_pages_newest_change_first_and_filters_by_time(api):
    for n in range(5):
        write(api, f"s{n}", [{"content": f"Step {n}", "status": "pending", "activeForm": "x"}])
    first = get_steps(api, "?limit=2").json()
    assert [step["content"] for step in first["steps"]] == ["Step 4", "Step 3"]
    rest = get_steps(api, f"?limit=10&cursor={first['next_cursor']}").json()
    assert [step["content"] for step in rest["steps"]] == ["Step 2", "Step 1", "Step 0"]
    since = Step.objects.get(content="Step 3").updated_at.isoformat().replace("+00:00", "Z")
    recent = get_steps(api, f"?since={since}").json()["steps"]
    assert [step["content"] for step in recent] == ["Step 4", "Step 3"]


@pytest.mark.parametrize(
    "query",
    [
        "?status=done",
        "?limit=501",
        "?limit=0",
        "?cursor=nonsense",
        "?q=%00",
        "?since=yesterday",
        "?since=2026-01-01T10:00",
    ],
)
def test_the_steps_list_refuses_what_it_cannot_read(api, query):
    answer = get_steps(api, query)
    assert answer.status_code == 422, answer.content
    assert answer.json()["ok"] is False


def test_the_steps_list_needs_a_token(client):
    assert client.get("/api/v1/steps").status_code == 401


def test_a_row_holds_the_longest_id_and_any_priority_a_tool_gives(api):
    long_id = "步" * 500  # the longest id a plan takes
    qwen = {"todos": [{"id": long_id, "content": "Translate", "status": "in_progress"}]}
    assert api.call("q1", "todo_write", qwen).status_code == 200
    opencode = {"todos": [{"content": "Ship", "status": "pending", "priority": "whenever-you-can"}]}
    assert api.call("o1", "todowrite", opencode).status_code == 200
    assert Step.objects.get(session__key="q1").step_id == long_id
    assert Step.objects.get(session__key="o1").priority == "whenever-you-can"
