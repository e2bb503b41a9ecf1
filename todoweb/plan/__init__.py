"""Canonical steps across revisions: identity, timings, changes, dropped steps, counts.

Most tools send bare snapshots without ids, yet the board shows how long each step
took. `reconcile` keeps a step's identity from one revision to the next: by the
caller's id where there is one, else by exact content, else by a close match for a
light rewording. Pure functions over JSON-ready dicts; no database here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from difflib import SequenceMatcher
from typing import Any

from todoweb.plan.steps import FINISHED, STATUSES, Item

# Similarity above which a reworded step is taken for the same step.
CLOSE_MATCH = 0.8
# Fuzzy matching costs (items x steps) pairs, each quadratic in the texts' length
# (two 2,000-character texts take ~100 ms). It compares the first FUZZY_CHARS of
# each text, over at most MAX_FUZZY_PAIRS pairs, and stops when the work (the sum
# of length products) passes FUZZY_BUDGET (~50 ms here): the steps still unmatched
# then count as new. A light rewording of a normal list is well within all three.
FUZZY_CHARS = 300
MAX_FUZZY_PAIRS = 2_500
FUZZY_BUDGET = 2_000_000


def iso(moment: datetime | None) -> str | None:
    return utc_text(moment) if moment else None


def utc_text(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def parse_iso(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text) if text else None


# Unfinished steps dropped and not back: a revision keeps the newest this many (and
# how many there are in all). An agent that rewrites a plan of a hundred steps thirty
# times would otherwise carry thousands in every answer and live frame; each
# revision keeps every step it dropped itself, so the whole ledger can be read back
# from the revisions (selectors.dropped_ledger).
DROPPED_KEPT = 20


@dataclass
class Reconciled:
    todos: list[dict[str, Any]]
    changes: list[dict[str, Any]]
    dropped: list[dict[str, Any]]  # the newest DROPPED_KEPT unfinished steps dropped and not back
    dropped_count: int  # how many there are in all
    newly_dropped: list[dict[str, Any]]
    next_number: int


def reconcile(
    previous: list[dict[str, Any]],
    dropped: list[dict[str, Any]],
    items: list[Item],
    *,
    now: datetime,
    next_number: int,
    revision: int,
    dropped_count: int = 0,
    removed: Sequence[str] = (),
    aliases: dict[str, str] | None = None,
) -> Reconciled:
    """`dropped` is the previous revision's kept ledger and `dropped_count` its length
    in all. `aliases`: step id -> an earlier text the caller may still use for the step
    (the text before a person reworded it, which the agent has not seen). A step
    dropped longer ago than the kept ledger reaches is new if it comes back."""
    stamp = utc_text(now)
    candidates = previous + dropped
    matches = match_steps(candidates, items, aliases or {})
    taken = set(matches.values())

    used_ids = {item.id for item in items if item.id is not None}
    used_ids |= {candidates[j]["id"] for j in taken}
    todos, changes = [], []
    seen_ids: set[str] = set()
    for index, item in enumerate(items):
        j = matches.get(index)
        before = candidates[j] if j is not None else None
        if item.id is not None:
            step_id = item.id
        elif before is not None:
            step_id = before["id"]
        else:
            while str(next_number) in used_ids:
                next_number += 1
            step_id = str(next_number)
            used_ids.add(step_id)
            next_number += 1
        if step_id in seen_ids:
            # Some tools accept a repeated id (learn's `todo`); the board needs each
            # step addressable, so a repeat becomes "<id>#2", "<id>#3", …
            step_id = next(f"{step_id}#{n}" for n in range(2, len(items) + 2) if f"{step_id}#{n}" not in seen_ids)
        seen_ids.add(step_id)
        step = advance(before, item, step_id=step_id, position=index, stamp=stamp)
        old_status = before["status"] if before is not None and j is not None and j < len(previous) else None
        if old_status != step["status"]:
            changes.append({"id": step_id, "from": old_status, "to": step["status"]})
        todos.append(step)

    newly_dropped = []
    for j, step in enumerate(previous):
        if j in taken:
            continue
        changes.append({"id": step["id"], "from": step["status"], "to": None})
        if step["status"] not in FINISHED and step["id"] not in removed:
            newly_dropped.append({**step, "dropped_at": stamp, "dropped_in": revision})
    still_dropped = [step for j, step in enumerate(dropped, start=len(previous)) if j not in taken]
    came_back = len(dropped) - len(still_dropped)
    count = max(dropped_count, len(dropped)) - came_back + len(newly_dropped)
    kept = (still_dropped + newly_dropped)[-DROPPED_KEPT:]
    next_number = next_free_number(todos, next_number)
    return Reconciled(todos, changes, kept, count, newly_dropped, next_number)


def next_free_number(todos: list[dict[str, Any]], next_number: int) -> int:
    """Past every numeric id ever used, whoever chose it: a number is never reused."""
    # Nine digits at most: a caller's id like "99999999999" must not overflow the counter.
    numbers = [
        int(step["id"]) for step in todos if len(step["id"]) <= 9 and step["id"].isascii() and step["id"].isdigit()
    ]
    return max([next_number, *(n + 1 for n in numbers)])


def match_steps(candidates: list[dict[str, Any]], items: list[Item], aliases: dict[str, str]) -> dict[int, int]:
    """Item index -> candidate index, by caller id, then exact content (or an alias of a
    step's), then close content (the last only for items without an id: a caller's id
    is a deliberate identity)."""
    matches: dict[int, int] = {}
    free = set(range(len(candidates)))

    by_id: dict[str, list[int]] = {}
    for j, step in enumerate(candidates):
        by_id.setdefault(step["id"], []).append(j)
    for i, item in enumerate(items):
        if item.id is None:
            continue
        for j in by_id.get(item.id, ()):
            if j in free:
                matches[i] = j
                free.discard(j)
                break

    # A caller id seen for the first time may name a step that had a server id
    # before (a tool that starts sending ids): its content still finds it. Steps
    # whose id some item claims stay reserved for that item.
    claimed = {item.id for item in items if item.id is not None}
    by_content: dict[str, list[int]] = {}
    for j in sorted(free):
        if candidates[j]["id"] not in claimed:
            by_content.setdefault(candidates[j]["content"], []).append(j)
            if candidates[j]["id"] in aliases:
                by_content.setdefault(aliases[candidates[j]["id"]], []).append(j)
    for i, item in enumerate(items):
        if i in matches:
            continue
        for j in by_content.get(item.content, ()):
            if j in free:
                matches[i] = j
                free.discard(j)
                break

    unmatched = [i for i, item in enumerate(items) if item.id is None and i not in matches]
    if unmatched and free and len(unmatched) * len(free) <= MAX_FUZZY_PAIRS:
        for i, j, _ in close_matches(
            {i: items[i].content for i in unmatched}, {j: candidates[j]["content"] for j in sorted(free)}
        ):
            if i not in matches and j in free:
                matches[i] = j
                free.discard(j)
    return matches


def close_matches(texts: dict[int, str], others: dict[int, str]) -> list[tuple[int, int, float]]:
    """Pairs (i, j, ratio) of texts at least CLOSE_MATCH alike, best first, within the budget."""
    folded = {j: text[:FUZZY_CHARS].casefold() for j, text in others.items()}
    budget = FUZZY_BUDGET
    scored: list[tuple[int, int, float]] = []
    for i, text in texts.items():
        text = text[:FUZZY_CHARS].casefold()
        for j, other in folded.items():
            matcher = SequenceMatcher(None, text, other, autojunk=False)
            if matcher.real_quick_ratio() < CLOSE_MATCH or matcher.quick_ratio() < CLOSE_MATCH:
                continue
            budget -= len(text) * len(other)
            if budget < 0:
                return sorted(scored, key=lambda pair: -pair[2])
            ratio = matcher.ratio()
            if ratio >= CLOSE_MATCH:
                scored.append((i, j, ratio))
    return sorted(scored, key=lambda pair: -pair[2])


def advance(before: dict[str, Any] | None, item: Item, *, step_id: str, position: int, stamp: str) -> dict[str, Any]:
    """The step as of this revision (written at `stamp`), carrying its history forward from `before`."""
    first_seen = before["first_seen_at"] if before else stamp
    started = before["started_at"] if before else None
    completed = before["completed_at"] if before else None
    reopened = before["reopened"] if before else 0
    old_status = before["status"] if before else None

    if item.status == "in_progress" and started is None:
        started = stamp
    if item.status == "completed":
        if old_status != "completed" or completed is None:
            completed = stamp
    else:
        if old_status == "completed":
            reopened += 1
        completed = None

    duration = None
    if started and completed:
        if before is not None and (before["started_at"], before["completed_at"]) == (started, completed):
            duration = before.get("duration_s")  # a step done before: its duration as it was
        if duration is None:
            duration = round((datetime.fromisoformat(completed) - datetime.fromisoformat(started)).total_seconds(), 3)
    return {
        "id": step_id,
        "content": item.content,
        "active_form": item.active_form,
        "notes": item.notes,
        "status": item.status,
        "priority": item.priority,
        "owner": item.owner,
        "blocked_by": list(item.blocked_by),
        "position": position,
        "first_seen_at": first_seen,
        "started_at": started,
        "completed_at": completed,
        "duration_s": duration,
        "reopened": reopened,
    }


def as_items(todos: list[dict[str, Any]]) -> list[Item]:
    """The current steps as dialects see them."""
    return [
        Item(
            id=t["id"],
            content=t["content"],
            status=t["status"],
            active_form=t["active_form"],
            notes=t["notes"],
            priority=t["priority"],
            owner=t["owner"],
            blocked_by=list(t["blocked_by"]),
        )
        for t in todos
    ]


def counts(todos: list[dict[str, Any]]) -> dict[str, int]:
    result = {"total": len(todos)} | {status: 0 for status in STATUSES}
    for step in todos:
        result[step["status"]] += 1
    return result


def progress(todos: list[dict[str, Any]]) -> float:
    if not todos:
        return 0.0
    return round(sum(step["status"] == "completed" for step in todos) / len(todos), 4)


def current_ids(todos: list[dict[str, Any]]) -> list[str]:
    return [step["id"] for step in todos if step["status"] == "in_progress"]


def current_text(todos: list[dict[str, Any]]) -> str:
    """What the agent is doing now: the first in-progress step's active form."""
    for step in todos:
        if step["status"] == "in_progress":
            return step["active_form"] or step["content"]
    return ""
