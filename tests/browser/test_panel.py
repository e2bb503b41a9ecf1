"""The session panel in a real browser: the timeline chart (bars, live growth, reopened
and dropped steps, the scrubber's cursor), members acting from the board (rename,
close, reopen, archive, share links, editing the plan, a conflict with the agent), share
viewers without controls, and how a long run looks on a wall screen and a phone."""

from __future__ import annotations

import json
import re
from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from tests.browser.conftest import wait_until
from todoweb import plan
from todoweb.models import Revision, Session

pytestmark = pytest.mark.browser

PLAN = [("Read the issue", "completed"), ("Write the fix", "in_progress"), ("Run the tests", "pending")]


def public_id(key: str) -> str:
    return Session.objects.get(key=key).public_id


def open_panel(page, key: str) -> None:
    page.goto(f"/s/{public_id(key)}/")
    expect(page.locator("#panel")).to_have_attribute("data-connection", "live")
    # The chart has its history once the cursor stands on a revision.
    expect(page.locator(".tl-cursor")).to_have_count(1)


def row(page, text: str):
    return page.locator(".tl-row", has=page.locator("title", has_text=re.compile("^" + re.escape(text))))


def number(locator, attribute: str) -> float:
    return float(locator.get_attribute(attribute))


def steps(*pairs: tuple[str, str]) -> list[dict]:
    return [{"content": c, "status": s, "activeForm": f"{c} now"} for c, s in pairs]


# --- The timeline chart ---


def test_it_draws_a_bar_per_step_and_the_scrubber_moves_its_cursor(shot, page_for, agent, member):
    agent.todo_write("chart", [("First", "in_progress"), ("Second", "pending")])
    agent.todo_write("chart", [("First", "completed"), ("Second", "in_progress")])
    agent.todo_write("chart", [("First", "completed"), ("Second", "completed"), ("Third", "in_progress")])
    spread_in_time("chart", timedelta(minutes=1))
    page = page_for(member)
    open_panel(page, "chart")

    expect(page.locator(".tl-row")).to_have_count(3)
    expect(page.locator(".tl-label")).to_have_text(["First", "Second", "Third"])
    first, second = row(page, "First"), row(page, "Second")
    expect(first).to_have_class(re.compile("status-completed"))
    expect(first.locator(".tl-mark")).to_have_text("✓")
    expect(row(page, "Third")).to_have_class(re.compile("tl-running"))
    # A minute each, one after the other: Second's bar begins where First's ends.
    first_bar, second_bar = first.locator(".tl-bar"), second.locator(".tl-bar")
    assert number(second_bar, "x") == pytest.approx(number(first_bar, "x") + number(first_bar, "width"), abs=0.5)
    assert number(second_bar, "width") == pytest.approx(number(first_bar, "width"), abs=0.5)
    assert number(first_bar, "width") > 50
    expect(page.locator(".tl-band-value")).to_have_text("67%")
    cursor = page.locator(".tl-cursor")
    expect(cursor).to_have_attribute("data-revision", "3")
    live_x = number(cursor, "data-x")

    page.locator("#timeline").fill("1")
    expect(cursor).to_have_attribute("data-revision", "1")
    assert number(cursor, "data-x") < live_x
    expect(page.locator(".tl-future")).to_have_count(1)  # what came after is dimmed
    expect(page.locator(".step")).to_have_count(2)
    shot(page, "panel-chart-replay")

    page.get_by_role("button", name="Back to live").click()
    expect(cursor).to_have_attribute("data-revision", "3")
    expect(page.locator(".tl-future")).to_have_count(0)
    assert page.errors == []


def test_it_grows_the_running_bar_and_adds_revisions_live(page_for, agent, member):
    agent.todo_write("growing", [("Build", "in_progress"), ("Ship", "pending")])
    page = page_for(member)
    open_panel(page, "growing")
    bar = row(page, "Build").locator(".tl-bar")
    width = number(bar, "width")
    # The clock stretches the bar every second, with no new revision.
    wait_until(
        page, "(w) => Number(document.querySelector('.tl-running .tl-bar').getAttribute('width')) > w + 2", arg=width
    )
    expect(page.locator("#revision")).to_have_text("1")

    agent.todo_write("growing", [("Build", "completed"), ("Ship", "in_progress")])
    expect(row(page, "Build")).to_have_class(re.compile("status-completed"))
    expect(row(page, "Ship")).to_have_class(re.compile("tl-running"))
    expect(page.locator(".tl-cursor")).to_have_attribute("data-revision", "2")
    expect(page.locator(".tl-band-value")).to_have_text("50%")

    agent.todo_write("growing", [("Build", "completed"), ("Ship", "completed")])
    expect(page.locator(".tl-band-value")).to_have_text("100%")
    # Nothing runs any more: the chart stops at the last write.
    expect(page.locator(".tl-now")).to_have_count(0)
    expect(page.locator(".tl-running")).to_have_count(0)
    assert page.errors == []


