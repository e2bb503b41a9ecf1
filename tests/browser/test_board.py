"""The board in a real browser: live dashboard and panel, share links, hostile
text, the timeline, and reconnecting after the server drops the socket."""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor

import pytest
from playwright.sync_api import expect

from tests.conftest import MEMBER_PASSWORD
from todoweb.models import Session

pytestmark = pytest.mark.browser

PLAN = [("Read the issue", "completed"), ("Write the fix", "in_progress"), ("Run the tests", "pending")]


def public_id(key: str) -> str:
    return Session.objects.get(key=key).public_id


def write_and_close(api, key: str, todos: list[dict]):
    from django.db import connection

    try:
        return api.call(key, "TodoWrite", {"todos": todos})
    finally:
        connection.close()


def wait_live(page) -> None:
    expect(page.locator("[data-connection]").first).to_have_attribute("data-connection", "live")
    assert page.evaluate("window.todowebReady") is True


def test_it_logs_in_and_shows_a_new_session_on_the_dashboard_without_reload(shot, page_for, agent, member):
    agent.todo_write("older-run", [("Plan", "completed")])
    page = page_for()
    page.goto("/")
    expect(page).to_have_url(re.compile(r"/accounts/login/"))
    page.get_by_label("Username").fill(member.username)
    page.get_by_label("Password").fill(MEMBER_PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("heading", name="Sessions")).to_be_visible()
    wait_live(page)
    page.evaluate("window.notReloaded = true")

    agent.todo_write("fresh-run", PLAN)
    card = page.locator(".card", has_text="fresh-run")
    expect(card).to_be_visible()
    expect(card.locator(".count")).to_have_text("1/3")
    expect(card.locator(".current-text")).to_have_text("Write the fix now")
    expect(card.get_by_role("progressbar")).to_have_attribute("aria-valuenow", "33")
    # Newest activity first, and no reload happened.
    expect(page.locator("#sessions > .card").first).to_contain_text("fresh-run")
    assert page.evaluate("window.notReloaded") is True

    # Filters and search apply to live rows.
    page.get_by_placeholder("Search title or key").fill("older")
    expect(card).to_be_hidden()
    expect(page.locator(".card", has_text="older-run")).to_be_visible()
    page.get_by_placeholder("Search title or key").fill("")
    # The state filter is the totals at the top.
    page.locator("#totals .total[data-state='completed']").click()
    expect(card).to_be_hidden()
    page.locator("#totals .total[data-state='']").click()
    expect(card).to_be_visible()
    shot(page, "dashboard-desktop-light")
    assert page.errors == []


def test_it_shows_subagents_under_their_parent(page_for, agent, member, project):
    agent.todo_write("main-run", PLAN)
    agent.todo_write("main-run:helper", [("Search the code", "in_progress")])
    child = Session.objects.get(key="main-run:helper")
    child.parent = Session.objects.get(key="main-run")
    child.save(update_fields=["parent"])
    page = page_for(member)
    page.goto("/")
    wait_live(page)
    parent_card = page.locator("#sessions > .card", has_text="main-run").first
    expect(parent_card.locator(".children > .card")).to_contain_text("main-run:helper")


def test_it_moves_a_step_to_done_and_the_bar_within_a_second(shot, page_for, agent, member):
    agent.todo_write("run-1", PLAN)
    page = page_for(member)
    page.goto(f"/s/{public_id('run-1')}/")
    # Server-rendered before any script runs.
    expect(page.locator(".step")).to_have_count(3)
    wait_live(page)
    step = page.locator(".step", has_text="Write the fix")
    expect(step).to_have_class(re.compile("status-in_progress"))
    expect(step.locator(".active-form")).to_have_text("Write the fix now")
    expect(step.locator(".spinner")).to_have_count(1)
    expect(step.locator(".duration")).to_have_text(re.compile(r"^\d+s$"))  # a running clock

    agent.todo_write(
        "run-1", [("Read the issue", "completed"), ("Write the fix", "completed"), ("Run the tests", "in_progress")]
    )
    expect(step).to_have_class(re.compile("status-completed"))
    expect(page.locator("#bar")).to_have_attribute("aria-valuenow", "67")
    expect(page.locator("#count")).to_have_text("2/3")
    expect(page.locator("#announce")).to_have_text("2 of 3 steps completed. Now: Run the tests now.")
    expect(step.locator(".content")).to_have_css("text-decoration-line", "line-through")
    expect(page.locator("#revision")).to_have_text("2")
    shot(page, "panel-desktop-light")
    assert page.errors == []


