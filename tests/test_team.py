"""The team on the board: roles (a viewer watches, an editor acts, an admin runs the
project, staff run every project), and the project's settings pages (members, tokens,
share links, webhooks, policy), all through the real URLs and middleware."""

from __future__ import annotations

import json
import re

import pytest
from django.contrib.auth.models import User
from django.test import Client

from tests.test_board_actions import PLAN, panel_config
from todoweb.models import ApiToken, Membership, Project, Session, ShareLink
from todoweb.writes.tokens import token_create

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


# --- who reaches the settings --------------------------------------------------------


def pages(project: Project) -> list[str]:
    return [f"/team/{project.slug}/{tab}/" for tab in ("members", "tokens", "links", "webhooks", "policy")]


def test_the_header_links_admins_to_the_settings_and_staff_to_the_admin(admin, editor, viewer, staff, session):
    for user, team, django_admin in (
        (admin, True, False),
        (editor, False, False),
        (viewer, False, False),
        (staff, True, True),
    ):
        html = logged_in(user).get("/").content.decode()
        assert ('href="/team/"' in html) is team, user
        assert ('href="/admin/"' in html) is django_admin, user


def test_an_admin_reaches_every_page_of_their_project(admin, project):
    client = logged_in(admin)
    index = client.get("/team/")
    assert index.status_code == 200 and f'href="/team/{project.slug}/members/"' in index.content.decode()
    assert client.get(f"/team/{project.slug}/").url == f"/team/{project.slug}/members/"
    for url in pages(project):
        response = client.get(url)
        assert response.status_code == 200, url
        assert response["Cache-Control"].startswith("max-age=0") or "no-cache" in response["Cache-Control"]


def test_members_who_are_not_admins_get_403_and_others_404(editor, viewer, outsider, project):
    for user in (editor, viewer):
        client = logged_in(user)
        assert client.get("/team/").status_code == 403
        for url in pages(project):
            response = client.get(url)
            assert response.status_code == 403, url
            assert "not one of its admins" in response.content.decode()
        assert client.post(f"/team/{project.slug}/tokens/", {"name": "x", "scope": "write"}).status_code == 403
    client = logged_in(outsider)
    for url in pages(project):
        assert client.get(url).status_code == 404
    assert client.post(f"/team/{project.slug}/tokens/", {"name": "x", "scope": "write"}).status_code == 404
    assert not ApiToken.objects.filter(project=project).exists()


def test_a_logged_out_visitor_is_sent_to_log_in(client, project):
    response = client.get(f"/team/{project.slug}/members/")
    assert response.status_code == 302 and response.url.startswith("/accounts/login/")


def test_staff_run_every_project_without_being_members(staff, project, outsider):
    client = logged_in(staff)
    html = client.get("/team/").content.decode()
    assert "/team/alpha/members/" in html and "/team/other/members/" in html
    for url in pages(project) + pages(Project.objects.get(slug="other")):
        assert client.get(url).status_code == 200, url


def test_the_forms_need_the_csrf_token(admin, project):
    client = logged_in(admin, csrf=True)
    assert client.post(f"/team/{project.slug}/tokens/", {"name": "x", "scope": "write"}).status_code == 403
    page = client.get(f"/team/{project.slug}/tokens/")
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.content.decode()).group(1)
    made = client.post(f"/team/{project.slug}/tokens/", {"name": "x", "scope": "write", "csrfmiddlewaretoken": token})
    assert made.status_code == 302 and ApiToken.objects.filter(project=project).count() == 1


def test_the_project_switcher_goes_to_a_project_the_user_runs(staff, project, outsider):
    client = logged_in(staff)
    assert client.get("/team/?project=other").url == "/team/other/members/"
    assert client.get("/team/?project=nope").status_code == 200


# --- members -------------------------------------------------------------------------


def test_an_admin_adds_a_member_by_username_or_e_mail(admin, project):
    User.objects.create_user("newbie", email="New.Bie@Example.com")
    User.objects.create_user("other", email="other@example.com")
    client = logged_in(admin)
    url = f"/team/{project.slug}/members/"
    response = client.post(url, {"who": "newbie", "role": "viewer"}, follow=True)
    assert "newbie is now a member (viewer)." in response.content.decode()
    assert Membership.objects.get(user__username="newbie").role == "viewer"
    client.post(url, {"who": "OTHER@example.com", "role": "editor"})
    assert Membership.objects.get(user__username="other").role == "editor"


