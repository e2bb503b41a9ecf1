"""What the steering tests of the CLIs other than Claude Code share: a person's edit
made through the API (as the board makes it) once the board showed the agent's first
list, and the notice todoweb gives the agent for it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.agents.conftest import Deployment

# The person rewords the second step of a two-step plan.
BEFORE = ("Read the checkout code", "Round the total once")
EDITED = [
    {"id": "1", "content": BEFORE[0], "status": "in_progress"},
    {"id": "2", "content": "Round the total once and add a regression test", "status": "pending"},
]
EDIT_NOTICE = (
    'The user changed the plan:\n- reworded "Round the total once" to "Round the total once and add a regression test"'
)
CHECKOUT = "def total(items):\n    return round(sum(items), 2)\n"
CHECKOUT_MARK = "round(sum(items), 2)"  # in a read of checkout.py


def edit_before_turn_1(todoweb: Deployment, token: str, board: Any, outcome: dict[str, Any]) -> Callable[[int], None]:
    """A fake model's `before_turn`: before turn 1 (after the agent's first todo call)
    wait until the board shows revision 1, then reword the second step through the
    API (`If-Match: 1`). `outcome` gets the session key and the edit's status."""

    def before_turn(turn: int) -> None:
        if turn != 1:
            return
        board.live[1] = board.wait_for(1)
        with todoweb.api(token) as api:
            sessions = api.get("/api/v1/sessions").raise_for_status().json()["sessions"]
            if len(sessions) != 1:
                outcome["sessions"] = sessions
                return
            key = outcome["key"] = sessions[0]["key"]
            edit = api.post(f"/api/v1/sessions/{key}/edits", json={"todos": EDITED}, headers={"If-Match": "1"})
            outcome["status"] = edit.status_code

    return before_turn


def check_told_with_the_read(
    fake: Any,
    tool_results: Callable[[Any], list[dict[str, Any]]],
    todoweb: Deployment,
    token: str,
    key: str,
    told_via: str,
    context: str,
) -> None:
    """The agent's read (turn 1, call `call_fake_1_0`) ran, and its result, in the model's
    next request, carries the notice; the board shows the edit told by `told_via`."""
    requests = {request.turn: request for request in fake.turns()}
    assert sorted(requests) == [0, 1, 2], context
    [result] = tool_results(requests[2])
    assert result["tool_call_id"] == "call_fake_1_0" and CHECKOUT_MARK in result["text"], (result, context)
    assert EDIT_NOTICE in result["text"], (result, context)
    [message] = messages(todoweb, token, key)
    assert (message["state"], message["told_via"]) == ("told", told_via), message


def messages(todoweb: Deployment, token: str, key: str) -> list[dict[str, Any]]:
    with todoweb.api(token) as api:
        return api.get(f"/api/v1/sessions/{key}/messages").raise_for_status().json()["messages"]