def test_it_opens_a_share_link_logged_out_until_it_is_revoked(shot, page_for, agent, asgi_server):
    agent.todo_write("shared-run", PLAN)
    created = agent.http.post("/api/v1/sessions/shared-run/share", json={"expires_in": 3600})
    assert created.status_code == 201
    page = page_for()  # no login
    page.goto(created.json()["url"])
    wait_live(page)
    expect(page.locator(".badge.shared")).to_have_text("read-only link")
    agent.todo_write("shared-run", [(c, "completed") for c, _ in PLAN])
    expect(page.locator("#count")).to_have_text("3/3")
    expect(page.locator("#state")).to_have_text("completed")
    expect(page.get_by_role("link", name="Export Markdown")).to_have_attribute("href", re.compile(r"share="))
    shot(page, "panel-share")

    assert agent.http.delete("/api/v1/sessions/shared-run/share").status_code == 204
    expect(page.locator("#panel")).to_have_attribute("data-connection", "ended")
    expect(page.locator("#conn")).to_have_text("Link ended")
    page.reload()
    expect(page.get_by_role("heading", name="This link no longer works")).to_be_visible()
    assert page.request.get(created.json()["url"].replace("/?", "/export.json?")).status == 403


def test_it_shows_hostile_strings_as_text(shot, page_for, agent, member):
    script = "<script>window.pwned = 1</script>"
    image = '<img src=x onerror="window.pwned = 2">'
    agent.todo_write("hostile", [{"content": script, "status": "pending", "activeForm": "x"}])
    page = page_for(member)
    page.goto(f"/s/{public_id('hostile')}/")
    wait_live(page)
    agent.todo_write(
        "hostile",
        [
            {"content": script, "status": "completed", "activeForm": "x"},
            {"content": image, "status": "in_progress", "activeForm": image},
        ],
    )
    expect(page.locator(".step .content").nth(1)).to_have_text(image)
    expect(page.locator(".step .content").first).to_have_text(script)
    expect(page.locator(".step .active-form")).to_have_text(image)
    assert page.locator("#steps img").count() == 0
    assert page.evaluate("window.pwned") is None

    dashboard = page_for(member)
    dashboard.goto("/")
    wait_live(dashboard)
    expect(dashboard.locator(".card .current-text")).to_have_text(image)
    assert dashboard.locator("#sessions img").count() == 0
    assert dashboard.evaluate("window.pwned") is None
    shot(page, "panel-hostile")


AGENT_TEXT = [".content", ".active-form", "#title", ".key", ".card-title", ".current-text", ".warnings li"]


def test_it_isolates_agent_text_from_a_direction_override(page_for, agent, member):
    """U+202E in agent text reverses what follows it unless the text is isolated."""
    override = "evil\u202eexe.txt"
    agent.todo_write("rtl", [{"content": override, "status": "in_progress", "activeForm": override}])
    for path in [f"/s/{public_id('rtl')}/", "/"]:
        page = page_for(member)
        page.goto(path)
        wait_live(page)
        isolated = page.evaluate(
            """(selectors) => [...document.querySelectorAll(selectors.join(","))]
                 .filter((node) => node.textContent.includes("\u202e"))
                 .map((node) => getComputedStyle(node).unicodeBidi)""",
            AGENT_TEXT,
        )
        assert isolated and set(isolated) <= {"isolate", "isolate-override", "plaintext"}, (path, isolated)


def test_it_replays_an_earlier_revision_on_the_timeline(shot, page_for, agent, member):
    agent.todo_write("history", [("First", "in_progress"), ("Second", "pending")])
    agent.todo_write("history", [("First", "completed"), ("Second", "in_progress")])
    agent.todo_write("history", [("First", "completed"), ("Second", "completed"), ("Third", "in_progress")])
    page = page_for(member)
    page.goto(f"/s/{public_id('history')}/")
    wait_live(page)
    expect(page.locator(".step")).to_have_count(3)

    page.locator("#timeline").fill("1")
    expect(page.locator("#panel")).to_have_attribute("data-mode", "replay")
    expect(page.locator(".step")).to_have_count(2)
    expect(page.locator(".step", has_text="First")).to_have_class(re.compile("status-in_progress"))
    expect(page.locator("#timeline-value")).to_have_text("1")
    expect(page.locator("#replay-note")).to_contain_text("Replaying revision 1 of 3")

    # A new revision while replaying does not yank the view; Back to live shows it.
    agent.todo_write("history", [("First", "completed"), ("Second", "completed"), ("Third", "completed")])
    expect(page.locator("#timeline-max")).to_have_text("4")
    expect(page.locator(".step")).to_have_count(2)
    shot(page, "panel-replay")
    page.get_by_role("button", name="Back to live").click()
    expect(page.locator("#panel")).to_have_attribute("data-mode", "live")
    expect(page.locator(".step.status-completed")).to_have_count(3)
    expect(page.locator("#timeline")).to_have_value("4")