def test_it_marks_reopened_and_dropped_steps(shot, page_for, agent, member):
    agent.todo_write("marks", [("Fix", "in_progress"), ("Test", "pending"), ("Polish", "pending")])
    agent.todo_write("marks", [("Fix", "completed"), ("Test", "in_progress"), ("Polish", "pending")])
    # The tests failed: the fix is reopened, and the polish dropped while pending.
    agent.todo_write("marks", [("Fix", "in_progress"), ("Test", "pending")])
    page = page_for(member)
    open_panel(page, "marks")

    fix = row(page, "Fix")
    expect(fix).to_have_class(re.compile("tl-reopened"))
    expect(fix.locator(".tl-reopen-mark")).to_have_text("↺")
    expect(fix.locator("title")).to_contain_text("reopened once")
    expect(page.locator(".step", has_text="Fix").locator(".reopened-tag")).to_have_text("↺ reopened")

    dropped = page.locator(".tl-row.tl-dropped")
    expect(dropped).to_have_count(1)
    expect(dropped.locator("title")).to_contain_text("Polish\ndropped while pending")
    expect(dropped.locator(".tl-drop-mark")).to_have_text("⊘")
    expect(page.locator(".tl-label.tl-dropped")).to_have_text("⊘ Polish")
    shot(page, "panel-chart-marks")
    assert page.errors == []


# --- Members act from the board ---


def test_a_member_renames_closes_and_reopens_and_every_watcher_sees_it(page_for, agent, member):
    agent.todo_write("acts", PLAN)
    page, watcher = page_for(member), page_for(member)
    open_panel(page, "acts")
    open_panel(watcher, "acts")

    page.get_by_role("button", name="Rename").click()
    title = page.get_by_label("Title", exact=True)
    expect(title).to_be_focused()
    title.fill("Fix the <b>login</b> bug")
    title.press("Enter")
    expect(page.locator("#title")).to_have_text("Fix the <b>login</b> bug")
    expect(page.locator("#action-status")).to_have_text("Renamed to “Fix the <b>login</b> bug”.")
    expect(watcher.locator("#title")).to_have_text("Fix the <b>login</b> bug")
    assert watcher.locator("#title b").count() == 0

    page.get_by_role("button", name="Close", exact=True).click()
    expect(page.locator("#state")).to_have_text("closed")
    expect(watcher.locator("#state")).to_have_text("closed")
    reopen = page.get_by_role("button", name="Reopen")
    expect(reopen).to_be_focused()
    expect(watcher.get_by_role("button", name="Reopen")).to_be_visible()
    reopen.click()
    expect(page.locator("#state")).to_have_text("active")
    expect(watcher.locator("#state")).to_have_text("active")
    expect(page.get_by_role("button", name="Close", exact=True)).to_be_focused()
    assert page.errors == [] and watcher.errors == []


def test_a_member_shares_a_read_only_link_and_revokes_it(shot, page_for, agent, member):
    agent.todo_write("to-share", PLAN)
    page = page_for(member)
    open_panel(page, "to-share")
    share = page.get_by_role("button", name="Share…")
    share.click()
    expect(share).to_have_attribute("aria-expanded", "true")
    page.get_by_label("Expires after").select_option(label="1 hour")
    page.get_by_role("button", name="Create link").click()
    url = page.get_by_label(re.compile("^New link"))
    expect(url).to_have_value(re.compile(rf"^http://127\.0\.0\.1:\d+/s/{public_id('to-share')}/\?share=sh_"))
    expect(page.locator("#share-count")).to_have_text("1 active link")
    shot(page, "panel-share-create")

    viewer = page_for()  # logged out
    viewer.goto(url.input_value())
    expect(viewer.locator("#panel")).to_have_attribute("data-connection", "live")
    expect(viewer.locator(".tl-row")).to_have_count(3)
    expect(viewer.locator(".badge.shared")).to_have_text("read-only link")

    page.get_by_role("button", name="Revoke all links").click()
    expect(page.locator("#share-count")).to_have_text("0 active links")
    expect(page.get_by_role("button", name="Revoke all links")).to_be_disabled()
    expect(viewer.locator("#conn")).to_have_text("Link ended")
    assert page.errors == []


