"""The staff console: every model's pages, the token shown once, actions."""

from __future__ import annotations

import html
import re

import pytest
from django.utils import timezone

from tests.test_webhooks import run_queue
from tests.webhook_receiver import Receiver
from todoweb.models import ApiToken, Project, Session, WebhookDelivery, WebhookEndpoint
from todoweb.webhooks import endpoints, enqueue


@pytest.fixture
def staff_client(client, django_user_model):
    user = django_user_model.objects.create_superuser("root", "", "pw")
    client.force_login(user)
    return client


def test_it_lists_and_opens_every_model(staff_client, api):
    api.call("s1", "TodoWrite", {"todos": [{"content": "<b>bold</b>", "status": "pending", "activeForm": "x"}]})
    session = Session.objects.get()
    for url in [
        "/admin/todoweb/project/",
        "/admin/todoweb/apitoken/",
        "/admin/todoweb/session/",
        f"/admin/todoweb/session/{session.pk}/change/",
        "/admin/todoweb/revision/",
        f"/admin/todoweb/revision/{session.revisions.get().pk}/change/",
        "/admin/todoweb/sharelink/",
        "/admin/todoweb/apitoken/add/",
    ]:
        r = staff_client.get(url)
        assert r.status_code == 200, url
    page = staff_client.get(f"/admin/todoweb/session/{session.pk}/change/").content.decode()
    assert "&lt;b&gt;bold&lt;/b&gt;" in page and "<b>bold</b>" not in page


def test_it_shows_a_new_token_once_and_stores_only_its_digest(staff_client, project):
    r = staff_client.post(
        "/admin/todoweb/apitoken/add/", {"project": project.pk, "name": "bot", "scope": "write"}, follow=True
    )
    raw = re.search(r"tw_[A-Za-z0-9_-]{20,}", r.content.decode()).group(0)
    token = ApiToken.objects.get()
    assert token.digest != raw and raw.startswith(token.prefix)
    again = staff_client.get(f"/admin/todoweb/apitoken/{token.pk}/change/").content.decode()
    assert raw not in again


def test_it_revokes_tokens(staff_client, token):
    pk = ApiToken.objects.get().pk
    staff_client.post("/admin/todoweb/apitoken/", {"action": "revoke", "_selected_action": [pk]})
    assert ApiToken.objects.get().revoked_at is not None


def test_it_closes_and_archives_sessions(staff_client, api):
    api.call("s1", "TodoWrite", {"todos": []})
    pk = Session.objects.get().pk
    staff_client.post("/admin/todoweb/session/", {"action": "close", "_selected_action": [pk]})
    assert Session.objects.get().state == "closed"
    staff_client.post("/admin/todoweb/session/", {"action": "archive", "_selected_action": [pk]})
    assert Session.objects.get().archived_at is not None


def test_it_keeps_revisions_read_only(staff_client, api):
    api.call("s1", "TodoWrite", {"todos": []})
    pk = Session.objects.get().revisions.get().pk
    r = staff_client.post(f"/admin/todoweb/revision/{pk}/change/", {"tool": "hacked"})
    assert r.status_code == 403
    assert staff_client.get("/admin/todoweb/revision/add/").status_code == 403


def test_it_filters_sessions_by_state(staff_client, api):
    api.call("busy", "TodoWrite", {"todos": [{"content": "a", "status": "in_progress", "activeForm": "a"}]})
    api.call("done", "TodoWrite", {"todos": [{"content": "a", "status": "completed", "activeForm": "a"}]})
    page = staff_client.get("/admin/todoweb/session/?state=completed").content.decode()
    assert ">done<" in page and ">busy<" not in page


def test_it_renames_through_the_service_without_touching_the_counters(staff_client, api):
    api.call("s1", "TodoWrite", {"todos": []})
    session = Session.objects.get()
    page = staff_client.get(f"/admin/todoweb/session/{session.pk}/change/")
    assert page.status_code == 200
    api.call("s1", "TodoWrite", {"todos": []})  # moves the revision on after the form was read
    r = staff_client.post(
        f"/admin/todoweb/session/{session.pk}/change/",
        {
            "title": "Renamed",
            "steps-TOTAL_FORMS": 0,
            "steps-INITIAL_FORMS": 0,
            "steps-MIN_NUM_FORMS": 0,
            "steps-MAX_NUM_FORMS": 1000,
        },
    )
    assert r.status_code == 302
    session.refresh_from_db()
    assert session.title == "Renamed" and session.revision == 2
    assert api.call("s1", "TodoWrite", {"todos": []}).json()["data"]["revision"] == 3


def test_it_revokes_share_links_from_the_admin(staff_client, api):
    from todoweb.models import ShareLink

    api.call("s1", "TodoWrite", {"todos": []})
    api.post("/api/v1/sessions/s1/share", {})
    pk = ShareLink.objects.get().pk
    staff_client.post("/admin/todoweb/sharelink/", {"action": "revoke", "_selected_action": [pk]})
    assert ShareLink.objects.get().revoked_at is not None


