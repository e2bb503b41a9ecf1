"""Outgoing webhooks: the API (through the real URLs), which writes cause which events
(one delivery per event per endpoint), delivery with signing, retries, giving up,
disabling, the formats, the idle check and the hot path's cost."""

from __future__ import annotations

import json
import socket
import threading
import time
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from django_tasks_db.models import DBTaskResult
from standardwebhooks import Webhook

from tests.conftest import Api, assert_refused
from tests.webhook_receiver import Receiver
from todoweb.models import Project, Session, WebhookClock, WebhookDelivery, WebhookEndpoint
from todoweb.webhooks import endpoints, enqueue, formats, idle, network
from todoweb.webhooks.compat import TaskResultStatus
from todoweb.webhooks.delivery import QUEUE, queue_new, retry_delay
from todoweb.webhooks.worker import task_runner
from todoweb.writes.revisions import Conflict
from todoweb.writes.tokens import token_create

PLAN = [
    {"content": "Read the issue", "status": "completed", "activeForm": "Reading the issue"},
    {"content": "Write the fix", "status": "in_progress", "activeForm": "Writing the fix"},
]
DONE = [{**step, "status": "completed"} for step in PLAN]
ALL_EVENTS = ["session.created", "session.completed", "session.failed", "session.idle", "plan.edited", "step.failed"]
# Without session.idle, whose recurring check would be one more task in the queue.
WRITE_EVENTS = [event for event in ALL_EVENTS if event != "session.idle"]


def run_queue() -> int:
    """Queue the new deliveries' tasks and run every due task of the webhooks queue, as
    the worker does (claim, run), in this thread and transaction; how many ran."""
    worker = task_runner("tests")
    ran = 0
    while True:
        queue_new(100)
        row = DBTaskResult.objects.ready().filter(queue_name=QUEUE).first()
        if row is None:
            return ran
        row.claim("tests")
        worker.run_task(row)
        assert DBTaskResult.objects.get(pk=row.pk).status == TaskResultStatus.SUCCESSFUL, row.traceback
        ran += 1


def make_due() -> None:
    """Every queued task due now (a retry's backoff, the next idle check)."""
    DBTaskResult.objects.filter(queue_name=QUEUE, status=TaskResultStatus.READY).update(run_after=timezone.now())


@pytest.fixture(autouse=True)
def fresh_endpoint_cache():
    """Each test's rolled-back rows come back with the same ids: forget the last test's."""
    enqueue._cache.clear()
    yield
    enqueue._cache.clear()


@pytest.fixture
def receiver():
    with Receiver() as running:
        yield running


def add(api: Api, url: str, events=None, fmt: str = "standard") -> dict:
    response = api.post("/api/v1/webhooks", {"url": url, "events": events or WRITE_EVENTS, "format": fmt})
    assert response.status_code == 201, response.content
    return response.json()


def deliveries(api: Api, webhook_id: int) -> list[dict]:
    response = api.get(f"/api/v1/webhooks/{webhook_id}/deliveries")
    assert response.status_code == 200, response.content
    return response.json()["deliveries"]


# --- the API -------------------------------------------------------------------------


def test_an_endpoint_is_made_listed_and_deleted_and_its_secret_shown_once(api):
    made = add(api, "https://hooks.example.com/in", ["session.completed"])
    assert made["secret"].startswith("whsec_") and made["url"] == "https://hooks.example.com/in"
    assert made["events"] == ["session.completed"] and made["format"] == "standard" and made["enabled"] is True
    listed = api.get("/api/v1/webhooks").json()["webhooks"]
    assert [w["id"] for w in listed] == [made["id"]]
    assert "secret" not in listed[0]
    assert api.delete(f"/api/v1/webhooks/{made['id']}").status_code == 204
    assert api.get("/api/v1/webhooks").json()["webhooks"] == []
    assert_refused(api.delete(f"/api/v1/webhooks/{made['id']}"), status=404, code="not_found")