def test_share_viewers_get_no_controls_and_cannot_act(page_for, agent):
    agent.todo_write("watched", PLAN)
    url = agent.http.post("/api/v1/sessions/watched/share", json={}).json()["url"]
    viewer = page_for()
    viewer.goto(url)
    expect(viewer.locator("#panel")).to_have_attribute("data-connection", "live")
    expect(viewer.locator(".tl-cursor")).to_have_count(1)  # the history is theirs to see
    for name in ["Rename", "Close", "Share…", "Archive…", "Edit plan"]:
        expect(viewer.get_by_role("button", name=name, exact=True)).to_have_count(0)
    assert viewer.evaluate("JSON.parse(document.getElementById('panel-config').textContent).actions") is None
    answer = viewer.request.post(
        url.replace("/?share=", "/actions/close?share="), data="{}", headers={"Content-Type": "application/json"}
    )
    assert answer.status == 403
    assert Session.objects.get(key="watched").closed_at is None


def test_a_member_archives_after_confirming(page_for, agent, member):
    agent.todo_write("old-run", PLAN)
    page = page_for(member)
    open_panel(page, "old-run")
    page.get_by_role("button", name="Archive…").click()
    dialog = page.get_by_role("dialog", name="Archive this session?")
    expect(dialog).to_be_visible()
    dialog.get_by_role("button", name="Cancel").click()
    expect(dialog).to_be_hidden()
    assert Session.objects.get(key="old-run").archived_at is None

    page.get_by_role("button", name="Archive…").click()
    dialog.get_by_role("button", name="Archive", exact=True).click()
    expect(page).to_have_url(re.compile(r"^http://[^/]+/$"))  # the dashboard
    assert Session.objects.get(key="old-run").archived_at is not None


def editor_rows(page):
    return page.locator("#editor-steps .edit-step")


def test_a_member_edits_the_plan_from_the_keyboard_and_every_watcher_sees_it(shot, page_for, agent, member):
    agent.todo_write("edit-me", PLAN)
    page, watcher = page_for(member), page_for(member)
    open_panel(page, "edit-me")
    open_panel(watcher, "edit-me")

    page.get_by_role("button", name="Edit plan").click()
    expect(page.locator("#steps")).to_be_hidden()
    expect(page.get_by_label("Step 1", exact=True)).to_be_focused()
    expect(editor_rows(page)).to_have_count(3)
    page.get_by_label("Step 2", exact=True).fill("Write the fix with a regression test")
    # Reorder with the keyboard: focus stays on the moved step's button.
    page.get_by_role("button", name="Move step 3 up").focus()
    page.keyboard.press("Enter")
    expect(page.get_by_label("Step 2", exact=True)).to_have_value("Run the tests")
    assert page.evaluate("document.activeElement.getAttribute('aria-label')") == "Move step 2 up"
    page.get_by_label("Status of step 3").select_option("completed")
    expect(page.get_by_label("Step 3 done")).to_be_checked()
    page.get_by_label("Step 2 done").check()
    page.get_by_label("Step 2 done").uncheck()  # back to what it was
    expect(page.get_by_label("Status of step 2")).to_have_value("pending")
    page.get_by_label("Status of step 2").select_option("cancelled")
    page.get_by_role("button", name="Add step").click()
    expect(page.get_by_label("Step 4", exact=True)).to_be_focused()
    page.keyboard.type("Ask for <review>")
    page.get_by_label(re.compile("^Note for the agent")).fill("Keep the fix small")
    shot(page, "panel-editing")
    page.get_by_role("button", name="Save plan").click()

    expect(page.locator("#plan-editor")).to_be_hidden()
    expect(page.locator("#revision")).to_have_text("2")
    expected = ["Read the issue", "Run the tests", "Write the fix with a regression test", "Ask for <review>"]
    expect(page.locator("#steps .step .content")).to_have_text(expected)
    expect(page.locator("#action-status")).to_contain_text("Plan saved as revision 2")
    expect(page.get_by_role("button", name="Edit plan")).to_be_focused()
    expect(watcher.locator("#steps .step .content")).to_have_text(expected)
    expect(watcher.locator("#steps .step").nth(1)).to_have_class(re.compile("status-cancelled"))
    expect(watcher.locator("#steps .step").nth(2)).to_have_class(re.compile("status-completed"))
    expect(watcher.locator(".tl-edit")).to_have_count(1)  # the person's revision, marked on the chart

    # The agent hears of it on its next call.
    reply = agent.todo_write("edit-me", PLAN)["reply"]["content"]
    assert reply.startswith("The user changed the plan:")
    assert "The user's note: Keep the fix small" in reply
    # The saved message goes once the plan moved on; the agent's stale list kept the edit.
    expect(page.locator("#action-status")).to_have_text("")
    expect(page.locator("#revision")).to_have_text("3")
    expect(page.locator("#steps .step .content")).to_have_text(expected)
    expect(watcher.locator("#steps .step .content")).to_have_text(expected)
    expect(page.locator("#warnings-section")).to_be_hidden()
    assert page.errors == [] and watcher.errors == []


