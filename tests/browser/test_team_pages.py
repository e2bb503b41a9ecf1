"""The team on the board in a real browser: a project's admin adds a member, makes them
a viewer (whose panel has no controls and whose actions are refused), creates and
revokes a token, revokes share links (one, then all after confirming), adds a webhook
endpoint and sends it a test event that a listener on the loopback receives."""

from __future__ import annotations

import re

import httpx
import pytest
from django.contrib.auth.models import User
from playwright.sync_api import expect
from standardwebhooks import Webhook

from tests.test_webhooks import run_queue
from tests.webhook_receiver import Receiver
from todoweb.models import ApiToken, Membership, Project, Session, ShareLink
from todoweb.webhooks import enqueue

pytestmark = pytest.mark.browser

PLAN = [("Read the issue", "completed"), ("Write the fix", "in_progress"), ("Run the tests", "pending")]


@pytest.fixture
def admin(project) -> User:
    user = User.objects.create_user("ada", email="ada@example.com", password="pw")
    Membership.objects.create(project=project, user=user, role=Membership.Role.ADMIN)
    return user


def public_id(key: str) -> str:
    return Session.objects.get(key=key).public_id


def open_team(page, tab: str) -> None:
    """From the dashboard, through the header's link, to one of the project's pages."""
    page.goto("/")
    page.get_by_role("navigation", name="Account").get_by_role("link", name="Team").click()
    page.get_by_role("link", name="Alpha").click()
    expect(page.get_by_role("heading", name=re.compile("^Alpha"))).to_be_visible()
    page.get_by_role("navigation", name="Project settings").get_by_role("link", name=tab).click()
    expect(page.get_by_role("link", name=tab)).to_have_attribute("aria-current", "page")


def fits(page) -> None:
    """Nothing wider than the window: no sideways scrolling of the page."""
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


def member_row(page, username: str):
    return page.locator("#members .row", has=page.locator(".name", has_text=re.compile(f"^{username}$")))


def test_an_admin_adds_a_member_makes_them_a_viewer_who_watches_but_cannot_edit(shot, page_for, agent, admin):
    agent.todo_write("run-1", PLAN)
    vic = User.objects.create_user("vic", email="Vic@Example.com", password="pw")
    page = page_for(admin)
    open_team(page, "Members")

    # A wrong name says why, and keeps what was typed.
    page.get_by_label("Username or e-mail").fill("nobody-here")
    page.get_by_role("button", name="Add member").click()
    expect(page.get_by_role("alert")).to_contain_text("No active account is called nobody-here")
    expect(page.get_by_label("Username or e-mail")).to_have_value("nobody-here")

    page.get_by_label("Username or e-mail").fill("vic@example.com")
    page.get_by_label("Role", exact=True).select_option("editor")
    page.get_by_role("button", name="Add member").click()
    expect(page.get_by_role("status").filter(has_text="vic is now a member (editor).")).to_be_visible()
    row = member_row(page, "vic")
    expect(row.get_by_label("Role of vic")).to_have_value("editor")

    # The editor's panel has the controls.
    watcher = page_for(vic)
    watcher.goto(f"/s/{public_id('run-1')}/")
    expect(watcher.locator("#panel")).to_have_attribute("data-connection", "live")
    expect(watcher.get_by_role("button", name="Edit plan")).to_be_visible()

    row.get_by_label("Role of vic").select_option("viewer")
    row.get_by_role("button", name="Change role").click()
    expect(page.get_by_role("status").filter(has_text="vic is now viewer.")).to_be_visible()
    assert Membership.objects.get(user=vic).role == "viewer"

    # The viewer's panel: live, no control at all, and the server refuses their edit.
    watcher.reload()
    expect(watcher.locator("#panel")).to_have_attribute("data-connection", "live")
    expect(watcher.locator(".step")).to_have_count(3)
    for name in ["Rename", "Close", "Share…", "Archive…", "Edit plan", "Send to the agent"]:
        expect(watcher.get_by_role("button", name=name, exact=True)).to_have_count(0)
    expect(watcher.locator("#note-form")).to_have_count(0)
    assert watcher.evaluate("JSON.parse(document.getElementById('panel-config').textContent).actions") is None
    csrf = next(c["value"] for c in watcher.context.cookies() if c["name"] == "csrftoken")
    refused = watcher.request.post(
        f"/s/{public_id('run-1')}/actions/edits",
        data='{"todos": [{"content": "Do it my way", "status": "pending"}]}',
        headers={"Content-Type": "application/json", "X-CSRFToken": csrf, "If-Match": "1"},
    )
    assert refused.status == 403 and "viewer" in refused.json()["error"]["message"]
    assert Session.objects.get(key="run-1").revision == 1
    # Still watching live.
    agent.todo_write("run-1", [*PLAN, ("Ship it", "pending")])
    expect(watcher.locator(".step")).to_have_count(4)

    # Removed (after confirming), the viewer's open panel stops at once.
    row.get_by_role("link", name="Remove…").click()
    expect(page.get_by_role("heading", name="Remove vic from alpha?")).to_be_visible()
    page.get_by_role("link", name="Cancel").click()
    expect(member_row(page, "vic")).to_be_visible()
    member_row(page, "vic").get_by_role("link", name="Remove…").click()
    page.get_by_role("button", name="Remove vic").click()
    expect(page.get_by_role("status").filter(has_text="vic is no longer a member of alpha.")).to_be_visible()
    expect(member_row(page, "vic")).to_have_count(0)
    expect(watcher.locator("#conn")).to_have_text("No access")
    shot(page, "team-members")
    assert page.errors == [] and watcher.errors == []


