"""Browser pages rendered on the server: dashboard, panel, revisions, exports, login."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser

import pytest
from django.contrib.auth.models import User
from django.contrib.staticfiles import finders

from tests.conftest import MEMBER_PASSWORD
from todoweb.models import Project, Session
from todoweb.web.board import views

HOSTILE = '<script>alert(1)</script><img src=x onerror="alert(2)">'


def plan(*statuses: str, prefix: str = "Step") -> dict:
    return {
        "todos": [
            {"content": f"{prefix} {i}", "status": s, "activeForm": f"Doing {prefix.lower()} {i}"}
            for i, s in enumerate(statuses)
        ]
    }


def shown(html: str) -> str:
    """The page without its <template>s: what it shows before any script runs."""
    return re.sub(r"<template .*?</template>", "", html, flags=re.S)


def template(html: str, name: str) -> str:
    return re.search(rf'<template id="{name}">(.*?)</template>', html, flags=re.S).group(1)


class Outline(HTMLParser):
    """Markup's shape without its data: each element's tag and first class, in order."""

    def __init__(self, markup: str):
        super().__init__()
        self.shape: list[str] = []
        self.feed(markup)

    def handle_starttag(self, tag, attrs):
        classes = (dict(attrs).get("class") or "").split()
        self.shape.append(f"{tag}.{classes[0]}" if classes else tag)


def first_item(html: str, opening: str) -> str:
    """The first element that starts with `opening`, up to its closing tag (no nesting of its kind)."""
    tag = opening[1:].split()[0]
    start = html.index(opening)
    return html[start : html.index(f"</{tag}>", start) + len(tag) + 3]


@pytest.fixture
def member_client(client, member):
    client.force_login(member)
    return client


@pytest.fixture
def session(api) -> Session:
    api.call("run-1", "TodoWrite", plan("completed", "in_progress", "pending"))
    return Session.objects.get(key="run-1")


def test_it_sends_anonymous_visitors_to_the_login_page(client, session):
    assert client.get("/").url == "/accounts/login/?next=/"
    assert client.get(f"/s/{session.public_id}/").url.startswith("/accounts/login/")


def test_it_logs_in_with_django_accounts(client, member):
    page = client.get("/accounts/login/")
    assert page.status_code == 200 and b'name="username"' in page.content
    response = client.post("/accounts/login/", {"username": "member", "password": MEMBER_PASSWORD})
    assert response.status_code == 302 and response.url == "/"
    assert client.get("/").status_code == 200


def test_it_renders_the_dashboard_with_the_users_sessions(api, member_client, session):
    other = Project.objects.create(name="Other", slug="other")
    Session.objects.create(project=other, key="not-mine")
    page = member_client.get("/")
    html = page.content.decode()
    assert page.status_code == 200
    assert 'data-key="run-1"' in html and "not-mine" not in html
    assert 'aria-valuenow="33"' in html and ">1/3<" in html
    assert "Doing step 1" in html
    config = json.loads(html.split('id="dashboard-config" type="application/json">')[1].split("</script>")[0])
    assert config["ws"] == "/ws/dashboard/"


def test_it_lets_staff_see_every_project(client, session):
    staff = User.objects.create_user("boss", password="pw", is_staff=True)
    client.force_login(staff)
    assert 'data-key="run-1"' in client.get("/").content.decode()


def test_it_filters_the_first_render(api, member_client, session):
    api.call("done-run", "TodoWrite", plan("completed"))
    html = member_client.get("/?state=completed").content.decode()
    assert 'data-key="done-run"' in html and 'data-key="run-1"' not in html
    html = member_client.get("/?q=DONE").content.decode()
    assert 'data-key="done-run"' in html and 'data-key="run-1"' not in html
    html = member_client.get("/?dialect=kimi").content.decode()
    assert "data-key=" not in shown(html) and "No session matches these filters." in html


def test_it_counts_every_session_by_state_and_puts_the_counts_in_the_title(api, member_client, session, monkeypatch):
    monkeypatch.setattr(views, "DASHBOARD_PAGE", 2)
    api.call("done-run", "TodoWrite", plan("completed"))
    api.call("failed-run", "todo_write", {"steps": [{"id": "1", "description": "Deploy", "status": "failed"}]})
    api.call("other-run", "TodoWrite", plan("in_progress"))
    html = member_client.get("/").content.decode()
    assert shown(html).count('class="card"') == 2  # a page; the totals count them all
    totals = html.split('id="totals"')[1].split("</nav>")[0]
    assert re.search(r'data-state=""[^>]*>\s*<span class="n">4</span>', totals)
    assert re.search(r'data-state="active"[^>]*>\s*<span class="n">2</span>', totals)
    assert re.search(r'data-state="failed"[^>]*>\s*<span class="n">1</span>', totals)
    assert "<title>1 failed · 2 active · Sessions · todoweb</title>" in html
    assert "Showing 2 of 4" in html
    # A total is a link to the same view filtered to its state (and back).
    assert 'href="?state=failed"' in totals
    html = member_client.get("/?state=failed").content.decode()
    assert 'aria-current="true"' in html.split('data-state="failed"')[1].split(">")[0]


def test_it_answers_older_pages_and_counts_as_json(api, member_client, session, monkeypatch):
    monkeypatch.setattr(views, "DASHBOARD_PAGE", 2)
    for key in ["a", "b", "c"]:
        api.call(f"run-{key}", "TodoWrite", plan("in_progress"))
    json_get = lambda query: member_client.get(f"/{query}", headers={"Accept": "application/json"}).json()  # noqa: E731
    first = json_get("?before=")
    assert [s["key"] for s in first["sessions"]] == ["run-c", "run-b"]
    second = json_get(f"?before={first['next']}")
    assert [s["key"] for s in second["sessions"]] == ["run-a", "run-1"] and second["next"] is None
    assert "trend" in second["sessions"][0]
    counts = json_get(f"?count_before={first['sessions'][1]['updated_at']}")
    assert counts == {"counts": {"empty": 0, "active": 2, "idle": 0, "completed": 0, "failed": 0, "closed": 0}}
    assert json_get(f"?q=run-a&count_before={first['next']}")["counts"]["active"] == 1
    assert json_get(f"?q=run-c&count_before={first['next']}")["counts"]["active"] == 0
    assert json_get("?q=run-a&state=active&before=")["sessions"][0]["key"] == "run-a"


def test_it_draws_progress_over_time_on_each_card(api, member_client):
    api.call("spark", "TodoWrite", plan("pending", "pending"))
    api.call("spark", "TodoWrite", plan("completed", "pending"))
    html = member_client.get("/").content.decode()
    polyline = re.search(r'<svg class="spark"[^>]*aria-label="([^"]*)"><polyline points="([^"]*)"', html)
    assert polyline.group(1) == "Progress over time: from 0% to 50%"
    # x runs 0..100 (by time, or by revision within one second); y 19 is 0 %, 1 is 100 %.
    assert polyline.group(2) == "0,19 100,10"


def test_it_draws_a_flat_line_without_history():
    assert views.sparkline_points([], 0.5) == "0,10 100,10"
    assert views.sparkline_points(None, 1.0) == "0,1 100,1"
    assert views.sparkline_points([[100, 0.0], [110, 0.5], [140, 1.0]], 1.0) == "0,19 25,10 100,1"


def test_it_nests_subagents_under_their_parent(api, member_client, session):
    api.call("run-1:helper", "TodoWrite", plan("in_progress"))
    Session.objects.filter(key="run-1:helper").update(parent=session)
    html = member_client.get("/").content.decode()
    parent_card = html.split('data-key="run-1"')[1]
    children = parent_card.split('<ul class="children"')[1]
    assert 'data-key="run-1:helper"' in children


def test_the_cards_the_script_adds_come_from_the_pages_own_partial(api, member_client, session):
    api.call("run-2", "TodoWrite", plan("in_progress"))
    html = member_client.get("/?group=project").content.decode()
    card = template(html, "card-template")
    # One card, empty: no session's data in it.
    assert card.count('class="card"') == 1 and 'data-key=""' in card and "run-" not in card
    page_card = first_item(shown(html), '<li class="card"')  # without subagents: its first </li> ends it
    assert 'data-key="run-2"' in page_card
    assert Outline(card).shape == Outline(page_card).shape
    head = template(html, "group-head-template")
    assert Outline(head).shape == Outline(first_item(shown(html), '<li class="group-head"')).shape


def test_the_steps_the_script_adds_come_from_the_pages_own_partials(api, member_client):
    api.call("again", "TodoWrite", plan("completed", "pending"))
    api.call("again", "TodoWrite", {"todos": [{"content": "Step 0", "status": "in_progress", "activeForm": "Redoing"}]})
    session = Session.objects.get(key="again")
    html = member_client.get(session.get_absolute_url()).content.decode()
    step = template(html, "step-template")
    assert 'class="step"' in step and "Step 0" not in step and "Redoing" not in step
    # The reopened step in progress has every part the template holds.
    page_step = first_item(shown(html), '<li class="step status-in_progress"')
    assert "↺ reopened" in page_step and "Redoing" in page_step
    assert Outline(step).shape == Outline(page_step).shape
    dropped = template(html, "dropped-step-template")
    assert Outline(dropped).shape == Outline(first_item(shown(html).split('id="dropped"')[1], "<li")).shape
    assert '<li class="step empty">No steps yet.</li>' in template(html, "no-steps-template")
    # The pills say each status in words, as the script does.
    assert '<span class="pill status-in_progress">1 in progress</span>' in html
    assert template(html, "count-pill-template").strip() == '<span class="pill"> </span>'


def test_the_plan_editors_row_is_a_template_for_members_only(api, member_client, session):
    html = member_client.get(session.get_absolute_url()).content.decode()
    row = template(html, "edit-step-template")
    assert 'class="edit-step"' in row and row.count("<option ") == 6 and 'value="in_progress">In progress<' in row
    share = api.post(f"/api/v1/sessions/{session.key}/share", {}).json()["url"]
    from django.test import Client

    shared = Client().get(share)
    assert shared.status_code == 200 and 'id="step-template"' in shared.content.decode()
    assert 'id="edit-step-template"' not in shared.content.decode()


def test_it_renders_the_panel_before_any_script_runs(member_client, session):
    html = member_client.get(f"/s/{session.public_id}/").content.decode()
    assert shown(html).count('class="step status-') == 3
    assert 'class="step status-in_progress"' in html and "Doing step 1" in html
    assert 'role="progressbar"' in html and 'aria-valuenow="33"' in html
    assert 'aria-live="polite"' in html
    config = json.loads(html.split('id="panel-config" type="application/json">')[1].split("</script>")[0])
    assert config["ws"] == f"/ws/sessions/{session.public_id}/"
    assert config["initial"]["revision"] == 1
    assert config["revisionUrl"] == f"/s/{session.public_id}/revisions/{{n}}.json"


def test_it_escapes_agent_text_everywhere(api, member_client):
    api.call("evil", "TodoWrite", {"todos": [{"content": HOSTILE, "status": "in_progress", "activeForm": HOSTILE}]})
    session = Session.objects.get(key="evil")
    for html in (
        member_client.get("/").content.decode(),
        member_client.get(session.get_absolute_url()).content.decode(),
    ):
        assert "<script>alert" not in html and "<img src=x" not in html
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    # json_script escapes <, > and & inside the config too.
    assert "\\u003Cscript\\u003E" in member_client.get(session.get_absolute_url()).content.decode()


def test_it_hides_other_projects_sessions(client, session):
    outsider = User.objects.create_user("outsider", password="pw")
    client.force_login(outsider)
    assert client.get(f"/s/{session.public_id}/").status_code == 404
    assert client.get(f"/s/{session.public_id}/revisions/1.json").status_code == 404
    assert client.get(f"/s/{session.public_id}/export.json").status_code == 404
    client.logout()
    assert client.get(f"/s/{session.public_id}/revisions/1.json").status_code == 403


def test_it_answers_the_plan_as_of_a_revision(api, member_client, session):
    api.call("run-1", "TodoWrite", plan("completed", "completed", "in_progress"))
    first = member_client.get(f"/s/{session.public_id}/revisions/1.json").json()
    assert first["revision"] == 1 and first["counts"]["completed"] == 1 and first["tool"] == "TodoWrite"
    assert member_client.get(f"/s/{session.public_id}/revisions/2.json").json()["counts"]["completed"] == 2
    assert member_client.get(f"/s/{session.public_id}/revisions/3.json").status_code == 404


def test_it_exports_json_with_the_history(api, member_client, session):
    api.call("run-1", "TodoWrite", plan("completed", "completed", "in_progress"))
    response = member_client.get(f"/s/{session.public_id}/export.json")
    assert response["Content-Disposition"].startswith("attachment;")
    body = json.loads(response.content)
    assert body["revision"] == 2 and body["session"]["key"] == "run-1"
    assert [r["revision"] for r in body["revisions"]] == [1, 2]


def test_it_exports_markdown_with_escaped_text(api, member_client):
    api.call("md", "TodoWrite", {"todos": [{"content": "[link](x) *b*", "status": "completed", "activeForm": "x"}]})
    api.call("md", "TodoWrite", {"todos": [{"content": HOSTILE, "status": "in_progress", "activeForm": "Working"}]})
    session = Session.objects.get(key="md")
    text = member_client.get(f"/s/{session.public_id}/export.md").content.decode()
    assert text.startswith("# md\n")
    assert "- [>] \\<script\\>alert(1)\\</script\\>" in text and "— Working" in text
    assert "## Dropped while unfinished" not in text  # the first step was completed, not dropped
    assert "<script>" not in text


def test_it_keeps_entities_literal_in_the_markdown_export(api, member_client):
    # A Markdown renderer turns `&lt;` into `<` and strikes `~~through~~`: both escaped.
    content = "&lt;img src=x onerror=alert(1)&gt; ~~gone~~"
    api.call("md", "TodoWrite", {"todos": [{"content": content, "status": "pending", "activeForm": "x"}]})
    session = Session.objects.get(key="md")
    text = member_client.get(f"/s/{session.public_id}/export.md").content.decode()
    assert "- [ ] \\&lt;img src=x onerror=alert(1)\\&gt; \\~\\~gone\\~\\~" in text


def test_it_shows_dropped_steps_and_warnings(api, member_client):
    api.call("drop", "TodoWrite", plan("in_progress", "pending"))
    api.call("drop", "TodoWrite", {"todos": [{"content": "New", "status": "in_progress", "activeForm": "N"}] * 1})
    api.call("drop", "TodoWrite", plan("in_progress", "in_progress", prefix="Twin"))
    session = Session.objects.get(key="drop")
    html = member_client.get(session.get_absolute_url()).content.decode()
    assert 'id="dropped-section"' in html and "Step 0" in html
    assert 'id="warnings-section" aria-labelledby="warnings-heading">' in html


def test_it_serves_a_favicon_where_browsers_look_for_one(client):
    r = client.get("/favicon.ico")
    assert r.status_code == 301
    assert r["Location"].endswith("/todoweb/favicon.svg")
    assert finders.find("todoweb/favicon.svg")


def test_every_page_sends_a_strict_content_security_policy(api, member_client, session):
    from django.test import Client

    pages = ["/", session.get_absolute_url(), f"{session.get_absolute_url()}export.json", "/admin/login/"]
    for url in pages:
        policy = member_client.get(url)["Content-Security-Policy"]
        assert "default-src 'none'" in policy and "script-src 'self'" in policy and "style-src 'self'" in policy
        assert "frame-ancestors 'none'" in policy and "unsafe-inline" not in policy
    assert "default-src 'none'" in Client().get("/accounts/login/")["Content-Security-Policy"]


def test_plans_are_never_kept_in_a_cache_members_or_share_links_alike(api, member_client, session):
    share = api.post(f"/api/v1/sessions/{session.key}/share", {}).json()["url"]
    from django.test import Client

    base = session.get_absolute_url()
    token = share.split("?share=")[1]
    anonymous = Client()
    for url in ["", "export.json", "export.md", "revisions/1.json", "history.json", "dropped.json"]:
        for client, query in ((member_client, ""), (anonymous, f"?share={token}")):
            answer = client.get(f"{base}{url}{query}")
            assert answer.status_code == 200, (url, query, answer.status_code)
            assert "no-store" in answer["Cache-Control"] and "private" in answer["Cache-Control"], url
    assert "no-store" in member_client.get("/")["Cache-Control"]


def test_the_panel_draws_its_bar_without_a_style_attribute(member_client, session):
    html = member_client.get(session.get_absolute_url()).content.decode()
    assert "style=" not in html and 'class="p33"' in html
