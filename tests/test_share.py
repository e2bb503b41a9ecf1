"""Share links: POST/DELETE sessions/{key}/share and what a link opens."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from django.test import Client
from django.utils import timezone

from todoweb.models import ShareLink, digest
from todoweb.writes.tokens import token_create


@pytest.fixture
def session_key(api) -> str:
    api.call(
        "run-1", "TodoWrite", {"todos": [{"content": "Ship it", "status": "in_progress", "activeForm": "Shipping"}]}
    )
    return "run-1"


def share(api, key: str = "run-1", body=None):
    return api.post(f"/api/v1/sessions/{key}/share", {} if body is None else body)


def test_it_creates_a_link_valid_for_seven_days_by_default(api, session_key):
    response = share(api)
    assert response.status_code == 201
    body = response.json()
    link = ShareLink.objects.get()
    assert body["url"] == f"http://testserver/s/{link.session.public_id}/?share={body['token']}"
    assert link.digest == digest(body["token"])  # only the digest is stored
    expires = datetime.fromisoformat(body["expires_at"].replace("Z", "+00:00"))
    assert abs(expires - (timezone.now() + timedelta(days=7))) < timedelta(seconds=30)


def test_it_accepts_an_empty_body(api, session_key):
    response = api.post("/api/v1/sessions/run-1/share", "")
    assert response.status_code == 201


def test_it_takes_a_custom_lifetime(api, session_key):
    body = share(api, body={"expires_in": 3600}).json()
    expires = datetime.fromisoformat(body["expires_at"].replace("Z", "+00:00"))
    assert abs(expires - (timezone.now() + timedelta(hours=1))) < timedelta(seconds=30)


@pytest.mark.parametrize("value", [0, 59, 90 * 86400 + 1, "soon", None])
def test_it_rejects_an_out_of_bounds_lifetime(api, session_key, value):
    response = share(api, body={"expires_in": value})
    assert response.status_code == 422
    assert response.json()["error"]["code"] == "invalid_input"
    assert "expires_in" in response.json()["error"]["message"]
    assert not ShareLink.objects.exists()


def test_it_rejects_a_body_that_is_not_json(api, session_key):
    assert share(api, body="{nope").status_code == 400


def test_it_needs_a_write_token(read_api, session_key):
    assert share(read_api).status_code == 403
    assert read_api.delete("/api/v1/sessions/run-1/share").status_code == 403


def test_it_needs_a_token_at_all(client, session_key):
    assert client.post("/api/v1/sessions/run-1/share").status_code == 401


def test_it_answers_404_for_a_session_of_another_project(api, session_key):
    _, raw, _ = token_create(project_slug="other")
    other = Client().post(
        "/api/v1/sessions/run-1/share",
        "{}",
        content_type="application/json",
        headers={"Authorization": f"Bearer {raw}"},
    )
    assert other.status_code == 404
    assert share(api, key="missing").status_code == 404


def test_it_opens_the_panel_and_exports_logged_out(api, client, session_key):
    url = share(api).json()["url"]
    page = client.get(url)
    assert page.status_code == 200
    html = page.content.decode()
    assert "Shipping" in html and "read-only link" in html
    assert page["Referrer-Policy"] == "no-referrer"
    token = url.split("share=")[1]
    assert f"?share={token}" in html.split('id="panel-config"')[1]  # the socket and exports carry it
    base, query = url.split("?")
    assert client.get(f"{base}export.json?{query}").status_code == 200
    assert client.get(f"{base}export.md?{query}").status_code == 200
    assert client.get(f"{base}revisions/1.json?{query}").json()["revision"] == 1
    assert client.get("/").status_code == 302  # a share link opens one panel, not the dashboard


def test_it_does_not_open_another_session(api, client, session_key):
    api.call("run-2", "TodoWrite", {"todos": []})
    token = share(api).json()["token"]
    other = ShareLink.objects.get().session.project.sessions.get(key="run-2")
    assert client.get(f"/s/{other.public_id}/?share={token}").status_code == 403


def test_it_revokes_every_link_of_the_session(api, client, session_key):
    urls = [share(api).json()["url"] for _ in range(2)]
    response = api.delete("/api/v1/sessions/run-1/share")
    assert response.status_code == 204
    assert ShareLink.objects.filter(revoked_at__isnull=True).count() == 0
    for url in urls:
        page = client.get(url)
        assert page.status_code == 403 and b"no longer works" in page.content


def test_it_stops_working_once_expired(api, client, session_key):
    url = share(api).json()["url"]
    ShareLink.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    assert client.get(url).status_code == 403


def test_it_documents_the_endpoints(api):
    schema = api.get("/api/v1/openapi.json").json()
    operations = schema["paths"]["/api/v1/sessions/{session_key}/share"]
    assert set(operations) >= {"post", "delete"}


def test_a_link_stays_dead_when_the_agent_brings_its_archived_session_back(api, client, session_key):
    url = share(api).json()["url"]
    assert api.delete("/api/v1/sessions/run-1").status_code == 204
    assert client.get(url).status_code == 403
    # The agent writes again: the session is back on the board, its links are not.
    api.call("run-1", "TodoWrite", {"todos": [{"content": "Ship it", "status": "completed", "activeForm": "Shipping"}]})
    assert api.revision("run-1") == 2
    page = client.get(url)
    assert page.status_code == 403 and b"no longer works" in page.content
    assert client.get(url.replace("/?", "/revisions/1.json?")).status_code == 403
    assert ShareLink.objects.get().revoked_at is not None


def test_it_does_not_tell_a_share_viewer_who_edited_the_plan(api, client, session_key, member):
    url = share(api).json()["url"]
    browser = Client()
    browser.force_login(member)
    public_id = ShareLink.objects.get().session.public_id
    edit = browser.post(
        f"/s/{public_id}/actions/edits",
        {"todos": [{"id": "1", "content": "Ship it", "status": "completed"}], "note": "Done by hand"},
        content_type="application/json",
        headers={"If-Match": "1"},
    )
    assert edit.status_code == 200, edit.content
    base, query = url.split("?")
    shared = client.get(f"{base}revisions/2.json?{query}")
    assert shared.status_code == 200
    assert shared.json()["written"]["input"]["note"] == "Done by hand"
    assert "user" not in shared.json()["written"]["input"]
    assert member.username not in shared.content.decode()
    # Members still see who it was.
    assert browser.get(f"{base}revisions/2.json").json()["written"]["input"]["user"] == member.username