def test_the_agent_writing_meanwhile_keeps_the_edits_and_a_409_lets_them_be_re_applied(shot, page_for, agent, member):
    agent.todo_write("race", PLAN)
    page = page_for(member)
    open_panel(page, "race")
    page.get_by_role("button", name="Edit plan").click()
    page.get_by_label("Step 3", exact=True).fill("Run the whole test suite")
    page.get_by_label("Status of step 1").select_option("cancelled")

    # The agent moves on while the person edits: the form keeps their edits.
    agent.todo_write(
        "race",
        [("Read the issue", "completed"), ("Write the fix", "completed"), ("Run the tests", "in_progress")]
        + [("Open a pull request", "pending")],
    )
    expect(page.locator("#editor-newer")).to_contain_text("Revision 2 arrived while you were editing")
    expect(page.get_by_label("Step 3", exact=True)).to_have_value("Run the whole test suite")
    expect(editor_rows(page)).to_have_count(3)

    page.get_by_role("button", name="Save plan").click()
    conflict = page.locator("#editor-conflict")
    expect(conflict).to_contain_text("The agent changed the plan while you were editing")
    expect(page.locator("#conflict-plan li")).to_have_count(4)
    expect(page.locator("#conflict-plan")).to_contain_text("Open a pull request")
    expect(page.get_by_role("button", name="Re-apply my edits")).to_be_focused()
    assert Session.objects.get(key="race").revision == 2
    shot(page, "panel-edit-conflict")

    page.get_by_role("button", name="Re-apply my edits").click()
    expect(conflict).to_be_hidden()
    expect(page.locator("#editor-base")).to_have_text("2")
    # Their work and the person's edits, together.
    merged = ["Read the issue", "Write the fix", "Run the whole test suite", "Open a pull request"]
    for index, text in enumerate(merged):
        expect(editor_rows(page).nth(index).locator(".edit-content")).to_have_value(text)
    expect(page.get_by_label("Status of step 1")).to_have_value("cancelled")
    expect(page.get_by_label("Status of step 2")).to_have_value("completed")
    expect(page.get_by_label("Status of step 3")).to_have_value("in_progress")
    page.get_by_role("button", name="Save plan").click()
    expect(page.locator("#plan-editor")).to_be_hidden()
    expect(page.locator("#revision")).to_have_text("3")
    expect(page.locator("#steps .step").first).to_have_class(re.compile("status-cancelled"))
    assert page.errors == []


