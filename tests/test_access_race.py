"""Access that ends while a socket is being let in: between the read that lets it in
and the moment the hub checks it again, the event that ends the access must not be
missed, or the socket goes on receiving frames until the next reconciliation."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User

from tests.test_consumers import (
    TIMEOUT,
    closed_with,
    connect,
    connect_as,
    logged_in_client,
    memory_layer,  # noqa: F401 (autouse)
    plan,
    stop_the_hub,  # noqa: F401 (autouse)
    write,
)
from todoweb.live import consumers
from todoweb.models import Session, ShareLink
from todoweb.writes.sharing import share_create

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def session(api) -> Session:
    assert api.call("run-1", "TodoWrite", plan("in_progress", "pending")).status_code == 200
    return Session.objects.get(key="run-1")


def after(monkeypatch, name: str, then) -> None:
    """`consumers.<name>` (the read that lets a socket in) followed by `then()`, in the
    same database thread: the access ends right after it was granted."""
    original = getattr(consumers, name)

    def read_then(*args, **kwargs):
        found = original(*args, **kwargs)
        then()
        return found

    monkeypatch.setattr(consumers, name, read_then)


def deactivate(user: User) -> None:
    user.is_active = False
    user.save()


@pytest.mark.parametrize("how", ["removed", "deactivated"])
async def test_it_hangs_up_a_panel_whose_member_lost_access_while_it_connected(
    api, project, member, session, monkeypatch, how
):
    after(
        monkeypatch,
        "viewer_snapshot",
        lambda: project.members.remove(member) if how == "removed" else deactivate(member),
    )
    browser = await sync_to_async(logged_in_client)(member)
    panel = await connect_as(browser, f"/ws/sessions/{session.public_id}/")
    await write(api, "run-1", plan("completed", "in_progress"))
    assert await closed_with(panel) == 4403


@pytest.mark.parametrize("how", ["removed", "deactivated"])
async def test_it_hangs_up_a_dashboard_whose_member_lost_access_while_it_connected(
    api, project, member, session, monkeypatch, how
):
    after(
        monkeypatch,
        "dashboard_summaries",
        lambda: project.members.remove(member) if how == "removed" else deactivate(member),
    )
    browser = await sync_to_async(logged_in_client)(member)
    dashboard = await connect_as(browser, "/ws/dashboard/")
    await write(api, "run-1", plan("completed", "in_progress"))
    assert await closed_with(dashboard) == (4409 if how == "removed" else 4403)


async def test_it_hangs_up_a_share_viewer_whose_link_was_deleted_while_it_connected(api, session, monkeypatch):
    link, raw = await sync_to_async(share_create)(session=session)
    after(monkeypatch, "viewer_snapshot", lambda: ShareLink.objects.filter(pk=link.pk).delete())
    shared, connected, _ = await connect(f"/ws/sessions/{session.public_id}/?share={raw}")
    assert connected
    assert (await shared.receive_json_from(TIMEOUT))["type"] == "session.snapshot"
    await write(api, "run-1", plan("completed", "in_progress"))
    assert await shared.receive_json_from(TIMEOUT) == {"type": "share.ended", "session": session.public_id}
    assert await closed_with(shared) == 4410