@pytest.mark.parametrize(
    ("who", "role", "message"),
    [
        ("", "editor", "This field is required."),
        ("ghost", "editor", "No active account is called ghost or has that e-mail"),
        ("ada", "editor", "ada is a member already"),
        ("twin@example.com", "editor", "Several accounts have the e-mail twin@example.com"),
        ("sleepy", "editor", "No active account is called sleepy"),
        ("newbie", "owner", "Select a valid choice."),
    ],
)
def test_adding_a_member_says_what_is_wrong(admin, project, who, role, message):
    User.objects.create_user("newbie")
    User.objects.create_user("twin1", email="twin@example.com")
    User.objects.create_user("twin2", email="TWIN@example.com")
    User.objects.create_user("sleepy", is_active=False)
    response = logged_in(admin).post(f"/team/{project.slug}/members/", {"who": who, "role": role})
    assert response.status_code == 400
    assert message in response.content.decode()
    assert Membership.objects.filter(project=project).count() == 1


def test_names_are_escaped(admin, project):
    User.objects.create_user("x", first_name="<script>alert(1)</script>", email="a<b>@example.com")
    logged_in(admin).post(f"/team/{project.slug}/members/", {"who": "x", "role": "viewer"})
    html = logged_in(admin).get(f"/team/{project.slug}/members/").content.decode()
    assert "<script>alert(1)" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_an_admin_changes_a_role_and_removes_a_member_after_confirming(admin, editor, project):
    client = logged_in(admin)
    response = client.post(f"/team/{project.slug}/members/{editor.pk}/role", {"role": "viewer"}, follow=True)
    assert "eddie is now viewer." in response.content.decode()
    assert Membership.objects.get(user=editor).role == "viewer"
    confirm = client.get(f"/team/{project.slug}/members/{editor.pk}/remove")
    assert confirm.status_code == 200 and "Remove eddie from alpha?" in confirm.content.decode()
    assert Membership.objects.filter(user=editor).exists()  # asking removes nothing
    client.post(f"/team/{project.slug}/members/{editor.pk}/remove")
    assert not Membership.objects.filter(user=editor).exists()
    assert client.post(f"/team/{project.slug}/members/{editor.pk}/role", {"role": "admin"}).status_code == 404


def test_the_last_admin_may_not_leave_but_staff_may_take_them_off(admin, staff, project):
    client = logged_in(admin)
    response = client.post(f"/team/{project.slug}/members/{admin.pk}/role", {"role": "editor"}, follow=True)
    assert "ada is the project&#x27;s only admin" in response.content.decode()
    client.post(f"/team/{project.slug}/members/{admin.pk}/remove")
    assert Membership.objects.get(user=admin).role == "admin"
    logged_in(staff).post(f"/team/{project.slug}/members/{admin.pk}/role", {"role": "editor"})
    assert Membership.objects.get(user=admin).role == "editor"


def test_an_admin_who_leaves_goes_back_to_the_dashboard(admin, project):
    second = user_in(project, "bea", Membership.Role.ADMIN)
    response = logged_in(admin).post(f"/team/{project.slug}/members/{admin.pk}/remove")
    assert response.url == "/"
    assert list(Membership.objects.values_list("user", flat=True)) == [second.pk]


def test_members_of_another_project_are_out_of_reach(admin, project, outsider):
    client = logged_in(admin)
    assert client.post(f"/team/{project.slug}/members/{outsider.pk}/role", {"role": "viewer"}).status_code == 404
    assert client.post(f"/team/{project.slug}/members/{outsider.pk}/remove").status_code == 404
    assert Membership.objects.get(user=outsider).role == "admin"


# --- tokens --------------------------------------------------------------------------


