"""A revision's plan, call input and kept first answer are stored compressed (zstd;
zlib before): what is read back is what was written (key order, Chinese, emoji, big
integers), replays answer the same bytes, values written as zlib are still read, and
the migration converts a database written before."""

from __future__ import annotations

import json
import zlib

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from tests.conftest import Api
from todoweb.fields import ZSTD_MAGIC, CompressedJSONField, Serialised, decompress
from todoweb.models import Revision

PLAN = [
    {"content": "读取问题 🐛 <b>", "status": "in_progress", "activeForm": "Reading"},
    {"content": "Write the fix", "status": "pending", "activeForm": "Writing"},
]


def stored(pk: int, column: str) -> bytes:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {column} FROM todoweb_revision WHERE id = %s", [pk])
        return bytes(cursor.fetchone()[0])


def test_values_come_back_as_written():
    field = CompressedJSONField()
    for value in [
        {"b": 1, "a": [1, 123456789012345678901234567, -(2**64) - 1, None], "中文": "🙂\u0000"},
        [],
        "text",
        0,
        {"s": "\ud800"},
        [2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 10**18, 0.1, 1.5e300, "1234567890123456789"],
    ]:
        data = field.get_prep_value(value)
        assert isinstance(data, bytes)
        assert field.from_db_value(data, None, connection) == value
    assert field.from_db_value(field.get_prep_value(Serialised('{"z":1,"a":2}')), None, connection) == {"z": 1, "a": 2}
    assert field.get_prep_value(None) is None and field.from_db_value(None, None, connection) is None


def test_values_written_as_zlib_streams_are_still_read(api: Api):
    api.post("/api/v1/sessions/s1/tool", {"tool": "TodoWrite", "id": "call-1", "input": {"todos": PLAN}})
    revision = Revision.objects.get(session__key="s1")
    written = zlib.compressobj(1, zlib.DEFLATED, 13, 4)  # how todoweb compressed before zstd
    old_plan = written.compress(json.dumps(revision.todos).encode()) + written.flush()
    with connection.cursor() as cursor:
        cursor.execute("UPDATE todoweb_revision SET todos = %s WHERE id = %s", [old_plan, revision.pk])
    assert not stored(revision.pk, "todos").startswith(ZSTD_MAGIC)
    assert Revision.objects.get(pk=revision.pk).todos == revision.todos
    again = api.post("/api/v1/sessions/s1/tool", {"tool": "TodoWrite", "id": "call-2", "input": {"todos": PLAN[:1]}})
    assert again.status_code == 200, again.content
    assert [change["to"] for change in again.json()["data"]["changes"]] == [None]


def test_a_revision_stores_its_answer_compressed_and_a_replay_answers_the_same_bytes(api: Api):
    first = api.post("/api/v1/sessions/s1/tool", {"tool": "TodoWrite", "id": "call-1", "input": {"todos": PLAN}})
    again = api.post("/api/v1/sessions/s1/tool", {"tool": "TodoWrite", "id": "call-1", "input": {"todos": PLAN}})
    assert first.status_code == again.status_code == 200
    assert again["Idempotent-Replayed"] == "true"
    assert again.content == first.content
    revision = Revision.objects.get(session__key="s1")
    assert revision.raw_input == {"todos": PLAN}
    assert [step["content"] for step in revision.todos] == [step["content"] for step in PLAN]
    assert not stored(revision.pk, "todos").startswith(b"[")
    assert list(revision.response) == ["ok", "tool", "dialect", "output", "data"]
    answer = stored(revision.pk, "response")
    assert answer.startswith(ZSTD_MAGIC)
    assert decompress(answer).startswith(b'{"ok":true,"tool":"TodoWrite"')
    assert len(answer) < len(first.content) / 2


@pytest.mark.django_db(transaction=True)
def test_the_migration_compresses_what_was_stored_before_and_back():
    executor = MigrationExecutor(connection)
    before, after = (
        [("todoweb", "0013_webhook_delivery_unqueued")],
        [("todoweb", "0014_revision_compressed_json")],
    )
    executor.migrate(before)
    old = executor.loader.project_state(before).apps
    project = old.get_model("todoweb", "Project").objects.create(slug="old", name="Old")
    session = old.get_model("todoweb", "Session").objects.create(project=project, key="k", public_id="p" * 16)
    raw = {"todos": PLAN, "big": 123456789012345678901234567}
    response = {"ok": True, "tool": "TodoWrite", "output": "中文 ✅", "data": {"revision": 1}}
    steps = [{"id": "1", "content": "读取问题 🐛", "status": "in_progress", "blocked_by": []}]
    old.get_model("todoweb", "Revision").objects.create(
        session=session, number=1, tool="TodoWrite", dialect="claude", todos=steps, raw_input=raw, response=response
    )
    try:
        executor = MigrationExecutor(connection)
        executor.migrate(after)
        new = MigrationExecutor(connection).loader.project_state(after).apps
        revision = new.get_model("todoweb", "Revision").objects.get()
        assert (revision.todos, revision.raw_input, revision.response) == (steps, raw, response)
        assert json.loads(decompress(stored(revision.pk, "raw_input"))) == raw
        executor = MigrationExecutor(connection)
        executor.migrate(before)
        back = MigrationExecutor(connection).loader.project_state(before).apps
        revision = back.get_model("todoweb", "Revision").objects.get()
        assert (revision.todos, revision.raw_input, revision.response) == (steps, raw, response)
    finally:
        executor = MigrationExecutor(connection)
        executor.loader.build_graph()
        executor.migrate(executor.loader.graph.leaf_nodes())
