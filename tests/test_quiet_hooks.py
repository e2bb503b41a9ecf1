"""A hook on a tool the board does not track, with nothing to tell its agent, is
answered on the event loop from a read-only SQLite connection (web.api.quiet_hooks),
with the same bytes as the write path's; everything else about it (an error,
a message to tell, the token's use to note, the rate limit) is as before."""

from __future__ import annotations

import sqlite3
from datetime import timedelta
from typing import Any

import httpx
import pytest
from django.db import connections
from django.utils import timezone

from tests.conftest import fast_path
from todoweb import store
from todoweb.models import ApiToken, Session, digest
from todoweb.store import database
from todoweb.store.database import in_database_thread
from todoweb.web.api import hooks
from todoweb.writes import messages

pytestmark = [
    fast_path,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connections["default"].vendor != "sqlite", reason="reads on the event loop are SQLite's"),
]

TODOS = [{"content": "Fix <b>it</b> 修复 🐛", "status": "in_progress", "activeForm": "Fixing"}]


def hook(session: str, tool: str = "Bash", event: str = "PostToolUse", **fields: Any) -> dict[str, Any]:
    tool_input = {"todos": TODOS} if tool == "TodoWrite" else {"command": "ls"}
    return {"session_id": session, "hook_event_name": event, "tool_name": tool, "tool_input": tool_input} | fields


