"""Steering on the panel in a real browser: people's messages to the agent moving from
waiting to told to kept in every watcher's page, the "Message the agent" box and its
errors, the agent's questions approved or denied by one member and seen by another,
a question nobody answered in time, what a share link's holder sees (no controls, no
names), hostile text shown as text, and a phone's width."""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from tests.browser.conftest import wait_until
from todoweb.models import Message, Question, Session

pytestmark = pytest.mark.browser

PLAN = [("Read the issue", "completed"), ("Write the fix", "in_progress"), ("Run the tests", "pending")]
PLAN_TEXT = "# Plan\n1. Reproduce the bug\n2. Fix it\n3. Add a regression test"
ROUTE = "<b>hook</b> 🚀 通道 \u202e"
HOSTILE = (
    '<img src=x onerror="window.pwned=1"> <script>window.pwned=2</script> 🚀 修复错误 \u0007bell \u202eevil &amp; done'
)


@pytest.fixture
def colleague(project):
    """A second member of the project, in a browser of their own."""
    user = get_user_model().objects.create_user("colleague", password="another horse battery")
    project.members.add(user)
    return user


def public_id(key: str) -> str:
    return Session.objects.get(key=key).public_id


def open_panel(page, key: str, query: str = "") -> None:
    page.goto(f"/s/{public_id(key)}/{query}")
    expect(page.locator("#panel")).to_have_attribute("data-connection", "live")


def ask(agent, key: str, **question) -> dict:
    answer = agent.http.post(f"/api/v1/sessions/{key}/questions", json={"wait": 300} | question)
    assert answer.status_code == 201, answer.text
    return answer.json()


def message_item(page, text: str):
    return page.locator("#messages .message", has=page.locator(".message-text", has_text=text))


def question_item(page, question_id: int):
    return page.locator(f'#questions .question[data-id="{question_id}"]')


def told(route: str, kept: int | None = None) -> re.Pattern:
    """A message's state: told a moment ago (a slow machine: some seconds) by `route`."""
    tail = f", kept in revision {kept}" if kept else ""
    return re.compile(rf"^told (just now|\d+s ago) via {re.escape(route)}{re.escape(tail)}$")


# --- Messages to the agent ---


def test_an_edits_state_moves_from_waiting_to_told_to_kept_in_another_members_page(
    shot, page_for, agent, member, colleague
):
    agent.todo_write("steer", PLAN)
    editor, watcher = page_for(member), page_for(colleague)
    open_panel(editor, "steer")
    open_panel(watcher, "steer")
    expect(watcher.locator("#messages-empty")).to_be_visible()

    editor.get_by_role("button", name="Edit plan").click()
    editor.get_by_label("Step 2", exact=True).fill("Write the smallest fix")
    editor.get_by_label(re.compile("^Note for the agent")).fill("Keep the fix small")
    editor.get_by_role("button", name="Save plan").click()
    expect(editor.locator("#revision")).to_have_text("2")

    item = message_item(watcher, "Keep the fix small")
    state = item.locator(".message-state")
    expect(item.locator(".message-kind")).to_have_text("Plan edit")
    expect(item.locator(".message-revision")).to_have_text("revision 2")
    expect(state).to_have_text("waiting for the agent")
    expect(item).to_have_class(re.compile(r"\bstate-waiting\b"))
    expect(watcher.locator("#messages-empty")).to_be_hidden()

    # The todoweb channel tells an idle agent at once.
    answer = agent.http.post("/api/v1/sessions/steer/tell", json={"route": "Claude Code channel"}).json()
    assert answer["told"] is True
    expect(state).to_have_text(told("Claude Code channel"))
    expect(item).to_have_class(re.compile(r"\bstate-told\b"))
    expect(message_item(editor, "Keep the fix small").locator(".message-state")).to_have_text(
        told("Claude Code channel")
    )

    # Its next write keeps the edit: revision 3.
    agent.todo_write("steer", PLAN)
    expect(state).to_have_text(told("Claude Code channel", kept=3))
    expect(item).to_have_class(re.compile(r"\bstate-kept\b"))
    shot(watcher, "panel-messages-kept")

    # "revision 2" replays the person's revision on the checklist.
    item.locator(".message-revision").click()
    expect(watcher.locator("#panel")).to_have_attribute("data-mode", "replay")
    expect(watcher.locator("#timeline")).to_have_value("2")
    expect(watcher.locator("#replay-note")).to_contain_text("Replaying revision 2 of 3")
    expect(watcher.locator("#steps .step .content").nth(1)).to_have_text("Write the smallest fix")
    watcher.get_by_role("button", name="Back to live").click()
    expect(watcher.locator("#panel")).to_have_attribute("data-mode", "live")
    assert editor.errors == [] and watcher.errors == []


