"""The checklist text: todoweb's own reply style, restating the plan to the model."""

from __future__ import annotations

from typing import Any

from .steps import FINISHED, MARKERS

REMINDER = "Reminder: finish every step before summarising, and keep exactly one step in progress."


def step_line(step: dict[str, Any]) -> str:
    line = f"{MARKERS[step['status']]} {step['content']}"
    if step["status"] == "in_progress" and step["active_form"] and step["active_form"] != step["content"]:
        line += f" ({step['active_form']})"
    return line


def checklist(data: dict[str, Any], *, newly_dropped: list[dict[str, Any]], wrote: bool) -> str:
    todos = data["todos"]
    revision = data["revision"]
    counts = data["counts"]
    if not todos:
        header = f"Todo list {'cleared' if wrote else 'is empty'} (revision {revision})."
    else:
        verb = "updated" if wrote else "as of now"
        header = f"Todo list {verb}: {counts['completed']}/{counts['total']} completed (revision {revision})."
    lines = [header, *map(step_line, todos)]
    if data["warnings"]:
        lines += ["", "Warnings:", *(f"- {w['message']}" for w in data["warnings"])]
    if newly_dropped:
        lines += ["", "Dropped while unfinished (send them again if they still matter):"]
        lines += [f"- {step_line(step)}" for step in newly_dropped]
    if any(step["status"] not in FINISHED for step in todos):
        lines += ["", REMINDER]
    return "\n".join(lines)