def test_an_admin_creates_a_token_shown_once_and_revokes_it_after_confirming(admin, project, client):
    admin_client = logged_in(admin)
    url = f"/team/{project.slug}/tokens/"
    made = admin_client.post(url, {"name": "CI <bot>", "scope": "read"})
    assert made.status_code == 302 and made.url == url  # a reload makes no second token
    html = admin_client.get(url).content.decode()
    raw = re.search(r'id="revealed-value" class="secret" readonly value="(tw_[^"]+)"', html).group(1)
    assert "CI &lt;bot&gt;" in html and "CI <bot>" not in html
    token = ApiToken.objects.get(project=project)
    assert (token.name, token.scope, token.prefix) == ("CI <bot>", "read", raw[:10])
    # Shown once: the list never shows it again.
    assert raw not in admin_client.get(url).content.decode()
    # It works, read only.
    sessions = client.get("/api/v1/sessions", headers={"Authorization": f"Bearer {raw}"})
    assert sessions.status_code == 200

    revoke = f"/team/{project.slug}/tokens/{token.pk}/revoke"
    confirm = admin_client.get(revoke)
    assert confirm.status_code == 200 and "Revoke the token CI &lt;bot&gt;" in confirm.content.decode()
    assert ApiToken.objects.get(pk=token.pk).revoked_at is None
    done = admin_client.post(revoke, follow=True)
    assert "Revoked the token" in done.content.decode()
    assert ApiToken.objects.get(pk=token.pk).revoked_at is not None
    assert client.get("/api/v1/sessions", headers={"Authorization": f"Bearer {raw}"}).status_code == 401
    listed = admin_client.get(url).content.decode()
    assert "revoked" in listed and f"/tokens/{token.pk}/revoke" not in listed


@pytest.mark.parametrize(
    ("body", "message"),
    [({"scope": "write"}, "This field is required."), ({"name": "x", "scope": "admin"}, "Select a valid choice.")],
)
def test_a_bad_token_form_says_why_and_makes_nothing(admin, project, body, message):
    response = logged_in(admin).post(f"/team/{project.slug}/tokens/", body)
    assert response.status_code == 400 and message in response.content.decode()
    assert not ApiToken.objects.exists()


def test_tokens_of_another_project_are_out_of_reach(admin, project, outsider):
    token_create(project_slug="other")
    other = ApiToken.objects.get(project__slug="other")
    client = logged_in(admin)
    assert other.prefix not in client.get(f"/team/{project.slug}/tokens/").content.decode()
    assert client.post(f"/team/{project.slug}/tokens/{other.pk}/revoke").status_code == 404
    assert client.post(f"/team/other/tokens/{other.pk}/revoke").status_code == 404
    assert ApiToken.objects.get(pk=other.pk).revoked_at is None


# --- share links ---------------------------------------------------------------------


def share(api, key: str = "run-1") -> str:
    response = api.post(f"/api/v1/sessions/{key}/share", {})
    assert response.status_code == 201
    return response.json()["url"]


def test_an_admin_lists_and_revokes_a_share_link(admin, api, session, client):
    first, second = share(api), share(api)
    admin_client = logged_in(admin)
    url = f"/team/{session.project.slug}/links/"
    html = admin_client.get(url).content.decode()
    assert html.count('/revoke"') == 2 and "expires in" in html and session.key in html
    assert "sh_" not in html  # the raw links stay with whoever made them
    link = ShareLink.objects.order_by("pk").first()
    confirm = admin_client.get(f"{url}{link.pk}/revoke")
    assert confirm.status_code == 200 and "Revoke this share link?" in confirm.content.decode()
    assert client.get(first).status_code == 200
    admin_client.post(f"{url}{link.pk}/revoke")
    assert client.get(first).status_code == 403 and client.get(second).status_code == 200
    listed = admin_client.get(url).content.decode()
    assert 'id="ended-links"' in listed and "revoked" in listed


