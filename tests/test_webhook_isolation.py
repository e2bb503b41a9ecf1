"""No receiver can hold up deliveries: an attempt ends at its deadline however the
receiver drips its answer; the worker's pool has room for one attempt per endpoint and
half of it per project. One URL check, on the address as the client reads it: every
notation of a private address refused when an endpoint is made or changed (the API,
the team page, the admin), and a stored URL no attempt could send fails at once."""

from __future__ import annotations

import threading

import pytest
from django_tasks_db.models import DBTaskResult

from tests.conftest import Api, assert_refused
from tests.test_team import logged_in, user_in
from tests.test_webhooks import PLAN, add, deliveries, fresh_endpoint_cache, run_queue  # noqa: F401
from tests.webhook_receiver import Dripping, Receiver
from todoweb.models import Membership, WebhookDelivery, WebhookEndpoint
from todoweb.webhooks import network, worker
from todoweb.webhooks.compat import TaskResultStatus
from todoweb.webhooks.delivery import QUEUE, queue_new
from todoweb.writes.tokens import token_create

# --- the deadline --------------------------------------------------------------------


@pytest.mark.parametrize("part", ["headers", "body"])
def test_it_ends_an_attempt_at_its_deadline_however_the_receiver_drips(api, monkeypatch, part):
    # A byte every 0.1 s restarts any timeout of a single read (1 s here); the whole
    # answer would take 4 s to drip.
    monkeypatch.setattr(network, "TIMEOUT", 1.0)
    monkeypatch.setattr(network, "_pools", threading.local())  # connections of this test
    with Dripping(every=0.1, part=part, length=40) as dripping:
        made = add(api, dripping.url, ["session.created"])
        api.call("s1", "TodoWrite", {"todos": PLAN})
        assert run_queue() == 1
        (log,) = deliveries(api, made["id"])
    assert log["status"] == "pending" and log["attempts"] == 1
    assert log["error"] == "timed out: no whole answer within 1 s"
    assert dripping.whole == [False]  # the client hung up before the answer was whole


def test_it_ends_a_tls_handshake_at_the_attempts_deadline(monkeypatch):
    """A server dripping its side of the handshake: the handshake is given what is
    left of the attempt, as a whole."""
    from todoweb.webhooks.delivery import send

    monkeypatch.setattr(network, "TIMEOUT", 1.0)
    monkeypatch.setattr(network, "_pools", threading.local())
    with Dripping(every=0.1, part="tls", length=40) as dripping:
        outcome = send(dripping.url.replace("http:", "https:"), b"{}", {"content-type": "application/json"})
    assert outcome.error == "timed out: no whole answer within 1 s"
    assert dripping.whole == [False]


def test_a_tls_receiver_is_delivered_to(monkeypatch, tmp_path):
    """The handshake made within the deadline is the whole handshake: the certificate
    is checked, and the request goes through."""
    import ssl
    import subprocess
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from todoweb.webhooks.delivery import send

    key, certificate = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1"]
        + ["-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(certificate)],
        check=True,
        capture_output=True,
    )

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    served = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    served.load_cert_chain(certificate, key)
    server.socket = served.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"https://127.0.0.1:{server.server_address[1]}/in"
    try:
        monkeypatch.setattr(network, "_pools", threading.local())
        refused = send(url, b"{}", {})  # the system's CAs do not know this certificate
        assert not refused.ok and "CERTIFICATE_VERIFY_FAILED" in refused.error
        trusting = ssl.create_default_context(cafile=str(certificate))
        monkeypatch.setattr(network, "tls_context", lambda: trusting)
        monkeypatch.setattr(network, "_pools", threading.local())
        outcome = send(url, b"{}", {})
        assert (outcome.ok, outcome.status, outcome.answer) == (True, 200, "ok")
    finally:
        server.shutdown()
        server.server_close()


def test_it_resolves_a_host_no_longer_than_the_attempt_may_take(monkeypatch):
    """The resolver cannot be interrupted: a name whose servers never answer ends the
    attempt at its deadline all the same."""
    never = threading.Event()
    monkeypatch.setattr(network.socket, "getaddrinfo", lambda *args, **kwargs: never.wait())
    try:
        with pytest.raises(network.httpcore.ConnectTimeout, match="resolving slow.example"):
            network.resolve("slow.example", 443, 0.2)
    finally:
        never.set()


# --- room per endpoint and per project -----------------------------------------------


def second_project() -> Api:
    return Api(token_create(project_slug="other")[1])


def claims(pool: worker.Pool) -> list[worker.Job]:
    """Claim until nothing has room, each claimed task left in flight (not run)."""
    claimed = []
    while pool.room():
        job = pool.claim("tests")
        if job is None:
            break
        pool.in_flight[str(job.task.id)] = job
        claimed.append(job)
    return claimed


