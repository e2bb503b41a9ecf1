"""Per-project policy: single_in_progress, max_items, max_content_chars."""

from __future__ import annotations

import pytest

from todoweb.models import Revision


def plan(*statuses: str, content: str = "step") -> dict:
    return {
        "todos": [{"content": f"{content} {i}", "status": s, "activeForm": "doing"} for i, s in enumerate(statuses)]
    }


def test_it_warns_by_default_on_two_steps_in_progress(api):
    r = api.call("s1", "TodoWrite", plan("in_progress", "in_progress"))
    assert r.status_code == 200
    warnings = r.json()["data"]["warnings"]
    assert [w["code"] for w in warnings] == ["multiple_in_progress"]
    assert "2 steps are in progress" in r.json()["output"]
    assert "Warnings:" in r.json()["output"]


def test_it_rejects_when_the_project_says_so(api, project):
    project.single_in_progress = "reject"
    project.save()
    r = api.call("s1", "TodoWrite", plan("in_progress", "pending", "in_progress"))
    assert r.status_code == 422
    assert r.json()["error"]["message"] == "Only one step can be in progress at a time: 2 are (at index 0, 2)"
    assert not Revision.objects.exists()


def test_it_stays_quiet_when_off(api, project):
    project.single_in_progress = "off"
    project.save()
    r = api.call("s1", "TodoWrite", plan("in_progress", "in_progress"))
    assert r.json()["data"]["warnings"] == []


def test_it_caps_the_number_of_items(api, project):
    project.max_items = 3
    project.save()
    assert api.call("s1", "TodoWrite", plan(*["pending"] * 3)).status_code == 200
    r = api.call("s1", "TodoWrite", plan(*["pending"] * 4))
    assert r.status_code == 422
    assert r.json()["error"]["message"] == (
        "Too many items: 4. This project allows at most 3 (its max_items policy, set in the admin; at most 500)"
    )
    assert Revision.objects.count() == 1


def test_it_never_goes_past_the_hard_cap(api, project, settings):
    project.max_items = 10_000
    project.save()
    settings.TODOWEB_MAX_BODY_BYTES = 10_000_000
    r = api.call("s1", "TodoWrite", plan(*["pending"] * 501))
    assert r.status_code == 422
    assert "at most 500" in r.json()["error"]["message"]


@pytest.mark.parametrize("field", ["content", "activeForm"])
def test_it_caps_the_length_of_text(api, project, field):
    project.max_content_chars = 10
    project.save()
    todo = {"content": "short", "status": "pending", "activeForm": "short"} | {field: "x" * 11}
    r = api.call("s1", "TodoWrite", {"todos": [todo]})
    assert r.status_code == 422
    assert "at most 10" in r.json()["error"]["message"]
    assert r.json()["error"]["details"]["index"] == 0


def test_it_lists_dropped_steps_in_the_reply_and_the_data(api):
    api.call("s1", "TodoWrite", plan("in_progress", "pending"))
    r = api.call("s1", "TodoWrite", plan("in_progress"))
    assert "Dropped while unfinished" in r.json()["output"]
    assert "[ ] step 1" in r.json()["output"]
    assert [d["content"] for d in r.json()["data"]["dropped"]] == ["step 1"]
