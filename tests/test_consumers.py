"""The websocket consumers, through the real ASGI stack: origin check,
login session or share token, project membership, and every event."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from tests.conftest import fast_path
from todoweb.asgi import application
from todoweb.live import consumers, events, hub
from todoweb.live.hub import process_hub
from todoweb.models import Project, Session, ShareLink
from todoweb.writes.sharing import share_create, share_revoke_all
from todoweb.writes.tokens import token_create

pytestmark = pytest.mark.django_db(transaction=True)

TIMEOUT = 2


def due_in(seconds: float) -> float:
    """How long to wait for an event a timer sends `seconds` from now: comfortably
    longer, since a loaded machine runs timers late (a wait that races its own
    deadline fails only in a full run)."""
    return seconds + 5 * TIMEOUT


@pytest.fixture(autouse=True)
def memory_layer(settings):
    # A fresh in-memory layer per test: each test runs its own event loop.
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "todoweb.live.layer.ProcessLayer"}}


@pytest.fixture(autouse=True)
async def stop_the_hub():
    # Each test's loop has its own hub; it stops with the test, not when the loop is gone.
    yield
    await process_hub().stop()


def plan(*statuses: str) -> dict:
    return {
        "todos": [
            {"content": f"Step {i}", "status": s, "activeForm": f"Doing step {i}"} for i, s in enumerate(statuses)
        ]
    }


def post_as(raw_token: str, key: str, body: dict):
    return Client().post(
        f"/api/v1/sessions/{key}/tool",
        {"tool": "TodoWrite", "input": body},
        content_type="application/json",
        headers={"Authorization": f"Bearer {raw_token}"},
    )


def layer_down(monkeypatch) -> None:
    """Nothing published reaches any hub, from synchronous code or the event loop."""

    async def dropped(messages) -> None:
        return None

    monkeypatch.setattr(events, "send", lambda messages: None)
    monkeypatch.setattr(events, "asend", dropped)


def cookie_for(user: User) -> str:
    client = Client()
    client.force_login(user)
    return client.cookies["sessionid"].value


@pytest.fixture
def outsider(db) -> User:
    other = Project.objects.create(name="Other", slug="other")
    user = User.objects.create_user("outsider", password="pw")
    other.members.add(user)
    return user


@pytest.fixture
def staff(db) -> User:
    return User.objects.create_user("boss", password="pw", is_staff=True)


@pytest.fixture
def session(api) -> Session:
    assert api.call("run-1", "TodoWrite", plan("in_progress", "pending")).status_code == 200
    return Session.objects.get(key="run-1")


async def connect(path: str, *, user: User | None = None, origin: str | None = "http://testserver"):
    headers = [(b"host", b"testserver")]
    if origin is not None:
        headers.append((b"origin", origin.encode()))
    if user is not None:
        headers.append((b"cookie", f"sessionid={await sync_to_async(cookie_for)(user)}".encode()))
    communicator = WebsocketCommunicator(application, path, headers=headers)
    connected, code = await communicator.connect(timeout=TIMEOUT)
    return communicator, connected, code


async def write(api, key: str, body: dict):
    response = await sync_to_async(api.call)(key, "TodoWrite", body)
    assert response.status_code == 200, response.content
    return response.json()


# --- session panel socket ---------------------------------------------------


async def test_it_sends_the_current_snapshot_on_connect(member, session):
    ws, connected, _ = await connect(f"/ws/sessions/{session.public_id}/", user=member)
    assert connected
    event = await ws.receive_json_from(TIMEOUT)
    assert event["type"] == "session.snapshot"
    assert event["revision"] == 1
    assert event["session"]["id"] == session.public_id
    assert [t["status"] for t in event["todos"]] == ["in_progress", "pending"]
    assert event["counts"]["total"] == 2
    await ws.disconnect()


@fast_path
@pytest.mark.parametrize("path", ["session", "dashboard"])
async def test_a_socket_has_every_attribute_from_its_creation(member, session, monkeypatch, path):
    """No attribute is added after a consumer is made (before its first await): CPython
    shares one table of attribute names among a class's instances only while it
    learns them early; sockets connecting by the thousand would otherwise each take a
    dict of their own."""
    consumer_class = consumers.SessionConsumer if path == "session" else consumers.DashboardConsumer
    made = []
    start_sending = consumer_class.start_sending

    def noting(self):
        made.append(self)
        start_sending(self)

    monkeypatch.setattr(consumer_class, "start_sending", noting)
    url = f"/ws/sessions/{session.public_id}/" if path == "session" else "/ws/dashboard/"
    ws, connected, _ = await connect(url, user=member)
    assert connected
    await ws.receive_json_from(TIMEOUT)
    assert len(made) == 1
    at_creation = set(vars(consumer_class())) | {"scope", "channel_layer", "base_send"}
    assert set(vars(made[0])) <= at_creation
    await ws.disconnect()


@pytest.mark.parametrize("path", ["session", "dashboard"])
async def test_an_accepted_socket_lets_go_of_its_scope(api, member, session, path):
    """Once the cookie and the origin have let a socket in, it keeps nothing of its
    scope (which would stay for the socket's whole life), nor does any copy keep its
    headers; and it still sends what it watches."""
    headers = [(b"host", b"testserver"), (b"origin", b"http://testserver")]
    headers.append((b"cookie", f"sessionid={await sync_to_async(cookie_for)(member)}".encode()))
    url = f"/ws/sessions/{session.public_id}/" if path == "session" else "/ws/dashboard/"
    ws = WebsocketCommunicator(application, url, headers=headers)
    connected, _ = await ws.connect(timeout=TIMEOUT)
    assert connected
    await ws.receive_json_from(TIMEOUT)
    assert ws.scope == {} and headers == []  # the server's scope itself, emptied
    await write(api, "run-1", plan("completed", "in_progress"))
    moved = await ws.receive_json_from(TIMEOUT)
    assert (moved.get("revision") or moved["session"]["revision"]) == 2
    await ws.disconnect()


async def test_it_sends_one_snapshot_per_revision_with_its_changes(api, member, session):
    ws, _, _ = await connect(f"/ws/sessions/{session.public_id}/", user=member)
    await ws.receive_json_from(TIMEOUT)
    await write(api, "run-1", plan("completed", "in_progress"))
    await write(api, "run-1", plan("completed", "completed"))
    second = await ws.receive_json_from(TIMEOUT)
    third = await ws.receive_json_from(TIMEOUT)
    assert (second["revision"], third["revision"]) == (2, 3)
    assert {"id": "1", "from": "in_progress", "to": "completed"} in second["changes"]
    assert third["progress"] == 1.0 and third["session"]["state"] == "completed"
    assert await ws.receive_nothing(0.1)
    await ws.disconnect()


async def test_it_sends_a_persons_edit_to_watchers_and_dashboards(api, member, session):
    panel, _, _ = await connect(f"/ws/sessions/{session.public_id}/", user=member)
    dashboard, _, _ = await connect("/ws/dashboard/", user=member)
    await panel.receive_json_from(TIMEOUT)
    await dashboard.receive_json_from(TIMEOUT)
    todos = [{"id": "1", "content": "Step 0", "status": "completed"}, {"content": "Added by a person"}]
    response = await sync_to_async(api.post)(
        "/api/v1/sessions/run-1/edits", {"todos": todos}, headers={"If-Match": "1"}
    )
    assert response.status_code == 200, response.content
    event = await panel.receive_json_from(TIMEOUT)
    assert (event["revision"], event["author"]) == (2, "user")
    assert [t["content"] for t in event["todos"]] == ["Step 0", "Added by a person"]
    summary = await dashboard.receive_json_from(TIMEOUT)
    assert summary["type"] == "session.summary" and summary["session"]["revision"] == 2
    assert summary["session"]["trend"][-1][1] == 0.5
    await panel.disconnect()
    await dashboard.disconnect()


async def test_it_never_sends_an_older_revision(api, member, session):
    ws, _, _ = await connect(f"/ws/sessions/{session.public_id}/", user=member)
    current = await ws.receive_json_from(TIMEOUT)
    group = events.session_group(session.public_id)
    for revision in (0, current["revision"]):
        snapshot = events.snapshot_event(current | {"revision": revision})
        for message in events.frames(snapshot, group):
            await get_channel_layer().group_send(group, message)
    assert await ws.receive_nothing(0.1)
    await ws.disconnect()


async def test_it_sends_a_state_event_when_the_session_is_closed(api, member, session):
    ws, _, _ = await connect(f"/ws/sessions/{session.public_id}/", user=member)
    await ws.receive_json_from(TIMEOUT)
    response = await sync_to_async(api.patch)("/api/v1/sessions/run-1", {"closed": True})
    assert response.status_code == 200
    event = await ws.receive_json_from(TIMEOUT)
    assert event == {
        "type": "session.state",
        "session": session.public_id,
        "revision": 1,
        "state": "closed",
        "title": session.title,
    }
    await ws.disconnect()


async def test_it_sends_a_state_event_when_the_session_turns_idle(settings, member, session):
    settings.TODOWEB_IDLE_AFTER = 1
    ws, _, _ = await connect(f"/ws/sessions/{session.public_id}/", user=member)
    snapshot = await ws.receive_json_from(TIMEOUT)
    assert snapshot["session"]["state"] == "active"
    event = await ws.receive_json_from(due_in(1))
    assert event == {
        "type": "session.state",
        "session": session.public_id,
        "revision": 1,
        "state": "idle",
        "title": session.title,
    }
    await ws.disconnect()


async def test_a_write_postpones_the_idle_event_to_its_own_deadline(settings, api, member, session):
    """The socket keeps one idle timer: a write after it was armed moves the deadline,
    and the event comes only once the newest write is TODOWEB_IDLE_AFTER old."""
    settings.TODOWEB_IDLE_AFTER = 2
    ws, _, _ = await connect(f"/ws/sessions/{session.public_id}/", user=member)
    await ws.receive_json_from(TIMEOUT)
    await write(api, "run-1", plan("completed", "in_progress"))
    assert (await ws.receive_json_from(TIMEOUT))["revision"] == 2
    event = await ws.receive_json_from(due_in(2))
    assert (event["state"], event["revision"]) == ("idle", 2)
    updated_at = await Session.objects.values_list("updated_at", flat=True).aget(pk=session.pk)
    assert timezone.now() >= updated_at + timedelta(seconds=2)
    await ws.disconnect()


async def test_it_answers_a_ping_and_ignores_other_frames(member, session):
    ws, _, _ = await connect(f"/ws/sessions/{session.public_id}/", user=member)
    await ws.receive_json_from(TIMEOUT)
    await ws.send_to(text_data="not json")
    await ws.send_json_to({"type": "ping"})
    assert await ws.receive_json_from(TIMEOUT) == {"type": "pong"}
    await ws.disconnect()


@fast_path
async def test_a_socket_s_messages_make_no_trip_to_the_database_thread(member, session, monkeypatch):
    """Channels closes old connections in the database thread before every message; the
    board's sockets give theirs back after each piece of work instead."""
    from channels import consumer

    trips = []

    async def noting():
        trips.append(True)

    monkeypatch.setattr(consumer, "aclose_old_connections", noting)
    ws, _, _ = await connect(f"/ws/sessions/{session.public_id}/", user=member)
    await ws.receive_json_from(TIMEOUT)
    await ws.send_json_to({"type": "ping"})
    assert await ws.receive_json_from(TIMEOUT) == {"type": "pong"}
    assert trips == []
    await ws.disconnect()


async def test_it_refuses_an_anonymous_visitor(session):
    _, connected, code = await connect(f"/ws/sessions/{session.public_id}/")
    assert not connected and code == 4403


async def test_it_refuses_a_user_outside_the_project(outsider, session):
    _, connected, _ = await connect(f"/ws/sessions/{session.public_id}/", user=outsider)
    assert not connected


async def test_it_lets_staff_watch_any_session(staff, session):
    ws, connected, _ = await connect(f"/ws/sessions/{session.public_id}/", user=staff)
    assert connected
    assert (await ws.receive_json_from(TIMEOUT))["revision"] == 1
    await ws.disconnect()


async def test_it_refuses_an_unknown_or_archived_session(api, member, session):
    _, connected, _ = await connect("/ws/sessions/nope/", user=member)
    assert not connected
    await sync_to_async(api.delete)("/api/v1/sessions/run-1")
    _, connected, _ = await connect(f"/ws/sessions/{session.public_id}/", user=member)
    assert not connected


async def test_it_refuses_a_foreign_origin(member, session):
    _, connected, _ = await connect(f"/ws/sessions/{session.public_id}/", user=member, origin="http://evil.example")
    assert not connected
    _, connected, _ = await connect(f"/ws/sessions/{session.public_id}/", user=member, origin=None)
    assert not connected


# --- share links on the socket ---------------------------------------------


async def test_it_opens_the_socket_with_a_share_token(session):
    _, raw = await sync_to_async(share_create)(session=session)
    ws, connected, _ = await connect(f"/ws/sessions/{session.public_id}/?share={raw}")
    assert connected
    assert (await ws.receive_json_from(TIMEOUT))["type"] == "session.snapshot"
    await ws.disconnect()


async def test_it_refuses_a_wrong_expired_or_foreign_share_token(api, session):
    _, connected, _ = await connect(f"/ws/sessions/{session.public_id}/?share=sh_wrong")
    assert not connected
    link, raw = await sync_to_async(share_create)(session=session)
    await sync_to_async(ShareLink.objects.filter(pk=link.pk).update)(expires_at=timezone.now() - timedelta(seconds=1))
    _, connected, _ = await connect(f"/ws/sessions/{session.public_id}/?share={raw}")
    assert not connected
    await write(api, "run-2", plan("pending"))
    other = await sync_to_async(Session.objects.get)(key="run-2")
    _, raw = await sync_to_async(share_create)(session=session)
    _, connected, _ = await connect(f"/ws/sessions/{other.public_id}/?share={raw}")
    assert not connected


async def test_it_hangs_up_share_viewers_when_the_links_are_revoked(member, session):
    _, raw = await sync_to_async(share_create)(session=session)
    shared, _, _ = await connect(f"/ws/sessions/{session.public_id}/?share={raw}")
    owner, _, _ = await connect(f"/ws/sessions/{session.public_id}/", user=member)
    await shared.receive_json_from(TIMEOUT)
    await owner.receive_json_from(TIMEOUT)
    await sync_to_async(share_revoke_all)(session=session)
    assert await shared.receive_json_from(TIMEOUT) == {"type": "share.ended", "session": session.public_id}
    assert (await shared.receive_output(TIMEOUT)) == {"type": "websocket.close", "code": 4410}
    assert await owner.receive_nothing(0.1)  # members keep watching
    await owner.disconnect()


async def test_it_hangs_up_a_share_viewer_when_the_link_expires(session):
    link, raw = await sync_to_async(share_create)(session=session)
    await sync_to_async(ShareLink.objects.filter(pk=link.pk).update)(expires_at=timezone.now() + timedelta(seconds=3))
    # Expires after the socket opened, however slowly the machine opens it.
    ws, connected, _ = await connect(f"/ws/sessions/{session.public_id}/?share={raw}")
    assert connected
    await ws.receive_json_from(TIMEOUT)
    assert (await ws.receive_json_from(due_in(3)))["type"] == "share.ended"
    assert (await ws.receive_output(TIMEOUT))["code"] == 4410


async def test_it_does_not_open_the_dashboard_with_a_share_token(session):
    _, raw = await sync_to_async(share_create)(session=session)
    _, connected, _ = await connect(f"/ws/dashboard/?share={raw}")
    assert not connected


# --- dashboard socket -------------------------------------------------------


async def test_it_sends_the_dashboard_snapshot_of_the_users_projects(api, member, outsider, session):
    _, raw, _ = await sync_to_async(token_create)(project_slug="other")
    await sync_to_async(post_as)(raw, "secret", plan("pending"))
    ws, connected, _ = await connect("/ws/dashboard/", user=member)
    assert connected
    event = await ws.receive_json_from(TIMEOUT)
    assert event["type"] == "dashboard.snapshot"
    assert [s["key"] for s in event["sessions"]] == ["run-1"]
    summary = event["sessions"][0]
    assert (summary["completed"], summary["total"], summary["current"]) == (0, 2, "Doing step 0")
    await ws.disconnect()


async def test_it_sends_a_summary_per_change_to_members_and_staff_only(api, member, outsider, staff, session):
    watchers = {}
    for name, user in {"member": member, "outsider": outsider, "staff": staff}.items():
        ws, connected, _ = await connect("/ws/dashboard/", user=user)
        assert connected
        await ws.receive_json_from(TIMEOUT)
        watchers[name] = ws
    await write(api, "run-1", plan("completed", "in_progress"))
    for name in ("member", "staff"):
        event = await watchers[name].receive_json_from(TIMEOUT)
        assert event["type"] == "session.summary"
        assert (event["session"]["key"], event["session"]["revision"], event["session"]["completed"]) == ("run-1", 2, 1)
        assert await watchers[name].receive_nothing(0.1)  # staff get it once, not per project
    assert await watchers["outsider"].receive_nothing(0.1)
    for ws in watchers.values():
        await ws.disconnect()


async def test_it_shows_a_new_session_on_the_dashboard(api, member, session):
    ws, _, _ = await connect("/ws/dashboard/", user=member)
    await ws.receive_json_from(TIMEOUT)
    await write(api, "run-9", plan("pending"))
    event = await ws.receive_json_from(TIMEOUT)
    assert event["session"]["key"] == "run-9" and event["session"]["state"] == "active"
    await ws.disconnect()


async def test_it_sends_a_summary_when_a_session_turns_idle_on_the_dashboard(settings, member, session):
    settings.TODOWEB_IDLE_AFTER = 1
    ws, _, _ = await connect("/ws/dashboard/", user=member)
    assert (await ws.receive_json_from(TIMEOUT))["sessions"][0]["state"] == "active"
    event = await ws.receive_json_from(due_in(1))
    assert event["type"] == "session.summary"
    assert (event["session"]["id"], event["session"]["state"]) == (session.public_id, "idle")
    await ws.disconnect()


async def test_it_refuses_the_dashboard_to_anonymous_visitors(db):
    _, connected, code = await connect("/ws/dashboard/")
    assert not connected and code == 4403


async def test_it_refuses_the_dashboard_from_a_foreign_origin(member):
    _, connected, _ = await connect("/ws/dashboard/", user=member, origin="http://evil.example")
    assert not connected


async def test_it_sends_a_rename_to_open_panels_and_the_new_title_after_a_reconnect(api, member, session):
    ws, _, _ = await connect(f"/ws/sessions/{session.public_id}/", user=member)
    await ws.receive_json_from(TIMEOUT)
    await sync_to_async(api.patch)("/api/v1/sessions/run-1", {"title": "Renamed"})
    event = await ws.receive_json_from(TIMEOUT)
    assert event["type"] == "session.state" and event["title"] == "Renamed"
    await ws.disconnect()
    again, _, _ = await connect(f"/ws/sessions/{session.public_id}/", user=member)
    snapshot = await again.receive_json_from(TIMEOUT)
    assert snapshot["session"]["title"] == "Renamed"
    await again.disconnect()


async def test_it_drops_an_archived_session_from_the_dashboard(api, member, session):
    ws, _, _ = await connect("/ws/dashboard/", user=member)
    await ws.receive_json_from(TIMEOUT)
    response = await sync_to_async(api.delete)("/api/v1/sessions/run-1")
    assert response.status_code == 204
    event = await ws.receive_json_from(TIMEOUT)
    assert event == {"type": "session.archived", "session": session.public_id}
    await ws.disconnect()


# --- many watchers: paced, latest wins ---------------------------------------


async def revisions_after_two_quick_writes(api, member, session) -> list[list[int]]:
    """Two panels; revision 2 goes out at once, then the pump must rest half a second
    (2 sockets at 4 frames/s) while revisions 3 and 4 are written: what each shows."""
    panels = [(await connect(f"/ws/sessions/{session.public_id}/", user=member))[0] for _ in range(2)]
    for panel in panels:
        await panel.receive_json_from(TIMEOUT)
    await write(api, "run-1", plan("completed", "pending"))
    for panel in panels:
        assert (await panel.receive_json_from(TIMEOUT))["revision"] == 2
    await write(api, "run-1", plan("completed", "in_progress"))
    await write(api, "run-1", plan("completed", "completed"))
    shown = []
    for panel in panels:
        revisions = [(await panel.receive_json_from(TIMEOUT))["revision"]]
        while revisions[-1] < 4:
            revisions.append((await panel.receive_json_from(TIMEOUT))["revision"])
        assert await panel.receive_nothing(0.1)
        await panel.disconnect()
        shown.append(revisions)
    return shown


async def test_a_paced_socket_sends_every_revision_it_holds(api, member, session, monkeypatch):
    monkeypatch.setattr(hub, "SENDS_PER_SECOND", 4)
    assert await revisions_after_two_quick_writes(api, member, session) == [[3, 4], [3, 4]]


async def test_a_crowded_group_sends_each_socket_only_the_newest_revision(api, member, session, monkeypatch):
    monkeypatch.setattr(hub, "SENDS_PER_SECOND", 4)
    monkeypatch.setattr(hub, "FULL_ROUND", 1)  # two watchers are a crowd
    assert await revisions_after_two_quick_writes(api, member, session) == [[4], [4]]


# --- frames lost on the way -------------------------------------------------


async def test_it_catches_up_on_frames_the_channel_layer_lost(api, member, session, monkeypatch):
    monkeypatch.setattr(hub, "RECONCILE_EVERY", 0.05)
    panel, _, _ = await connect(f"/ws/sessions/{session.public_id}/", user=member)
    dashboard, _, _ = await connect("/ws/dashboard/", user=member)
    await panel.receive_json_from(TIMEOUT)
    await dashboard.receive_json_from(TIMEOUT)
    # The layer is down: every frame of the next writes is lost.
    layer_down(monkeypatch)
    await write(api, "run-1", plan("completed", "in_progress"))
    await write(api, "run-1", plan("completed", "completed"))
    # A check may run between the two writes: revision 2 then 3, or 3 alone.
    snapshots = [await panel.receive_json_from(TIMEOUT)]
    while snapshots[-1]["revision"] < 3:
        snapshots.append(await panel.receive_json_from(TIMEOUT))
    assert [s["type"] for s in snapshots] == ["session.snapshot"] * len(snapshots)
    assert snapshots[-1]["progress"] == 1.0
    summaries = [await dashboard.receive_json_from(TIMEOUT)]
    while summaries[-1]["session"]["revision"] < 3:
        summaries.append(await dashboard.receive_json_from(TIMEOUT))
    assert [s["type"] for s in summaries] == ["session.summary"] * len(summaries)
    assert await panel.receive_nothing(0.2)  # sent once, not on every check
    await panel.disconnect()
    await dashboard.disconnect()


# --- access that ends while a socket is open -------------------------------


def logged_in_client(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


async def connect_as(client: Client, path: str):
    """A socket opened with `client`'s login session (its cookie), as the page's script opens it."""
    headers = [(b"host", b"testserver"), (b"origin", b"http://testserver")]
    headers.append((b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode()))
    communicator = WebsocketCommunicator(application, path, headers=headers)
    connected, _ = await communicator.connect(timeout=TIMEOUT)
    assert connected
    await communicator.receive_json_from(TIMEOUT)  # the snapshot
    return communicator


async def closed_with(ws: WebsocketCommunicator) -> int:
    """The code the server closed the socket with; fails if a frame comes first."""
    output = await ws.receive_output(TIMEOUT)
    assert output["type"] == "websocket.close", output
    return output["code"]


async def test_it_hangs_up_a_members_sockets_when_they_log_out(api, member, session):
    browser = await sync_to_async(logged_in_client)(member)
    panel = await connect_as(browser, f"/ws/sessions/{session.public_id}/")
    dashboard = await connect_as(browser, "/ws/dashboard/")
    elsewhere = await connect_as(await sync_to_async(logged_in_client)(member), "/ws/dashboard/")
    assert (await sync_to_async(browser.post)("/accounts/logout/")).status_code == 302
    await write(api, "run-1", plan("completed", "in_progress"))
    assert await closed_with(panel) == 4401
    assert await closed_with(dashboard) == 4401
    # Their login in another browser is still theirs: that dashboard goes on.
    assert (await elsewhere.receive_json_from(TIMEOUT))["session"]["revision"] == 2
    await elsewhere.disconnect()


async def test_it_hangs_up_a_members_panel_and_refreshes_their_dashboard_when_removed_from_the_project(
    api, project, member, session
):
    browser = await sync_to_async(logged_in_client)(member)
    panel = await connect_as(browser, f"/ws/sessions/{session.public_id}/")
    dashboard = await connect_as(browser, "/ws/dashboard/")
    await sync_to_async(project.members.remove)(member)
    await write(api, "run-1", plan("completed", "in_progress"))
    assert await closed_with(panel) == 4403
    # The dashboard is told to reconnect: its fresh snapshot no longer holds the project.
    assert await closed_with(dashboard) == 4409
    again = await connect_as(browser, "/ws/dashboard/")
    await write(api, "run-1", plan("completed", "completed"))
    assert await again.receive_nothing(0.2)
    await again.disconnect()


async def test_it_hangs_up_the_sockets_of_a_deactivated_account(api, member, session):
    browser = await sync_to_async(logged_in_client)(member)
    panel = await connect_as(browser, f"/ws/sessions/{session.public_id}/")
    dashboard = await connect_as(browser, "/ws/dashboard/")
    member.is_active = False
    await sync_to_async(member.save)()
    await write(api, "run-1", plan("completed", "in_progress"))
    assert await closed_with(panel) == 4403
    assert await closed_with(dashboard) == 4403


async def test_it_hangs_up_the_sockets_of_a_login_that_a_password_change_ended(api, member, session):
    browser = await sync_to_async(logged_in_client)(member)
    panel = await connect_as(browser, f"/ws/sessions/{session.public_id}/")
    member.set_password("a brand new password")
    await sync_to_async(member.save)()
    await write(api, "run-1", plan("completed", "in_progress"))
    assert await closed_with(panel) == 4401


async def test_it_keeps_the_sockets_of_a_member_whose_account_only_logged_in_again(api, member, session):
    browser = await sync_to_async(logged_in_client)(member)
    panel = await connect_as(browser, f"/ws/sessions/{session.public_id}/")
    await sync_to_async(logged_in_client)(member)  # saves last_login
    member.first_name = "Renamed"
    await sync_to_async(member.save)()  # a change that takes no access away
    await write(api, "run-1", plan("completed", "in_progress"))
    assert (await panel.receive_json_from(TIMEOUT))["revision"] == 2
    await panel.disconnect()


async def test_it_hangs_up_share_viewers_when_the_link_is_deleted_in_the_admin(api, session):
    link, raw = await sync_to_async(share_create)(session=session)
    shared, _, _ = await connect(f"/ws/sessions/{session.public_id}/?share={raw}")
    await shared.receive_json_from(TIMEOUT)
    superuser = await sync_to_async(User.objects.create_superuser)("root", password="pw")
    admin = await sync_to_async(logged_in_client)(superuser)
    answer = await sync_to_async(admin.post)(
        "/admin/todoweb/sharelink/", {"action": "delete_selected", "_selected_action": [link.pk], "post": "yes"}
    )
    assert answer.status_code == 302
    assert not await ShareLink.objects.filter(pk=link.pk).aexists()
    await write(api, "run-1", plan("completed", "in_progress"))
    assert await shared.receive_json_from(TIMEOUT) == {"type": "share.ended", "session": session.public_id}
    assert await closed_with(shared) == 4410


async def test_reconciliation_hangs_up_a_share_viewer_whose_link_was_revoked_while_the_layer_was_down(
    api, session, monkeypatch
):
    """The revocation's event is lost with the channel layer; the hub's next check of
    the database closes the socket before it sends the revision it missed."""
    monkeypatch.setattr(hub, "RECONCILE_EVERY", 0.05)
    _, raw = await sync_to_async(share_create)(session=session)
    shared, _, _ = await connect(f"/ws/sessions/{session.public_id}/?share={raw}")
    await shared.receive_json_from(TIMEOUT)
    layer_down(monkeypatch)
    await sync_to_async(share_revoke_all)(session=session)
    await write(api, "run-1", plan("completed", "in_progress"))
    assert await shared.receive_json_from(TIMEOUT) == {"type": "share.ended", "session": session.public_id}
    assert await closed_with(shared) == 4410


async def test_reconciliation_hangs_up_a_panel_and_refreshes_a_dashboard_of_a_member_removed_while_the_layer_was_down(
    api, project, member, session, monkeypatch
):
    monkeypatch.setattr(hub, "RECONCILE_EVERY", 0.05)
    browser = await sync_to_async(logged_in_client)(member)
    panel = await connect_as(browser, f"/ws/sessions/{session.public_id}/")
    dashboard = await connect_as(browser, "/ws/dashboard/")
    layer_down(monkeypatch)
    await sync_to_async(project.members.remove)(member)
    await write(api, "run-1", plan("completed", "in_progress"))
    assert await closed_with(panel) == 4403
    assert await closed_with(dashboard) == 4409


async def test_a_hub_that_saw_the_layer_fail_checks_access_before_it_sends_again(api, session, monkeypatch):
    """Redis is down while a link is revoked (the revocation's event is lost), then comes
    back: the first frame through it must not reach the link's viewer, although the
    periodic check is far off."""
    shared, back = await a_link_revoked_while_the_layer_is_down(session, monkeypatch)
    back()  # the layer is back: frames are published again
    await write(api, "run-1", plan("completed", "in_progress"))
    assert await shared.receive_json_from(TIMEOUT) == {"type": "share.ended", "session": session.public_id}
    assert await closed_with(shared) == 4410


async def test_a_frame_that_comes_while_the_check_after_an_outage_runs_waits_for_that_check(api, session, monkeypatch):
    """The layer is back and the hub's check of its sockets is under way when the first
    frame comes through: the frame waits for the check, which closes the revoked link's
    socket, rather than reaching it first."""
    shared, back = await a_link_revoked_while_the_layer_is_down(session, monkeypatch)

    checking, gate = asyncio.Event(), asyncio.Event()
    check_access = hub.Hub.check_access

    async def gated(self, watchers):
        checking.set()
        await gate.wait()
        await check_access(self, watchers)

    monkeypatch.setattr(hub.Hub, "check_access", gated)
    back(publishing=False)
    await asyncio.wait_for(checking.wait(), TIMEOUT)  # the probe saw the layer back: the check began
    back()
    await write(api, "run-1", plan("completed", "in_progress"))
    assert await shared.receive_nothing(0.5)
    gate.set()
    assert await shared.receive_json_from(TIMEOUT) == {"type": "share.ended", "session": session.public_id}
    assert await closed_with(shared) == 4410


async def a_link_revoked_while_the_layer_is_down(session, monkeypatch):
    """A share viewer's socket; then the channel layer goes down (the hub's probe sees
    it) and the link is revoked, its event lost. Returns the socket and `back()`, which
    brings the layer back (`publishing=False`: it answers the probe, frames still drop)."""
    monkeypatch.setattr(hub, "RECONCILE_EVERY", 60)
    monkeypatch.setattr(hub, "PROBE_EVERY", 0.05, raising=False)
    _, raw = await sync_to_async(share_create)(session=session)
    shared, _, _ = await connect(f"/ws/sessions/{session.public_id}/?share={raw}")
    await shared.receive_json_from(TIMEOUT)
    layer, publish, apublish = get_channel_layer(), events.send, events.asend
    working = layer.send

    async def down(*args, **kwargs):
        raise ConnectionError("Redis is down")

    monkeypatch.setattr(layer, "send", down)
    layer_down(monkeypatch)
    this = process_hub()
    for _ in range(40):  # the hub's probe notices within PROBE_EVERY
        if this.layer_down:
            break
        await asyncio.sleep(0.05)
    assert this.layer_down
    await sync_to_async(share_revoke_all)(session=session)

    def back(*, publishing: bool = True) -> None:
        monkeypatch.setattr(layer, "send", working)
        if publishing:
            monkeypatch.setattr(events, "send", publish)
            monkeypatch.setattr(events, "asend", apublish)

    return shared, back
