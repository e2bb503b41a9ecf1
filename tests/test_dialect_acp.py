"""The Agent Client Protocol's plan (`acp_plan`, what `todoweb-acp` posts) through the real URL."""

from __future__ import annotations

import pytest

from tests.conftest import assert_refused
from todoweb import dialects
from todoweb.dialects import acp

# The protocol documentation's example of a plan update.
PLAN = {
    "sessionUpdate": "plan",
    "entries": [
        {"content": "Analyze the existing codebase structure", "priority": "high", "status": "completed"},
        {"content": "Identify components that need refactoring", "priority": "high", "status": "in_progress"},
        {"content": "Create unit tests for critical functions", "priority": "medium", "status": "pending"},
        {"content": "Update the documentation", "priority": "low", "status": "pending", "_meta": {"x": 1}},
    ],
}


def test_it_records_a_plan_with_its_priorities(api):
    response = api.call("sess_1", "acp_plan", PLAN)
    body = response.json()
    assert response.status_code == 200, body
    assert body["dialect"] == "acp"
    assert [(t["content"], t["status"], t["priority"]) for t in body["data"]["todos"]] == [
        (entry["content"], entry["status"], entry["priority"]) for entry in PLAN["entries"]
    ]
    assert body["output"].startswith("Todo list updated: 1/4 completed (revision 1).")  # the checklist
    assert api.revision("sess_1") == 1


def test_it_takes_the_entries_alone_and_answers_a_fixed_native_line(api):
    response = api.native("sess_1", "acp_plan", {"entries": PLAN["entries"][:1]})
    assert response.status_code == 200, response.json()
    assert response.json()["output"] == acp.RECORDED


def test_it_replaces_the_whole_list_and_an_empty_list_clears_it(api):
    api.call("sess_1", "acp_plan", PLAN)
    response = api.call("sess_1", "acp_plan", {"entries": []})
    assert response.status_code == 200, response.json()
    assert response.json()["data"]["todos"] == []
    assert api.revision("sess_1") == 2


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (
            {"content": "a", "priority": "high", "status": "done"},
            "Entry 1: status must be one of pending, in_progress, completed ('done')",
        ),
        (
            {"content": "a", "priority": "urgent", "status": "pending"},
            "Entry 1: priority must be one of high, medium, low ('urgent')",
        ),
        ({"content": "a", "status": "pending"}, "Entry 1: priority must be one of high, medium, low (missing)"),
        (
            {"content": "a", "priority": 1, "status": "pending"},
            "Entry 1: priority must be one of high, medium, low (number)",
        ),
        ({"content": 5, "priority": "low", "status": "pending"}, "Entry 1: content must be a string (number)"),
        ({"priority": "low", "status": "pending"}, "Entry 1: content must be a string (missing)"),
        ("a step", "Entry 1: must be an object, not string"),
    ],
)
def test_it_refuses_a_bad_entry_with_one_message_and_writes_nothing(api, entry, message):
    ok = {"content": "ok", "priority": "low", "status": "pending"}
    body = assert_refused(api.call("sess_1", "acp_plan", {"entries": [ok, entry]}), message)
    assert body["error"]["details"]["index"] == 1
    assert api.revision("sess_1") is None


@pytest.mark.parametrize(
    ("args", "message"),
    [({}, "'entries' array is required"), ({"entries": {"a": 1}}, "'entries' must be an array, not object")],
)
def test_it_refuses_an_input_without_a_list_of_entries(api, args, message):
    assert_refused(api.call("sess_1", "acp_plan", args), message)
    assert api.revision("sess_1") is None


def test_a_persons_edit_comes_before_the_native_line(api):
    """The proxy tells people's edits by an answer that is neither the fixed native line nor
    the checklist alone: the notice comes first (then the plan as merged)."""
    api.call("sess_1", "acp_plan", PLAN)
    todos = [{"content": e["content"], "status": e["status"]} for e in PLAN["entries"]]
    todos[3]["content"] = "Update the documentation and the changelog"
    edit = api.post("/api/v1/sessions/sess_1/edits", {"todos": todos}, headers={"If-Match": "1"})
    assert edit.status_code == 200, edit.json()
    output = api.native("sess_1", "acp_plan", PLAN).json()["output"]
    assert output.startswith('The user changed the plan:\n- added "Update the documentation and the changelog"'), output
    assert "\n\nTodo list updated: 1/4 completed (revision 3)." in output


def test_its_tool_name_is_its_own():
    assert [module.NAME for module in dialects.tool_names()["acp_plan"]] == ["acp"]
