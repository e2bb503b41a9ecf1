"""Browser tests: the real ASGI app under uvicorn in a thread, Debian's Chromium
driven by Playwright.

The server runs in this process so that it shares the in-memory channel layer
and the pytest-django test database (a file: `.test-db.sqlite3`). Tests post
through the server's HTTP API, so that events are published on the server's loop.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import httpx
import pytest
from django.contrib.auth.models import User
from django.test import Client

CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts"
IN_CI = os.environ.get("CI", "").lower() == "true"


def pytest_configure(config):
    config.addinivalue_line("markers", "browser: drives Chromium against a live server")


def pytest_collection_modifyitems(config, items):
    if os.path.exists(CHROMIUM) or IN_CI:
        return  # in CI a missing browser fails the tests instead of skipping them
    skip = pytest.mark.skip(reason=f"Chromium not found at {CHROMIUM} (apt-get install chromium)")
    for item in items:
        if "tests/browser" in str(item.fspath):
            item.add_marker(skip)


class Agent:
    """Posts tool calls to the live server, as an agent backend does."""

    def __init__(self, base: str, token: str):
        self.http = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=10)

    def todo_write(self, key: str, todos: list[tuple[str, str]] | list[dict], **extra) -> dict:
        items = [
            t if isinstance(t, dict) else {"content": t[0], "status": t[1], "activeForm": f"{t[0]} now"} for t in todos
        ]
        response = self.http.post(f"/api/v1/sessions/{key}/tool", json={"tool": "TodoWrite", "input": {"todos": items}})
        assert response.status_code == 200, response.text
        return response.json()


@pytest.fixture
def agent(asgi_server, token) -> Agent:
    return Agent(asgi_server.url, token)


@pytest.fixture(scope="module")
def browser(django_db_setup):
    from playwright.sync_api import sync_playwright

    # Playwright's sync API keeps an event loop registered on this thread while
    # it lives, which trips Django's async-safety check on the test's own ORM
    # calls (all of them plain synchronous code). Allowed for this module only.
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        yield browser
        browser.close()
    if previous is None:
        del os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"]
    else:
        os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


def new_context(browser, asgi_server, *, user: User | None = None, phone: bool = False, dark: bool = False):
    options = {"base_url": asgi_server.url, "color_scheme": "dark" if dark else "light"}
    if phone:
        options |= {
            "viewport": {"width": 390, "height": 844},
            "device_scale_factor": 2,
            "is_mobile": True,
            "has_touch": True,
        }
    else:
        options |= {"viewport": {"width": 1200, "height": 800}}
    context = browser.new_context(**options)
    context.set_default_timeout(5000)
    if user is not None:
        client = Client()
        client.force_login(user)
        context.add_cookies([{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": asgi_server.url}])
    return context


def wait_until(page, expression: str, *, arg=None, timeout: float = 5.0) -> None:
    """Until `expression` (a JavaScript function of `arg`) is truthy in the page.
    Playwright's wait_for_function evaluates its predicate with eval(), which the
    board's Content-Security-Policy forbids; page.evaluate goes through DevTools."""
    deadline = time.monotonic() + timeout
    while not page.evaluate(expression, arg):
        assert time.monotonic() < deadline, f"not true within {timeout} s: {expression}"
        page.wait_for_timeout(50)


def csp_violation(page, message) -> None:
    if message.type == "error" and "Content Security Policy" in message.text:
        page.errors.append(message.text)


@pytest.fixture
def page_for(browser, asgi_server):
    contexts = []

    def make(user: User | None = None, **options):
        context = new_context(browser, asgi_server, user=user, **options)
        contexts.append(context)
        page = context.new_page()
        page.errors = []
        page.on("pageerror", lambda error: page.errors.append(str(error)))
        # What the Content-Security-Policy blocks (an inline style, a script from
        # elsewhere) is an error of the page too: Chromium reports it on the console.
        page.on("console", lambda message: csp_violation(page, message))
        return page

    yield make
    for context in contexts:
        context.close()


@pytest.fixture
def shot():
    """Screenshots go to artifacts/ (gitignored), for people to look at."""

    def take(page, name: str) -> None:
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)

    return take
