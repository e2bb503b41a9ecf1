"""POST /api/v1/sessions/{key}/edits: a person changes the plan, the agent is told."""

from __future__ import annotations

import json

import pytest

from todoweb.models import Revision

PLAN = [
    {"content": "Read the issue", "status": "completed", "activeForm": "Reading the issue"},
    {"content": "Write the fix", "status": "in_progress", "activeForm": "Writing the fix"},
    {"content": "Run the tests", "status": "pending", "activeForm": "Running the tests"},
]


def edit(api, key, todos, *, if_match, note=None, **headers):
    body = {"todos": todos} | ({"note": note} if note else {})
    return api.post(f"/api/v1/sessions/{key}/edits", body, headers={"If-Match": str(if_match)} | headers)


def edited(api, key="s1", *, note=None):
    """The agent wrote PLAN; a person rewords step 2, checks off step 3 and adds a step."""
    api.call(key, "TodoWrite", {"todos": PLAN})
    steps = api.get(f"/api/v1/sessions/{key}").json()["todos"]
    todos = [
        {"id": steps[0]["id"], "content": "Read the issue", "status": "completed"},
        {"id": steps[1]["id"], "content": "Write the fix with a regression test", "status": "in_progress"},
        {"id": steps[2]["id"], "content": "Run the tests", "status": "cancelled"},
        {"content": "Ask for review", "status": "pending"},
    ]
    response = edit(api, key, todos, if_match='"1"', note=note)
    assert response.status_code == 200, response.content
    assert response["ETag"] == '"2"'
    return response.json()


def test_an_edit_is_a_revision_by_the_user_sent_like_any_other(api):
    data = edited(api)
    assert data["revision"] == 2 and data["author"] == "user"
    assert [t["content"] for t in data["todos"]] == [
        "Read the issue",
        "Write the fix with a regression test",
        "Run the tests",
        "Ask for review",
    ]
    assert [t["status"] for t in data["todos"]] == ["completed", "in_progress", "cancelled", "pending"]
    # The reworded step keeps its identity (and its start time); the new one gets an id.
    assert data["todos"][1]["id"] == "2" and data["todos"][1]["started_at"] is not None
    assert data["todos"][3]["id"] == "4"
    assert api.get("/api/v1/sessions/s1").json()["author"] == "user"
    history = api.get("/api/v1/sessions/s1/revisions").json()["revisions"]
    assert [r["author"] for r in history] == ["agent", "user"]
    assert history[1]["written"]["tool"] == "edit"


def test_the_agents_next_call_is_answered_with_the_changes_first_then_not_again(api):
    edited(api, note="Keep the fix small")
    todos = [dict(t) for t in PLAN]
    todos[1]["content"] = "Write the fix with a regression test"
    del todos[2]  # TodoWrite has no "cancelled": the agent takes the step out
    todos.append({"content": "Ask for review", "status": "in_progress", "activeForm": "Asking"})
    todos[1]["status"] = "completed"
    first = api.call("s1", "TodoWrite", {"todos": todos}).json()
    text = first["reply"]["content"]
    assert text.startswith("The user changed the plan:\n")
    assert '- reworded "Write the fix" to "Write the fix with a regression test"' in text
    assert '- marked "Run the tests" cancelled (was pending)' in text
    assert '- added "Ask for review" (pending)' in text
    assert "The user's note: Keep the fix small" in text
    assert first["data"]["warnings"] == []  # it kept every change
    again = api.call("s1", "TodoWrite", {"todos": todos}).json()
    assert "The user changed the plan" not in again["reply"]["content"]


ENVELOPES = {
    "anthropic": lambda args: {"type": "tool_use", "id": "toolu_9", "name": "TodoWrite", "input": args},
    "chat": lambda args: {
        "id": "call_9",
        "type": "function",
        "function": {"name": "TodoWrite", "arguments": json.dumps(args)},
    },
    "responses": lambda args: {
        "type": "function_call",
        "call_id": "call_9",
        "name": "TodoWrite",
        "arguments": json.dumps(args),
    },
    "plain": lambda args: {"tool": "TodoWrite", "id": "c9", "input": args},
}


@pytest.mark.parametrize("form", ENVELOPES)
def test_each_envelope_carries_the_notice_in_its_reply(api, form):
    edited(api)
    reply = api.tool("s1", ENVELOPES[form]({"todos": PLAN})).json()["reply"]
    text = reply.get("content", reply.get("output"))
    assert text.startswith("The user changed the plan:\n- reworded")


