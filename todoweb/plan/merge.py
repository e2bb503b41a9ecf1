"""A three-way merge of an agent's list with a person's edit it had not seen.

The agent writes its whole list, built on the plan as it last saw it (`base`); a
person has edited the plan since (`theirs`); the agent's list (`ours`) must not undo
the edit. Per step, known by its identity (`plan.match_steps`: the agent's id, its
text, a close rewording):

- changed by the agent only: the agent's version; by the person only: the person's
  (wording, order, notes; steps added and removed stay as the person left them);
- changed by both: the person's wording and place, and the status further along
  (pending < in progress < completed; the person's cancelled, failed or blocked win
  over the agent's pending or in progress);
- a step the person added stays; a step the person removed stays removed (the agent
  had not seen the edit: its copy of the step is stale).

Pure functions over the stored steps; no database here.
"""

from __future__ import annotations

from typing import Any

from todoweb import plan
from todoweb.plan.steps import Item

# How far along a status is, for a step whose status both sides changed.
RANK = {"pending": 0, "in_progress": 1, "completed": 2, "failed": 2, "blocked": 2, "cancelled": 2}
WORKING = {"pending", "in_progress"}
STOPPED = {"failed", "blocked", "cancelled"}
# The fields a person may change and the agent's copy would otherwise overwrite.
FIELDS = ("content", "active_form", "notes", "status", "priority", "owner", "blocked_by")


def merge(base: list[dict[str, Any]], theirs: list[dict[str, Any]], ours: list[Item]) -> list[Item]:
    """The agent's list `ours` with the person's changes from `base` to `theirs` kept."""
    matches = plan.match_steps(base, ours, {})  # our index -> base index
    base_by_id = {step["id"]: step for step in base}
    ours_by_id = {base[j]["id"]: ours[i] for i, j in matches.items()}

    merged: dict[str, Item] = {}  # every step that stays, by id, in its merged version
    for step in theirs:
        step_id = step["id"]
        before, mine = base_by_id.get(step_id), ours_by_id.get(step_id)
        if before is None:
            merged[step_id] = item_of(step)  # the person added it
        elif mine is not None:
            merged[step_id] = combined(before, step, mine)
        elif changed(before, step):
            merged[step_id] = item_of(step)  # the agent dropped it, the person changed it: it stays
    # Steps only the agent has. One the person added too, by the same text, is theirs.
    added_by_person = {step["content"] for step in theirs if step["id"] not in base_by_id}
    new = {i: item for i, item in enumerate(ours) if i not in matches and item.content not in added_by_person}

    # The order: the person's where they reordered the steps both kept, else the agent's;
    # what the other side alone has goes after the step it followed there.
    ours_order = [base[matches[i]]["id"] if i in matches else i for i in range(len(ours)) if i in matches or i in new]
    theirs_order = [step["id"] for step in theirs]
    if reordered(base, theirs):
        primary, secondary = theirs_order, ours_order
    else:
        primary, secondary = ours_order, theirs_order
    order = in_order(primary, secondary, lambda key: key in merged or key in new)
    return [merged[key] if isinstance(key, str) else new[key] for key in order]


def in_order(primary: list[Any], secondary: list[Any], kept: Any) -> list[Any]:
    """The kept keys of `primary`, with those only `secondary` has placed right after
    the key they follow in `secondary` (at the start when they follow none)."""
    result = [key for key in primary if kept(key)]
    placed = set(result)
    previous = None
    for key in secondary:
        if key in placed:
            previous = key
            continue
        if not kept(key):
            continue
        at = result.index(previous) + 1 if previous is not None else 0
        result.insert(at, key)
        placed.add(key)
        previous = key
    return result


def combined(before: dict[str, Any], theirs: dict[str, Any], mine: Item) -> Item:
    """One step both sides kept: each field from whoever changed it; the person's where both did."""
    values: dict[str, Any] = {}
    for name in FIELDS:
        person, agent = theirs[name] != before[name], getattr(mine, name) != before[name]
        if person and agent and name == "status":
            values[name] = further(theirs["status"], mine.status)
        elif person or (name == "active_form" and theirs["content"] != before["content"]):
            # A reworded step keeps the person's active form too (the agent's is of the old text).
            values[name] = theirs[name]
        else:
            values[name] = getattr(mine, name)
    return Item(id=theirs["id"], **values)


def further(person: str, agent: str) -> str:
    """The status further along, of two that both sides set."""
    if person in STOPPED and agent in WORKING:
        return person
    if agent in STOPPED and person in WORKING:
        return agent
    return agent if RANK[agent] > RANK[person] else person


def changed(before: dict[str, Any], after: dict[str, Any]) -> bool:
    return any(before[name] != after[name] for name in FIELDS)


def reordered(base: list[dict[str, Any]], theirs: list[dict[str, Any]]) -> bool:
    """Whether the person changed the order of the steps they kept."""
    kept = {step["id"] for step in theirs}
    return [step["id"] for step in base if step["id"] in kept] != [
        step["id"] for step in theirs if step["id"] in {s["id"] for s in base}
    ]


def item_of(step: dict[str, Any]) -> Item:
    return Item(id=step["id"], **{name: step[name] for name in FIELDS})