@pytest.mark.parametrize(
    "body, field",
    [
        ({"url": "ftp://example.com/x", "events": ["session.created"]}, "url"),
        ({"url": "not a url", "events": ["session.created"]}, "url"),
        ({"url": "https://u:p@example.com/", "events": ["session.created"]}, "url"),
        # The documentation's placeholder, pasted as it is.
        ({"url": "https://hooks.slack.com/services/T…/B…/…", "events": ["session.created"]}, "url"),
        ({"url": "https://example.com/", "events": []}, "events"),
        ({"url": "https://example.com/", "events": ["session.exploded"]}, "events"),
        ({"url": "https://example.com/", "events": ["session.created"], "format": "teams"}, "format"),
        ({"url": "https://example.com/", "events": ["session.created"], "colour": "red"}, "colour"),
        ({"events": ["session.created"]}, "url"),
    ],
)
def test_a_bad_endpoint_is_refused_in_the_apis_error_shape(api, body, field):
    body = assert_refused(api.post("/api/v1/webhooks", body))
    assert field in body["error"]["message"]
    assert api.get("/api/v1/webhooks").json()["webhooks"] == []


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:9/", "http://localhost/x", "http://10.1.2.3/", "http://[::1]/", "http://169.254.169.254/"]
)
def test_private_addresses_are_refused_unless_allowed(api, settings, url):
    settings.TODOWEB_WEBHOOKS_ALLOW_PRIVATE = False
    body = assert_refused(api.post("/api/v1/webhooks", {"url": url, "events": ["session.created"]}))
    assert "TODOWEB_WEBHOOKS_ALLOW_PRIVATE" in body["error"]["message"]
    settings.TODOWEB_WEBHOOKS_ALLOW_PRIVATE = True
    add(api, url)


def test_a_read_token_may_not_and_another_projects_endpoint_is_not_found(api, read_api, project):
    made = add(api, "https://example.com/in")
    assert_refused(read_api.get("/api/v1/webhooks"), status=403, code="forbidden")
    assert_refused(
        read_api.post("/api/v1/webhooks", {"url": "https://e.com/", "events": ["session.created"]}),
        status=403,
        code="forbidden",
    )
    _, other_raw, _ = token_create(project_slug="other")
    other = Api(other_raw)
    assert other.get("/api/v1/webhooks").json()["webhooks"] == []
    for path in (f"/api/v1/webhooks/{made['id']}/deliveries", "/api/v1/webhooks/999999/deliveries"):
        assert_refused(other.get(path), status=404, code="not_found")
    assert_refused(other.post(f"/api/v1/webhooks/{made['id']}/test", {}), status=404, code="not_found")
    assert_refused(other.delete(f"/api/v1/webhooks/{made['id']}"), status=404, code="not_found")


def test_the_test_event_is_delivered_signed(api, receiver):
    made = add(api, receiver.url, ["session.completed"])
    response = api.post(f"/api/v1/webhooks/{made['id']}/test", {})
    assert response.status_code == 202, response.content
    assert response.json()["delivery"]["status"] == "pending"
    assert run_queue() == 1
    (got,) = receiver.received
    payload = Webhook(made["secret"]).verify(got.body, got.headers)
    assert payload["type"] == "webhook.test" and payload["data"]["session"]["project"] == "alpha"
    (log,) = deliveries(api, made["id"])
    assert log["status"] == "delivered" and log["attempts"] == 1 and log["response_status"] == 200
    assert log["response_body"] == "ok" and log["latency_ms"] is not None and log["next_attempt_at"] is None


# --- which writes cause which events ---------------------------------------------------


def kinds(endpoint_id: int) -> list[str]:
    return list(WebhookDelivery.objects.filter(endpoint_id=endpoint_id).order_by("id").values_list("event", flat=True))


def test_a_session_is_created_then_completed_once(api):
    made = add(api, "https://example.com/in")
    api.call("s1", "TodoWrite", {"todos": PLAN}, call_id="c1")
    assert kinds(made["id"]) == ["session.created"]
    api.call("s1", "TodoWrite", {"todos": PLAN}, call_id="c1")  # a retried write: replayed, nothing new
    api.call("s1", "TodoWrite", {"todos": DONE}, call_id="c2")
    api.call("s1", "TodoWrite", {"todos": DONE}, call_id="c2")
    api.call("s1", "TodoWrite", {"todos": DONE}, call_id="c3")  # still completed: no new event
    assert kinds(made["id"]) == ["session.created", "session.completed"]
    api.call("s1", "TodoWrite", {"todos": PLAN}, call_id="c4")
    api.call("s1", "TodoWrite", {"todos": DONE}, call_id="c5")  # completed again: a new event
    assert kinds(made["id"]) == ["session.created", "session.completed", "session.completed"]
    completed = WebhookDelivery.objects.filter(event="session.completed").order_by("id").first()
    assert completed.payload["type"] == "session.completed"
    session = completed.payload["data"]["session"]
    assert session["key"] == "s1" and session["state"] == "completed" and session["completed"] == 2
    assert completed.payload["data"]["revision"] == 2


