"""The dashboard for watching many agents, in a real browser: the whole width in a
dense grid (desktop, wall, phone; light and dark), totals by state that filter, idle
and failed sessions marked, project and dialect filters and grouping, a small
progress-over-time line per card, pages of sessions beyond the newest with totals
that count them all, the tab title, and opt-in notifications."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import Agent, wait_until
from todoweb import reads as selectors
from todoweb.models import Project
from todoweb.web.board import views
from todoweb.writes.tokens import token_create

pytestmark = pytest.mark.browser

PLAN = [("Read the issue", "completed"), ("Write the fix", "in_progress"), ("Run the tests", "pending")]
DONE = [(content, "completed") for content, _ in PLAN]

# Records every notification the page shows (the real one still runs).
OBSERVE_NOTIFICATIONS = """
window.shownNotifications = [];
const RealNotification = window.Notification;
window.Notification = class extends RealNotification {
  constructor(title, options = {}) {
    window.shownNotifications.push({ title, body: options.body, tag: options.tag });
    super(title, options);
  }
};
"""


def wait_live(page) -> None:
    expect(page.locator(".dashboard")).to_have_attribute("data-connection", "live")


def card(page, key: str):
    return page.locator(f".card[data-key='{key}']")


def fail(agent: Agent, key: str, *, failed: bool = True) -> None:
    """A WeKnora plan whose last step failed (or is still running)."""
    steps = [
        {"id": "1", "description": "Build", "status": "completed"},
        {"id": "2", "description": "Deploy", "status": "failed" if failed else "in_progress"},
    ]
    response = agent.http.post(f"/api/v1/sessions/{key}/tool", json={"tool": "todo_write", "input": {"steps": steps}})
    assert response.status_code == 200, response.text


def kimi(agent: Agent, key: str, items: list[tuple[str, str]]) -> None:
    todos = [{"title": title, "status": status} for title, status in items]
    response = agent.http.post(f"/api/v1/sessions/{key}/tool", json={"tool": "SetTodoList", "input": {"todos": todos}})
    assert response.status_code == 200, response.text


@pytest.fixture
def beta(asgi_server, member) -> Agent:
    """An agent writing to a second project of the member's."""
    _, raw, _ = token_create(project_slug="beta")
    Project.objects.get(slug="beta").members.add(member)
    return Agent(asgi_server.url, raw)


SCREENS = {
    "desktop": {"viewport": {"width": 1440, "height": 900}, "columns": 5},
    "wall": {"viewport": {"width": 2560, "height": 1440}, "columns": 8},
    "phone": {"columns": 1},
}


@pytest.mark.parametrize(
    "screen, scheme", [("desktop", "light"), ("wall", "dark"), ("phone", "light"), ("phone", "dark")]
)
def test_it_fills_the_screen_with_a_dense_grid(shot, page_for, agent, beta, member, screen, scheme):
    for n in range(6):
        agent.todo_write(f"alpha-run-{n}", PLAN)
        kimi(beta, f"beta-run-{n}", [("Translate", "in_progress"), ("Proofread", "pending")])
    page = page_for(member, phone=screen == "phone", dark=scheme == "dark")
    if "viewport" in SCREENS[screen]:
        page.set_viewport_size(SCREENS[screen]["viewport"])
    page.goto("/")
    wait_live(page)
    expect(page.locator("#sessions > .card")).to_have_count(12)
    width = page.evaluate("window.innerWidth")
    grid = page.locator("#sessions").bounding_box()
    assert grid["width"] >= width * 0.9  # the whole width, not a narrow column
    columns = page.evaluate(
        "getComputedStyle(document.getElementById('sessions')).gridTemplateColumns.split(' ').length"
    )
    assert columns >= SCREENS[screen]["columns"], columns
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    expect(page.locator("#totals")).to_be_in_viewport()
    if screen != "phone":
        # Twelve agents fit on one screen: no scrolling to see the last card.
        last = page.locator("#sessions > .card").last.bounding_box()
        assert last["y"] + last["height"] <= page.evaluate("window.innerHeight")
    background = page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert background == ("rgb(15, 18, 22)" if scheme == "dark" else "rgb(246, 247, 249)")
    shot(page, f"dashboard-grid-{screen}-{scheme}")
    assert page.errors == []