def test_revoke_all_asks_first_then_ends_every_link_of_the_project(admin, api, session, client, project):
    links = [share(api), share(api)]
    other = Project.objects.create(name="O", slug="o")
    untouched = ShareLink.objects.create(
        session=Session.objects.create(project=other, key="x"),
        digest="d",
        expires_at=ShareLink.objects.first().expires_at,
    )
    admin_client = logged_in(admin)
    confirm = admin_client.get(f"/team/{project.slug}/links/revoke-all")
    assert confirm.status_code == 200 and "2 links stop working" in confirm.content.decode()
    assert all(client.get(link).status_code == 200 for link in links)
    done = admin_client.post(f"/team/{project.slug}/links/revoke-all", follow=True)
    assert "Revoked 2 links." in done.content.decode()
    assert all(client.get(link).status_code == 403 for link in links)
    assert ShareLink.objects.get(pk=untouched.pk).revoked_at is None
    # Nothing left to revoke: the page says so rather than asking.
    again = admin_client.get(f"/team/{project.slug}/links/revoke-all", follow=True)
    assert "nothing to revoke" in again.content.decode()


# --- webhooks ------------------------------------------------------------------------


def test_an_admin_adds_an_endpoint_sees_its_secret_once_tests_it_and_deletes_it(admin, project):
    from tests.test_webhooks import run_queue
    from tests.webhook_receiver import Receiver
    from todoweb.webhooks import enqueue

    enqueue._cache.clear()
    client = logged_in(admin)
    url = f"/team/{project.slug}/webhooks/"
    with Receiver() as receiver:
        made = client.post(
            url, {"url": receiver.url, "events": ["session.completed", "step.failed"], "format": "standard"}
        )
        assert made.status_code == 302 and made.url == url
        shown = client.get(url).content.decode()
        secret = re.search(r'value="(whsec_[^"]+)"', shown).group(1)
        assert "Added the endpoint" in shown
        listed = client.get(url).content.decode()
        assert secret not in listed and receiver.url in listed and "session.completed, step.failed" in listed
        endpoint = project.webhooks.get()
        assert endpoint.secret == secret and endpoint.site_url == "http://testserver"

        sent = client.post(f"{url}{endpoint.pk}/test", follow=True)
        assert "A test event is on its way" in sent.content.decode()
        assert run_queue() == 1
        (got,) = receiver.wait_for(1)
        assert got.json()["type"] == "webhook.test"
        log = client.get(url).content.decode()
        assert "webhook.test" in log and "delivered" in log and "<strong>200</strong>" in log and " ms" in log

    confirm = client.get(f"{url}{endpoint.pk}/delete")
    assert confirm.status_code == 200 and "Delete this webhook endpoint?" in confirm.content.decode()
    assert project.webhooks.exists()
    client.post(f"{url}{endpoint.pk}/delete")
    assert not project.webhooks.exists()
    enqueue._cache.clear()


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            {"url": "ftp://x.example/", "events": ["session.idle"], "format": "standard"},
            "url: an http or https address",
        ),
        ({"url": "https://x.example/", "format": "standard"}, "Choose at least one event."),
        ({"url": "https://x.example/", "events": ["nope"], "format": "standard"}, "Select a valid choice."),
        ({"url": "https://x.example/", "events": ["session.idle"], "format": "teams"}, "Select a valid choice."),
    ],
)
def test_a_bad_endpoint_says_why_and_makes_nothing(admin, project, body, message):
    response = logged_in(admin).post(f"/team/{project.slug}/webhooks/", body)
    assert response.status_code == 400 and message in response.content.decode()
    assert not project.webhooks.exists()


def test_a_private_address_is_refused_unless_allowed(admin, project, settings):
    settings.TODOWEB_WEBHOOKS_ALLOW_PRIVATE = False
    body = {"url": "http://127.0.0.1:9/hook", "events": ["session.created"], "format": "slack"}
    response = logged_in(admin).post(f"/team/{project.slug}/webhooks/", body)
    assert response.status_code == 400 and "TODOWEB_WEBHOOKS_ALLOW_PRIVATE" in response.content.decode()