def test_a_failed_step_and_a_failed_session(api):
    made = add(api, "https://example.com/in")
    api.call("m1", "create_todos", {"items": ["Build", "Ship"]})
    api.call("m1", "update_todo", {"id": "1", "status": "failed"})
    assert kinds(made["id"]) == ["session.created", "step.failed"]
    step_failed = WebhookDelivery.objects.get(event="step.failed")
    assert [s["content"] for s in step_failed.payload["data"]["steps"]] == ["Build"]
    api.call("m1", "update_todo", {"id": "2", "status": "failed"})
    assert kinds(made["id"]) == ["session.created", "step.failed", "session.failed", "step.failed"]
    failed = WebhookDelivery.objects.get(event="session.failed")
    assert failed.payload["data"]["session"]["state"] == "failed"
    assert [s["content"] for s in failed.payload["data"]["steps"]] == ["Build", "Ship"]


def test_a_persons_edit(api):
    made = add(api, "https://example.com/in", ["plan.edited"])
    api.call("s1", "TodoWrite", {"todos": PLAN})
    todos = [{"content": "Read the issue", "status": "completed"}, {"content": "Write it", "status": "pending"}]
    response = api.post("/api/v1/sessions/s1/edits", {"todos": todos, "note": "simpler"}, headers={"If-Match": "1"})
    assert response.status_code == 200, response.content
    (edited,) = WebhookDelivery.objects.filter(endpoint_id=made["id"])
    assert edited.event == "plan.edited" and edited.payload["data"]["revision"] == 2
    assert edited.payload["data"]["note"] == "simpler"
    api.call("s1", "TodoWrite", {"todos": PLAN})  # the agent's write is no edit
    assert kinds(made["id"]) == ["plan.edited"]


def test_only_the_events_an_endpoint_wants_and_not_a_disabled_one(api):
    wants_completed = add(api, "https://example.com/a", ["session.completed"])
    disabled = add(api, "https://example.com/b")
    WebhookEndpoint.objects.filter(pk=disabled["id"]).update(disabled_at=timezone.now())
    enqueue.changed(Project.objects.get(slug="alpha").pk)
    api.call("s1", "TodoWrite", {"todos": PLAN})
    api.call("s1", "TodoWrite", {"todos": DONE})
    assert kinds(wants_completed["id"]) == ["session.completed"]
    assert kinds(disabled["id"]) == []


def test_an_endpoint_is_changed_and_keeps_its_secret_and_log(api):
    made = add(api, "https://example.com/in", ["session.created"])
    api.call("s1", "TodoWrite", {"todos": PLAN})
    secret = WebhookEndpoint.objects.get(pk=made["id"]).secret
    response = api.patch(
        f"/api/v1/webhooks/{made['id']}",
        {"url": "https://example.com/other", "events": ["session.completed"], "format": "slack"},
    )
    assert response.status_code == 200, response.content
    changed = response.json()
    assert (changed["url"], changed["events"], changed["format"]) == (
        "https://example.com/other",
        ["session.completed"],
        "slack",
    )
    assert "secret" not in changed and WebhookEndpoint.objects.get(pk=made["id"]).secret == secret
    api.call("s1", "TodoWrite", {"todos": DONE})
    assert kinds(made["id"]) == ["session.created", "session.completed"]  # the log kept, the new events sent


