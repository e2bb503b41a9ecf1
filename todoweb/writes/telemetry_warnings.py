"""The board's warning on a session whose agent's telemetry export cut its todo list:
nothing of such a call is written, so people must learn why the plan does not move."""

from __future__ import annotations

from todoweb.calls.telemetry import TelemetryCall
from todoweb.models import Project, Session
from todoweb.writes.record import get_or_create_session


def note_truncated(project: Project, call: TelemetryCall) -> None:
    warning = (
        f"{call.source.label}'s telemetry cut the arguments of its {call.tool} calls, so they are not "
        f"on the board: {call.source.whole_input}."
    )[:500]
    session = get_or_create_session(project, call.session_key)
    if session.reach_warning != warning:
        Session.objects.filter(pk=session.pk).update(reach_warning=warning)