# --- webhooks --------------------------------------------------------------------------


@pytest.fixture
def fresh_endpoint_cache():
    """Each test's rolled-back rows come back with the same ids: forget the last test's."""
    enqueue._cache.clear()
    yield
    enqueue._cache.clear()


def test_it_adds_an_endpoint_and_shows_its_secret_once(staff_client, project):
    r = staff_client.post(
        "/admin/todoweb/webhookendpoint/add/",
        {
            "project": project.pk,
            "url": "https://hooks.example.com/in",
            "events": ["session.completed"],
            "format": "slack",
        },
        follow=True,
    )
    assert r.status_code == 200
    secret = re.search(r"whsec_[A-Za-z0-9+/=]+", r.content.decode()).group(0)
    endpoint = WebhookEndpoint.objects.get()
    assert (endpoint.url, endpoint.events, endpoint.format) == (
        "https://hooks.example.com/in",
        ["session.completed"],
        "slack",
    )
    assert endpoint.secret == secret and Project.objects.get().webhook_version == 1
    again = staff_client.get(f"/admin/todoweb/webhookendpoint/{endpoint.pk}/change/").content.decode()
    assert secret not in again


def test_it_refuses_an_endpoint_with_a_bad_address(staff_client, project):
    r = staff_client.post(
        "/admin/todoweb/webhookendpoint/add/",
        {
            "project": project.pk,
            "url": "ftp://hooks.example.com/in",
            "events": ["session.completed"],
            "format": "standard",
        },
    )
    assert r.status_code == 200 and "an http or https address is needed" in r.content.decode()
    assert not WebhookEndpoint.objects.exists()


def test_it_lists_and_opens_endpoints_and_their_delivery_log(staff_client, project):
    with Receiver(status=503) as receiver:
        endpoint = endpoints.create(project, url=receiver.url, wanted=["session.completed", "step.failed"])
        endpoints.send_test(endpoint)
        assert run_queue() == 1
    delivery = WebhookDelivery.objects.get()
    assert (delivery.status, delivery.response_status, delivery.error) == ("failed", 503, "HTTP 503")

    listed = staff_client.get("/admin/todoweb/webhookendpoint/")
    assert listed.status_code == 200
    page = html.unescape(listed.content.decode())
    assert receiver.url in page and "session.completed, step.failed" in page
    log_url = f"/admin/todoweb/webhookdelivery/?endpoint__id__exact={endpoint.pk}"
    assert f'href="{log_url}"' in page

    opened = staff_client.get(f"/admin/todoweb/webhookendpoint/{endpoint.pk}/change/")
    assert opened.status_code == 200
    page = html.unescape(opened.content.decode())
    assert receiver.url in page and f'href="{log_url}"' in page
    checked = re.findall(r'<input type="checkbox" name="events" value="([a-z.]+)"[^>]* checked>', page)
    assert checked == ["session.completed", "step.failed"]

    log = staff_client.get(log_url)
    assert log.status_code == 200
    (row,) = re.findall(r'<tr><td class="action-checkbox">.*?</tr>', log.content.decode())
    cells = dict(re.findall(r'class="field-(\w+)[^"]*">(?:<a [^>]*>)?(.*?)(?:</a>)?</t[dh]>', row))
    assert cells["endpoint"] == f"{receiver.url} (alpha, standard)"
    shown = {name: cells[name] for name in ("event", "status", "attempts", "response_status", "error")}
    assert shown == {
        "event": "webhook.test",
        "status": "Failed",
        "attempts": "1",
        "response_status": "503",
        "error": "HTTP 503",
    }

    opened = staff_client.get(f"/admin/todoweb/webhookdelivery/{delivery.pk}/change/")
    assert opened.status_code == 200
    page = opened.content.decode()
    fields = dict(re.findall(r'<div class="form-row field-(\w+)">.*?<div class="readonly">(.*?)</div>', page, re.S))
    assert fields["message_id"] == delivery.message_id and fields["event"] == "webhook.test"
    assert (fields["status"], fields["attempts"], fields["response_status"]) == ("Failed", "1", "503")
    assert fields["error"] == "HTTP 503" and fields["response_body"].startswith("no thanks no thanks")
    assert fields["latency_ms"] == str(delivery.latency_ms)
    assert 'name="_save"' not in page  # the log is read-only
    assert staff_client.post(f"/admin/todoweb/webhookdelivery/{delivery.pk}/change/", {}).status_code == 403