def test_it_counts_sessions_by_state_and_filters_with_a_click(shot, page_for, agent, member):
    agent.todo_write("first-run", PLAN)
    agent.todo_write("second-run", PLAN)
    agent.todo_write("done-run", DONE)
    fail(agent, "deploy-run")
    page = page_for(member)
    page.goto("/")
    wait_live(page)
    totals = page.locator("#totals")
    expect(totals.locator("[data-state=''] .n")).to_have_text("4")
    expect(totals.locator("[data-state='active'] .n")).to_have_text("2")
    expect(totals.locator("[data-state='failed'] .n")).to_have_text("1")
    expect(totals.locator("[data-state='completed'] .n")).to_have_text("1")
    expect(page).to_have_title("1 failed · 2 active · Sessions · todoweb")

    totals.locator("[data-state='failed']").click()
    expect(page.locator("#sessions > .card")).to_have_count(1)
    expect(card(page, "deploy-run")).to_be_visible()
    expect(page).to_have_url(re.compile(r"/\?state=failed$"))
    expect(totals.locator("[data-state='failed']")).to_have_attribute("aria-current", "true")

    # Live: another run fails; it joins the filtered view, the totals and the title.
    fail(agent, "second-run")
    expect(card(page, "second-run")).to_be_visible()
    expect(page.locator("#sessions > .card")).to_have_count(2)
    expect(totals.locator("[data-state='failed'] .n")).to_have_text("2")
    expect(totals.locator("[data-state='active'] .n")).to_have_text("1")
    expect(page).to_have_title("2 failed · 1 active · Sessions · todoweb")
    shot(page, "dashboard-filtered-failed")

    # The view is a bookmark: a reload shows the same.
    page.reload()
    wait_live(page)
    expect(page.locator("#sessions > .card")).to_have_count(2)
    expect(totals.locator("[data-state='failed']")).to_have_attribute("aria-current", "true")
    totals.locator("[data-state='failed']").click()  # again: every state
    expect(page.locator("#sessions > .card")).to_have_count(4)
    expect(page).to_have_url(re.compile(r"/$"))
    assert page.errors == []


def test_it_marks_idle_and_failed_sessions_so_they_stand_out(shot, page_for, agent, member, settings):
    agent.todo_write("done-run", DONE)
    fail(agent, "broken-run")
    settings.TODOWEB_IDLE_AFTER = 2
    agent.todo_write("stalled-run", PLAN)
    page = page_for(member)
    page.goto("/")
    wait_live(page)
    stalled = card(page, "stalled-run")
    # Turns idle live, two seconds after its last write.
    expect(stalled).to_have_attribute("data-state", "idle", timeout=8000)
    expect(stalled.locator(".badge")).to_have_text("idle")
    expect(page.locator("#totals [data-state='idle'] .n")).to_have_text("1")
    expect(page).to_have_title(re.compile(r"^1 failed · 1 idle · "))

    def look(key: str) -> dict:
        return card(page, key).evaluate(
            """(node) => ({
                edge: getComputedStyle(node).borderLeftStyle,
                edgeColor: getComputedStyle(node).borderLeftColor,
                background: getComputedStyle(node).backgroundColor,
                icon: getComputedStyle(node.querySelector('.badge'), '::before').content,
            })"""
        )

    steady, idle, failed = look("done-run"), look("stalled-run"), look("broken-run")
    # Not by colour alone: an icon in the badge, and for idle a dashed edge.
    assert "✗" in failed["icon"] and "‖" in idle["icon"] and steady["icon"] in ("none", "normal")
    assert idle["edge"] == "dashed" and steady["edge"] == "solid"
    assert failed["edgeColor"] == "rgb(207, 34, 46)"
    assert failed["background"] != steady["background"] and idle["background"] != steady["background"]
    shot(page, "dashboard-idle-and-failed")