def test_an_endpoint_turned_off_gets_nothing_and_turned_on_starts_afresh(api):
    made = add(api, "https://example.com/in")
    off = api.patch(f"/api/v1/webhooks/{made['id']}", {"enabled": False}).json()
    assert (off["enabled"], off["disabled_reason"]) == (False, "turned off by a person")
    api.call("s1", "TodoWrite", {"todos": PLAN})
    assert kinds(made["id"]) == []
    WebhookEndpoint.objects.filter(pk=made["id"]).update(failing_since=timezone.now())
    on = api.patch(f"/api/v1/webhooks/{made['id']}", {"enabled": True}).json()
    assert (on["enabled"], on["disabled_at"], on["disabled_reason"], on["failing_since"]) == (True, None, None, None)
    api.call("s1", "TodoWrite", {"todos": DONE})
    assert kinds(made["id"]) == ["session.completed"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"url": "ftp://example.com/in"}, "url"),
        ({"url": "http://127.0.0.1:9/in"}, "url"),
        ({"events": []}, "events"),
        ({"events": ["session.exploded"]}, "events"),
        ({"format": "teams"}, "format"),
        ({"secret": "whsec_mine"}, "secret"),
        ({"enabled": "yes"}, "enabled"),
    ],
)
def test_a_bad_change_is_refused_and_changes_nothing(api, settings, body, field):
    settings.TODOWEB_WEBHOOKS_ALLOW_PRIVATE = False
    made = add(api, "https://example.com/in", ["session.created"])
    before = api.get("/api/v1/webhooks").json()["webhooks"]
    response = api.patch(f"/api/v1/webhooks/{made['id']}", body)
    assert response.status_code == 422, response.content
    assert field in response.json()["error"]["message"]
    assert api.get("/api/v1/webhooks").json()["webhooks"] == before


def test_a_read_token_or_another_project_cannot_change_an_endpoint(api, read_api):
    made = add(api, "https://example.com/in")
    assert read_api.patch(f"/api/v1/webhooks/{made['id']}", {"enabled": False}).status_code == 403
    _, other_raw, _ = token_create(project_slug="other")
    assert Api(other_raw).patch(f"/api/v1/webhooks/{made['id']}", {"enabled": False}).status_code == 404
    assert api.patch("/api/v1/webhooks/999999", {"enabled": False}).status_code == 404
    assert WebhookEndpoint.objects.get(pk=made["id"]).is_enabled


def test_a_session_made_empty_by_a_read_is_created_once(api):
    made = add(api, "https://example.com/in", ["session.created"])
    assert api.call("r1", "TodoRead", {}).status_code == 200
    api.call("r1", "TodoWrite", {"todos": PLAN})
    assert kinds(made["id"]) == ["session.created"]


def test_a_project_without_endpoints_pays_no_query_and_one_with_them_none_without_an_event(api, project):
    api.call("s1", "TodoWrite", {"todos": PLAN})
    with CaptureQueriesContext(connection) as plain:
        api.call("s1", "TodoWrite", {"todos": PLAN + [{"content": "More", "status": "pending", "activeForm": "More"}]})
    add(api, "https://example.com/in")
    api.call("s1", "TodoWrite", {"todos": PLAN})  # reads the endpoints once
    with CaptureQueriesContext(connection) as hooked:
        api.call("s1", "TodoWrite", {"todos": PLAN + [{"content": "More", "status": "pending", "activeForm": "More"}]})
    for queries in (plain, hooked):
        sql = " ".join(q["sql"] for q in queries.captured_queries).lower()
        assert "todoweb_webhook" not in sql and "django_tasks" not in sql
    assert len(hooked.captured_queries) == len(plain.captured_queries)


def test_a_write_with_events_inserts_its_deliveries_in_one_statement_and_queues_no_task(api):
    for n in range(3):
        add(api, f"https://example.com/in/{n}")
    api.call("s1", "TodoWrite", {"todos": PLAN})
    with CaptureQueriesContext(connection) as queries:
        api.call("s1", "TodoWrite", {"todos": DONE})
    statements = [q["sql"].lower() for q in queries.captured_queries]
    assert not any("django_tasks" in sql for sql in statements)
    assert sum(sql.startswith("insert into todoweb_webhookdelivery") for sql in statements) == 1
    completed = WebhookDelivery.objects.filter(event="session.completed")
    assert [d.task_id for d in completed] == ["", "", ""]
    # The worker queues their tasks, once.
    assert queue_new(100) == 6
    assert queue_new(100) == 0
    assert DBTaskResult.objects.filter(queue_name=QUEUE, status=TaskResultStatus.READY).count() == 6
    tasks = {str(pk) for pk in DBTaskResult.objects.values_list("id", flat=True)}
    assert len({d.task_id for d in completed.all()} & tasks) == 3


