"""Exports of a project: its current steps as CSV and JSON Lines, its sessions as CSV,
between two times, streamed with a header row; untrusted text stays inert."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import pytest

from todoweb.models import Step

PLAN = [
    {"content": '=HYPERLINK("http://x") <b>', "status": "completed", "activeForm": "Linking"},
    {"content": '修复 the bug, "quoted"\nacross lines 🐛', "status": "in_progress", "activeForm": "Fixing"},
]


def get(api, path: str) -> Any:
    response = api.client.get(path, headers=api.headers)
    return response, b"".join(response) if response.streaming else response.content


@pytest.fixture
def written(api):
    assert api.call("s1", "TodoWrite", {"todos": PLAN}).status_code == 200
    assert api.call("s2", "update_plan", {"plan": [{"step": "Ship", "status": "pending"}]}).status_code == 200


def test_it_exports_the_steps_as_csv_with_a_header_row(api, written):
    response, body = get(api, "/api/v1/export/steps.csv")
    assert response.status_code == 200 and response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"] == 'attachment; filename="steps.csv"'
    rows = list(csv.DictReader(io.StringIO(body.decode())))
    assert [(row["session_key"], row["content"], row["status"]) for row in rows] == [
        ("s1", '\'=HYPERLINK("http://x") <b>', "completed"),  # a formula made inert
        ("s1", PLAN[1]["content"], "in_progress"),
        ("s2", "Ship", "pending"),
    ]
    assert rows[1]["active_form"] == "Fixing" and rows[1]["started_at"].endswith("Z")
    assert rows[2]["dialect"] == "codex"


def test_it_exports_the_steps_as_json_lines_in_the_data_shape(api, written):
    response, body = get(api, "/api/v1/export/steps.jsonl")
    assert response.status_code == 200
    lines = [json.loads(line) for line in body.decode().splitlines()]
    data = api.client.get("/api/v1/sessions/s1", headers=api.headers).json()
    first = {name: value for name, value in lines[0].items() if name not in ("session", "updated_at")}
    assert first == data["todos"][0]
    assert lines[0]["session"] == {"key": "s1", "title": "", "dialect": "claude"}
    assert len(lines) == 3


def test_it_exports_the_sessions_as_csv(api, written):
    response, body = get(api, "/api/v1/export/sessions.csv")
    rows = list(csv.DictReader(io.StringIO(body.decode())))
    assert [(row["key"], row["state"], row["total"], row["completed"]) for row in rows] == [
        ("s1", "active", "2", "1"),
        ("s2", "active", "1", "0"),
    ]
    assert rows[0]["url"].startswith("/s/")


def test_it_exports_what_changed_between_two_times(api, written):
    moved = Step.objects.get(content="Ship").updated_at.isoformat().replace("+00:00", "Z")
    _, since = get(api, f"/api/v1/export/steps.csv?since={moved}")
    assert [row["content"] for row in csv.DictReader(io.StringIO(since.decode()))] == ["Ship"]
    _, until = get(api, f"/api/v1/export/steps.csv?until={moved}")
    assert [row["session_key"] for row in csv.DictReader(io.StringIO(until.decode()))] == ["s1", "s1"]
    _, none = get(api, f"/api/v1/export/sessions.csv?since={moved}&until={moved}")
    assert none.decode().strip().splitlines() == [
        "key,title,dialect,state,revision,total,completed,progress,current,parent_key,workdir,branch,created_at,updated_at,closed_at,url"
    ]


def test_it_exports_every_page_in_order(api, monkeypatch):
    from todoweb.web.api import export

    monkeypatch.setattr(export, "SESSIONS_PER_PAGE", 2)
    monkeypatch.setattr(export, "PAGE", 2)
    for s in range(5):
        todos = [{"content": f"Step {s}.{n}", "status": "pending", "activeForm": "x"} for n in range(3)]
        assert api.call(f"s{s}", "TodoWrite", {"todos": todos}).status_code == 200
    _, body = get(api, "/api/v1/export/steps.jsonl")
    contents = [json.loads(line)["content"] for line in body.decode().splitlines()]
    assert contents == [f"Step {s}.{n}" for s in range(5) for n in range(3)]
    _, sessions = get(api, "/api/v1/export/sessions.csv")
    assert [row["key"] for row in csv.DictReader(io.StringIO(sessions.decode()))] == [f"s{s}" for s in range(5)]


@pytest.mark.parametrize("path", ["steps.csv", "steps.jsonl", "sessions.csv"])
def test_it_needs_a_token_and_a_readable_time(client, api, path):
    assert client.get(f"/api/v1/export/{path}").status_code == 401
    response = api.client.get(f"/api/v1/export/{path}?since=yesterday", headers=api.headers)
    assert response.status_code == 422 and "since" in response.json()["error"]["message"]


def test_the_board_exports_a_member_s_projects_and_links_them(client, member, api, written, other_api):
    other_api.call("theirs", "TodoWrite", {"todos": [{"content": "Secret", "status": "pending", "activeForm": "x"}]})
    assert client.get("/export/steps.csv").status_code == 302  # to the login page
    client.force_login(member)
    page = client.get("/").content.decode()
    assert 'href="/export/steps.csv" download' in page and 'href="/export/sessions.csv" download' in page
    response = client.get("/export/steps.csv")
    assert response.status_code == 200
    rows = list(csv.DictReader(io.StringIO(b"".join(response).decode())))
    assert {row["session_key"] for row in rows} == {"s1", "s2"}  # not the other project's
    chosen = client.get("/export/sessions.csv?project=alpha")
    assert [row["key"] for row in csv.DictReader(io.StringIO(b"".join(chosen).decode()))] == ["s1", "s2"]
    assert client.get("/export/steps.jsonl?project=other").status_code == 404
    assert 'href="/export/steps.csv?project=alpha" download' in client.get("/?project=alpha").content.decode()