def test_it_filters_and_groups_by_project_and_dialect(shot, page_for, agent, beta, member):
    agent.todo_write("alpha-old", PLAN)
    agent.todo_write("alpha-new", PLAN)
    kimi(beta, "beta-run", [("Translate", "in_progress")])
    page = page_for(member)
    page.goto("/")
    wait_live(page)
    expect(page.locator("#sessions > .card")).to_have_count(3)

    page.locator("#project").select_option("beta")
    expect(page.locator("#sessions > .card")).to_have_count(1)
    expect(card(page, "beta-run")).to_be_visible()
    expect(page).to_have_url(re.compile(r"\?project=beta$"))
    expect(page.locator("#totals [data-state=''] .n")).to_have_text("1")
    page.locator("#project").select_option("")
    page.locator("#dialect").select_option("kimi")
    expect(page.locator("#sessions > .card")).to_have_count(1)
    expect(card(page, "beta-run")).to_be_visible()
    expect(page).to_have_url(re.compile(r"\?dialect=kimi$"))
    page.locator("#dialect").select_option("")

    # Grouped by project: a section per project, the most recently active first.
    page.locator("#group").select_option("project")
    expect(page).to_have_url(re.compile(r"\?group=project$"))
    sequence = page.locator("#sessions > li")
    expect(sequence).to_have_count(5)
    order = ["group:beta", "card:beta-run", "group:alpha", "card:alpha-new", "card:alpha-old"]

    def seen() -> list[str]:
        return sequence.evaluate_all(
            "(nodes) => nodes.map((n) => n.classList.contains('group-head') ? `group:${n.dataset.group}` : `card:${n.dataset.key}`)"
        )

    assert seen() == order
    expect(page.get_by_role("heading", name=re.compile("^beta"))).to_be_visible()
    # Live: a new alpha session goes to the top of the alpha section, which moves up.
    agent.todo_write("alpha-newest", PLAN)
    expect(sequence).to_have_count(6)
    expect(sequence.nth(1)).to_have_attribute("data-key", "alpha-newest")
    assert seen()[:2] == ["group:alpha", "card:alpha-newest"]
    # The server renders the same grouping from the URL.
    page.reload()
    assert seen()[:2] == ["group:alpha", "card:alpha-newest"]
    expect(page.locator("#group")).to_have_value("project")
    shot(page, "dashboard-grouped")
    assert page.errors == []


def test_it_draws_progress_over_time_on_each_card_and_extends_it_live(page_for, agent, member):
    steps = ["Plan", "Build", "Test", "Ship"]

    def write(done: int) -> None:
        agent.todo_write("spark-run", [(s, "completed" if i < done else "pending") for i, s in enumerate(steps)])

    for done in range(3):
        write(done)
    agent.todo_write("one-write", PLAN)
    page = page_for(member)
    page.goto("/")
    wait_live(page)
    line = card(page, "spark-run").locator(".spark polyline")
    spark = card(page, "spark-run").locator(".spark")
    points = line.get_attribute("points").split()
    assert len(points) == 3
    assert [float(p.split(",")[1]) for p in points] == [19, 14.5, 10]  # 0 %, 25 %, 50 %
    expect(spark).to_have_attribute("aria-label", "Progress over time: from 0% to 50%")
    # One write: a flat line at its progress.
    expect(card(page, "one-write").locator(".spark polyline")).to_have_attribute("points", "0,13 100,13")

    write(3)
    expect(line).to_have_attribute("points", re.compile(r"^(\S+ ){3}100,5\.5$"))
    expect(spark).to_have_attribute("aria-label", "Progress over time: from 0% to 75%")
    assert page.errors == []


