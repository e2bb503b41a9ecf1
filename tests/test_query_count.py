"""A write costs a handful of queries whatever the list length; a replay costs one."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

# The token with the session (its current revision and any earlier call with the same
# key) in one read, the session's new state, the new revision; and once a minute the
# token's last_used_at. A new session adds its INSERT.
MAX_QUERIES_PER_WRITE = 5
MAX_QUERIES_PER_REPLAY = 2


def todos(n: int, status: str = "pending") -> dict:
    return {"todos": [{"content": f"step {i}", "status": status, "activeForm": f"doing {i}"} for i in range(n)]}


def queries_of(api, key: str, args: dict, *, call_id: str | None = None) -> list[str]:
    with CaptureQueriesContext(connection) as captured:
        r = api.call(key, "TodoWrite", args, call_id=call_id)
    assert r.status_code == 200, r.content
    # The test's own transaction turns each atomic block into a savepoint; in a
    # server the block is BEGIN … COMMIT, which no query log counts.
    return [q["sql"] for q in captured if "SAVEPOINT" not in q["sql"]]


@pytest.mark.parametrize("n", [1, 100, 500])
def test_it_writes_in_at_most_five_queries_whatever_the_length(api, project, n):
    project.max_items = 500
    project.save()
    first = queries_of(api, f"s{n}", todos(n))
    later = queries_of(api, f"s{n}", todos(n, "in_progress"))
    assert len(first) <= MAX_QUERIES_PER_WRITE + 1, first  # + the new session's INSERT
    assert len(later) <= MAX_QUERIES_PER_WRITE, later
    # Then the step rows of the steps it changed (here all of them): one DELETE, one INSERT.
    if connection.vendor == "postgresql":
        # The token and session read, then one statement that moves the session and inserts the revision.
        assert [q.split()[0] for q in later] == ["SELECT", "WITH", "DELETE", "INSERT"], later
    else:
        assert [q.split()[0] for q in later] == ["SELECT", "UPDATE", "INSERT", "DELETE", "INSERT"], later
    assert "todoweb_apitoken" in later[0] and "todoweb_session" in later[0], later


def test_it_answers_a_replay_in_two_queries_and_writes_nothing(api):
    queries_of(api, "s1", todos(3), call_id="toolu_1")
    replay = queries_of(api, "s1", todos(3), call_id="toolu_1")
    assert len(replay) <= MAX_QUERIES_PER_REPLAY, replay
    # The token, the session and the earlier answer, in one read.
    assert len(replay) == 1 and replay[0].startswith("SELECT"), replay


@pytest.mark.django_db
def test_a_revision_writes_only_the_indexes_its_reads_need():
    """Each index is a page more to write on every revision: the session's revisions are
    found through the unique (session, number) index, which leads with the session."""
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(cursor, "todoweb_revision")
    indexed = sorted(
        tuple(c["columns"]) for c in constraints.values() if (c["index"] or c["unique"]) and not c["primary_key"]
    )
    assert indexed == [("session_id", "idempotency_key"), ("session_id", "number")]
