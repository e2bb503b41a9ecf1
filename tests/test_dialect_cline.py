"""Cline's focus chain, `task_progress` through the real URL."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from tests.conftest import assert_refused
from todoweb.dialects import cline

# The example in Cline's "UPDATING TASK PROGRESS" prompt section.
EXAMPLE = "- [x] Set up project structure\n- [x] Install dependencies\n- [ ] Create components\n- [ ] Test application"


def steps(body: dict[str, Any]) -> list[tuple[str, str]]:
    return [(t["content"], t["status"]) for t in body["data"]["todos"]]


def test_it_writes_the_checklist_and_adds_no_reply_of_its_own(api):
    body = api.ok("cl", "task_progress", {"task_progress": EXAMPLE})
    assert body["dialect"] == "cline"
    assert body["output"] == ""
    assert body["reply"] == {"tool_use_id": None, "content": "", "is_error": False}
    assert steps(body) == [
        ("Set up project structure", "completed"),
        ("Install dependencies", "completed"),
        ("Create components", "pending"),
        ("Test application", "pending"),
    ]
    assert body["data"]["task_progress"] == EXAMPLE
    assert api.revision("cl") == 1


def test_it_stores_the_trimmed_text_and_reads_items_as_cline_counts_them(api):
    text = "\n\n  # Progress\n- [X] done\n   - [ ] indented\n-  [ ] two spaces\n* [ ] star\n- [ ]no space\n- [~] tilde\n- [ ]\n  \t"
    body = api.ok("cl", "task_progress", {"task_progress": text})
    assert body["data"]["task_progress"] == text.strip()
    # Lines that, trimmed, start with "- [ ]", "- [x]" or "- [X]"; the rest of the line, trimmed.
    assert steps(body) == [("done", "completed"), ("indented", "pending"), ("no space", "pending"), ("", "pending")]


def test_it_replaces_the_list_on_every_write(api):
    api.ok("cl", "task_progress", {"task_progress": EXAMPLE})
    body = api.ok("cl", "task_progress", {"task_progress": EXAMPLE.replace("- [ ] Create", "- [x] Create")})
    assert [s for _, s in steps(body)] == ["completed", "completed", "completed", "pending"]
    assert body["data"]["revision"] == 2


@pytest.mark.parametrize("args", [{}, {"task_progress": ""}, {"task_progress": " \n\t\u3000"}, {"other": 1}, [], 5])
def test_an_empty_or_missing_checklist_changes_nothing(api, args):
    api.ok("cl", "task_progress", {"task_progress": EXAMPLE})
    body = api.ok("cl", "task_progress", args)
    assert body["output"] == ""
    assert len(body["data"]["todos"]) == 4
    assert api.revision("cl") == 1


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (None, "null"),
        (5, "5"),
        (1.0, "1"),
        (True, "true"),
        (["- [ ] a"], '["- [ ] a"]'),
        ({"a": "中"}, '{"a":"中"}'),
    ],
)
def test_a_value_that_is_not_a_string_is_its_json_text(api, value, text):
    # Cline's native tool calls stringify every parameter (JSON.stringify for non-strings):
    # that text has no checklist line, so the list is emptied.
    api.ok("cl", "task_progress", {"task_progress": EXAMPLE})
    body = api.ok("cl", "task_progress", {"task_progress": value})
    assert body["data"]["task_progress"] == text
    assert body["data"]["todos"] == []
    assert body["data"]["warnings"][0]["code"] == "no_checklist_items"
    assert api.revision("cl") == 2


def test_a_text_without_items_empties_the_list(api):
    api.ok("cl", "task_progress", {"task_progress": EXAMPLE})
    body = api.ok("cl", "task_progress", {"task_progress": "All done, nothing left."})
    assert body["output"] == ""
    assert body["data"]["todos"] == []
    assert body["data"]["task_progress"] == "All done, nothing left."


def test_it_keeps_hostile_text_verbatim(api):
    text = '- [ ] 中文 <b>x</b> 🎉 &amp; "q" \\\n- [x] <script>alert(1)</script>'
    body = api.ok("cl", "task_progress", {"task_progress": text})
    assert steps(body) == [('中文 <b>x</b> 🎉 &amp; "q" \\', "pending"), ("<script>alert(1)</script>", "completed")]
    assert body["data"]["task_progress"] == text


def test_it_takes_the_chat_completions_form(api):
    response = api.chat("cl", "task_progress", '{"task_progress": "- [x] a\\n- [ ] b"}', query="?reply=native")
    body = response.json()
    assert response.status_code == 200, body
    assert body["reply"] == {"role": "tool", "tool_call_id": "call_1", "content": ""}
    assert steps(body) == [("a", "completed"), ("b", "pending")]


def test_it_reads_chat_arguments_without_a_checklist_as_no_change(api):
    api.ok("cl", "task_progress", {"task_progress": EXAMPLE})
    for text in ("", "[]", "5", "null", '{"task_progress": ""}'):
        response = api.chat("cl", "task_progress", text, call_id=None, query="?reply=native")
        assert response.status_code == 200, response.content
        assert response.json()["output"] == ""
    assert api.revision("cl") == 1
    response = api.chat("cl", "task_progress", '{"task_progress": [}', call_id=None)
    body = assert_refused(response, status=400, code="invalid_json")
    assert body["error"]["message"].startswith("The arguments are not valid JSON: Expecting value")
    assert api.revision("cl") == 1


def test_a_first_call_without_a_checklist_writes_nothing(api):
    body = api.ok("cl", "task_progress", {})
    assert body["output"] == ""
    assert body["data"]["todos"] == []
    assert body["data"]["revision"] == 0


def test_it_gives_the_model_clines_parameter_as_a_tool():
    (definition,) = cline.definitions()
    assert definition.name == "task_progress"
    assert "UPDATING TASK PROGRESS" in definition.description
    assert '"- [ ]" for incomplete items and "- [x]" for completed items' in definition.description
    schema = definition.input_schema
    jsonschema.Draft7Validator.check_schema(schema)
    validator = jsonschema.Draft7Validator(schema)
    assert validator.is_valid({"task_progress": EXAMPLE})
    assert not validator.is_valid({"task_progress": ["- [ ] a"]})
    assert not validator.is_valid({})