def test_the_edits_can_be_moved_onto_a_newer_revision_before_saving(page_for, agent, member):
    agent.todo_write("rebase", PLAN)
    page = page_for(member)
    open_panel(page, "rebase")
    page.get_by_role("button", name="Edit plan").click()
    page.get_by_label("Step 2", exact=True).fill("Write the smallest fix")
    agent.todo_write(
        "rebase", [("Read the issue", "completed"), ("Write the fix", "completed"), ("Run the tests", "in_progress")]
    )
    page.get_by_role("button", name="Re-apply my edits to it now").click()
    expect(page.locator("#editor-newer")).to_be_hidden()
    expect(page.locator("#editor-base")).to_have_text("2")
    expect(page.get_by_label("Step 2", exact=True)).to_have_value("Write the smallest fix")
    expect(page.get_by_label("Status of step 2")).to_have_value("completed")
    expect(page.get_by_role("button", name="Save plan")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator("#revision")).to_have_text("3")
    expect(page.locator("#steps .step .content").nth(1)).to_have_text("Write the smallest fix")
    assert page.errors == []


def test_discarding_an_edit_changes_nothing(page_for, agent, member):
    agent.todo_write("discard", PLAN)
    page = page_for(member)
    open_panel(page, "discard")
    page.get_by_role("button", name="Edit plan").click()
    page.get_by_label("Step 1", exact=True).fill("")
    page.get_by_role("button", name="Save plan").click()
    expect(page.locator("#editor-status")).to_have_text("Step 1 has no text: write it or remove the step.")
    expect(page.get_by_label("Step 1", exact=True)).to_be_focused()
    page.get_by_role("button", name="Discard changes").click()
    expect(page.locator("#plan-editor")).to_be_hidden()
    expect(page.locator("#steps .step .content").first).to_have_text("Read the issue")
    assert Session.objects.get(key="discard").revision == 1


# --- Looks: a long run, on a wall screen and a phone, light and dark ---

LONG_RUN = [
    "Read the issue and reproduce the bug",
    "Find where session keys are parsed",
    "Write a failing test for keys with a colon",
    "Fix the parser",
    "Run the unit tests",
    "Update the API documentation",
    "Check the dashboard with 500 sessions",
    "Profile the panel's first render",
    "Cache the session summaries",
    "Run the browser tests",
    "Benchmark the fan-out to 1,000 watchers",
    "Try the Redis channel layer",
    "Write the changelog entry",
    "Ask for review",
    "Address the review comments",
    "Deploy to staging",
]


class LongRun:
    """An agent working through LONG_RUN (WeKnora's todo_write: ids, failed, blocked and
    skipped steps), with a setback, a dropped step and a person's edit on the way."""

    def __init__(self, agent, key: str):
        self.agent, self.key = agent, key
        self.steps = [{"id": str(i + 1), "description": text, "status": "pending"} for i, text in enumerate(LONG_RUN)]

    def status(self, number: int, status: str) -> None:
        next(s for s in self.steps if s["id"] == str(number))["status"] = status

    def write(self, **changes: str) -> None:
        for number, status in changes.items():
            self.status(int(number.removeprefix("s")), status)
        body = {"tool": "todo_write", "input": {"task": "Colons in session keys", "steps": self.steps}}
        assert self.agent.http.post(f"/api/v1/sessions/{self.key}/tool", json=body).status_code == 200

    def person_adds(self, text: str, after: int) -> None:
        current = self.agent.http.get(f"/api/v1/sessions/{self.key}").json()
        todos = [{"id": t["id"], "content": t["content"], "status": t["status"]} for t in current["todos"]]
        at = next(i for i, t in enumerate(todos) if t["id"] == str(after)) + 1
        todos.insert(at, {"content": text, "status": "pending"})
        answer = self.agent.http.post(
            f"/api/v1/sessions/{self.key}/edits",
            json={"todos": todos, "note": "Check the migration first"},
            headers={"If-Match": str(current["revision"])},
        )
        assert answer.status_code == 200, answer.text
        added = answer.json()["todos"][at]
        index = next(i for i, s in enumerate(self.steps) if s["id"] == str(after)) + 1
        self.steps.insert(index, {"id": added["id"], "description": text, "status": "pending"})
        self.person_step = added["id"]

    def play(self) -> None:
        self.write(s1="in_progress")
        for n in range(1, 4):
            self.write(**{f"s{n}": "completed", f"s{n + 1}": "in_progress"})
        self.write(s4="completed", s5="in_progress")
        self.write(s5="failed", s4="in_progress")  # the tests failed: the fix is reopened
        self.write(s4="completed", s5="in_progress")
        self.write(s5="completed", s6="in_progress")
        self.write(s6="completed", s7="blocked", s8="in_progress")
        self.write(s8="completed", s7="in_progress")
        self.write(s7="completed", s9="in_progress")
        self.write(s9="completed", s10="in_progress")
        self.write(s10="completed", s11="in_progress")
        self.steps = [s for s in self.steps if s["id"] != "12"]  # taken out while pending: dropped
        self.write(s11="failed", s13="in_progress")
        self.person_adds("Double-check the migration on a copy of production", after=13)
        self.write(**{"s13": "completed", f"s{self.person_step}": "in_progress"})
        self.write(**{f"s{self.person_step}": "completed", "s14": "in_progress"})
        self.write(s14="completed", s15="in_progress", s16="skipped")