def test_a_disabled_endpoint_shows_why_and_is_enabled_again(admin, project):
    from django.utils import timezone

    from todoweb.webhooks import endpoints

    endpoint = endpoints.create(project, url="https://x.example/in", wanted=["session.created"])
    endpoint.disabled_at = timezone.now()
    endpoint.disabled_reason = "Every delivery failed for 3 days: <HTTP 500>"
    endpoint.save()
    client = logged_in(admin)
    url = f"/team/{project.slug}/webhooks/"
    html = client.get(url).content.decode()
    assert "disabled" in html and "&lt;HTTP 500&gt;" in html and "Enable again" in html
    client.post(f"{url}{endpoint.pk}/enable")
    assert project.webhooks.get().disabled_at is None
    assert "Enable again" not in client.get(url).content.decode()


def test_endpoints_of_another_project_are_out_of_reach(admin, project, outsider):
    from todoweb.webhooks import endpoints

    other = endpoints.create(Project.objects.get(slug="other"), url="https://x.example/in", wanted=["session.created"])
    client = logged_in(admin)
    assert "x.example" not in client.get(f"/team/{project.slug}/webhooks/").content.decode()
    for action in ("test", "enable", "delete"):
        assert client.post(f"/team/{project.slug}/webhooks/{other.pk}/{action}").status_code == 404
    assert other.deliveries.count() == 0 and type(other).objects.filter(pk=other.pk).exists()


# --- policy --------------------------------------------------------------------------


def test_an_admin_edits_the_policy_and_the_next_write_follows_it(admin, project, api):
    client = logged_in(admin)
    url = f"/team/{project.slug}/policy/"
    body = {
        "name": "Alpha team",
        "single_in_progress": "reject",
        "max_items": "2",
        "max_content_chars": "50",
        "reply_style": "native",
    }
    saved = client.post(url, body, follow=True)
    assert "Policy saved" in saved.content.decode()
    project.refresh_from_db()
    assert (project.name, project.single_in_progress, project.max_items, project.reply_style) == (
        "Alpha team",
        "reject",
        2,
        "native",
    )
    refused = api.call("run-9", "TodoWrite", {"todos": PLAN})
    assert refused.status_code == 422 and "at most 2" in refused.json()["error"]["message"]


@pytest.mark.parametrize(
    ("field", "value"), [("max_items", "0"), ("max_items", "many"), ("max_content_chars", "0"), ("reply_style", "loud")]
)
def test_a_bad_policy_says_why_and_keeps_the_old_one(admin, project, field, value):
    body = {
        "name": "Alpha",
        "single_in_progress": "warn",
        "max_items": "100",
        "max_content_chars": "2000",
        "reply_style": "checklist",
    }
    response = logged_in(admin).post(f"/team/{project.slug}/policy/", body | {field: value})
    assert response.status_code == 400 and 'class="error"' in response.content.decode()
    project.refresh_from_db()
    assert (project.max_items, project.max_content_chars, project.reply_style) == (100, 2000, "checklist")


# --- the admin -----------------------------------------------------------------------


def test_staff_set_members_and_roles_in_the_admin(project, editor):
    root = User.objects.create_superuser("root", "", "pw")
    client = logged_in(root)
    url = f"/admin/todoweb/project/{project.pk}/change/"
    page = client.get(url)
    assert page.status_code == 200 and "viewers watch; editors also act on sessions" in page.content.decode()
    newbie = User.objects.create_user("newbie")
    existing = Membership.objects.get(user=editor)
    body = {
        "name": project.name,
        "slug": project.slug,
        "single_in_progress": "warn",
        "max_items": "100",
        "max_content_chars": "2000",
        "reply_style": "checklist",
        "memberships-TOTAL_FORMS": "2",
        "memberships-INITIAL_FORMS": "1",
        "memberships-MIN_NUM_FORMS": "0",
        "memberships-MAX_NUM_FORMS": "1000",
        "memberships-0-id": str(existing.pk),
        "memberships-0-project": str(project.pk),
        "memberships-0-user": str(editor.pk),
        "memberships-0-role": "viewer",
        "memberships-1-project": str(project.pk),
        "memberships-1-user": str(newbie.pk),
        "memberships-1-role": "admin",
    }
    response = client.post(url, body)
    assert response.status_code == 302, response.content.decode()[:2000]
    assert dict(Membership.objects.filter(project=project).values_list("user__username", "role")) == {
        "eddie": "viewer",
        "newbie": "admin",
    }