def test_an_admin_creates_a_token_shown_once_and_revokes_it(page_for, asgi_server, admin, project):
    page = page_for(admin)
    open_team(page, "Tokens")
    page.get_by_role("button", name="Create token").click()
    expect(page.get_by_role("alert")).to_have_text("This field is required.")

    page.get_by_label("Name").fill("CI runner")
    page.get_by_label("Scope").select_option("read")
    page.get_by_role("button", name="Create token").click()
    shown = page.get_by_label("The new token")
    expect(shown).to_have_value(re.compile(r"^tw_"))
    raw = shown.input_value()
    row = page.locator("#tokens .row", has_text="CI runner")
    expect(row).to_contain_text("read")
    expect(row).to_contain_text("never used")

    api = httpx.Client(base_url=asgi_server.url, headers={"Authorization": f"Bearer {raw}"}, timeout=10)
    assert api.get("/api/v1/sessions").status_code == 200
    page.reload()  # the raw token is gone from the page once left
    expect(page.get_by_label("The new token")).to_have_count(0)
    expect(row).to_contain_text("last used")

    row.get_by_role("link", name="Revoke…").click()
    expect(page.get_by_role("heading", name=re.compile("^Revoke the token CI runner"))).to_be_visible()
    assert ApiToken.objects.get(name="CI runner").revoked_at is None
    page.get_by_role("button", name="Revoke the token").click()
    expect(page.get_by_role("status").filter(has_text="Revoked the token CI runner")).to_be_visible()
    expect(row.locator(".badge.off")).to_contain_text("revoked")
    expect(row.get_by_role("link", name="Revoke…")).to_have_count(0)
    assert api.get("/api/v1/sessions").status_code == 401
    assert page.errors == []


def test_an_admin_revokes_a_share_link_then_all_after_confirming(page_for, agent, admin):
    agent.todo_write("to-share", PLAN)
    page = page_for(admin)
    # A link made on the panel, as any editor makes one.
    page.goto(f"/s/{public_id('to-share')}/")
    expect(page.locator("#panel")).to_have_attribute("data-connection", "live")
    page.get_by_role("button", name="Share…").click()
    page.get_by_label("Expires after").select_option(label="1 hour")
    page.get_by_role("button", name="Create link").click()
    made = page.get_by_label(re.compile("^New link"))
    expect(made).to_have_value(re.compile(r"\?share=sh_"))
    link = made.input_value()
    others = [agent.http.post("/api/v1/sessions/to-share/share", json={}).json()["url"] for _ in range(2)]

    outsider = page_for()
    outsider.goto(link)
    expect(outsider.locator("#panel")).to_have_attribute("data-connection", "live")

    open_team(page, "Share links")
    rows = page.locator("#live-links .row")
    expect(rows).to_have_count(3)
    # Soonest to expire first: the panel's one-hour link.
    expect(rows.first).to_contain_text("expires in 59 minutes")
    rows.first.get_by_role("link", name="Revoke…").click()
    expect(page.get_by_role("heading", name="Revoke this share link?")).to_be_visible()
    page.get_by_role("button", name="Revoke the link").click()
    expect(page.get_by_role("status").filter(has_text="Revoked the link to “to-share”.")).to_be_visible()
    expect(rows).to_have_count(2)
    expect(page.locator("#ended-links .row")).to_have_count(1)
    expect(outsider.locator("#conn")).to_have_text("Link ended")

    # Revoke all asks first; cancelling revokes nothing.
    page.get_by_role("link", name="Revoke all…").click()
    expect(page.get_by_text("2 links stop working")).to_be_visible()
    page.get_by_role("link", name="Cancel").click()
    expect(rows).to_have_count(2)
    assert ShareLink.objects.filter(revoked_at__isnull=True).count() == 2
    page.get_by_role("link", name="Revoke all…").click()
    page.get_by_role("button", name="Revoke all links").click()
    expect(page.get_by_role("status").filter(has_text="Revoked 2 links.")).to_be_visible()
    expect(page.locator("#live-links .row.empty")).to_have_text("No share link of this project works now.")
    expect(page.get_by_role("link", name="Revoke all…")).to_have_count(0)
    for url in others:
        outsider.goto(url)
        expect(outsider.get_by_text("This link no longer works")).to_be_visible()
    assert page.errors == [] and outsider.errors == []