def spread_in_time(key: str, every: timedelta) -> None:
    """Moves a session's revisions `every` apart, the last one now, and the step times
    stamped by them: a long run for the chart without waiting for one."""
    session = Session.objects.get(key=key)
    rows = list(Revision.objects.filter(session=session).order_by("number"))
    end = timezone.now()
    moved = {plan.iso(row.created_at): end - every * (len(rows) - 1 - i) for i, row in enumerate(rows)}

    def shift(step: dict) -> dict:
        for field in ("first_seen_at", "started_at", "completed_at", "dropped_at"):
            if step.get(field) in moved:
                step[field] = plan.iso(moved[step[field]])
        if step["started_at"] and step["completed_at"]:
            started, completed = plan.parse_iso(step["started_at"]), plan.parse_iso(step["completed_at"])
            step["duration_s"] = (completed - started).total_seconds()
        return step

    for revision in rows:
        revision.created_at = moved[plan.iso(revision.created_at)]
        revision.todos = [shift(step) for step in revision.todos]
        revision.dropped = [shift(step) for step in revision.dropped]
        revision.save(update_fields=["created_at", "todos", "dropped"])
    Session.objects.filter(pk=session.pk).update(created_at=rows[0].created_at, updated_at=rows[-1].created_at)


@pytest.fixture
def long_run(agent):
    LongRun(agent, "long-run").play()
    spread_in_time("long-run", timedelta(seconds=95))
    return "long-run"


@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
def test_a_long_run_looks_right_on_a_wall_screen(shot, page_for, long_run, member, dark):
    page = page_for(member, dark=dark)
    page.set_viewport_size({"width": 2560, "height": 1440})
    open_panel(page, long_run)
    # 16 steps and the person's, less the dropped one; then the dropped one, below.
    expect(page.locator(".tl-row")).to_have_count(17)
    expect(page.locator(".tl-row.tl-dropped")).to_have_count(1)
    expect(page.locator(".tl-row.tl-reopened")).to_have_count(1)
    expect(page.locator(".tl-row.status-failed")).to_have_count(1)
    expect(page.locator(".tl-row.status-cancelled")).to_have_count(1)
    expect(page.locator(".tl-edit")).to_have_count(1)
    # Side by side: the plan on the left, the chart on the right.
    plan_box = page.locator(".plan-column").bounding_box()
    chart_box = page.locator("#timeline-section").bounding_box()
    assert chart_box["x"] > plan_box["x"] + plan_box["width"]
    assert chart_box["width"] > 1000
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    shot(page, f"panel-long-wall-{'dark' if dark else 'light'}")

    # A click on the chart replays the revision written at that moment.
    chart = page.locator("#chart svg").bounding_box()
    page.mouse.click(chart["x"] + chart["width"] * 0.55, chart["y"] + chart["height"] - 10)
    expect(page.locator("#panel")).to_have_attribute("data-mode", "replay")
    picked = page.locator("#timeline").input_value()
    assert 1 < int(picked) < Session.objects.get(key=long_run).revision
    expect(page.locator(".tl-cursor")).to_have_attribute("data-revision", picked)
    assert page.errors == []


@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
def test_a_long_run_fits_a_phone(shot, page_for, long_run, member, dark):
    page = page_for(member, phone=True, dark=dark)
    open_panel(page, long_run)
    expect(page.locator(".tl-row")).to_have_count(17)
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    assert page.evaluate("document.querySelector('#chart svg').getBoundingClientRect().right <= window.innerWidth")
    shot(page, f"panel-long-phone-{'dark' if dark else 'light'}")
    page.get_by_role("button", name="Edit plan").click()
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    shot(page, f"panel-long-phone-editing-{'dark' if dark else 'light'}")
    assert page.errors == []