def test_a_write_that_fails_after_making_its_deliveries_leaves_none(api, monkeypatch):
    made = add(api, "https://example.com/in")
    api.call("s1", "TodoWrite", {"todos": PLAN})
    made_then: list[int] = []
    enqueue_revision = enqueue.enqueue_revision

    def then_fail(*args, **kwargs):
        enqueue_revision(*args, **kwargs)
        made_then.append(WebhookDelivery.objects.filter(event="session.completed").count())
        raise RuntimeError("the write fails after its deliveries were made")

    monkeypatch.setattr(enqueue, "enqueue_revision", then_fail)
    response = api.call("s1", "TodoWrite", {"todos": DONE})
    assert response.status_code == 500
    assert response.json()["error"]["message"] == "Internal error; nothing was written"
    assert made_then == [1]  # made, in the write's transaction...
    assert kinds(made["id"]) == ["session.created"]  # ...and gone with it
    assert api.revision("s1") == 1
    assert queue_new(100) == 1  # the session.created delivery only


def test_a_write_that_loses_its_race_after_making_its_deliveries_makes_them_once_when_it_tries_again(api, monkeypatch):
    made = add(api, "https://example.com/in")
    api.call("s1", "TodoWrite", {"todos": PLAN})
    made_then: list[int] = []
    enqueue_revision = enqueue.enqueue_revision

    def lose_the_first_time(*args, **kwargs):
        enqueue_revision(*args, **kwargs)
        made_then.append(WebhookDelivery.objects.filter(event="session.completed").count())
        if len(made_then) == 1:
            raise Conflict()  # as if another writer moved the session on first

    monkeypatch.setattr(enqueue, "enqueue_revision", lose_the_first_time)
    response = api.call("s1", "TodoWrite", {"todos": DONE})
    assert response.status_code == 200, response.content
    assert made_then == [1, 1]  # the lost try's delivery was rolled back before the next made its own
    assert kinds(made["id"]) == ["session.created", "session.completed"]
    assert api.revision("s1") == 2


# --- delivery ----------------------------------------------------------------------------


def test_a_delivery_is_signed_and_sent_once(api, receiver):
    made = add(api, receiver.url)
    api.call("s1", "TodoWrite", {"todos": DONE})
    assert run_queue() == 2
    assert run_queue() == 0
    assert sorted(receiver.events()) == ["session.completed", "session.created"]
    wh = Webhook(made["secret"])
    for got in receiver.received:
        assert got.headers["webhook-signature"].startswith("v1,")
        payload = wh.verify(got.body, got.headers)
        assert payload["data"]["session"]["key"] == "s1" and payload["timestamp"].endswith("Z")
    assert {d["status"] for d in deliveries(api, made["id"])} == {"delivered"}


def test_a_tampered_body_does_not_verify(api, receiver):
    made = add(api, receiver.url, ["session.created"])
    api.call("s1", "TodoWrite", {"todos": PLAN})
    run_queue()
    (got,) = receiver.received
    with pytest.raises(Exception):  # noqa: B017 (standardwebhooks' own error)
        Webhook(made["secret"]).verify(got.body.replace(b"s1", b"s2"), got.headers)


def test_a_failed_attempt_is_retried_with_backoff_and_the_same_id(api, settings):
    settings.TODOWEB_WEBHOOK_RETRY_BASE = 30
    with Receiver(status=[500, 503, 200]) as receiver:
        made = add(api, receiver.url, ["session.created"])
        api.call("s1", "TodoWrite", {"todos": PLAN})
        assert run_queue() == 1
        (log,) = deliveries(api, made["id"])
        assert log["status"] == "pending" and log["attempts"] == 1 and log["response_status"] == 500
        assert log["error"] == "HTTP 500" and len(log["response_body"]) == 1000
        wait = timezone.datetime.fromisoformat(log["next_attempt_at"]) - timezone.now()
        assert timedelta(seconds=25) < wait < timedelta(seconds=34)
        assert run_queue() == 0  # not due yet
        make_due()
        assert run_queue() == 1
        make_due()
        assert run_queue() == 1
        (log,) = deliveries(api, made["id"])
        assert log["status"] == "delivered" and log["attempts"] == 3
        ids = {got.headers["webhook-id"] for got in receiver.received}
        assert len(receiver.received) == 3 and len(ids) == 1
        assert WebhookEndpoint.objects.get(pk=made["id"]).failing_since is None