def test_it_shows_a_page_of_many_sessions_and_counts_them_all(shot, page_for, agent, member, monkeypatch):
    # As with thousands of sessions, scaled down: the socket sends the 5 newest, the
    # page shows 4 cards at a time.
    monkeypatch.setattr(selectors, "DASHBOARD_LIMIT", 5)
    monkeypatch.setattr(views, "DASHBOARD_LIMIT", 5)
    monkeypatch.setattr(views, "DASHBOARD_PAGE", 4)
    for n in range(12):
        agent.todo_write(f"run-{n:02}", DONE if n < 3 else PLAN)
    page = page_for(member)
    page.goto("/")
    wait_live(page)
    cards = page.locator("#sessions > .card")
    expect(cards).to_have_count(4)
    expect(cards.first).to_have_attribute("data-key", "run-11")
    totals = page.locator("#totals")
    expect(totals).to_have_attribute("aria-busy", "false")
    expect(totals.locator("[data-state=''] .n")).to_have_text("12")
    expect(totals.locator("[data-state='completed'] .n")).to_have_text("3")
    expect(page.locator("#showing")).to_have_text("Showing 4 of 12, most recently active first")

    more = page.get_by_role("link", name="Show more")
    more.click()
    expect(cards).to_have_count(8)
    more.click()
    expect(cards).to_have_count(12)
    expect(cards.last).to_have_attribute("data-key", "run-00")
    expect(more).to_be_hidden()

    # The oldest session comes back to life: it moves to the top, and the totals
    # (which counted it among the older ones, completed) follow.
    agent.todo_write("run-00", PLAN)
    expect(cards.first).to_have_attribute("data-key", "run-00")
    expect(totals.locator("[data-state='completed'] .n")).to_have_text("2")
    expect(totals.locator("[data-state='active'] .n")).to_have_text("10")
    expect(totals.locator("[data-state=''] .n")).to_have_text("12")

    # A state whose sessions are all older than the socket's: fetched from the server.
    totals.locator("[data-state='completed']").click()
    expect(cards).to_have_count(2)
    expect(cards.first).to_have_attribute("data-key", "run-02")
    expect(page.locator("#empty-note")).to_be_hidden()
    # A search narrows the totals too.
    page.locator("#q").fill("run-01")
    expect(cards).to_have_count(1)
    expect(totals.locator("[data-state=''] .n")).to_have_text("1")
    shot(page, "dashboard-many")
    assert page.errors == []


def test_it_notifies_when_a_watched_session_completes_fails_or_goes_idle(page_for, agent, member, settings):
    agent.todo_write("watched-run", PLAN)
    agent.todo_write("other-run", PLAN)
    fail(agent, "deploy-run", failed=False)
    page = page_for(member)
    page.context.grant_permissions(["notifications"])
    page.add_init_script(OBSERVE_NOTIFICATIONS)
    page.goto("/")
    wait_live(page)
    shown = lambda: page.evaluate("window.shownNotifications")  # noqa: E731

    bell = card(page, "watched-run").get_by_role("button", name="Notify me about watched-run")
    expect(bell).to_have_attribute("aria-pressed", "false")
    bell.click()
    expect(bell).to_have_attribute("aria-pressed", "true")
    agent.todo_write("other-run", DONE)  # not watched
    agent.todo_write("watched-run", DONE)
    expect(card(page, "watched-run")).to_have_attribute("data-state", "completed")
    expect(card(page, "other-run")).to_have_attribute("data-state", "completed")
    wait_until(page, "() => window.shownNotifications.length > 0")
    assert shown() == [{"title": "Completed: watched-run", "body": "3/3 steps · alpha", "tag": shown()[0]["tag"]}]

    # Every session, from the toolbar; the choice is kept in this browser.
    page.get_by_role("button", name="Watch all").click()
    expect(page.get_by_role("button", name="Watch all")).to_have_attribute("aria-pressed", "true")
    fail(agent, "deploy-run")
    wait_until(page, "() => window.shownNotifications.length > 1")
    assert shown()[1]["title"] == "Failed: deploy-run"
    settings.TODOWEB_IDLE_AFTER = 1
    agent.todo_write("slow-run", PLAN)
    wait_until(page, "() => window.shownNotifications.some((n) => n.title === 'Idle: slow-run')", timeout=8)
    assert [n["title"] for n in shown()] == ["Completed: watched-run", "Failed: deploy-run", "Idle: slow-run"]

    page.reload()
    wait_live(page)
    expect(page.get_by_role("button", name="Watch all")).to_have_attribute("aria-pressed", "true")
    expect(card(page, "watched-run").locator(".watch")).to_have_attribute("aria-pressed", "true")
    assert page.errors == []