def test_it_keeps_one_attempt_per_endpoint_in_flight_in_the_order_of_the_events(api):
    first = add(api, "http://127.0.0.1:9/a", ["session.created"])
    second = add(api, "http://127.0.0.1:9/b", ["session.created"])
    for key in ("s1", "s2", "s3"):
        api.call(key, "TodoWrite", {"todos": PLAN})
    pool = worker.Pool(8)  # each delivery's first task queued as it is claimed
    claimed = claims(pool)
    # One each, the first event's: the later ones wait for their endpoint's attempt.
    assert sorted(job.endpoint_id for job in claimed) == [first["id"], second["id"]]
    earliest = {
        d.endpoint_id: d.task_id
        for d in WebhookDelivery.objects.order_by("-next_attempt_at", "-id")  # the last written wins: the earliest
    }
    assert {job.endpoint_id: str(job.task.id) for job in claimed} == earliest
    # The first endpoint's attempt ends: its next delivery, and only it, has room.
    done = next(job for job in claimed if job.endpoint_id == first["id"])
    del pool.in_flight[str(done.task.id)]
    DBTaskResult.objects.filter(pk=done.task.pk).update(status=TaskResultStatus.SUCCESSFUL)
    WebhookDelivery.objects.filter(task_id=str(done.task.id)).update(status=WebhookDelivery.Status.DELIVERED)
    (following,) = claims(pool)
    assert following.endpoint_id == first["id"]


def test_it_gives_a_project_half_the_pool_and_the_rest_to_others(api):
    crowded = [add(api, f"http://127.0.0.1:9/{n}", ["session.created"])["id"] for n in range(6)]
    api.call("s1", "TodoWrite", {"todos": PLAN})  # six deliveries, all due first
    other = second_project()
    healthy = add(other, "http://127.0.0.1:9/healthy", ["session.created"])["id"]
    other.call("t1", "TodoWrite", {"todos": PLAN})
    queue_new(100)
    pool = worker.Pool(4)
    claimed = claims(pool)
    held = [job.endpoint_id for job in claimed]
    assert len([e for e in held if e in crowded]) == 2  # half of 4
    assert healthy in held  # though its event came after all six
    assert pool.room() and pool.claim("tests") is None  # the crowded project has no room left


def test_it_runs_the_idle_check_and_a_task_no_delivery_names_without_holding_a_slot(api):
    from todoweb.webhooks import idle
    from todoweb.webhooks.delivery import deliver

    idle.ensure()
    deliver.enqueue("msg_gone")  # a task whose delivery was deleted with its endpoint
    pool = worker.Pool(2)
    claimed = claims(pool)
    assert sorted(job.task.task_path for job in claimed) == [
        "todoweb.webhooks.delivery.deliver",
        "todoweb.webhooks.idle.check",
    ]
    assert all(job.endpoint_id is None and job.project_id is None for job in claimed)


@pytest.mark.django_db(transaction=True)
def test_the_pool_makes_a_delivery_while_a_silent_receiver_holds_another(api):
    from tests.webhook_receiver import Silent

    with Silent() as silent, Receiver() as receiver:
        held = add(api, silent.url, ["session.created"])
        healthy = add(api, receiver.url, ["session.created"])
        api.call("s1", "TodoWrite", {"todos": PLAN})
        queue_new(100)
        pool = worker.Pool(4)
        runner = worker.task_runner("tests")
        first = pool.claim("tests")
        assert first is not None and first.endpoint_id == held["id"]
        pool.start(runner, first)  # waits on the silent receiver (until its deadline)
        job = pool.claim("tests")
        assert job is not None and job.endpoint_id == healthy["id"]
        pool.start(runner, job)
        receiver.wait_for(1)  # while the first attempt is still in flight
        assert str(first.task.id) in pool.in_flight
        pool.shutdown()
    assert WebhookDelivery.objects.get(endpoint_id=healthy["id"]).status == WebhookDelivery.Status.DELIVERED


# --- one URL check -------------------------------------------------------------------

LOOPBACK_NOTATIONS = [
    ("http://2130706433/", "127.0.0.1"),
    ("http://0x7f000001/", "127.0.0.1"),
    ("http://0177.0.0.1/", "127.0.0.1"),
    ("http://127.000.000.001/", "127.0.0.1"),
    ("http://0x7f.1/", "127.0.0.1"),
    ("http://127.1/", "127.0.0.1"),
    ("http://0/", "0.0.0.0"),
    ("http://127。0。0。1/", "127.0.0.1"),
    ("http://[::ffff:127.0.0.1]/", "loopback"),
    ("http://[::ffff:7f00:1]/", "loopback"),
    ("http://[::127.0.0.1]/", "loopback"),
    ("http://[0:0:0:0:0:0:0:1]/", "loopback"),
    ("http://LOCALHOST./", "loopback"),
    ("http://10.0.0.1.nip.io.localhost/", "loopback"),
]
UNUSABLE = [
    ("http://a b.com/", "a space"),
    ("http://example.com/a b", "a space"),
    ("http://exa\tmple.com/", "'\\t'"),
    ("http://%31%32%37.0.0.1/", "percent-encoded"),
    ("http://%6c%6f%63%61%6c%68%6f%73%74/", "percent-encoded"),
    ("http://ｌｏｃａｌｈｏｓｔ/", "Invalid IDNA hostname"),
    ("http://1.2.3.4.5/", "neither a host name nor an IPv4 address"),
    ("http://256.1.1.1/", "Invalid IPv4 address"),
    ("http://ex!ample.com/", "a character a host name cannot"),
    ("http://[fe80::1%25eth0]/", "a zone"),
    ("http://134744072/", "write it as 8.8.8.8"),
]