def test_the_backoff_doubles_and_lasts_over_a_day(settings):
    settings.TODOWEB_WEBHOOK_RETRY_BASE = 30
    delays = [retry_delay(n) for n in range(1, 20)]
    assert 27 <= delays[0] <= 33 and 54 <= delays[1] <= 66
    assert max(delays) <= 6 * 3600 * 1.1
    assert sum(delays[:15]) >= 24 * 3600


def test_it_gives_up_after_the_retry_window(api, settings):
    settings.TODOWEB_WEBHOOK_RETRY_FOR = 0
    with Receiver(status=500) as receiver:
        made = add(api, receiver.url, ["session.created"])
        api.call("s1", "TodoWrite", {"todos": PLAN})
        run_queue()
        make_due()
        assert run_queue() == 0
        (log,) = deliveries(api, made["id"])
        assert log["status"] == "failed" and log["attempts"] == 1 and log["next_attempt_at"] is None


def test_redirects_are_not_followed(api):
    with Receiver(status=302) as receiver, Receiver() as elsewhere:
        receiver.location = elsewhere.url
        made = add(api, receiver.url, ["session.created"])
        api.call("s1", "TodoWrite", {"todos": PLAN})
        run_queue()
        assert elsewhere.received == []
        (log,) = deliveries(api, made["id"])
        assert log["status"] == "pending" and "redirects are not followed" in log["error"]


class Silent:
    """A receiver that takes each connection and never answers; it hangs up after
    `hangs_up_after` seconds (so that a delivery with no timeout fails, rather than
    waiting for ever)."""

    def __init__(self, hangs_up_after: float = 10.0):
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(0.05)
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}/hook"
        self.until = time.monotonic() + hangs_up_after
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self.take, daemon=True)

    def take(self) -> None:
        taken = []
        while not self.stopping.is_set() and time.monotonic() < self.until:
            try:
                taken.append(self.listener.accept()[0])
            except TimeoutError:
                pass
        for held in taken:
            held.close()
        self.listener.close()

    def __enter__(self) -> Silent:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stopping.set()
        self.thread.join()


def test_deliveries_wait_five_seconds_at_most():
    assert network.TIMEOUT == 5.0
    assert network.timeouts() == {"connect": 5.0, "read": 5.0, "write": 5.0, "pool": 5.0}


def test_a_receiver_that_never_answers_times_out_and_the_delivery_is_tried_again(api, monkeypatch):
    monkeypatch.setattr(network, "TIMEOUT", 0.3)
    monkeypatch.setattr(network, "_pools", threading.local())  # this thread's connections, made with it
    with Silent() as silent:
        made = add(api, silent.url, ["session.created"])
        api.call("s1", "TodoWrite", {"todos": PLAN})
        started = time.monotonic()
        assert run_queue() == 1
        took = time.monotonic() - started
    assert took < 5
    (log,) = deliveries(api, made["id"])
    assert (log["status"], log["attempts"], log["response_status"]) == ("pending", 1, None)
    assert log["error"] == "timed out: no whole answer within 0.3 s" and 300 <= log["latency_ms"] < 5000
    retry = DBTaskResult.objects.get(queue_name=QUEUE, status=TaskResultStatus.READY)
    assert retry.run_after > timezone.now() and str(retry.pk) == WebhookDelivery.objects.get().task_id
    assert WebhookEndpoint.objects.get(pk=made["id"]).failing_since is not None


def test_a_private_address_is_refused_when_delivering(api, settings, receiver):
    made = add(api, receiver.url, ["session.created"])
    settings.TODOWEB_WEBHOOKS_ALLOW_PRIVATE = False
    api.call("s1", "TodoWrite", {"todos": PLAN})
    run_queue()
    assert receiver.received == []
    (log,) = deliveries(api, made["id"])
    assert log["status"] == "pending" and log["error"].startswith("refused: 127.0.0.1 resolves to 127.0.0.1")