def test_a_reload_shows_the_same_words_the_live_page_did(page_for, agent, member):
    agent.todo_write("reload", PLAN)
    agent.http.post("/api/v1/sessions/reload/messages", json={"text": "First"})
    agent.http.post("/api/v1/sessions/reload/tell", json={"route": "MCP"})
    agent.http.post("/api/v1/sessions/reload/messages", json={"text": "Second"})
    page = page_for(member)
    # What the server renders, before any script runs.
    page.route("**/panel.js", lambda route: route.abort())
    page.goto(f"/s/{public_id('reload')}/")
    server_words = page.locator("#messages .message-state").all_inner_texts()
    assert len(server_words) == 2 and told("MCP").match(server_words[0]), server_words
    assert server_words[1] == "waiting for the agent"
    page.unroute("**/panel.js")
    open_panel(page, "reload")
    expect(page.locator("#messages .message-state")).to_have_text(server_words)


def test_a_member_messages_the_agent_and_every_watcher_sees_it_waiting(page_for, agent, member, colleague):
    agent.todo_write("note", PLAN)
    page, watcher = page_for(member), page_for(colleague)
    open_panel(page, "note")
    open_panel(watcher, "note")
    box = page.get_by_label(re.compile("^Message the agent"))
    box.fill("Use the staging database")
    page.get_by_role("button", name="Send").click()

    expect(page.locator("#note-status")).to_have_text("Sent: the agent is told on its next call.")
    expect(box).to_have_value("")
    for each in (page, watcher):
        item = message_item(each, "Use the staging database")
        expect(item.locator(".message-kind")).to_have_text("Note")
        expect(item.locator(".message-state")).to_have_text("waiting for the agent")
    assert list(Message.objects.values_list("text", "author")) == [("Use the staging database", "member")]

    reply = agent.todo_write("note", PLAN)["reply"]["content"]
    assert "The user's note: Use the staging database" in reply
    for each in (page, watcher):
        expect(message_item(each, "Use the staging database").locator(".message-state")).to_have_text(
            told("tool endpoint")
        )
    assert page.errors == [] and watcher.errors == []


def test_the_message_box_says_what_is_wrong_next_to_it(page_for, agent, member):
    agent.todo_write("note-errors", PLAN)
    page = page_for(member)
    open_panel(page, "note-errors")
    box = page.get_by_label(re.compile("^Message the agent"))
    send = page.get_by_role("button", name="Send")
    status = page.locator("#note-status")

    box.fill("   \n ")
    send.click()
    expect(status).to_have_text("Write something for the agent first.")
    expect(status).to_have_class(re.compile(r"\berror\b"))
    expect(box).to_have_attribute("aria-invalid", "true")
    expect(box).to_be_focused()

    box.fill("字" * 2001)
    send.click()
    expect(status).to_have_text("Your message is 2,001 characters long: at most 2,000 fit. Shorten it and send again.")
    expect(box).to_have_value("字" * 2001)  # kept, to be shortened
    box.press("Backspace")
    expect(status).to_have_text("")  # typing clears the complaint
    expect(box).not_to_have_attribute("aria-invalid", "true")

    # The network fails: nothing is lost.
    page.route("**/actions/note", lambda route: route.abort())
    send.click()
    expect(status).to_have_text("The server could not be reached. Check the connection and try again.")
    expect(box).to_have_value("字" * 2000)
    page.unroute("**/actions/note")

    # The login ended meanwhile (the server refuses the post).
    page.context.clear_cookies()
    send.click()
    expect(status).to_have_text("Your login has expired or this page is out of date: reload the page and try again.")
    assert Message.objects.count() == 0
    expect(page.locator("#messages .message")).to_have_count(0)
    assert page.errors == []


