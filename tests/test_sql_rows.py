"""The write path's own model instances (todoweb.store.sql) are what Django makes."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from todoweb.models import Project, Revision, Session
from todoweb.store import sql

MOMENT = datetime(2026, 11, 28, 9, 30, tzinfo=UTC)


def fields_of(instance: object) -> dict:
    return {name: value for name, value in vars(instance).items() if name != "_state"}


@pytest.mark.parametrize(
    "values",
    [
        {
            "number": 4,
            "tool": "TodoWrite",
            "dialect": "claude",
            "todos": [{"content": "修复 <b>"}],
            "created_at": MOMENT,
        },
        {"number": 1, "tool": "update_plan", "dialect": "codex", "created_at": MOMENT, "response": None, "title": ""},
    ],
)
def test_a_new_instance_is_what_the_model_makes(values):
    session = Session(pk=7, project=Project(pk=3, slug="shop"), key="abc")
    ours, django = sql.new_instance(Revision, session=session, **values), Revision(session=session, **values)
    assert fields_of(ours) == fields_of(django)
    assert ours.session is session and ours.session_id == 7
    assert (ours._state.adding, ours._state.db) == (django._state.adding, django._state.db) == (True, "default")
    assert ours.todos is not sql.new_instance(Revision, session=session, number=1).todos  # a fresh default list


def test_a_new_instance_refuses_a_field_the_model_has_not():
    with pytest.raises(TypeError, match="no field colour"):
        sql.new_instance(Revision, number=1, colour="red")