def test_it_says_so_when_notifications_are_blocked(page_for, agent, member):
    agent.todo_write("watched-run", PLAN)
    page = page_for(member)
    page.add_init_script("Notification.requestPermission = async () => 'denied'")
    page.goto("/")
    wait_live(page)
    bell = card(page, "watched-run").locator(".watch")
    bell.click()
    expect(page.locator("#notice")).to_have_text(re.compile("Notifications are blocked"))
    expect(bell).to_have_attribute("aria-pressed", "false")


# Where each card's "updated … ago" stands, and whether all of it shows on one line.
UPDATED_TEXT = """() => [...document.querySelectorAll('#sessions .card')].filter((card) => card.offsetParent).map((card) => {
  const meta = card.querySelector('.meta'), time = meta.querySelector('time');
  const m = meta.getBoundingClientRect(), t = time.getBoundingClientRect(), c = card.getBoundingClientRect();
  const lineHeight = parseFloat(getComputedStyle(time).fontSize) * 1.6;
  return {
    key: card.dataset.key, text: time.textContent, width: t.width,
    inside: t.left >= m.left - 0.5 && t.right <= m.right + 0.5 && t.right <= c.right + 0.5,
    oneLine: time.getClientRects().length === 1 && t.height <= lineHeight,
    metaOneLine: m.height <= lineHeight,
  };
})"""


@pytest.mark.parametrize("width", [1440, 375])
def test_every_card_shows_how_long_ago_it_was_updated(shot, page_for, agent, asgi_server, member, width):
    """Keys as agents make them (a Claude Code session id, a subagent's), a long project
    name, a title beside its key, and a time in its longest words: the time stays whole."""
    from django.utils import timezone

    from todoweb.models import Session

    _, raw, _ = token_create(project_slug="platform-infrastructure-team")
    Project.objects.get(slug="platform-infrastructure-team").members.add(member)
    platform = Agent(asgi_server.url, raw)
    uuid = "5f0c1b9e-7a9d-4e53-9c1e-2f6d3c8b7a10"
    agent.todo_write(uuid, PLAN)
    agent.http.post(
        f"/api/v1/sessions/{uuid}-titled/tool",
        json={"tool": "TodoWrite", "title": "Migrate the billing service", "input": {"todos": []}},
    )
    kimi(platform, "nightly-dependency-upgrade-2025-03-01T02:00:00Z", [("Upgrade", "in_progress")])
    fail(platform, f"{uuid}:agent-7d2e9c41")
    for n in range(4):
        agent.todo_write(f"run-{n}", PLAN)
    Session.objects.filter(key="run-0").update(updated_at=timezone.now() - timezone.timedelta(minutes=59))
    Session.objects.filter(key="run-1").update(updated_at=timezone.now() - timezone.timedelta(hours=23))

    page = page_for(member, phone=width < 600)
    page.set_viewport_size({"width": width, "height": 900 if width > 600 else 812})
    page.goto("/")
    wait_live(page)
    expect(page.locator("#sessions > .card")).to_have_count(8)
    expect(card(page, "run-0").locator("time")).to_have_text("59 min ago")
    expect(card(page, "run-1").locator("time")).to_have_text("23 h ago")
    shot(page, f"dashboard-updated-{width}")
    cards = page.evaluate(UPDATED_TEXT)
    assert len(cards) == 8
    for seen in cards:
        assert seen["text"].endswith("ago") or seen["text"] == "just now", seen
        assert seen["width"] > 0 and seen["inside"] and seen["oneLine"], seen
        assert seen["metaOneLine"], seen  # the rest of the line gives way instead
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    assert page.errors == []