def test_it_changes_an_endpoint_and_the_writes_see_the_change(staff_client, api, fresh_endpoint_cache):
    project = Project.objects.get()
    endpoint = endpoints.create(project, url="https://hooks.example.com/in", wanted=["session.created"])
    api.call("s1", "TodoWrite", {"todos": [{"content": "a", "status": "in_progress", "activeForm": "a"}]})
    r = staff_client.post(
        f"/admin/todoweb/webhookendpoint/{endpoint.pk}/change/",
        {"url": "https://hooks.example.com/other", "events": ["session.completed"], "format": "discord"},
    )
    assert r.status_code == 302
    endpoint.refresh_from_db()
    assert (endpoint.url, endpoint.events, endpoint.format) == (
        "https://hooks.example.com/other",
        ["session.completed"],
        "discord",
    )
    api.call("s1", "TodoWrite", {"todos": [{"content": "a", "status": "completed", "activeForm": "a"}]})
    events = WebhookDelivery.objects.order_by("id").values_list("event", flat=True)
    assert list(events) == ["session.created", "session.completed"]


def test_the_send_test_action_queues_a_test_event_to_each_selected_endpoint(staff_client, project):
    first, second, other = (
        endpoints.create(project, url=f"https://hooks.example.com/{n}", wanted=["session.idle"]) for n in range(3)
    )
    r = staff_client.post(
        "/admin/todoweb/webhookendpoint/",
        {"action": "send_test", "_selected_action": [first.pk, second.pk]},
        follow=True,
    )
    assert "Queued a test event to 2 endpoint(s)" in r.content.decode()
    queued = WebhookDelivery.objects.order_by("endpoint_id")
    assert [(d.endpoint_id, d.event, d.status, d.attempts) for d in queued] == [
        (first.pk, "webhook.test", "pending", 0),
        (second.pk, "webhook.test", "pending", 0),
    ]
    assert queued[0].payload["data"]["test"] is True and queued[0].payload["data"]["session"]["project"] == "alpha"


def test_the_enable_action_turns_disabled_endpoints_on_afresh(staff_client, api, fresh_endpoint_cache):
    project = Project.objects.get()
    endpoint = endpoints.create(project, url="https://hooks.example.com/in", wanted=["session.completed"])
    endpoints.change(endpoint, enabled=False)
    WebhookEndpoint.objects.filter(pk=endpoint.pk).update(failing_since=timezone.now())
    done = [{"content": "a", "status": "completed", "activeForm": "a"}]
    api.call("off", "TodoWrite", {"todos": done})
    assert not WebhookDelivery.objects.exists()
    version = Project.objects.get().webhook_version

    r = staff_client.post(
        "/admin/todoweb/webhookendpoint/", {"action": "enable", "_selected_action": [endpoint.pk]}, follow=True
    )
    assert "Enabled 1 endpoint(s)" in r.content.decode()
    endpoint.refresh_from_db()
    assert (endpoint.disabled_at, endpoint.disabled_reason, endpoint.failing_since) == (None, "", None)
    assert Project.objects.get().webhook_version == version + 1
    api.call("on", "TodoWrite", {"todos": done})
    assert list(WebhookDelivery.objects.values_list("endpoint_id", "event")) == [(endpoint.pk, "session.completed")]


def test_it_lists_every_session_s_steps_filtered_and_searched(staff_client, api):
    todos = [
        {"content": "Migrate the <script>db</script>", "status": "in_progress", "activeForm": "Migrating"},
        {"content": "Write docs", "status": "pending", "activeForm": "Writing"},
    ]
    api.call("busy", "TodoWrite", {"todos": todos})
    api.call("other", "TodoWrite", {"todos": [{"content": "Migrate logs", "status": "completed", "activeForm": "x"}]})
    page = staff_client.get("/admin/todoweb/step/?status__exact=in_progress").content.decode()
    assert "Migrate the &lt;script&gt;db&lt;/script&gt;" in page and "<script>db" not in page
    assert "Write docs" not in page and "Migrate logs" not in page
    found = staff_client.get("/admin/todoweb/step/?q=migrate").content.decode()
    assert "Migrate logs" in found and "Write docs" not in found
    assert staff_client.get("/admin/todoweb/step/add/").status_code == 403


def test_a_session_page_shows_its_steps_and_a_revision_its_values_as_json(staff_client, api):
    api.call("s1", "TodoWrite", {"todos": [{"content": "修复 <b>it</b>", "status": "pending", "activeForm": "x"}]})
    session = Session.objects.get()
    page = staff_client.get(f"/admin/todoweb/session/{session.pk}/change/").content.decode()
    assert "修复 &lt;b&gt;it&lt;/b&gt;" in page
    revision = session.revisions.get()
    shown = staff_client.get(f"/admin/todoweb/revision/{revision.pk}/change/").content.decode()
    assert "&quot;content&quot;: &quot;修复 &lt;b&gt;it&lt;/b&gt;&quot;" in shown  # JSON, escaped
    assert "{&#x27;content&#x27;" not in shown  # not a Python dict's repr