# The agent's next call after a person's edit, in each shape a call arrives in, and
# in Roo's own tool: what its reply starts with.
TODOS = [
    {"content": "Read the issue", "status": "completed", "activeForm": "Reading"},
    {"content": "Write the fix", "status": "in_progress", "activeForm": "Writing"},
]
NEXT_CALLS = {
    "anthropic": ({"type": "tool_use", "id": "toolu_2", "name": "TodoWrite", "input": {"todos": TODOS}}, "content"),
    "chat": (
        {
            "id": "call_2",
            "type": "function",
            "function": {"name": "TodoWrite", "arguments": json.dumps({"todos": TODOS})},
        },
        "content",
    ),
    "responses": (
        {"type": "function_call", "call_id": "call_2", "name": "TodoWrite", "arguments": json.dumps({"todos": TODOS})},
        "output",
    ),
    "plain": ({"tool": "TodoWrite", "id": "c2", "input": {"todos": TODOS}}, "content"),
    "roo": (
        {"tool": "update_todo_list", "id": "c2", "input": {"todos": "[x] Read the issue\n[-] Write the fix"}},
        "content",
    ),
}
NOTICES = {
    "roo": "User edits todo:\n\n[x] Read the issue\n[-] Write the fix with a regression test",
}


@pytest.mark.parametrize("form", NEXT_CALLS)
def test_an_edit_in_the_browser_reaches_the_agents_next_call_in_each_shape(page_for, agent, member, form):
    key = f"round-trip-{form}"
    if form == "roo":
        first = {"tool": "update_todo_list", "input": {"todos": "[x] Read the issue\n[-] Write the fix"}}
        assert agent.http.post(f"/api/v1/sessions/{key}/tool", json=first).status_code == 200
    else:
        agent.todo_write(key, TODOS)
    page = page_for(member)
    open_panel(page, key)
    page.get_by_role("button", name="Edit plan").click()
    page.get_by_label("Step 2", exact=True).fill("Write the fix with a regression test")
    page.get_by_role("button", name="Save plan").click()
    expect(page.locator("#revision")).to_have_text("2")

    body, field = NEXT_CALLS[form]
    answer = agent.http.post(f"/api/v1/sessions/{key}/tool", json=body).json()
    text = answer["reply"][field]
    expected = NOTICES.get(
        form, 'The user changed the plan:\n- reworded "Write the fix" to "Write the fix with a regression test"'
    )
    assert text.startswith(expected), text
    assert page.errors == []


def test_it_shows_the_newest_dropped_steps_and_all_of_them_on_request(page_for, agent, member):
    for letter in "vwx":
        agent.todo_write("rewrites", [(f"{letter * 12} {n}", "pending") for n in range(12)])
    page = page_for(member)
    open_panel(page, "rewrites")
    expect(page.locator("#dropped li")).to_have_count(20)
    expect(page.locator("#dropped-more-text")).to_have_text("The newest 20 of 24.")
    page.get_by_role("button", name="Show all").click()
    expect(page.locator("#dropped li")).to_have_count(24)
    expect(page.locator("#dropped li").first.locator(".content")).to_have_text("vvvvvvvvvvvv 0")
    expect(page.locator("#dropped-more")).to_be_hidden()
    assert page.errors == []


# --- Long plans: finished steps fold, "Jump to current step" ---


def numbered(done: int, *, total: int) -> list[tuple[str, str]]:
    """A plan of `total` steps, the first `done` completed, the next one in progress."""
    return [
        (f"Step {n:02}", "completed" if n < done else "in_progress" if n == done else "pending") for n in range(total)
    ]


