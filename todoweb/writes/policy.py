"""What a project allows a plan to hold, on top of each tool's own rules: the same
limits for an agent's write and a person's edit."""

from __future__ import annotations

from django.conf import settings

from todoweb.calls import jsonio
from todoweb.calls.errors import InvalidInput
from todoweb.models import Project
from todoweb.plan.steps import Item, Warning

OWNER_MAX_CHARS = 200
# A step id, the caller's or one a blocker names: the longest any tool takes (Qwen Code's).
ID_MAX_CHARS = 500


def apply_policy(project: Project, items: list[Item]) -> list[Warning]:
    """Refuse what the project's limits forbid; the warnings for what they only discourage."""
    max_items = min(project.max_items, settings.TODOWEB_MAX_ITEMS_CAP)
    if len(items) > max_items:
        raise InvalidInput(
            f"Too many items: {len(items):,}. This project allows at most {max_items} "
            f"(its max_items policy, set in the admin; at most {settings.TODOWEB_MAX_ITEMS_CAP})",
            details={"count": len(items), "max_items": max_items},
        )
    limit = project.max_content_chars
    for index, item in enumerate(items):
        # The usual step (short texts, no blockers) in one test; the rest checked in full.
        if (
            len(item.content) > limit
            or (item.active_form is not None and len(item.active_form) > limit)
            or item.notes is not None
            or item.owner is not None
            or (item.id is not None and len(item.id) > ID_MAX_CHARS)
            or item.blocked_by
        ):
            check_item(index, item, limit=limit, max_items=max_items)
    in_progress = [index for index, item in enumerate(items) if item.status == "in_progress"]
    if len(in_progress) <= 1 or project.single_in_progress == Project.SingleInProgress.OFF:
        return []
    where = ", ".join(str(index) for index in in_progress)
    if project.single_in_progress == Project.SingleInProgress.REJECT:
        raise InvalidInput(
            f"Only one step can be in progress at a time: {len(in_progress)} are (at index {where})",
            details={"indexes": in_progress},
        )
    return [
        Warning(
            "multiple_in_progress",
            f"{len(in_progress)} steps are in progress (at index {where}); keep exactly one step in progress.",
        )
    ]


def check_item(index: int, item: Item, *, limit: int, max_items: int) -> None:
    """Refuse the step at `index` if it is past the project's limits."""
    for field, value in (("content", item.content), ("active_form", item.active_form), ("notes", item.notes)):
        if value is not None and len(value) > limit:
            raise InvalidInput(
                f"Item at index {index}: {field} is {len(value)} characters long; this project allows at most {limit}",
                details={"index": index, "field": field, "max_content_chars": limit},
            )
    if item.owner is not None and len(item.owner) > OWNER_MAX_CHARS:
        raise InvalidInput(
            f"Item at index {index}: owner is longer than {OWNER_MAX_CHARS} characters",
            details={"index": index, "field": "owner"},
        )
    for field, ids in (("id", [item.id] if item.id else []), ("blocked_by", item.blocked_by)):
        if any(len(step_id) > ID_MAX_CHARS for step_id in ids):
            raise InvalidInput(
                f"Item at index {index}: {field} holds an id longer than {ID_MAX_CHARS} characters",
                details={"index": index, "field": field, "max_chars": ID_MAX_CHARS},
            )
    if len(item.blocked_by) > max_items:
        # Blockers accumulate over calls (TaskUpdate's addBlockedBy): cap what a step keeps.
        raise InvalidInput(
            f"Item at index {index}: blocked by {len(item.blocked_by)} steps; this project allows at most {max_items}",
            details={"index": index, "field": "blocked_by", "max_items": max_items},
        )


def check_storable(items: list[Item], title: str | None = None) -> None:
    """Text a tool read with its own parser (Kimi's, Codex's) may hold what no database
    stores; text that came through jsonio.parse was checked there."""
    texts = [title]
    for item in items:
        texts += [item.content, item.id, item.active_form, item.notes, item.owner, *item.blocked_by]
    try:
        jsonio.check([text for text in texts if text is not None])
    except ValueError as exc:
        raise InvalidInput(str(exc)) from None
