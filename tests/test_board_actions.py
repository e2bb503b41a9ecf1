"""The board's write actions (/s/<id>/actions/…) and the panel's history: who may act,
CSRF, bad input, and each action through the real URLs and middleware."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import User
from django.test import Client

from todoweb.models import Project, Revision, Session, ShareLink

PLAN = [
    {"content": "Read the issue", "status": "completed", "activeForm": "Reading the issue"},
    {"content": "Write the fix", "status": "in_progress", "activeForm": "Writing the fix"},
    {"content": "Run the tests", "status": "pending", "activeForm": "Running the tests"},
]


def panel_config(page) -> dict:
    html = page.content.decode()
    return json.loads(html.split('id="panel-config" type="application/json">')[1].split("</script>")[0])


class Board:
    """A member's browser on the panel: logged in, CSRF enforced, posting JSON with the
    token the page renders, as panel.js does."""

    def __init__(self, user: User, session: Session):
        self.client = Client(enforce_csrf_checks=True)
        self.client.force_login(user)
        self.page = self.client.get(session.get_absolute_url())
        assert self.page.status_code == 200
        self.config = panel_config(self.page)

    def post(self, action: str, body=None, *, headers: dict[str, str] | None = None, **options):
        data = body if isinstance(body, (str, bytes)) else ("" if body is None else json.dumps(body))
        return self.client.post(
            self.config["actions"][action],
            data=data,
            content_type=options.pop("content_type", "application/json"),
            headers={"X-CSRFToken": self.config["csrfToken"]} | (headers or {}),
        )


@pytest.fixture
def session(api) -> Session:
    assert api.call("run-1", "TodoWrite", {"todos": PLAN}).status_code == 200
    return Session.objects.get(key="run-1")


@pytest.fixture
def board(member, session) -> Board:
    return Board(member, session)


def error(response, status: int, code: str) -> str:
    body = response.json()
    assert response.status_code == status, body
    assert body["ok"] is False and body["error"]["code"] == code
    return body["error"]["message"]


def test_it_gives_members_the_actions_and_share_viewers_none(board, client, session, api):
    html = board.page.content.decode()
    assert 'id="edit-button"' in html and 'aria-label="Session actions"' in html
    assert set(board.config["actions"]) == {
        "rename",
        "close",
        "reopen",
        "archive",
        "share",
        "share-revoke",
        "edits",
        "note",
        "answer",
    }
    assert board.config["actions"]["rename"] == f"/s/{session.public_id}/actions/rename"

    url = api.post("/api/v1/sessions/run-1/share", {}).json()["url"]
    shared = client.get(url)
    assert shared.status_code == 200
    html = shared.content.decode()
    assert 'id="edit-button"' not in html and "Session actions" not in html and "share-box" not in html
    config = panel_config(shared)
    assert "actions" not in config and "csrfToken" not in config
    assert config["historyUrl"].startswith(f"/s/{session.public_id}/history.json?share=sh_")


def test_it_renames_and_tells_the_answer(board, session):
    response = board.post("rename", {"title": "  Fix   the login bug "})
    assert response.status_code == 200
    assert response.json()["session"]["title"] == "Fix the login bug"
    assert Session.objects.get(pk=session.pk).title == "Fix the login bug"
    # A blank title shows the key again.
    assert board.post("rename", {"title": ""}).json()["session"]["title"] == ""


def test_it_closes_and_reopens(board, session):
    closed = board.post("close")
    assert closed.status_code == 200 and closed.json()["session"]["state"] == "closed"
    assert Session.objects.get(pk=session.pk).closed_at is not None
    reopened = board.post("reopen")
    assert reopened.json()["session"]["state"] == "active"
    assert Session.objects.get(pk=session.pk).closed_at is None


def test_it_archives_and_points_back_to_the_dashboard(board, session):
    response = board.post("archive")
    assert response.status_code == 200 and response.json() == {"archived": True, "dashboard": "/"}
    assert Session.objects.get(pk=session.pk).archived_at is not None
    assert board.client.get(session.get_absolute_url()).status_code == 404
    # Archived: not a session the member can act on any more.
    error(board.post("rename", {"title": "x"}), 404, "not_found")


def test_it_creates_an_absolute_read_only_link_and_revokes_every_link(board, session, client):
    response = board.post("share", {"expires_in": 3600})
    assert response.status_code == 201
    link = response.json()
    assert link["url"].startswith(f"http://testserver/s/{session.public_id}/?share=sh_")
    assert link["active_links"] == 1
    assert client.get(link["url"]).status_code == 200
    assert board.post("share").json()["active_links"] == 2  # the default expiry: 7 days

    revoked = board.post("share-revoke")
    assert revoked.status_code == 200 and revoked.json() == {"revoked": 2, "active_links": 0}
    assert client.get(link["url"]).status_code == 403
    assert not ShareLink.objects.filter(session=session, revoked_at__isnull=True).exists()


def test_the_panel_counts_the_links_that_still_work(board, member, session):
    board.post("share", {"expires_in": 3600})
    html = Board(member, session).page.content.decode()
    assert 'data-count="1">1 active link<' in html


def test_it_refuses_a_post_without_the_csrf_token(board, session):
    url = board.config["actions"]["close"]
    response = board.client.post(url, data="{}", content_type="application/json")
    assert response.status_code == 403
    assert Session.objects.get(pk=session.pk).closed_at is None


def test_it_refuses_logged_out_viewers_even_with_a_share_link(client, session, api):
    share = api.post("/api/v1/sessions/run-1/share", {}).json()["token"]
    for action in ["rename", "close", "archive", "share", "edits"]:
        url = f"/s/{session.public_id}/actions/{action}?share={share}"
        response = client.post(url, data=json.dumps({"title": "x"}), content_type="application/json")
        assert error(response, 403, "forbidden").startswith("Log in as a member")
    session.refresh_from_db()
    assert session.title == "" and session.closed_at is None and session.archived_at is None


def test_it_hides_the_session_from_non_members_and_lets_staff_act(client, session):
    outsider = User.objects.create_user("outsider", password="pw")
    client.force_login(outsider)
    url = f"/s/{session.public_id}/actions/close"
    error(client.post(url, content_type="application/json"), 404, "not_found")
    assert Session.objects.get(pk=session.pk).closed_at is None
    staff = User.objects.create_user("boss", password="pw", is_staff=True)
    client.force_login(staff)
    assert client.post(url, content_type="application/json").status_code == 200


def test_it_answers_only_posts(board):
    assert board.client.get(board.config["actions"]["rename"]).status_code == 405


@pytest.mark.parametrize(
    ("action", "body", "options", "status", "code", "message"),
    [
        ("rename", {"title": "x" * 501}, {}, 422, "invalid_input", "title: String should have at most 500 characters"),
        ("rename", {"title": "x", "closed": True}, {}, 422, "invalid_input", "closed: Extra inputs are not permitted"),
        ("rename", {}, {}, 422, "invalid_input", "title: Field required"),
        ("rename", "[1]", {}, 422, "invalid_input", "The body must be a JSON object"),
        ("rename", "{nope", {}, 400, "invalid_json", None),
        ("rename", "title=x", {"content_type": "application/x-www-form-urlencoded"}, 415, None, None),
        (
            "share",
            {"expires_in": 5},
            {},
            422,
            "invalid_input",
            "expires_in: Input should be greater than or equal to 60",
        ),
        ("edits", {"todos": "x"}, {"headers": {"If-Match": "1"}}, 422, "invalid_input", None),
    ],
)
def test_it_refuses_bad_input_with_one_clear_message(board, session, action, body, options, status, code, message):
    response = board.post(action, body, **options)
    assert response.status_code == status, response.content
    if code:
        assert response.json()["error"]["code"] == code
    if message:
        assert response.json()["error"]["message"] == message
    session.refresh_from_db()
    assert session.title == "" and session.revision == 1 and not ShareLink.objects.exists()


def current_steps(board) -> list[dict]:
    return panel_config(board.client.get(board.page.wsgi_request.path))["initial"]["todos"]


def test_it_saves_a_plan_edit_made_on_the_current_revision(board, session, api):
    steps = current_steps(board)
    todos = [
        {"id": steps[0]["id"], "content": "Read the issue", "status": "completed"},
        {"id": steps[2]["id"], "content": "Run the whole suite", "status": "pending"},
        {"id": steps[1]["id"], "content": "Write the fix", "status": "in_progress", "active_form": "Writing the fix"},
        {"content": "Ask for review", "status": "pending"},
    ]
    response = board.post("edits", {"todos": todos, "note": "Tests first"}, headers={"If-Match": "1"})
    assert response.status_code == 200, response.content
    data = response.json()
    assert data["revision"] == 2 and data["author"] == "user"
    assert [t["content"] for t in data["todos"]] == [
        "Read the issue",
        "Run the whole suite",
        "Write the fix",
        "Ask for review",
    ]
    row = Revision.objects.get(session=session, number=2)
    assert row.author == "user" and row.raw_input["user"] == "member" and row.raw_input["note"] == "Tests first"
    # The agent hears of it on its next call.
    reply = api.call("run-1", "TodoWrite", {"todos": PLAN}).json()["reply"]["content"]
    assert reply.startswith("The user changed the plan:")


def test_it_answers_409_with_the_current_plan_when_the_agent_wrote_in_between(board, session, api):
    steps = current_steps(board)
    api.call("run-1", "TodoWrite", {"todos": [dict(t, status="completed") for t in PLAN]})
    todos = [{"id": s["id"], "content": s["content"], "status": "cancelled"} for s in steps]
    response = board.post("edits", {"todos": todos}, headers={"If-Match": "1"})
    assert error(response, 409, "revision_conflict").startswith("The plan changed while you were editing")
    current = response.json()["data"]
    assert current["revision"] == 2 and current["counts"]["completed"] == 3
    assert Session.objects.get(pk=session.pk).revision == 2


def test_it_needs_the_revision_the_edit_was_made_on(board, session):
    todos = [{"content": "Only step", "status": "pending"}]
    error(board.post("edits", {"todos": todos}), 428, "precondition_required")
    error(board.post("edits", {"todos": todos}, headers={"If-Match": "one"}), 400, "invalid_if_match")
    message = error(board.post("edits", {"todos": [{"content": ""}]}, headers={"If-Match": "1"}), 422, "invalid_input")
    assert message.startswith("todos.0.content:")
    assert Session.objects.get(pk=session.pk).revision == 1


def test_the_history_counts_progress_over_time_as_each_revision_does(api, member, client):
    client.force_login(member)
    writes = [
        PLAN,
        [dict(PLAN[0]), dict(PLAN[1], status="completed"), dict(PLAN[2], status="in_progress")],
        # "Run the tests" dropped while unfinished, a new step in its place.
        [
            dict(PLAN[0]),
            dict(PLAN[1], status="completed"),
            {"content": "Deploy", "status": "pending", "activeForm": "D"},
        ],
        # Reopened, and the dropped step back.
        [dict(PLAN[0]), dict(PLAN[1], status="in_progress"), dict(PLAN[2], status="pending")],
    ]
    for todos in writes:
        assert api.call("h", "TodoWrite", {"todos": todos}).status_code == 200
    session = Session.objects.get(key="h")
    history = client.get(f"/s/{session.public_id}/history.json").json()

    assert [point[0] for point in history["revisions"]] == [1, 2, 3, 4]
    for number, at, completed, total, author in history["revisions"]:
        expected = client.get(f"/s/{session.public_id}/revisions/{number}.json").json()
        assert [completed, total] == [expected["counts"]["completed"], expected["counts"]["total"]], number
        assert at == expected["at"] and author == "agent"
    changes = history["changes"]
    assert [1, "1", None, "completed"] in changes
    assert [3, "3", "in_progress", None] in changes  # dropped
    assert [4, "2", "completed", "in_progress"] in changes  # reopened


def test_the_history_is_open_to_share_links_and_closed_to_strangers(api, client, session):
    url = api.post("/api/v1/sessions/run-1/share", {}).json()["url"]
    shared = client.get(url.replace("/?share=", "/history.json?share="))
    assert shared.status_code == 200 and shared.json()["revisions"][0][2:] == [1, 3, "agent"]
    assert client.get(f"/s/{session.public_id}/history.json").status_code == 403
    other = Project.objects.create(name="Other", slug="other")
    outsider = User.objects.create_user("outsider", password="pw")
    other.members.add(outsider)
    client.force_login(outsider)
    assert client.get(f"/s/{session.public_id}/history.json").status_code == 404