# --- Questions from the agent ---


def test_members_approve_and_deny_with_feedback_and_each_sees_the_others_answer(
    shot, page_for, agent, member, colleague
):
    agent.todo_write("ask", PLAN)
    page, other = page_for(member), page_for(colleague)
    open_panel(page, "ask")
    open_panel(other, "ask")
    expect(page.locator("#questions-section")).to_be_hidden()

    plan = ask(agent, "ask", kind="plan", text=PLAN_TEXT, tool_name="ExitPlanMode")
    item, seen = question_item(page, plan["id"]), question_item(other, plan["id"])
    expect(item.locator(".question-title")).to_have_text("The agent asks you to approve its plan")
    expect(item.locator(".question-badge")).to_have_text("waiting for an answer")
    expect(item.locator(".question-text")).to_have_text(PLAN_TEXT)
    expect(seen.locator(".question-text")).to_have_text(PLAN_TEXT)
    countdown = item.locator(".countdown")
    expect(countdown).to_have_text(re.compile(r"^ · [45]:\d\d left to answer$"))
    first = countdown.inner_text()
    wait_until(page, "(t) => document.querySelector('.question.state-open .countdown').textContent !== t", arg=first)
    expect(page.locator("#steering-announce")).to_have_text("The agent asks you to approve its plan.")
    shot(page, "panel-question-open")

    item.get_by_label(re.compile("^Feedback for the agent")).fill("Keep the fix small")
    item.get_by_role("button", name="Approve plan").click()
    expect(item.locator(".question-outcome")).to_have_text("Approved by you.")
    expect(item.locator(".question-badge")).to_have_text("approved")
    expect(item.locator(".feedback-text")).to_have_text("Keep the fix small")
    expect(item.get_by_role("button", name="Approve plan")).to_be_hidden()
    expect(item).to_be_focused()
    # The other member's page follows: no buttons left, the answer and its feedback.
    expect(seen.locator(".question-outcome")).to_have_text("Approved.")
    expect(seen.locator(".feedback-text")).to_have_text("Keep the fix small")
    expect(seen.get_by_role("button", name="Approve plan")).to_be_hidden()
    assert Question.objects.get(pk=plan["id"]).decided_by == "member"
    waited = agent.http.get(f"/api/v1/sessions/ask/questions/{plan['id']}?wait=0").json()
    assert (waited["state"], waited["feedback"]) == ("allowed", "Keep the fix small")

    tool = ask(
        agent, "ask", kind="permission", tool_name="Bash", text="Delete build/", detail='{"command": "rm -rf build"}'
    )
    asked = question_item(other, tool["id"])
    expect(asked.locator(".question-title")).to_have_text("The agent asks to use Bash")
    expect(asked.locator(".question-detail")).to_have_text('{"command": "rm -rf build"}')
    expect(other.locator("#questions .question").first).to_have_attribute("data-id", str(tool["id"]))  # newest on top
    asked.get_by_label(re.compile("^Feedback for the agent")).fill("Not the build folder")
    asked.get_by_role("button", name="Deny").click()
    expect(asked.locator(".question-outcome")).to_have_text("Denied by you.")
    denied = question_item(page, tool["id"])
    expect(denied.locator(".question-outcome")).to_have_text("Denied.")
    expect(denied.locator(".feedback-text")).to_have_text("Not the build folder")
    expect(denied).to_have_class(re.compile(r"\bstate-denied\b"))
    shot(page, "panel-questions-answered")

    # A member's page made afterwards says who decided.
    page.reload()
    expect(question_item(page, plan["id"]).locator(".question-outcome")).to_have_text("Approved by you.")
    expect(question_item(page, tool["id"]).locator(".question-outcome")).to_have_text("Denied by colleague.")
    assert page.errors == [] and other.errors == []


