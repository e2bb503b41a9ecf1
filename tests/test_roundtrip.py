"""Round-trip properties: valid native input → canonical → native reply keeps every
item and every status the dialect can express."""

from __future__ import annotations

import itertools
import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

PROPERTY = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

# Text a model writes: any printable character, including HTML, emoji and CJK, no line breaks.
TEXT = (
    st.text(
        alphabet=st.characters(codec="utf-8", categories=("L", "N", "P", "S", "Zs"), exclude_characters="\u3000\xa0"),
        min_size=1,
        max_size=30,
    )
    .map(str.strip)
    .filter(bool)
)


def one_in_progress(statuses: list[str]) -> bool:
    return statuses.count("in_progress") <= 1


KEYS = itertools.count()


def fresh_key() -> str:
    return f"rt-{next(KEYS)}"


def written(api, key: str, tool: str, args: dict) -> dict:
    r = api.call(key, tool, args, query="?reply=native")
    assert r.status_code == 200, r.content
    return r.json()


@PROPERTY
@given(st.lists(st.tuples(TEXT, st.sampled_from(["pending", "in_progress", "completed"]), TEXT), max_size=8))
def test_claude_todowrite_then_todoread_gives_back_the_list(api, rows):
    key = fresh_key()
    todos = [{"content": c, "status": s, "activeForm": a} for c, s, a in rows]
    assert written(api, key, "TodoWrite", {"todos": todos})["output"] == json.dumps(
        {"success": True, "count": len(todos)}, separators=(",", ":")
    )
    assert json.loads(written(api, key, "TodoRead", {})["output"]) == {"todos": todos}


@PROPERTY
@given(st.lists(st.tuples(TEXT, st.sampled_from(["pending", "in_progress", "done"])), max_size=8))
def test_kimi_reads_back_every_title_and_status(api, rows):
    key = fresh_key()
    body = written(api, key, "SetTodoList", {"todos": [{"title": t, "status": s} for t, s in rows]})
    assert body["output"] == "Todo list updated"
    assert body["data"]["display"]["items"] == [{"title": t, "status": s} for t, s in rows]
    read = written(api, key, "SetTodoList", {})["output"]
    expected = "\n".join(["Current todo list:", *(f"- [{s}] {t}" for t, s in rows)]) if rows else "Todo list is empty."
    assert read == expected


@PROPERTY
@given(st.lists(st.tuples(TEXT, st.sampled_from(["pending", "in_progress", "completed"])), max_size=8))
def test_codex_keeps_every_step_and_status(api, rows):
    body = written(api, fresh_key(), "update_plan", {"plan": [{"step": t, "status": s} for t, s in rows]})
    assert body["output"] == "Plan updated"
    assert [(t["content"], t["status"]) for t in body["data"]["todos"]] == rows


@PROPERTY
@given(
    st.lists(
        st.tuples(TEXT, st.sampled_from(["pending", "in_progress", "completed", "cancelled", "blocked"])), max_size=8
    ).filter(lambda rows: one_in_progress([s for _, s in rows]))
)
def test_gemini_lists_every_todo_in_its_answer(api, rows):
    body = written(api, fresh_key(), "write_todos", {"todos": [{"description": d, "status": s} for d, s in rows]})
    if rows:
        lines = [f"{n}. [{s}] {d}" for n, (d, s) in enumerate(rows, start=1)]
        assert body["output"] == "Successfully updated the todo list. The current list is now:\n" + "\n".join(lines)
    else:
        assert body["output"] == "Successfully cleared the todo list."
    assert [(t["content"], t["status"]) for t in body["data"]["todos"]] == rows


@PROPERTY
@given(
    st.lists(st.tuples(TEXT, st.sampled_from(["pending", "in_progress", "completed"])), max_size=20).filter(
        lambda rows: one_in_progress([s for _, s in rows])
    )
)
def test_learn_renders_every_item(api, rows):
    items = [{"id": str(n), "text": t, "status": s} for n, (t, s) in enumerate(rows, start=1)]
    body = written(api, fresh_key(), "todo", {"items": items})
    markers = {"pending": "[ ]", "in_progress": "[>]", "completed": "[x]"}
    if rows:
        done = sum(s == "completed" for _, s in rows)
        lines = [f"{markers[s]} #{n}: {t}" for n, (t, s) in enumerate(rows, start=1)]
        assert body["output"] == "\n".join(lines) + f"\n\n({done}/{len(rows)} completed)"
    else:
        assert body["output"] == "No todos."
    assert [(t["id"], t["content"], t["status"]) for t in body["data"]["todos"]] == [
        (i["id"], i["text"], i["status"]) for i in items
    ]


WEKNORA = {"pending": "pending", "in_progress": "in_progress", "completed": "completed", "skipped": "cancelled"}


@PROPERTY
@given(st.lists(st.tuples(TEXT, st.sampled_from(sorted(WEKNORA))), min_size=1, max_size=7))
def test_weknora_shows_every_step_with_its_status(api, rows):
    steps = [{"id": f"step{n}", "description": d, "status": s} for n, (d, s) in enumerate(rows, start=1)]
    body = written(api, fresh_key(), "todo_write", {"task": "research", "steps": steps})
    for n, (description, status) in enumerate(rows, start=1):
        assert f"  {n}. " in body["output"] and f"[{status}] {description}" in body["output"]
    assert [(t["content"], t["status"]) for t in body["data"]["todos"]] == [(d, WEKNORA[s]) for d, s in rows]
    assert body["data"]["total_steps"] == len(rows)


@PROPERTY
@given(st.lists(st.tuples(TEXT, st.sampled_from([None, "running", "completed", "failed"])), min_size=1, max_size=8))
def test_manager_creates_and_updates_every_step(api, rows):
    key = fresh_key()
    written(api, key, "create_todos", {"items": [d for d, _ in rows]})
    for n, (_, status) in enumerate(rows, start=1):
        if status:
            written(api, key, "update_todo", {"id": str(n), "status": status})
    canonical = {None: "pending", "running": "in_progress", "completed": "completed", "failed": "failed"}
    todos = api.get(f"/api/v1/sessions/{key}").json()["todos"]
    assert [(t["id"], t["content"], t["status"]) for t in todos] == [
        (str(n), d, canonical[s]) for n, (d, s) in enumerate(rows, start=1)
    ]


@PROPERTY
@given(st.lists(st.tuples(TEXT, st.sampled_from(["pending", "in_progress", "completed"])), min_size=1, max_size=6))
def test_claude_tasks_list_every_task_with_its_status(api, rows):
    key = fresh_key()
    for subject, status in rows:
        created = written(api, key, "TaskCreate", {"subject": subject, "description": "d"})
        task_id = created["data"]["todos"][-1]["id"]
        if status != "pending":
            written(api, key, "TaskUpdate", {"taskId": task_id, "status": status})
    listing = written(api, key, "TaskList", {})["output"]
    for n, (subject, status) in enumerate(rows, start=1):
        assert f"#{n} [{status}] {subject}" in listing