@pytest.mark.parametrize("url, why", LOOPBACK_NOTATIONS)
def test_it_refuses_a_private_address_in_any_notation_when_made_or_changed(api, settings, url, why):
    settings.TODOWEB_WEBHOOKS_ALLOW_PRIVATE = False
    body = assert_refused(api.post("/api/v1/webhooks", {"url": url, "events": ["session.created"]}))
    message = body["error"]["message"]
    assert message.startswith("url: ") and why in message and "TODOWEB_WEBHOOKS_ALLOW_PRIVATE" in message
    assert body["error"]["details"] == {"field": "url"}
    made = add(api, "https://hooks.example.com/in", ["session.created"])
    body = assert_refused(api.patch(f"/api/v1/webhooks/{made['id']}", {"url": url}))
    assert why in body["error"]["message"]
    assert WebhookEndpoint.objects.get().url == "https://hooks.example.com/in"


@pytest.mark.parametrize("url, why", UNUSABLE)
def test_it_refuses_a_url_no_attempt_could_send_saying_why(api, settings, url, why):
    settings.TODOWEB_WEBHOOKS_ALLOW_PRIVATE = True  # refused whatever addresses are allowed
    body = assert_refused(api.post("/api/v1/webhooks", {"url": url, "events": ["session.created"]}))
    assert body["error"]["message"].startswith("url: ") and why in body["error"]["message"]
    assert api.get("/api/v1/webhooks").json()["webhooks"] == []


def test_it_takes_an_internationalised_name(api, settings):
    settings.TODOWEB_WEBHOOKS_ALLOW_PRIVATE = False
    assert add(api, "https://bücher.example/in", ["session.created"])["url"] == "https://bücher.example/in"


def test_the_team_page_and_the_admin_refuse_another_notation_of_loopback(project, settings, client):
    settings.TODOWEB_WEBHOOKS_ALLOW_PRIVATE = False
    admin = user_in(project, "ada", Membership.Role.ADMIN)
    body = {"url": "http://2130706433/hook", "events": ["session.created"], "format": "standard"}
    response = logged_in(admin).post(f"/team/{project.slug}/webhooks/", body)
    page = response.content.decode()
    assert response.status_code == 400 and "2130706433 (that is 127.0.0.1) is a private" in page
    staff = type(admin).objects.create_superuser("root", "", "pw")
    client.force_login(staff)
    response = client.post(
        "/admin/todoweb/webhookendpoint/add/",
        {"project": project.pk, "url": "http://0177.0.0.1/", "events": ["session.created"], "format": "standard"},
    )
    assert response.status_code == 200 and "0177.0.0.1 (that is 127.0.0.1) is a private" in response.content.decode()
    assert not WebhookEndpoint.objects.exists()


@pytest.mark.parametrize("stored", ["http://0177.0.0.1/", "http://a b.com/", "http://127.000.000.001/x"])
def test_a_stored_url_no_attempt_could_send_fails_at_once_saying_why(api, stored, caplog):
    made = add(api, "http://127.0.0.1:9/hook", ["session.created"])
    WebhookEndpoint.objects.filter(pk=made["id"]).update(url=stored)  # as an older version let in
    api.call("s1", "TodoWrite", {"todos": PLAN})
    assert run_queue() == 1
    (log,) = deliveries(api, made["id"])
    assert (log["status"], log["attempts"], log["next_attempt_at"]) == ("failed", 1, None)
    assert log["error"].startswith("cannot be delivered: ")
    assert not DBTaskResult.objects.filter(queue_name=QUEUE, status=TaskResultStatus.READY).exists()
    assert "Traceback" not in caplog.text


def test_an_attempt_gives_way_to_writes_holding_its_own_slot_only(monkeypatch):
    """While requests use the database, the pool's thread pays for its attempt's CPU
    after it, still holding its endpoint's and project's slot (not the claimer's time)."""
    from todoweb.store import database

    class Runner:
        def run_task(self, task) -> None:
            sum(range(20_000))  # some CPU

    pool = worker.Pool(4)
    job = worker.Job(type("Task", (), {"id": "t1"})(), endpoint_id=1, project_id=1)
    pool.in_flight["t1"] = job
    held: list[bool] = []
    monkeypatch.setattr(worker.time, "sleep", lambda seconds: held.append("t1" in pool.in_flight and seconds > 0))
    monkeypatch.setattr(database, "_in_flight", 1)  # a request under way
    pool.run(Runner(), job)
    assert held == [True] and "t1" not in pool.in_flight
    monkeypatch.setattr(database, "_in_flight", 0)  # none: no pause
    pool.in_flight["t1"] = job
    pool.run(Runner(), job)
    assert held == [True]
