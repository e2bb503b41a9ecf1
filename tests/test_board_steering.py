"""Steering on the panel, server side: the page renders people's messages and the
agent's questions (words as the script says them, text escaped), members get the
answer form and the names of who decided, a share link's holder neither; the panel
answers the same lists as JSON for the script to read again after a reconnect."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from tests.test_board_actions import PLAN, Board, panel_config
from todoweb.models import Session
from todoweb.web.board.views import countdown, question_view, time_ago

KEY = "run-1"
NOW = datetime(2025, 1, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def session(api) -> Session:
    assert api.call(KEY, "TodoWrite", {"todos": PLAN}).status_code == 200
    return Session.objects.get(key=KEY)


def ask(api, **question) -> dict:
    answer = api.post(f"/api/v1/sessions/{KEY}/questions", {"wait": 300} | question)
    assert answer.status_code == 201, answer.content
    return answer.json()


def page_html(client: Client, url: str) -> str:
    page = client.get(url)
    assert page.status_code == 200
    return page.content.decode()


def test_the_panel_renders_each_messages_state_in_words(api, member, session):
    api.post(f"/api/v1/sessions/{KEY}/messages", {"text": "Use <b>staging</b>"})
    api.post(f"/api/v1/sessions/{KEY}/tell", {"route": "Claude Code channel"})
    todos = [{"content": t["content"], "status": t["status"]} for t in PLAN[:2]]
    edit = Board(member, session).post("edits", {"todos": todos, "note": "Two steps"}, headers={"If-Match": "1"})
    assert edit.status_code == 200
    board = Board(member, session)
    html = board.page.content.decode()
    assert "Use &lt;b&gt;staging&lt;/b&gt;" in html and "<b>staging" not in html
    assert "told</span> <time" in html and "via Claude Code channel" in html
    assert 'data-revision="2">revision 2</button>' in html  # the person's edit, to replay
    assert "waiting for the agent" in html
    # The agent's next write keeps the edit.
    assert api.call(KEY, "TodoWrite", {"todos": PLAN}).status_code == 200
    html = page_html(board.client, session.get_absolute_url())
    assert 'data-revision="3">revision 3</button>' in html and "kept in " in html
    assert "waiting for the agent" not in html
    # The box to message the agent, for members.
    assert 'id="note-form"' in html and board.config["actions"]["note"].endswith("/actions/note")


def test_members_get_the_answer_form_and_who_decided(api, member, session):
    plan = ask(api, kind="plan", text="# Plan\n1. <script>alert(1)</script>")
    tool = ask(api, kind="permission", tool_name="Bash", text="Delete build/", detail='{"command": "rm -rf build"}')
    other = get_user_model().objects.create_user("colleague")
    session.project.members.add(other)
    board = Board(other, session)
    assert (
        board.post("answer", {"question": plan["id"], "decision": "deny", "feedback": "Test first"}).json()["state"]
        == "denied"
    )

    mine = Board(member, session)
    html = mine.page.content.decode()
    assert "1. &lt;script&gt;alert(1)&lt;/script&gt;" in html and "<script>alert" not in html
    assert "The agent asks to use Bash" in html and "&quot;command&quot;" in html
    assert "Denied by colleague." in html and 'Feedback: </span><span class="feedback-text">Test first' in html

    def item(question: dict) -> str:
        return html.split(f'data-id="{question["id"]}"')[1].split("</li>")[0]

    # The form shows on the open question only.
    assert '<form class="question-form">' in item(tool) and "Allow</button>" in item(tool)
    assert '<form class="question-form" hidden>' in item(plan)
    assert mine.config["deciders"] == {str(plan["id"]): "colleague"}
    assert Board(other, session).config["deciders"] == {str(plan["id"]): "you"}
    # Newest first: the question waiting for an answer is on top.
    assert html.index(f'data-id="{tool["id"]}"') < html.index(f'data-id="{plan["id"]}"')


def test_a_share_link_shows_the_lists_without_the_form_or_any_name(api, member, session, client):
    question = ask(api, kind="plan", text="# Plan")
    api.post(f"/api/v1/sessions/{KEY}/messages", {"text": "Ship it after lunch"})
    Board(member, session).post("answer", {"question": question["id"], "decision": "allow"})
    url = api.post(f"/api/v1/sessions/{KEY}/share", {}).json()["url"]
    shared = client.get(url)
    html = shared.content.decode()
    assert "Approved." in html and "Ship it after lunch" in html
    assert "question-form" not in html and "note-form" not in html and "member" not in html.replace("Members", "")
    config = panel_config(shared)
    assert "deciders" not in config and "actions" not in config
    assert config["steeringUrl"] == f"/s/{session.public_id}/?share={url.split('share=')[1]}"


def test_the_panel_answers_the_lists_as_json_for_whoever_may_watch(api, member, session, client):
    question = ask(api, kind="plan", text="# Plan")
    api.post(f"/api/v1/sessions/{KEY}/messages", {"text": "Hello"})
    board = Board(member, session)
    board.post("answer", {"question": question["id"], "decision": "allow"})
    answer = board.client.get(session.get_absolute_url(), headers={"Accept": "application/json"})
    assert answer.status_code == 200 and "Accept" in answer["Vary"]
    body = answer.json()
    assert [m["text"] for m in body["messages"]] == ["Hello"]
    assert [q["state"] for q in body["questions"]] == ["allowed"]
    assert body["deciders"] == {str(question["id"]): "you"}

    url = api.post(f"/api/v1/sessions/{KEY}/share", {}).json()["url"]
    shared = client.get(url, headers={"Accept": "application/json"}).json()
    assert shared["deciders"] == {} and shared["questions"][0]["state"] == "allowed"
    # No access, no lists.
    assert Client().get(session.get_absolute_url(), headers={"Accept": "application/json"}).status_code == 302


def test_an_open_question_past_its_time_shows_as_expired():
    question = {
        "id": 1,
        "kind": "permission",
        "tool": None,
        "text": "",
        "detail": "",
        "at": "2025-01-01T11:58:00Z",
        "expires_at": "2025-01-01T12:04:59Z",
        "state": "open",
        "feedback": "",
        "decided_at": None,
    }
    shown = question_view(question, "", NOW)
    assert (shown["shown_state"], shown["title"], shown["left"]) == (
        "open",
        "The agent asks to use a tool",
        " · 4:59 left to answer",
    )
    later = question_view(question, "", NOW + timedelta(minutes=5))
    assert (later["shown_state"], later["badge"], later["left"]) == ("expired", "expired", "")
    assert later["outcome"] == "No answer in time: the agent's own prompt asked instead."
    allowed = question_view(question | {"state": "allowed"}, "alice", NOW)
    assert (allowed["badge"], allowed["outcome"]) == ("allowed", "Allowed by alice.")


def test_times_are_worded_as_the_script_words_them():
    assert [countdown(s) for s in (0, 0.2, 59, 299.5, 3723, -3)] == ["0:00", "0:01", "0:59", "5:00", "1:02:03", "0:00"]
    ago = [time_ago((NOW - timedelta(seconds=s)).isoformat(), NOW) for s in (0, 9, 10, 59, 60, 3599, 3600, 86400)]
    assert ago == ["just now", "just now", "10s ago", "59s ago", "1 min ago", "59 min ago", "1 h ago", "1 d ago"]
    assert time_ago(None, NOW) == ""