def test_it_reconnects_after_the_server_drops_the_socket_and_shows_the_latest_revision(
    page_for, agent, member, asgi_server, api
):
    from channels.layers import channel_layers

    agent.todo_write("flaky", PLAN)
    page = page_for(member)
    page.goto(f"/s/{public_id('flaky')}/")
    wait_live(page)

    asgi_server.stop()
    expect(page.locator("#panel")).to_have_attribute("data-connection", "reconnecting")
    expect(page.locator("#conn")).to_have_text("Reconnecting…")
    assert page.evaluate("window.todowebReady") is False
    # Written while the page is disconnected; the restarted server gets a fresh layer.
    channel_layers.backends.clear()
    # (In a thread of its own: this one carries Playwright's event loop.)
    todos = [{"content": c, "status": "completed", "activeForm": c} for c, _ in PLAN]
    with ThreadPoolExecutor(1) as pool:
        response = pool.submit(write_and_close, api, "flaky", todos).result()
    assert response.status_code == 200
    asgi_server.start()

    expect(page.locator("#panel")).to_have_attribute("data-connection", "live", timeout=10000)
    expect(page.locator("#revision")).to_have_text("2")
    expect(page.locator(".step.status-completed")).to_have_count(3)
    expect(page.locator("#bar")).to_have_attribute("aria-valuenow", "100")


@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
def test_it_fits_a_phone_in_light_and_dark(shot, page_for, agent, member, dark):
    agent.todo_write("phone-run", PLAN)
    agent.todo_write(
        "phone-run", PLAN[:2] + [("A much longer step name that has to wrap on a narrow phone screen", "pending")]
    )
    scheme = "dark" if dark else "light"
    page = page_for(member, phone=True, dark=dark)
    page.goto("/")
    wait_live(page)
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    shot(page, f"dashboard-phone-{scheme}")
    page.goto(f"/s/{public_id('phone-run')}/")
    wait_live(page)
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    shot(page, f"panel-phone-{scheme}")
    desktop = page_for(member, dark=dark)
    desktop.goto(f"/s/{public_id('phone-run')}/")
    wait_live(desktop)
    shot(desktop, f"panel-desktop-{scheme}")


def test_a_run_that_ended_with_a_failed_step_shows_failed_live(shot, page_for, agent, member):
    """State `failed`: on the card and the panel, in red and with ✗ (not colour alone)."""
    steps = [
        {"id": "1", "description": "Build", "status": "completed"},
        {"id": "2", "description": "Deploy", "status": "in_progress"},
    ]
    assert (
        agent.http.post(
            "/api/v1/sessions/deploy/tool", json={"tool": "todo_write", "input": {"steps": steps}}
        ).status_code
        == 200
    )
    dashboard = page_for(member)
    dashboard.goto("/")
    wait_live(dashboard)
    badge = dashboard.locator(".card", has_text="deploy").locator(".badge")
    expect(badge).to_have_text("active")

    steps[1]["status"] = "failed"
    assert (
        agent.http.post(
            "/api/v1/sessions/deploy/tool", json={"tool": "todo_write", "input": {"steps": steps}}
        ).status_code
        == 200
    )
    expect(badge).to_have_text("failed")
    assert "✗" in badge.evaluate("(node) => getComputedStyle(node, '::before').content")
    panel = page_for(member)
    panel.goto(f"/s/{public_id('deploy')}/")
    expect(panel.locator("#state")).to_have_text("failed")
    expect(panel.locator(".step.status-failed")).to_have_count(1)
    shot(dashboard, "dashboard-failed")


def remove_member_unannounced(project, member):
    """Take the member out of the project as if its event were lost (Redis down): only
    the server's periodic check of the database can find out."""
    from django.db import connection

    from todoweb.live import events

    published = events.send
    events.send = lambda messages: None
    try:
        project.members.remove(member)
    finally:
        events.send = published
        connection.close()


def test_a_page_says_why_its_updates_stopped_when_its_viewer_loses_access(page_for, agent, member, project):
    agent.todo_write("watched", PLAN)
    panel = page_for(member)
    panel.goto(f"/s/{public_id('watched')}/")
    wait_live(panel)
    dashboard = page_for(member)
    dashboard.goto("/")
    wait_live(dashboard)
    expect(dashboard.locator(".card", has_text="watched")).to_be_visible()
    dashboard.evaluate(
        """() => {
          window.statusLog = [];
          const conn = document.getElementById("conn");
          new MutationObserver(() => window.statusLog.push(conn.textContent)).observe(conn, {childList: true});
        }"""
    )

    # Removed from the project (the server's check finds it within 5 s).
    with ThreadPoolExecutor(1) as pool:
        pool.submit(remove_member_unannounced, project, member).result()
    expect(panel.locator("#conn")).to_have_text("No access", timeout=15000)
    expect(panel.locator("#conn")).to_have_attribute("title", re.compile("not a member of its project"))
    # The dashboard reloads what the person may still see: nothing of that project.
    expect(dashboard.locator(".card", has_text="watched")).to_have_count(0, timeout=15000)
    wait_live(dashboard)
    assert "Access changed: reloading…" in dashboard.evaluate("window.statusLog")

    # Logging out (in another tab) ends the login that the dashboard's socket runs on.
    other_tab = dashboard.context.new_page()
    other_tab.goto("/")
    other_tab.get_by_role("button", name="Log out").click()
    expect(dashboard.locator("#conn")).to_have_text("Logged out: log in to watch")
    expect(dashboard.locator("#conn")).to_have_attribute("title", re.compile("log in again"))
    assert panel.errors == [] and dashboard.errors == []