def test_roo_is_told_in_roos_own_words(api):
    api.ok("r1", "update_todo_list", {"todos": "[x] Read the issue\n[-] Write the fix\n[ ] Run the tests"})
    steps = api.get("/api/v1/sessions/r1").json()["todos"]
    todos = [
        {"id": steps[0]["id"], "content": "Read the issue", "status": "completed"},
        {"id": steps[1]["id"], "content": "Write the fix", "status": "completed"},
        {"id": steps[2]["id"], "content": "Run the tests", "status": "in_progress"},
        {"content": "Drop the old flag", "status": "cancelled"},
    ]
    assert edit(api, "r1", todos, if_match=1).status_code == 200
    answer = api.ok("r1", "update_todo_list", {"todos": "[x] Read the issue\n[x] Write the fix\n[-] Run the tests"})
    # The person's changes in Roo's words, then the plan as merged with them.
    assert answer["reply"]["content"].startswith(
        "User edits todo:\n\n[x] Read the issue\n[x] Write the fix\n[-] Run the tests\n\n"
        "Todo list updated: 2/4 completed (revision 3).\n[x] Read the issue\n[x] Write the fix\n"
        "[>] Run the tests\n[-] Drop the old flag"
    )


def test_a_read_returns_the_edited_list_with_the_notice(api):
    edited(api)
    read = api.call("s1", "TodoRead", {}).json()
    assert read["reply"]["content"].startswith("The user changed the plan:\n")
    assert "Write the fix with a regression test" in read["reply"]["content"]
    assert read["data"]["revision"] == 2
    # Told once: a write after the read has nothing to add.
    write = api.call("s1", "TodoWrite", {"todos": PLAN}).json()
    assert "The user changed the plan" not in write["reply"]["content"]


def test_a_write_made_without_seeing_an_edit_keeps_it(api):
    edited(api)
    stale = api.call("s1", "TodoWrite", {"todos": PLAN}).json()
    assert stale["data"]["revision"] == 3
    assert [t["content"] for t in stale["data"]["todos"]] == [
        t["content"] for t in api.get("/api/v1/sessions/s1/revisions/2").json()["todos"]
    ]
    assert stale["data"]["warnings"] == []
    assert stale["reply"]["content"].startswith("The user changed the plan:\n- reworded")


def test_a_step_the_person_removed_stays_removed(api):
    api.call("s1", "TodoWrite", {"todos": PLAN})
    kept = [{"id": "1", "content": "Read the issue", "status": "completed"}]
    assert edit(api, "s1", kept, if_match=1).status_code == 200
    stale = api.call("s1", "TodoWrite", {"todos": PLAN}).json()
    assert [t["content"] for t in stale["data"]["todos"]] == ["Read the issue"]
    # Having been told, the agent may put a step back.
    again = api.call("s1", "TodoWrite", {"todos": PLAN}).json()
    assert [t["content"] for t in again["data"]["todos"]] == [t["content"] for t in PLAN]


def test_a_step_the_agent_still_calls_by_its_old_text_keeps_its_history(api):
    api.call("s1", "TodoWrite", {"todos": PLAN})
    steps = api.get("/api/v1/sessions/s1").json()["todos"]
    reworded = [
        dict(step, content="Port the whole parser to the new grammar") if step["id"] == "2" else step for step in steps
    ]
    todos = [{k: step[k] for k in ("id", "content", "status")} for step in reworded]
    assert edit(api, "s1", todos, if_match=1).status_code == 200
    stale = api.call("s1", "TodoWrite", {"todos": PLAN}).json()["data"]
    # The agent's "Write the fix" is the step the person reworded: same id, same start, not dropped.
    assert [t["id"] for t in stale["todos"]] == ["1", "2", "3"]
    assert stale["todos"][1]["content"] == "Port the whole parser to the new grammar"
    assert stale["todos"][1]["started_at"] == steps[1]["started_at"]
    assert stale["dropped"] == []