def test_an_answer_that_comes_too_late_is_refused_in_place(page_for, agent, member):
    agent.todo_write("late", PLAN)
    page = page_for(member)
    open_panel(page, "late")
    question = ask(agent, "late", kind="plan", text=PLAN_TEXT)
    item = question_item(page, question["id"])
    expect(item.get_by_role("button", name="Approve plan")).to_be_visible()
    # Someone else answered, and this page has not heard yet (no event was sent).
    Question.objects.filter(pk=question["id"]).update(decision="deny", decided_by="colleague")
    item.get_by_role("button", name="Approve plan").click()
    expect(item.locator(".question-status")).to_have_text("This question is denied: it takes no answer now")
    expect(item.locator(".question-status")).to_have_class(re.compile(r"\berror\b"))


def test_a_question_nobody_answers_in_time_says_the_agents_own_prompt_asked(page_for, agent, member):
    agent.todo_write("timeout", PLAN)
    page = page_for(member)
    open_panel(page, "timeout")
    question = ask(agent, "timeout", kind="permission", tool_name="Bash", text="Run the migrations", wait=2)
    item = question_item(page, question["id"])
    expect(item.get_by_role("button", name="Allow")).to_be_visible()
    expect(item.locator(".countdown")).to_have_text(re.compile(r"^ · 0:0[0-2] left to answer$"))
    # By the page's own clock: no event says so.
    expect(item.locator(".question-outcome")).to_have_text(
        "No answer in time: the agent's own prompt asked instead.", timeout=6000
    )
    expect(item.locator(".question-badge")).to_have_text("expired")
    expect(item.get_by_role("button", name="Allow")).to_be_hidden()
    expect(item.locator(".countdown")).to_have_text("")
    page.reload()
    expect(question_item(page, question["id"]).locator(".question-outcome")).to_have_text(
        "No answer in time: the agent's own prompt asked instead."
    )
    assert page.errors == []


def steer_while_away(api, key: str) -> None:
    """A note and a question, through the API in-process (the live server is down)."""
    from django.db import connection

    try:
        assert api.post(f"/api/v1/sessions/{key}/messages", {"text": "Written while you were away"}).status_code == 201
        assert api.post(f"/api/v1/sessions/{key}/questions", {"kind": "plan", "text": PLAN_TEXT}).status_code == 201
    finally:
        connection.close()


def test_after_a_reconnect_the_panel_shows_what_changed_while_it_was_away(page_for, agent, member, asgi_server, api):
    from channels.layers import channel_layers

    agent.todo_write("away", PLAN)
    page = page_for(member)
    open_panel(page, "away")
    asgi_server.stop()
    expect(page.locator("#panel")).to_have_attribute("data-connection", "reconnecting")
    channel_layers.backends.clear()  # the restarted server's layer: the events are lost
    with ThreadPoolExecutor(1) as pool:  # a thread of its own: this one carries Playwright's loop
        pool.submit(steer_while_away, api, "away").result()
    asgi_server.start()

    expect(page.locator("#panel")).to_have_attribute("data-connection", "live", timeout=10000)
    expect(message_item(page, "Written while you were away").locator(".message-state")).to_have_text(
        "waiting for the agent"
    )
    expect(page.locator("#questions .question.state-open .question-text")).to_have_text(PLAN_TEXT)
    expect(page.get_by_role("button", name="Approve plan")).to_be_visible()


# --- Who sees what ---


