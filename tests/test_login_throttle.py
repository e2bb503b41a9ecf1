"""Login throttling: too many wrong passwords lock the account, and the address they
came from, out for a while (django-axes, counted in the database: every process sees
the same counts); the person is told until when."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import httpx
import pytest
from axes.models import AccessAttempt
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from tests.conftest import MEMBER_PASSWORD
from todoweb.asgi import application, django_asgi_app
from todoweb.serve.handlers import http_application

LIMIT = 5


@pytest.fixture(autouse=True)
def small_limit(settings):
    settings.AXES_FAILURE_LIMIT = LIMIT


def from_address(address: str) -> Client:
    return Client(REMOTE_ADDR=address)


def log_in(client: Client, username: str, password: str, path: str = "/accounts/login/"):
    return client.post(path, {"username": username, "password": password})


def logged_in(client: Client) -> bool:
    return "_auth_user_id" in client.session


def test_the_right_password_logs_in_after_a_few_wrong_ones(member):
    browser = from_address("198.51.100.1")
    for _ in range(LIMIT - 1):
        assert log_in(browser, "member", "wrong").status_code == 200
    assert log_in(browser, "member", MEMBER_PASSWORD).status_code == 302
    assert logged_in(browser)


def test_it_locks_an_account_out_after_too_many_wrong_passwords_from_anywhere(member):
    for n in range(LIMIT):
        log_in(from_address(f"198.51.100.{n + 1}"), "member", "wrong")
    browser = from_address("198.51.100.200")
    page = log_in(browser, "member", MEMBER_PASSWORD)
    assert page.status_code == 429
    assert not logged_in(browser)
    html = page.content.decode()
    assert "Too many failed logins" in html and "Try again after" in html
    retry_after = int(page["Retry-After"])
    assert 14 * 60 < retry_after <= 15 * 60
    # The board's own page, not a bare text.
    assert 'class="topbar"' in html


def test_it_locks_an_address_out_after_too_many_wrong_passwords_for_any_account(member):
    attacker = from_address("203.0.113.9")
    for n in range(LIMIT):
        log_in(attacker, f"guess-{n}", "wrong")
    assert log_in(attacker, "member", MEMBER_PASSWORD).status_code == 429
    assert not logged_in(attacker)
    # From elsewhere the member logs in as usual.
    browser = from_address("198.51.100.7")
    assert log_in(browser, "member", MEMBER_PASSWORD).status_code == 302


def test_the_lock_ends_after_the_cool_off(member, settings):
    browser = from_address("198.51.100.1")
    for _ in range(LIMIT):
        log_in(browser, "member", "wrong")
    assert log_in(browser, "member", MEMBER_PASSWORD).status_code == 429
    from axes.models import AccessAttempt

    AccessAttempt.objects.update(attempt_time=timezone.now() - settings.AXES_COOLOFF_TIME - timedelta(seconds=1))
    assert log_in(browser, "member", MEMBER_PASSWORD).status_code == 302


def test_staff_unlock_an_account_with_axes_reset(member):
    for n in range(LIMIT):
        log_in(from_address(f"198.51.100.{n + 1}"), "member", "wrong")
    assert log_in(from_address("198.51.100.99"), "member", MEMBER_PASSWORD).status_code == 429
    call_command("axes_reset_username", "member")
    assert log_in(from_address("198.51.100.99"), "member", MEMBER_PASSWORD).status_code == 302


def test_the_admin_login_is_throttled_too(db):
    User.objects.create_superuser("root", password="a long admin password")
    browser = from_address("198.51.100.1")
    for _ in range(LIMIT):
        log_in(browser, "root", "wrong", "/admin/login/")
    page = log_in(browser, "root", "a long admin password", "/admin/login/")
    assert page.status_code == 429 and b"Too many failed logins" in page.content
    assert not logged_in(browser)


def test_a_test_clients_login_without_a_request_still_works(member):
    # Django's Client.login checks the password with no request: nothing to throttle.
    client = Client()
    assert client.login(username="member", password=MEMBER_PASSWORD)
    assert not client.login(username="member", password="wrong")


async def log_in_through(app: Any, username: str, password: str, *, forwarded_for: str) -> httpx.Response:
    """A login through the form, as the server runs the application, from 127.0.0.1 (a
    client on this machine, or a proxy on it) saying it forwards for `forwarded_for`."""
    transport = httpx.ASGITransport(app=app, client=("127.0.0.1", 40000))
    headers = {"X-Forwarded-For": forwarded_for}
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1", headers=headers) as browser:
        await browser.get("/accounts/login/")
        form = {"username": username, "password": password, "csrfmiddlewaretoken": browser.cookies["csrftoken"]}
        return await browser.post("/accounts/login/", data=form)


@pytest.mark.django_db(transaction=True)
async def test_with_no_proxy_configured_a_changing_x_forwarded_for_does_not_dodge_the_address_lock(member):
    for n in range(LIMIT):
        await log_in_through(application, f"guess-{n}", "wrong", forwarded_for=f"198.51.100.{n + 1}")
    # Counted against the connection's address, whatever the header said.
    addresses = {address async for address in AccessAttempt.objects.values_list("ip_address", flat=True)}
    assert addresses == {"127.0.0.1"}
    locked = await log_in_through(application, "member", MEMBER_PASSWORD, forwarded_for="198.51.100.99")
    assert locked.status_code == 429


@pytest.mark.django_db(transaction=True)
async def test_from_a_configured_proxy_the_forwarded_address_is_the_one_locked_out(member, settings):
    settings.FORWARDED_ALLOW_IPS = ["127.0.0.1"]
    behind_a_proxy = http_application(django_asgi_app)
    for n in range(LIMIT):
        await log_in_through(behind_a_proxy, f"guess-{n}", "wrong", forwarded_for="203.0.113.9")
    addresses = {address async for address in AccessAttempt.objects.values_list("ip_address", flat=True)}
    assert addresses == {"203.0.113.9"}
    locked = await log_in_through(behind_a_proxy, "member", MEMBER_PASSWORD, forwarded_for="203.0.113.9")
    assert locked.status_code == 429
    elsewhere = await log_in_through(behind_a_proxy, "member", MEMBER_PASSWORD, forwarded_for="198.51.100.7")
    assert elsewhere.status_code == 302