def test_a_long_plan_folds_its_finished_steps_and_live_updates_keep_the_fold(shot, page_for, agent, member):
    agent.todo_write("long", numbered(14, total=20))
    page = page_for(member)
    # Folded from the server's first render, before any script runs.
    page.route("**/*.js", lambda route: route.abort())
    page.goto(f"/s/{public_id('long')}/")
    expect(page.locator(".fold-toggle")).to_have_text("14 completed steps")
    expect(page.locator("#steps > .step.status-completed:visible")).to_have_count(0)
    page.unroute("**/*.js")

    open_panel(page, "long")
    toggle = page.get_by_role("button", name="14 completed steps")
    expect(toggle).to_have_attribute("aria-expanded", "false")
    expect(page.locator("#steps > .step:visible")).to_have_count(6)  # in progress and pending
    expect(page.locator("#steps > .step:visible").first).to_have_text(re.compile("Step 14"))
    shot(page, "panel-long-plan-folded")

    toggle.click()
    expect(toggle).to_have_attribute("aria-expanded", "true")
    expect(page.locator("#steps > .step.status-completed:visible")).to_have_count(14)

    # The agent moves on: the list is drawn again, and stays open as the person left it.
    agent.todo_write("long", numbered(15, total=20))
    expect(page.locator("#revision")).to_have_text("2")
    toggle = page.get_by_role("button", name="15 completed steps")
    expect(toggle).to_have_attribute("aria-expanded", "true")
    expect(page.locator("#steps > .step.status-completed:visible")).to_have_count(15)

    toggle.click()
    agent.todo_write("long", numbered(16, total=20))
    expect(page.locator("#revision")).to_have_text("3")
    expect(page.get_by_role("button", name="16 completed steps")).to_have_attribute("aria-expanded", "false")
    expect(page.locator("#steps > .step.status-completed:visible")).to_have_count(0)

    # Replaying an older revision keeps the choice too.
    page.locator("#timeline").fill("1")
    expect(page.locator("#panel")).to_have_attribute("data-mode", "replay")
    expect(page.get_by_role("button", name="14 completed steps")).to_have_attribute("aria-expanded", "false")
    expect(page.locator("#steps > .step.status-completed:visible")).to_have_count(0)
    assert page.errors == []


def test_a_plan_of_12_steps_does_not_fold_and_a_shorter_one_unfolds(page_for, agent, member):
    agent.todo_write("twelve", numbered(11, total=12))
    page = page_for(member)
    open_panel(page, "twelve")
    expect(page.locator(".fold-toggle")).to_have_count(0)
    expect(page.locator("#steps > .step:visible")).to_have_count(12)
    expect(page.locator("#jump-current")).to_be_hidden()

    agent.todo_write("twelve", numbered(12, total=13))  # one more: now it folds
    expect(page.get_by_role("button", name="12 completed steps")).to_be_visible()
    expect(page.locator("#steps > .step:visible")).to_have_count(1)
    agent.todo_write("twelve", numbered(3, total=5))  # shorter again: everything shows
    expect(page.locator(".fold-toggle")).to_have_count(0)
    expect(page.locator("#steps > .step.status-completed:visible")).to_have_count(3)
    assert page.errors == []


def test_jump_to_current_brings_the_step_in_progress_into_view(shot, page_for, agent, member):
    agent.todo_write("jump", numbered(30, total=40))
    page = page_for(member)
    open_panel(page, "jump")
    page.get_by_role("button", name="30 completed steps").click()  # the list is long now
    current = page.locator("#steps > .step.status-in_progress")
    expect(current).to_have_text(re.compile("Step 30"))
    expect(current).not_to_be_in_viewport()

    page.get_by_role("button", name="Jump to current step").click()
    expect(current).to_be_in_viewport()
    expect(current).to_be_focused()
    shot(page, "panel-long-plan-jumped")

    # Live: the next step in progress is the one it jumps to.
    page.evaluate("window.scrollTo(0, 0)")
    agent.todo_write("jump", numbered(31, total=40))
    current = page.locator("#steps > .step.status-in_progress")
    expect(current).to_have_text(re.compile("Step 31"))
    expect(current).not_to_be_in_viewport()
    page.get_by_role("button", name="Jump to current step").click()
    expect(current).to_be_in_viewport()

    # On a phone too: the control fits beside the plan's heading, and works.
    page.set_viewport_size({"width": 375, "height": 812})
    page.evaluate("window.scrollTo(0, 0)")
    jump = page.get_by_role("button", name="Jump to current step")
    assert jump.bounding_box()["x"] + jump.bounding_box()["width"] <= 375
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    expect(current).not_to_be_in_viewport()
    jump.click()
    expect(current).to_be_in_viewport()

    # Nothing in progress: nothing to jump to.
    agent.todo_write("jump", [(f"Step {n:02}", "completed") for n in range(40)])
    expect(page.locator("#jump-current")).to_be_hidden()
    assert page.errors == []