def test_a_share_link_shows_questions_and_messages_without_controls_or_names(page_for, agent, member):
    agent.todo_write("shared", PLAN)
    agent.http.post("/api/v1/sessions/shared/messages", json={"text": "Ship it after lunch"})
    question = ask(agent, "shared", kind="plan", text=PLAN_TEXT)
    url = agent.http.post("/api/v1/sessions/shared/share", json={}).json()["url"]
    viewer, page = page_for(), page_for(member)
    viewer.goto(url)
    expect(viewer.locator("#panel")).to_have_attribute("data-connection", "live")
    open_panel(page, "shared")

    item = question_item(viewer, question["id"])
    expect(item.locator(".question-text")).to_have_text(PLAN_TEXT)
    expect(item.locator(".countdown")).to_have_text(re.compile("left to answer"))
    expect(viewer.locator("#questions-section")).to_contain_text("Editors of the project answer these.")
    expect(message_item(viewer, "Ship it after lunch").locator(".message-state")).to_have_text("waiting for the agent")
    for name in ["Approve plan", "Allow", "Deny", "Send"]:
        expect(viewer.get_by_role("button", name=name, exact=True)).to_have_count(0)
    expect(viewer.locator("textarea")).to_have_count(0)
    expect(viewer.locator("#note-form")).to_have_count(0)

    question_item(page, question["id"]).get_by_role("button", name="Approve plan").click()
    expect(question_item(page, question["id"]).locator(".question-outcome")).to_have_text("Approved by you.")
    expect(item.locator(".question-outcome")).to_have_text("Approved.")
    viewer.reload()
    expect(question_item(viewer, question["id"]).locator(".question-outcome")).to_have_text("Approved.")
    assert not re.search(r"\bmember\b", viewer.locator("body").inner_text())
    fresh = viewer.request.get(url, headers={"Accept": "application/json"}).json()
    assert fresh["deciders"] == {} and fresh["questions"][0]["state"] == "allowed"
    # Answering is for members: a share link's holder is refused.
    refused = viewer.request.post(
        url.replace("/?share=", "/actions/answer?share="),
        data={"question": question["id"], "decision": "deny"},
    )
    assert refused.status == 403
    assert viewer.errors == []


def test_hostile_text_is_shown_as_the_text_it_is(page_for, agent, member):
    agent.todo_write("hostile", PLAN)
    page = page_for(member)
    open_panel(page, "hostile")
    # Live: a note sent from the box, a question asked while the page is open.
    page.get_by_label(re.compile("^Message the agent")).fill(HOSTILE)
    page.get_by_role("button", name="Send").click()
    # The box's answer came: the note is saved (telling before that would find nothing).
    expect(page.get_by_label(re.compile("^Message the agent"))).to_have_value("")
    question = ask(agent, "hostile", kind="permission", tool_name=HOSTILE, text=HOSTILE, detail=HOSTILE)
    assert agent.http.post("/api/v1/sessions/hostile/tell", json={"route": ROUTE}).json()["told"]

    def check() -> None:
        note = page.locator("#messages .message").first
        expect(note.locator(".message-state")).to_have_text(told(ROUTE))
        assert note.locator(".message-text").text_content() == HOSTILE
        assert note.locator(".state-via").text_content() == f" via {ROUTE}"
        item = question_item(page, question["id"])
        expect(item.locator(".question-title")).to_have_text(f"The agent asks to use {HOSTILE}")
        assert item.locator(".question-text").text_content() == HOSTILE
        assert item.locator(".question-detail").text_content() == HOSTILE
        assert page.locator("#panel img, #panel script").count() == 0
        assert page.evaluate("window.pwned") is None

    check()
    page.reload()  # rendered by the server this time
    expect(page.locator("#panel")).to_have_attribute("data-connection", "live")
    check()
    assert page.errors == []


@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
def test_steering_fits_a_phone(shot, page_for, agent, member, dark):
    agent.todo_write("phone", PLAN)
    agent.http.post("/api/v1/sessions/phone/messages", json={"text": "Use the staging database " * 8})
    agent.http.post("/api/v1/sessions/phone/tell", json={"route": "Claude Code hook (TodoWrite)"})
    agent.http.post("/api/v1/sessions/phone/messages", json={"text": "Then open a pull request"})
    long_line = "x" * 300
    ask(agent, "phone", kind="permission", tool_name="Bash", text="Build it", detail=f'{{"command": "{long_line}"}}')
    page = page_for(member, phone=True, dark=dark)
    page.set_viewport_size({"width": 375, "height": 800})
    open_panel(page, "phone")
    expect(page.locator("#questions .question")).to_have_count(1)
    expect(page.locator("#messages .message")).to_have_count(2)
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    buttons = page.locator(".question-buttons button")
    for index in range(buttons.count()):
        box = buttons.nth(index).bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= 375 and box["height"] >= 30
    shot(page, f"panel-steering-phone-{'dark' if dark else 'light'}")
    assert page.errors == []