def test_an_endpoint_failing_for_days_is_disabled_with_the_reason(api, settings):
    settings.TODOWEB_WEBHOOK_DISABLE_AFTER = 3 * 86400
    with Receiver(status=500) as receiver:
        made = add(api, receiver.url)
        api.call("s1", "TodoWrite", {"todos": PLAN})
        run_queue()
        endpoint = WebhookEndpoint.objects.get(pk=made["id"])
        assert endpoint.failing_since is not None and endpoint.is_enabled
        WebhookEndpoint.objects.filter(pk=endpoint.pk).update(failing_since=timezone.now() - timedelta(days=3))
        make_due()
        run_queue()
        listed = api.get("/api/v1/webhooks").json()["webhooks"][0]
        assert listed["enabled"] is False
        assert (
            "every delivery failed for 3.0 days" in listed["disabled_reason"]
            and "HTTP 500" in listed["disabled_reason"]
        )
        before = WebhookDelivery.objects.count()
        api.call("s2", "TodoWrite", {"todos": DONE})
        assert WebhookDelivery.objects.count() == before
        make_due()
        run_queue()
        assert {d["status"] for d in deliveries(api, made["id"])} == {"failed"}
        endpoints.enable(WebhookEndpoint.objects.get(pk=made["id"]))
        api.call("s3", "TodoWrite", {"todos": DONE})
        assert WebhookDelivery.objects.count() == before + 2


def test_a_deleted_endpoints_queued_tasks_do_nothing(api, receiver):
    made = add(api, receiver.url, ["session.created"])
    api.call("s1", "TodoWrite", {"todos": PLAN})
    assert queue_new(100) == 1
    api.delete(f"/api/v1/webhooks/{made['id']}")
    assert run_queue() == 1
    assert receiver.received == []


def test_a_stray_task_does_nothing_and_a_lost_one_is_queued_again(api, receiver):
    made = add(api, receiver.url, ["session.created"])
    api.call("s1", "TodoWrite", {"todos": PLAN})
    assert queue_new(100) == 1
    delivery = WebhookDelivery.objects.get(endpoint_id=made["id"])
    # Its process died while attempting it: the task is left running.
    task = DBTaskResult.objects.get(pk=delivery.task_id)
    task.claim("dead")
    DBTaskResult.objects.filter(pk=task.pk).update(started_at=timezone.now() - timedelta(minutes=10))
    WebhookDelivery.objects.filter(pk=delivery.pk).update(next_attempt_at=timezone.now() - timedelta(minutes=10))
    assert idle.recover(timezone.now()) == 1
    assert idle.recover(timezone.now()) == 0
    # A copy of the old task (say, the dead process's, run again) is not the delivery's task.
    from todoweb.webhooks.delivery import deliver

    stray = deliver.enqueue(delivery.message_id)
    assert stray.id != WebhookDelivery.objects.get(pk=delivery.pk).task_id
    assert run_queue() == 2
    assert len(receiver.received) == 1


# --- formats -----------------------------------------------------------------------------


def payload_with(title: str, event: str = "session.completed") -> dict:
    session = {"title": title, "project": "alpha", "url": "/s/abc/", "completed": 2, "total": 2, "key": "k"}
    return {"type": event, "timestamp": "2026-01-01T00:00:00Z", "data": {"session": session}}


def test_slack_text_escapes_its_control_characters_and_links_the_panel(settings):
    settings.TODOWEB_PUBLIC_URL = "https://todo.example.com"
    text = formats.slack_text(payload_with("<!channel> & <https://evil|click> @here"), "http://ignored")
    assert "<!channel>" not in text and "&lt;!channel&gt; &amp; &lt;https://evil|click&gt;" in text
    assert "@here" not in text
    assert text.endswith("<https://todo.example.com/s/abc/|Open the panel>")
    assert text.startswith("[alpha] Session completed: ")


