"""Text for the model: the checklist that restates the plan in each answer (todoweb's
own reply style), and the resume block, the plan as a `<system-reminder>` an agent
re-injects after its context was compacted or its run resumed, so that it carries on
with the step it was on instead of starting over.
"""

from __future__ import annotations

import re
from typing import Any

from todoweb.plan.steps import FINISHED, MARKERS

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


# --- The resume block ---

OPEN, CLOSE = "<system-reminder>", "</system-reminder>"
LEGEND = "Markers: " + ", ".join(f"{marker} {status.replace('_', ' ')}" for status, marker in MARKERS.items()) + "."
KEEP_UPDATED = (
    "Keep the todo list updated with your todo tool as you work: mark each step completed as soon as it is done, "
    "and keep exactly one step in progress."
)
# Step text is agent text: a tag of our own inside it would end the block early and
# let whatever follows pass for an instruction from outside the plan.
OWN_TAG = re.compile(r"<(/?)(system-reminder)", re.IGNORECASE)


def resume_text(data: dict[str, Any]) -> str:
    """The block for a session's data shape (reads.current_data)."""
    session = data["session"]
    todos = data["todos"]
    counts = data["counts"]
    revision = data["revision"]
    name = f'"{session["title"]}"' if session["title"] else f'session "{session["key"]}"'
    if not todos:
        body = [
            f"Your todo list for {name} is empty (revision {revision}).",
            "If the task has several steps, write the todo list before you continue, and keep it updated as you work.",
        ]
        return wrap(body)

    body = [
        f"Your current plan for {name}, restored after a context reset "
        f"(todo list revision {revision}): {counts['completed']}/{counts['total']} completed.",
        "",
        *(step_line(step) for step in todos),
        "",
        LEGEND,
    ]
    doing = [step for step in todos if step["status"] == "in_progress"]
    open_steps = [step for step in todos if step["status"] not in ("completed", "cancelled")]
    if doing:
        body.append("In progress: " + "; ".join(step["active_form"] or step["content"] for step in doing))
        body.append("Continue with the step in progress; do not start over or redo completed steps. " + KEEP_UPDATED)
    elif open_steps:
        body.append(
            f"No step is in progress; {len(open_steps)} {'remains' if len(open_steps) == 1 else 'remain'}."
            " Mark the next one in_progress and continue "
            "from there; do not redo completed steps. " + KEEP_UPDATED
        )
    else:
        body.append(
            "Every step is finished. Check the result and summarise it, or add steps to the todo list if work remains."
        )
    return wrap(body)


def wrap(lines: list[str]) -> str:
    return "\n".join([OPEN, *map(defang, lines), CLOSE]) + "\n"


def defang(line: str) -> str:
    # Continuation lines of multi-line step text are indented, so they cannot pose
    # as a step line of their own.
    line = OWN_TAG.sub(r"<\\\1\2", line)
    parts = line.splitlines()
    return "\n    ".join(parts) if len(parts) > 1 else line
