"""The staff console: every model's pages, the token shown once, actions."""

from __future__ import annotations

import re

import pytest

from todoweb.models import ApiToken, Session


@pytest.fixture
def staff_client(client, django_user_model):
    user = django_user_model.objects.create_superuser("root", "", "pw")
    client.force_login(user)
    return client


def test_it_lists_and_opens_every_model(staff_client, api):
    api.call("s1", "TodoWrite", {"todos": [{"content": "<b>bold</b>", "status": "pending", "activeForm": "x"}]})
    session = Session.objects.get()
    for url in [
        "/admin/todoweb/project/",
        "/admin/todoweb/apitoken/",
        "/admin/todoweb/session/",
        f"/admin/todoweb/session/{session.pk}/change/",
        "/admin/todoweb/revision/",
        f"/admin/todoweb/revision/{session.revisions.get().pk}/change/",
        "/admin/todoweb/sharelink/",
        "/admin/todoweb/apitoken/add/",
    ]:
        r = staff_client.get(url)
        assert r.status_code == 200, url
    page = staff_client.get(f"/admin/todoweb/session/{session.pk}/change/").content.decode()
    assert "&lt;b&gt;bold&lt;/b&gt;" in page and "<b>bold</b>" not in page


def test_it_shows_a_new_token_once_and_stores_only_its_digest(staff_client, project):
    r = staff_client.post(
        "/admin/todoweb/apitoken/add/", {"project": project.pk, "name": "bot", "scope": "write"}, follow=True
    )
    raw = re.search(r"tw_[A-Za-z0-9_-]{20,}", r.content.decode()).group(0)
    token = ApiToken.objects.get()
    assert token.digest != raw and raw.startswith(token.prefix)
    again = staff_client.get(f"/admin/todoweb/apitoken/{token.pk}/change/").content.decode()
    assert raw not in again


def test_it_revokes_tokens(staff_client, token):
    pk = ApiToken.objects.get().pk
    staff_client.post("/admin/todoweb/apitoken/", {"action": "revoke", "_selected_action": [pk]})
    assert ApiToken.objects.get().revoked_at is not None


def test_it_closes_and_archives_sessions(staff_client, api):
    api.call("s1", "TodoWrite", {"todos": []})
    pk = Session.objects.get().pk
    staff_client.post("/admin/todoweb/session/", {"action": "close", "_selected_action": [pk]})
    assert Session.objects.get().state == "closed"
    staff_client.post("/admin/todoweb/session/", {"action": "archive", "_selected_action": [pk]})
    assert Session.objects.get().archived_at is not None


def test_it_keeps_revisions_read_only(staff_client, api):
    api.call("s1", "TodoWrite", {"todos": []})
    pk = Session.objects.get().revisions.get().pk
    r = staff_client.post(f"/admin/todoweb/revision/{pk}/change/", {"tool": "hacked"})
    assert r.status_code == 403
    assert staff_client.get("/admin/todoweb/revision/add/").status_code == 403


def test_it_filters_sessions_by_state(staff_client, api):
    api.call("busy", "TodoWrite", {"todos": [{"content": "a", "status": "in_progress", "activeForm": "a"}]})
    api.call("done", "TodoWrite", {"todos": [{"content": "a", "status": "completed", "activeForm": "a"}]})
    page = staff_client.get("/admin/todoweb/session/?state=completed").content.decode()
    assert ">done<" in page and ">busy<" not in page


def test_it_renames_through_the_service_without_touching_the_counters(staff_client, api):
    api.call("s1", "TodoWrite", {"todos": []})
    session = Session.objects.get()
    page = staff_client.get(f"/admin/todoweb/session/{session.pk}/change/")
    assert page.status_code == 200
    api.call("s1", "TodoWrite", {"todos": []})  # moves the revision on after the form was read
    r = staff_client.post(
        f"/admin/todoweb/session/{session.pk}/change/",
        {
            "title": "Renamed",
            "steps-TOTAL_FORMS": 0,
            "steps-INITIAL_FORMS": 0,
            "steps-MIN_NUM_FORMS": 0,
            "steps-MAX_NUM_FORMS": 1000,
        },
    )
    assert r.status_code == 302
    session.refresh_from_db()
    assert session.title == "Renamed" and session.revision == 2
    assert api.call("s1", "TodoWrite", {"todos": []}).json()["data"]["revision"] == 3


def test_it_revokes_share_links_from_the_admin(staff_client, api):
    from todoweb.models import ShareLink

    api.call("s1", "TodoWrite", {"todos": []})
    api.post("/api/v1/sessions/s1/share", {})
    pk = ShareLink.objects.get().pk
    staff_client.post("/admin/todoweb/sharelink/", {"action": "revoke", "_selected_action": [pk]})
    assert ShareLink.objects.get().revoked_at is not None