def test_discord_text_breaks_mentions_and_markup():
    text = formats.discord_text(payload_with("@everyone <@123> [click](https://evil) **x**"), "https://b.example")
    assert "@everyone" not in text and "<@123>" not in text and "](https" not in text and "**" not in text
    assert text.endswith("\nhttps://b.example/s/abc/")
    body, _ = formats.request("discord", payload_with("x"), secret="", message_id="m", timestamp=1, site_url="")
    assert json.loads(body)["allowed_mentions"] == {"parse": []}


def test_slack_and_discord_deliveries_carry_text(api):
    with Receiver() as slack, Receiver() as discord:
        add(api, slack.url, ["session.completed"], fmt="slack")
        add(api, discord.url, ["session.completed"], fmt="discord")
        api.call("s1", "TodoWrite", {"todos": DONE})
        run_queue()
        assert list(slack.received[0].json()) == ["text"]
        assert "Session completed: s1 (2/2 steps done)" in slack.received[0].json()["text"]
        assert "Session completed: s1 (2/2 steps done)" in discord.received[0].json()["content"]
        assert "webhook-signature" not in slack.received[0].headers


# --- idle --------------------------------------------------------------------------------


def test_a_session_going_idle_is_told_once_per_idle_spell(api, settings, receiver):
    settings.TODOWEB_IDLE_AFTER = 600
    made = add(api, receiver.url, ["session.idle"])
    assert WebhookClock.objects.filter(name="idle").exists()  # the check started with the endpoint
    api.call("s1", "TodoWrite", {"todos": PLAN})
    api.call("done", "TodoWrite", {"todos": DONE})  # finished: never idle
    run_queue()
    assert receiver.received == []
    # An hour ago the endpoint was made, and the sessions written.
    WebhookEndpoint.objects.update(created_at=timezone.now() - timedelta(hours=1))
    Session.objects.update(updated_at=timezone.now() - timedelta(seconds=601))
    make_due()
    run_queue()
    (got,) = receiver.received
    payload = got.json()
    assert payload["type"] == "session.idle" and payload["data"]["session"]["key"] == "s1"
    assert payload["data"]["session"]["state"] == "idle"
    make_due()
    run_queue()
    assert len(receiver.received) == 1  # the same spell: once
    api.call("s1", "TodoWrite", {"todos": PLAN[:1] + [{**PLAN[1], "content": "Write the fix well"}]})
    Session.objects.filter(key="s1").update(updated_at=timezone.now() - timedelta(seconds=601))
    make_due()
    run_queue()
    assert len(receiver.received) == 2
    assert len(deliveries(api, made["id"])) == 2


def test_one_chain_of_idle_checks_however_often_started(api):
    add(api, "https://example.com/in", ["session.idle"])
    assert idle.ensure() is False
    from todoweb.webhooks.idle import check

    check.enqueue(WebhookClock.objects.get().due_at.isoformat())  # a copy of the due check
    make_due()
    run_queue()
    ready = DBTaskResult.objects.filter(queue_name=QUEUE, status=TaskResultStatus.READY)
    assert ready.count() == 1
    WebhookClock.objects.update(due_at=timezone.now() - timedelta(hours=1))  # the chain died
    assert idle.ensure() is True
    make_due()
    run_queue()
    assert DBTaskResult.objects.filter(queue_name=QUEUE, status=TaskResultStatus.READY).count() == 1


def test_message_ids_sort_in_the_order_they_are_made():
    made = [enqueue.new_message_id() for _ in range(50)]
    assert sorted(made) == made and len(set(made)) == 50
    assert all(
        m.startswith("msg_") and len(m) <= WebhookDelivery._meta.get_field("message_id").max_length for m in made
    )


def test_deliveries_give_way_while_requests_use_the_database(monkeypatch, settings):
    from todoweb.store import database
    from todoweb.webhooks import worker

    slept: list[float] = []
    monkeypatch.setattr(worker.time, "sleep", slept.append)
    turns = worker.Turns()
    turns.spent = 0.002
    monkeypatch.setattr(database, "_in_flight", 0)  # no request in the database threads: deliver now
    with turns.turn():
        pass
    assert slept == []
    monkeypatch.setattr(database, "_in_flight", 1)  # one under way: give way
    turns.spent = 0.002
    with turns.turn():
        pass
    assert slept == [pytest.approx(0.002 * (1 / worker.SHARE - 1))]
