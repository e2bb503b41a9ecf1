"""Step identity across revisions, timings, changes and dropped steps."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from todoweb.plan import DROPPED_KEPT, reconcile
from todoweb.plan.steps import Item

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def step(content: str, status: str = "pending", id: str | None = None) -> Item:
    return Item(content=content, status=status, id=id, active_form=content)


def run(previous, dropped, items, minutes=0, next_number=1, revision=1, removed=()):
    return reconcile(
        previous,
        dropped,
        items,
        now=T0 + timedelta(minutes=minutes),
        next_number=next_number,
        revision=revision,
        removed=removed,
    )


def test_it_assigns_ids_and_keeps_them_by_exact_content():
    first = run([], [], [step("a"), step("b")])
    assert [t["id"] for t in first.todos] == ["1", "2"]
    second = run(first.todos, first.dropped, [step("c"), step("b"), step("a")], next_number=first.next_number)
    assert [t["id"] for t in second.todos] == ["3", "2", "1"]


def test_it_keeps_identity_through_a_light_rewording():
    first = run([], [], [step("Write the unit tests for the parser")])
    second = run(first.todos, [], [step("Write unit tests for the parser")], next_number=2)
    assert second.todos[0]["id"] == "1"
    third = run(second.todos, [], [step("Deploy to production")], next_number=2)
    assert third.todos[0]["id"] == "2"


def test_it_prefers_the_callers_ids():
    first = run([], [], [step("a", id="x"), step("b", id="y")])
    second = run(first.todos, [], [step("renamed", id="x")])
    assert second.todos[0]["id"] == "x"
    assert second.todos[0]["first_seen_at"] == first.todos[0]["first_seen_at"]


def test_it_derives_start_completion_duration_and_reopen():
    r1 = run([], [], [step("a", "pending")])
    r2 = run(r1.todos, [], [step("a", "in_progress")], minutes=1)
    r3 = run(r2.todos, [], [step("a", "completed")], minutes=4)
    done = r3.todos[0]
    assert done["first_seen_at"] == "2026-01-01T00:00:00Z"
    assert done["started_at"] == "2026-01-01T00:01:00Z"
    assert done["completed_at"] == "2026-01-01T00:04:00Z"
    assert done["duration_s"] == 180.0
    r4 = run(r3.todos, [], [step("a", "in_progress")], minutes=5)
    assert r4.todos[0]["reopened"] == 1
    assert r4.todos[0]["completed_at"] is None and r4.todos[0]["duration_s"] is None
    assert r4.changes == [{"id": "1", "from": "completed", "to": "in_progress"}]


def test_it_reports_changes_including_new_and_removed_steps():
    r1 = run([], [], [step("a"), step("b", "completed")])
    assert r1.changes == [{"id": "1", "from": None, "to": "pending"}, {"id": "2", "from": None, "to": "completed"}]
    r2 = run(r1.todos, [], [step("a", "in_progress")], next_number=3)
    assert r2.changes == [
        {"id": "1", "from": "pending", "to": "in_progress"},
        {"id": "2", "from": "completed", "to": None},
    ]


def test_it_keeps_unfinished_steps_that_vanish_as_dropped_until_they_return():
    r1 = run([], [], [step("a", "in_progress"), step("b"), step("c", "completed")])
    r2 = run(r1.todos, r1.dropped, [step("a", "completed")], next_number=4, revision=2)
    assert [d["content"] for d in r2.newly_dropped] == ["b"]
    assert [d["content"] for d in r2.dropped] == ["b"]  # c was completed: not dropped
    assert r2.dropped[0]["dropped_in"] == 2
    r3 = run(r2.todos, r2.dropped, [step("a", "completed"), step("d")], next_number=4, revision=3)
    assert [d["content"] for d in r3.dropped] == ["b"]
    r4 = run(r3.todos, r3.dropped, [step("a", "completed"), step("d"), step("b")], next_number=5, revision=4)
    assert r4.dropped == []
    assert r4.todos[2]["id"] == "2"  # b came back with its identity


def test_it_never_reuses_an_id_given_by_the_caller():
    r1 = run([], [], [step("a", id="1"), step("b")])
    assert [t["id"] for t in r1.todos] == ["1", "2"]


def test_it_matches_duplicates_one_to_one():
    r1 = run([], [], [step("same"), step("same")])
    r2 = run(r1.todos, [], [step("same"), step("same")], next_number=3)
    assert [t["id"] for t in r2.todos] == ["1", "2"]


def test_it_does_not_count_a_deliberate_removal_as_dropped():
    r1 = run([], [], [step("a", "in_progress"), step("b")])
    r2 = run(r1.todos, [], [step("a", "in_progress")], next_number=3, revision=2, removed=["2"])
    assert r2.dropped == [] and r2.newly_dropped == []
    assert r2.changes == [{"id": "2", "from": "pending", "to": None}]


def test_it_finds_a_step_by_content_when_the_caller_starts_sending_ids():
    r1 = run([], [], [step("a", "in_progress")])
    r2 = run(r1.todos, [], [step("a", "in_progress", id="abc")], next_number=2)
    assert r2.todos[0]["id"] == "abc"
    assert r2.todos[0]["started_at"] == r1.todos[0]["started_at"]
    assert r2.dropped == []


def test_it_makes_repeated_caller_ids_unique():
    r1 = run([], [], [step("a", id="1"), step("b", id="1"), step("c", id="1")])
    assert [t["id"] for t in r1.todos] == ["1", "1#2", "1#3"]
    r2 = run(r1.todos, [], [step("a", id="1"), step("b", id="1"), step("c", id="1")])
    assert [t["id"] for t in r2.todos] == ["1", "1#2", "1#3"]
    assert r2.changes == []


def test_the_dropped_ledger_keeps_the_newest_and_counts_them_all():
    now = datetime(2026, 1, 1, tzinfo=UTC)
    todos, dropped, count, number = [], [], 0, 1
    for rewrite in range(5):
        items = [Item(content=f"{'vwxyz'[rewrite] * 12} {n}", status="pending") for n in range(10)]
        result = reconcile(
            todos, dropped, items, now=now, next_number=number, revision=rewrite + 1, dropped_count=count
        )
        todos, dropped, count, number = result.todos, result.dropped, result.dropped_count, result.next_number
        assert len(result.newly_dropped) == (10 if rewrite else 0)
    assert count == 40 and len(dropped) == DROPPED_KEPT
    assert [step["content"] for step in dropped][-1] == "yyyyyyyyyyyy 9"  # the newest last
    # A step still in the kept ledger comes back under its id, and leaves the count.
    back = Item(content="yyyyyyyyyyyy 9", status="in_progress")
    result = reconcile(
        todos,
        dropped,
        [*(Item(content=t["content"], status="pending") for t in todos), back],
        now=now,
        next_number=number,
        revision=6,
        dropped_count=count,
    )
    assert result.todos[-1]["id"] == dropped[-1]["id"] and result.dropped_count == 39
