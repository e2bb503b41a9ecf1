"""GET /api/v1/search: sessions whose title, key or current steps say every word asked,
in any order and any case (Chinese too), each with the steps that say one."""

from __future__ import annotations

from typing import Any

import pytest


def search(api, query: str) -> Any:
    return api.client.get(f"/api/v1/search{query}", headers=api.headers)


@pytest.fixture
def sessions(api, other_api):
    plans = {
        "deploy-1": [("Run the database migration", "pending"), ("Deploy 部署 to staging", "in_progress")],
        "docs-2": [("Write the MIGRATION guide", "completed")],
        "other-3": [("Fix the login page", "pending")],
    }
    for key, steps in plans.items():
        todos = [{"content": content, "status": status, "activeForm": content} for content, status in steps]
        assert api.call(key, "TodoWrite", {"todos": todos}).status_code == 200
    theirs = [{"content": "Secret migration", "status": "pending", "activeForm": "x"}]
    assert other_api.call("theirs", "TodoWrite", {"todos": theirs}).status_code == 200


def keys(answer) -> list[str]:
    return [result["session"]["key"] for result in answer.json()["results"]]


def test_it_finds_sessions_by_a_word_only_a_step_holds(api, sessions):
    answer = search(api, "?q=migration")
    assert answer.status_code == 200
    assert keys(answer) == ["docs-2", "deploy-1"]  # latest activity first; not the other project's
    deploy = answer.json()["results"][1]
    assert [step["content"] for step in deploy["steps"]] == ["Run the database migration"]
    assert deploy["session"]["state"] == "active" and answer.json()["next"] is None


def test_every_word_must_be_said_somewhere_in_any_order(api, sessions):
    assert keys(search(api, "?q=staging%20deploy")) == ["deploy-1"]  # a word of the key and of a step
    assert keys(search(api, "?q=部署")) == ["deploy-1"]
    assert keys(search(api, "?q=migration%20login")) == []
    assert [step["content"] for step in search(api, "?q=DATABASE%20部署").json()["results"][0]["steps"]] == [
        "Run the database migration",
        "Deploy 部署 to staging",
    ]


def test_it_pages_the_sessions(api, sessions):
    first = search(api, "?q=the&limit=2").json()
    assert len(first["results"]) == 2 and first["next"]
    rest = search(api, f"?q=the&limit=2&cursor={first['next']}").json()
    assert [r["session"]["key"] for r in first["results"] + rest["results"]] == ["other-3", "docs-2", "deploy-1"]


@pytest.mark.parametrize("query", ["", "?q=", "?q=%20%20", "?q=%00", "?q=x&limit=0", "?q=x&cursor=nonsense"])
def test_it_refuses_what_it_cannot_search(api, query):
    answer = search(api, query)
    assert answer.status_code == 422, answer.content