def test_an_admin_adds_a_webhook_and_sends_it_a_test_event(page_for, admin, project, settings):
    settings.TODOWEB_WEBHOOKS_ALLOW_PRIVATE = True
    enqueue._cache.clear()
    page = page_for(admin)
    with Receiver() as receiver:
        open_team(page, "Webhooks")
        page.get_by_label("URL").fill(receiver.url)
        page.get_by_role("button", name="Add endpoint").click()
        expect(page.get_by_role("alert")).to_have_text("Choose at least one event.")
        expect(page.get_by_label("URL")).to_have_value(receiver.url)

        page.get_by_label("session.completed").check()
        page.get_by_label("step.failed").check()
        page.get_by_label("Format").select_option("standard")
        page.get_by_role("button", name="Add endpoint").click()
        secret = page.get_by_label("The signing secret")
        expect(secret).to_have_value(re.compile(r"^whsec_"))
        signing = secret.input_value()
        endpoint = page.locator("#endpoints .endpoint", has_text=receiver.url)
        expect(endpoint).to_contain_text("session.completed, step.failed")
        expect(endpoint.locator(".badge.on")).to_have_text("enabled")

        endpoint.get_by_role("button", name="Send a test event").click()
        expect(page.get_by_role("status").filter(has_text="A test event is on its way")).to_be_visible()
        expect(page.get_by_label("The signing secret")).to_have_count(0)  # shown once
        # The delivery waits in the queue: the test delivers it as the worker would.
        expect(endpoint.locator(".delivery")).to_have_count(1)
        expect(endpoint.locator(".delivery .status")).to_have_text("pending")
        assert run_queue() == 1
        (got,) = receiver.wait_for(1)
        payload = Webhook(signing).verify(got.body, got.headers)
        assert payload["type"] == "webhook.test" and payload["data"]["session"]["project"] == "alpha"

        # The page follows the delivery until it has been tried: no reload.
        delivery = endpoint.locator(".delivery")
        expect(delivery.locator(".status")).to_have_text("delivered")
        expect(delivery.locator(".answer")).to_contain_text("200")
        expect(delivery).to_contain_text(re.compile(r"\d+ ms"))

    endpoint.get_by_role("link", name="Delete…").click()
    expect(page.get_by_role("heading", name="Delete this webhook endpoint?")).to_be_visible()
    page.get_by_role("button", name="Delete the endpoint").click()
    expect(page.locator("#endpoints .row.empty")).to_have_text("No endpoints yet.")
    assert not project.webhooks.exists()
    enqueue._cache.clear()
    assert page.errors == []


@pytest.mark.parametrize("dark", [False, True])
def test_the_pages_fit_a_phone_in_both_themes(shot, page_for, admin, project, dark):
    from todoweb.webhooks import endpoints

    endpoints.create(project, url="https://hooks.example.com/" + "very-long-path/" * 8, wanted=["session.idle"])
    Project.objects.filter(pk=project.pk).update(name="A project with a rather long name for a phone")
    page = page_for(admin, phone=True, dark=dark)
    page.set_viewport_size({"width": 375, "height": 812})
    for tab in ("members", "tokens", "links", "webhooks", "policy"):
        page.goto(f"/team/{project.slug}/{tab}/")
        expect(page.locator(".tabs a[aria-current='page']")).to_be_visible()
        fits(page)
        shot(page, f"team-{tab}-phone-{'dark' if dark else 'light'}")
    # The theme follows the system: the page's background is dark in dark mode.
    background = page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert (background == "rgb(15, 18, 22)") is dark
    assert page.errors == []