class Hops:
    """Counts the hooks' calls that take the write path (a short write, or the
    database thread), not the event loop's read-only reader."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        monkeypatch.setattr(hooks, "in_database_thread", self.counted(hooks.in_database_thread))
        for name in ("write", "run"):  # a short write, by the way the hooks choose (recording.short_write)
            monkeypatch.setattr(store, name, self.counted(getattr(store, name)))

    def counted(self, way):  # noqa: ANN001, ANN201
        async def call(func, *args, **kwargs):  # noqa: ANN001, ANN202
            self.count += 1
            return await way(func, *args, **kwargs)

        return call


@pytest.fixture
def hops(monkeypatch) -> Hops:
    return Hops(monkeypatch)


async def post(agents_client: httpx.AsyncClient, token: str, body: dict[str, Any], agent: str = "claude-code"):
    headers = {"Authorization": f"Bearer {token}"}
    return await agents_client.post(f"/api/v1/hooks/{agent}", json=body, headers=headers)


async def token_row(raw: str) -> ApiToken:
    return await in_database_thread(ApiToken.objects.get, digest=digest(raw))


async def test_with_its_use_noted_a_quiet_hook_is_answered_without_the_write_path(agents_client, token, hops):
    first = await post(agents_client, token, hook("quiet"))  # notes the token's first use: the write path
    assert (first.status_code, hops.count) == (200, 1)
    assert (await token_row(token)).last_used_at is not None
    again = [await post(agents_client, token, hook("quiet")) for _ in range(3)]
    assert hops.count == 1
    assert {(answer.status_code, answer.content) for answer in again} == {(200, first.content)}
    assert first.json()["ignored"] is True


async def test_it_answers_the_same_bytes_as_the_write_path_s_way(agents_client, token, hops, monkeypatch):
    cases = [
        ("claude-code", hook("same")),
        ("claude-code", hook("same", event="PreToolUse")),
        ("claude-code", hook("same", agent_id="worker-1")),
        ("codex", hook("same", "shell")),
        ("qwen-code", hook("same", "run_shell_command")),
        ("gemini-cli", hook("same", "run_shell_command", event="AfterTool")),
        ("opencode", hook("same", "bash", event="tool.execute.after")),
    ]
    await post(agents_client, token, hook("same"))  # the token's use noted
    on_the_loop = [await post(agents_client, token, body, agent) for agent, body in cases]
    assert hops.count == 1
    monkeypatch.setattr(hooks, "nothing_to_tell", lambda found_by, key: False)
    by_the_write_path = [await post(agents_client, token, body, agent) for agent, body in cases]
    assert hops.count == 1 + len(cases)
    assert [(a.status_code, a.headers, a.content) for a in on_the_loop] == [
        (a.status_code, a.headers, a.content) for a in by_the_write_path
    ]


async def test_a_message_to_tell_takes_the_write_path_and_is_told_once(agents_client, token, hops):
    await post(agents_client, token, hook("told", "TodoWrite"))  # the session, its plan, the token's use noted
    session = await in_database_thread(Session.objects.get, key="told")
    await in_database_thread(messages.add, session, kind="note", text="Use <b>uv</b>, 不要 pip 🙂", author="ann")
    hops.count = 0
    told = await post(agents_client, token, hook("told"))
    assert "Use <b>uv</b>, 不要 pip 🙂" in told.json()["hookSpecificOutput"]["additionalContext"]
    assert hops.count == 1
    after = await post(agents_client, token, hook("told"))
    assert "hookSpecificOutput" not in after.json() and hops.count == 1


@pytest.mark.parametrize(
    ("standing", "status", "code"),
    [("revoked", 401, "unauthorized"), ("read", 403, "forbidden"), ("unknown", 401, "unauthorized")],
)
async def test_a_token_that_may_not_write_gets_the_write_path_s_error(
    agents_client, token, read_token, hops, standing, status, code
):
    raw = {"read": read_token, "unknown": "no-such-token"}.get(standing, token)
    for _ in range(2):
        await post(agents_client, raw, hook("refused"))  # any use noted: the loop would answer, if it answered errors
    if standing == "revoked":
        await in_database_thread(
            lambda: ApiToken.objects.filter(scope=ApiToken.Scope.WRITE).update(revoked_at=timezone.now())
        )
    hops.count = 0
    answer = await post(agents_client, raw, hook("refused"))
    assert (answer.status_code, answer.json()["error"]["code"]) == (status, code)
    assert hops.count == 1


async def test_a_use_not_noted_for_a_minute_is_noted_by_the_write_path(agents_client, token, hops):
    await post(agents_client, token, hook("noted"))
    a_while_ago = timezone.now() - timedelta(seconds=90)
    await in_database_thread(lambda: ApiToken.objects.update(last_used_at=a_while_ago))
    hops.count = 0
    assert (await post(agents_client, token, hook("noted"))).status_code == 200
    assert hops.count == 1
    assert (await token_row(token)).last_used_at > a_while_ago
    assert (await post(agents_client, token, hook("noted"))).status_code == 200
    assert hops.count == 1


async def test_the_rate_limit_counts_each_quiet_hook_once(agents_client, token, hops, settings):
    settings.TODOWEB_RATE_LIMIT = 3
    answers = [await post(agents_client, token, hook("limited")) for _ in range(4)]
    assert [answer.status_code for answer in answers] == [200, 200, 200, 429]
    assert answers[-1].json()["error"]["code"] == "rate_limited"
    assert hops.count == 1  # the first, which noted the token's use


async def test_with_the_rate_limit_counted_in_redis_it_takes_the_write_path(settings):
    settings.TODOWEB_RATE_LIMIT = 1000
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": "redis://x"}}
    assert not hooks.nothing_to_tell("anything", None)


async def test_a_database_the_loop_cannot_read_falls_back_to_the_write_path(agents_client, token, hops, monkeypatch):
    await post(agents_client, token, hook("busy"))

    def busy() -> None:
        raise sqlite3.OperationalError("database is locked")

    monkeypatch.setattr("todoweb.web.api.quiet_hooks.loop_reader", busy)
    hops.count = 0
    assert (await post(agents_client, token, hook("busy"))).status_code == 200
    assert hops.count == 1


async def test_the_loop_s_reader_sees_each_commit_at_once(token):
    reader = database.loop_reader()
    assert reader is not None
    count = "SELECT count(*) FROM todoweb_session"
    before = reader.execute(count).fetchone()[0]
    await in_database_thread(lambda: Session.objects.create(project_id=ApiToken.objects.get().project_id, key="new"))
    assert reader.execute(count).fetchone()[0] == before + 1
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        reader.execute("DELETE FROM todoweb_session")


def test_under_a_synchronous_caller_there_is_no_loop_reader():
    from asgiref.sync import async_to_sync

    async def from_the_loop():
        return database.loop_reader()

    assert async_to_sync(from_the_loop)() is None
