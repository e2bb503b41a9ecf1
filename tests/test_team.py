"""The team on the board: roles (a viewer watches, an editor acts, an admin runs the
project, staff run every project), and the project's settings pages (members, tokens,
share links, webhooks, policy), all through the real URLs and middleware."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import User
from django.test import Client

from tests.test_board_actions import PLAN, panel_config
from todoweb.models import Membership, Project, Session, ShareLink

ACTIONS = ["rename", "close", "reopen", "archive", "share", "share/revoke", "edits", "note", "answer"]


@pytest.fixture
def session(api) -> Session:
    assert api.call("run-1", "TodoWrite", {"todos": PLAN}).status_code == 200
    return Session.objects.get(key="run-1")


def user_in(project: Project, username: str, role: str, **extra) -> User:
    user = User.objects.create_user(username, email=f"{username}@example.com", password="pw", **extra)
    Membership.objects.create(project=project, user=user, role=role)
    return user


def logged_in(user: User, *, csrf: bool = False) -> Client:
    client = Client(enforce_csrf_checks=csrf)
    client.force_login(user)
    return client


@pytest.fixture
def viewer(project) -> User:
    return user_in(project, "vera", Membership.Role.VIEWER)


@pytest.fixture
def editor(project) -> User:
    return user_in(project, "eddie", Membership.Role.EDITOR)


@pytest.fixture
def admin(project) -> User:
    return user_in(project, "ada", Membership.Role.ADMIN)


@pytest.fixture
def staff(db) -> User:
    return User.objects.create_user("boss", password="pw", is_staff=True)


@pytest.fixture
def outsider(db) -> User:
    return user_in(Project.objects.create(name="Other", slug="other"), "otto", Membership.Role.ADMIN)


# --- roles on the panel --------------------------------------------------------------


def test_a_member_added_the_old_way_is_an_editor(project, member):
    assert Membership.objects.get(project=project, user=member).role == Membership.Role.EDITOR


def test_a_viewer_watches_the_panel_without_any_control(viewer, session):
    page = logged_in(viewer).get(session.get_absolute_url())
    assert page.status_code == 200
    html = page.content.decode()
    assert 'id="edit-button"' not in html and "Session actions" not in html and "share-box" not in html
    assert 'id="note-form"' not in html
    config = panel_config(page)
    assert "actions" not in config and "csrfToken" not in config
    assert config["ws"] == f"/ws/sessions/{session.public_id}/"


def test_an_editor_gets_the_controls(editor, session):
    page = logged_in(editor).get(session.get_absolute_url())
    assert 'id="edit-button"' in page.content.decode()
    assert "edits" in panel_config(page)["actions"]


@pytest.mark.parametrize("action", ACTIONS)
def test_every_action_refuses_a_viewer(viewer, editor, session, action):
    client = logged_in(viewer, csrf=True)
    # The viewer's page renders no token for actions: take one as an editor's page would.
    client.get(session.get_absolute_url())
    token = client.cookies["csrftoken"].value
    body = {"todos": PLAN, "text": "x", "title": "x", "question": 1, "decision": "allow"}
    response = client.post(
        f"/s/{session.public_id}/actions/{action}",
        data=json.dumps(body),
        content_type="application/json",
        headers={"X-CSRFToken": token, "If-Match": "1"},
    )
    assert response.status_code == 403, response.content
    error = response.json()["error"]
    assert error["code"] == "forbidden" and "viewer" in error["message"]
    fresh = Session.objects.get(pk=session.pk)
    assert (fresh.revision, fresh.title, fresh.closed_at, fresh.archived_at) == (1, "", None, None)
    assert not ShareLink.objects.exists() and not fresh.messages.exists()


def test_a_viewer_made_editor_may_act_and_an_editor_made_viewer_may_not(viewer, session):
    membership = Membership.objects.get(user=viewer)
    membership.role = Membership.Role.EDITOR
    membership.save()
    client = logged_in(viewer)
    config = panel_config(client.get(session.get_absolute_url()))
    assert client.post(config["actions"]["close"]).status_code == 200
    membership.role = Membership.Role.VIEWER
    membership.save()
    assert client.post(config["actions"]["reopen"]).status_code == 403
    assert Session.objects.get(pk=session.pk).closed_at is not None


def test_staff_act_on_every_project_without_being_members(staff, session):
    client = logged_in(staff)
    config = panel_config(client.get(session.get_absolute_url()))
    assert client.post(config["actions"]["close"]).status_code == 200


def test_a_non_member_gets_404_for_the_panel_and_its_actions(outsider, session):
    client = logged_in(outsider)
    assert client.get(session.get_absolute_url()).status_code == 404
    assert client.post(f"/s/{session.public_id}/actions/close").status_code == 404