def test_a_stale_edit_is_refused_with_the_current_plan_and_changes_nothing(api):
    api.call("s1", "TodoWrite", {"todos": PLAN})
    api.call("s1", "TodoWrite", {"todos": PLAN[:2]})
    response = edit(api, "s1", [{"content": "Mine", "status": "pending"}], if_match=1)
    assert response.status_code == 409
    body = response.json()
    assert body["error"]["code"] == "revision_conflict"
    assert body["error"]["details"] == {"expected": 1, "current": 2}
    assert body["data"]["revision"] == 2 and len(body["data"]["todos"]) == 2
    assert api.revision("s1") == 2


@pytest.mark.parametrize(
    ("headers", "status", "code"),
    [
        ({}, 428, "precondition_required"),
        ({"If-Match": "latest"}, 400, "invalid_if_match"),
        ({"If-Match": '"1", "2"'}, 400, "invalid_if_match"),
        ({"If-Match": "99999999999999999999"}, 400, "invalid_if_match"),
    ],
)
def test_it_needs_the_revision_the_edit_was_made_on(api, headers, status, code):
    api.call("s1", "TodoWrite", {"todos": PLAN})
    response = api.post("/api/v1/sessions/s1/edits", {"todos": []}, headers=headers)
    assert response.status_code == status and response.json()["error"]["code"] == code
    assert api.revision("s1") == 1


@pytest.mark.parametrize("if_match", ["1", '"1"', 'W/"1"'])
def test_it_reads_the_revision_bare_or_as_an_etag(api, if_match):
    api.call("s1", "TodoWrite", {"todos": PLAN})
    assert edit(api, "s1", [], if_match=if_match).status_code == 200
    assert api.revision("s1") == 2


@pytest.mark.parametrize(
    "todos",
    [
        [{"content": "", "status": "pending"}],
        [{"content": "x", "status": "done"}],
        [{"content": "x", "status": "pending", "colour": "red"}],
        [{"content": 3, "status": "pending"}],
        "not a list",
        # What the tool endpoint refuses an agent, it refuses a person.
        [{"content": "x", "status": "pending", "blocked_by": [f"{n}" + "b" * 2000 for n in range(100)]}],
        [{"content": "x" * 2001, "status": "pending"}],
        [{"content": "x", "status": "pending"}] * 101,
    ],
)
def test_it_refuses_a_bad_list_and_writes_nothing(api, todos):
    api.call("s1", "TodoWrite", {"todos": PLAN})
    response = api.post("/api/v1/sessions/s1/edits", {"todos": todos}, headers={"If-Match": "1"})
    assert response.status_code == 422, response.content
    assert api.revision("s1") == 1


def test_it_refuses_malformed_json_and_needs_a_write_token(api, project):
    from todoweb.writes.tokens import token_create

    api.call("s1", "TodoWrite", {"todos": PLAN})
    assert api.post("/api/v1/sessions/s1/edits", "{", headers={"If-Match": "1"}).status_code == 400
    reader = type(api)(token_create(project_slug=project.slug, scope="read")[1])
    assert edit(reader, "s1", [], if_match=1).status_code == 403
    assert edit(api, "nobody", [], if_match=0).status_code == 404
    assert api.revision("s1") == 1


def test_hostile_text_is_kept_as_written(api):
    api.call("s1", "TodoWrite", {"todos": PLAN})
    text = "<script>alert(1)</script> 修复 🚀 \u202e"
    data = edit(api, "s1", [{"content": text, "status": "pending"}], if_match=1).json()
    assert data["todos"][0]["content"] == text
    assert Revision.objects.get(number=2).raw_input["todos"][0]["content"] == text


def test_dashboard_summaries_carry_progress_over_time(api):
    for done in range(3):
        todos = [dict(t, status="completed" if i < done else "pending") for i, t in enumerate(PLAN)]
        api.call("s1", "TodoWrite", {"todos": todos})
    trend = api.get("/api/v1/sessions").json()["sessions"][0]["trend"]
    assert [progress for _, progress in trend] == [0.0, 0.3333, 0.6667]
    assert trend[0][0] <= trend[1][0] <= trend[2][0]


def test_progress_over_time_keeps_the_last_points(api):
    from todoweb.writes.revisions import TREND_POINTS

    for n in range(TREND_POINTS + 3):
        api.call("s1", "TodoWrite", {"todos": [{"content": f"step {n}", "status": "pending", "activeForm": "x"}]})
    trend = api.get("/api/v1/sessions").json()["sessions"][0]["trend"]
    assert len(trend) == TREND_POINTS
