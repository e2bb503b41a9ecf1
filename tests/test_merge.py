"""An agent's write made without seeing a person's edit is merged with it, never
undoes it: every dialect, every case, through the real URL; and the merge's own
rules, step by step."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest

from todoweb import plan
from todoweb.plan.merge import merge
from todoweb.plan.steps import Item

READ, WRITE, RUN = "Read the issue", "Write the fix", "Run the tests"
BASE = [READ, WRITE, RUN]
Rows = list[tuple[str, str]]  # (content, status)


# --- How each dialect writes a whole list, with its own statuses ---------------


def md(done: str, todo: str) -> Callable[[Rows], str]:
    return lambda rows: "\n".join(f"{done if s == 'completed' else todo} {c}" for c, s in rows)


def ids(rows: Rows) -> list[tuple[str, str, str]]:
    return [(str(n), c, s) for n, (c, s) in enumerate(rows, start=1)]


WHOLE_LIST: dict[str, tuple[str, Callable[[Rows], dict[str, Any]]]] = {
    "claude": ("TodoWrite", lambda r: {"todos": [{"content": c, "status": s, "activeForm": c} for c, s in r]}),
    "codex": ("update_plan", lambda r: {"plan": [{"step": c, "status": s} for c, s in r]}),
    "gemini": ("write_todos", lambda r: {"todos": [{"description": c, "status": s} for c, s in r]}),
    "langchain": ("write_todos", lambda r: {"todos": [{"content": c, "status": s} for c, s in r]}),
    "kimi": (
        "SetTodoList",
        lambda r: {"todos": [{"title": c, "status": "done" if s == "completed" else s} for c, s in r]},
    ),
    "crush": ("todos", lambda r: {"todos": [{"content": c, "status": s, "active_form": c} for c, s in r]}),
    "opencode": ("todowrite", lambda r: {"todos": [{"content": c, "status": s, "priority": "medium"} for c, s in r]}),
    "amp": (
        "todo_write",
        lambda r: {
            "todos": [
                {"id": i, "content": c, "status": "todo" if s == "pending" else s, "priority": "medium"}
                for i, c, s in ids(r)
            ]
        },
    ),
    "qwen": ("todo_write", lambda r: {"todos": [{"id": i, "content": c, "status": s} for i, c, s in ids(r)]}),
    "copilot": (
        "manage_todo_list",
        lambda r: {
            "operation": "write",
            "todoList": [
                {"id": int(i), "title": c, "description": "", "status": "not-started" if s == "pending" else s}
                for i, c, s in ids(r)
            ],
        },
    ),
    "learn": ("todo", lambda r: {"items": [{"id": i, "text": c, "status": s} for i, c, s in ids(r)]}),
    "weknora": (
        "todo_write",
        lambda r: {"task": "fix", "steps": [{"id": i, "description": c, "status": s} for i, c, s in ids(r)]},
    ),
    "openhands": (
        "task_tracker",
        lambda r: {
            "command": "plan",
            "task_list": [{"title": c, "status": {"pending": "todo", "completed": "done"}[s]} for c, s in r],
        },
    ),
    "cursor": (
        "todo_write",
        lambda r: {"merge": False, "todos": [{"id": i, "content": c, "status": s} for i, c, s in ids(r)]},
    ),
    "roo": ("update_todo_list", lambda r: {"todos": md("[x]", "[ ]")(r)}),
    "goose": ("todo_write", lambda r: {"content": md("- [x]", "- [ ]")(r)}),
    "cline": ("task_progress", lambda r: {"task_progress": md("- [x]", "- [ ]")(r)}),
}


# --- Incremental tools: the list is built by calls, and a call completes one step --


def tasks_create(api, key: str) -> None:
    for subject in BASE:
        api.ok(key, "TaskCreate", {"subject": subject, "description": subject})


def manager_create(api, key: str) -> None:
    api.ok(key, "create_todos", {"items": BASE})


def cursor_create(api, key: str) -> None:
    api.ok(
        key,
        "todo_write",
        {"merge": True, "todos": [{"id": i, "content": c, "status": s} for i, c, s in ids(pending())]},
    )


INCREMENTAL: dict[str, tuple[Callable, Callable[[str], tuple[str, dict[str, Any]]]]] = {
    "claude-tasks": (tasks_create, lambda i: ("TaskUpdate", {"taskId": i, "status": "completed"})),
    "manager": (manager_create, lambda i: ("update_todo", {"id": i, "status": "completed"})),
    "cursor-merge": (
        cursor_create,
        lambda i: ("todo_write", {"merge": True, "todos": [{"id": i, "status": "completed"}]}),
    ),
}


def pending() -> Rows:
    return [(content, "pending") for content in BASE]


# --- The cases: the person's edit of the base plan, what the agent completes, and what stays


@dataclass(frozen=True)
class Case:
    edit: Callable[[list[dict[str, Any]]], list[dict[str, Any]]]  # the base steps -> the person's list
    completes: str | None  # the step the agent marks completed (None: it sends the base list again)
    expected: Rows


def step(steps, text: str, **changes) -> dict[str, Any]:
    found = next(s for s in steps if s["content"] == text)
    return {"id": found["id"], "content": found["content"], "status": found["status"]} | changes


CASES = {
    "agent only": Case(
        lambda s: [step(s, READ), step(s, WRITE), step(s, RUN, content="Run the whole test suite")],
        READ,
        [(READ, "completed"), (WRITE, "pending"), ("Run the whole test suite", "pending")],
    ),
    "person only": Case(
        lambda s: [step(s, READ, status="completed"), step(s, WRITE), step(s, RUN)],
        None,
        [(READ, "completed"), (WRITE, "pending"), (RUN, "pending")],
    ),
    "both": Case(
        lambda s: [step(s, READ), step(s, WRITE, status="in_progress"), step(s, RUN)],
        WRITE,
        [(READ, "pending"), (WRITE, "completed"), (RUN, "pending")],
    ),
    "added": Case(
        lambda s: [step(s, READ), step(s, WRITE), step(s, RUN), {"content": "Update the changelog"}],
        READ,
        [(READ, "completed"), (WRITE, "pending"), (RUN, "pending"), ("Update the changelog", "pending")],
    ),
    "removed": Case(
        lambda s: [step(s, READ), step(s, WRITE)],
        WRITE,
        [(READ, "pending"), (WRITE, "completed")],
    ),
    "reordered": Case(
        lambda s: [step(s, RUN), step(s, READ), step(s, WRITE)],
        READ,
        [(RUN, "pending"), (READ, "completed"), (WRITE, "pending")],
    ),
    "reworded and progressed": Case(
        lambda s: [step(s, READ), step(s, WRITE, content="Write the fix with a regression test"), step(s, RUN)],
        WRITE,
        [(READ, "pending"), ("Write the fix with a regression test", "completed"), (RUN, "pending")],
    ),
}


def edit_plan(api, key: str, case: Case) -> None:
    data = api.get(f"/api/v1/sessions/{key}").json()
    answer = api.post(
        f"/api/v1/sessions/{key}/edits",
        {"todos": case.edit(data["todos"])},
        headers={"If-Match": str(data["revision"])},
    )
    assert answer.status_code == 200, answer.content


def plan_of(api, key: str) -> Rows:
    return [(t["content"], t["status"]) for t in api.get(f"/api/v1/sessions/{key}").json()["todos"]]


@pytest.mark.parametrize("case_name", CASES)
@pytest.mark.parametrize("dialect", WHOLE_LIST)
def test_a_whole_list_written_without_seeing_an_edit_keeps_it(api, dialect, case_name):
    tool, args = WHOLE_LIST[dialect]
    case, key = CASES[case_name], f"{dialect}-{case_name.replace(' ', '-')}"
    api.ok(key, tool, args(pending()))
    edit_plan(api, key, case)
    stale = [(c, "completed" if c == case.completes else s) for c, s in pending()]
    answer = api.call(key, tool, args(stale), query=f"?dialect={dialect}&reply=native")
    assert answer.status_code == 200, answer.content
    assert plan_of(api, key) == case.expected
    reply = answer.json()["reply"]["content"]
    told = "User edits todo:" if dialect == "roo" else "The user changed the plan:"
    assert reply.startswith(told), reply
    # Then the plan as merged, whatever the tool itself would answer.
    done = sum(status == "completed" for _, status in case.expected)
    assert f"Todo list updated: {done}/{len(case.expected)} completed" in reply


@pytest.mark.parametrize("case_name", [name for name in CASES if CASES[name].completes])
@pytest.mark.parametrize("family", INCREMENTAL)
def test_an_incremental_tool_changes_the_edited_list(api, family, case_name):
    create, complete = INCREMENTAL[family]
    case, key = CASES[case_name], f"{family}-{case_name.replace(' ', '-')}"
    create(api, key)
    edit_plan(api, key, case)
    (target,) = [
        s["id"] for s in api.get(f"/api/v1/sessions/{key}").json()["todos"] if s["content"].startswith(case.completes)
    ]
    tool, args = complete(target)
    answer = api.call(key, tool, args)
    assert answer.status_code == 200, answer.content
    assert plan_of(api, key) == case.expected
    assert answer.json()["reply"]["content"].startswith("The user changed the plan:")


def test_the_merged_revision_is_the_agents_and_tells_the_person_their_edit_was_kept(api):
    api.call("m1", "TodoWrite", {"todos": [{"content": c, "status": "pending", "activeForm": c} for c in BASE]})
    edit_plan(api, "m1", CASES["reworded and progressed"])
    api.call("m1", "TodoWrite", {"todos": [{"content": c, "status": "pending", "activeForm": c} for c in BASE]})
    data = api.get("/api/v1/sessions/m1").json()
    assert (data["revision"], data["author"]) == (3, "agent")
    assert data["warnings"] == []  # nothing for the model to undo or fix
    (message,) = api.get("/api/v1/sessions/m1/messages").json()["messages"]
    assert (message["kind"], message["revision"], message["state"], message["kept_in"]) == ("edit", 2, "kept", 3)
    assert message["told_via"] == "tool endpoint"


# --- The merge itself --------------------------------------------------------------

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def steps(*rows: tuple[str, str]) -> list[dict[str, Any]]:
    return plan.reconcile([], [], [Item(content=c, status=s) for c, s in rows], now=T0, next_number=1, revision=1).todos


def merged(base, theirs, ours: Rows) -> Rows:
    return [(i.content, i.status) for i in merge(base, theirs, [Item(content=c, status=s) for c, s in ours])]


@pytest.mark.parametrize(
    ("person", "agent", "expected"),
    [
        ("in_progress", "completed", "completed"),  # further along
        ("completed", "in_progress", "completed"),
        ("cancelled", "in_progress", "cancelled"),  # the person stopped it
        ("failed", "pending", "failed"),
        ("blocked", "in_progress", "blocked"),
        ("in_progress", "failed", "failed"),
    ],
)
def test_a_status_both_changed_is_the_one_further_along(person, agent, expected):
    base = steps((WRITE, "pending"))
    theirs = [dict(base[0], status=person)]
    assert merged(base, theirs, [(WRITE, agent)]) == [(WRITE, expected)]


def test_a_step_the_agent_dropped_stays_if_the_person_changed_it():
    base = steps((READ, "pending"), (WRITE, "pending"))
    theirs = [base[0], dict(base[1], content="Write the fix first")]
    assert merged(base, theirs, [(READ, "completed")]) == [(READ, "completed"), ("Write the fix first", "pending")]
    # Unchanged by the person, it goes as the agent wants.
    assert merged(base, [base[0], base[1]], [(READ, "completed")]) == [(READ, "completed")]


def test_a_step_both_added_is_kept_once_and_new_steps_follow_their_neighbour():
    base = steps((READ, "pending"), (RUN, "pending"))
    theirs = [*base, dict(base[1], id="9", content="Ship it")]
    ours = [(READ, "pending"), ("Write the fix", "pending"), (RUN, "pending"), ("Ship it", "pending")]
    assert merged(base, theirs, ours) == [
        (READ, "pending"),
        (WRITE, "pending"),
        (RUN, "pending"),
        ("Ship it", "pending"),
    ]
