"""Goose's todo_write / todo__todo_write through the real URL."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from tests.conftest import assert_refused
from todoweb.dialects import goose, weknora

# The template in the extension's instructions to the model.
TEMPLATE = "- [x] Requirement 1\n- [ ] Task\n  - [ ] Sub-task\n- [ ] Requirement 2\n- [ ] Another task"
TOOL = "todo__todo_write"
FORCED = "?dialect=goose&reply=native"


def steps(body: dict[str, Any]) -> list[tuple[str, str]]:
    return [(t["content"], t["status"]) for t in body["data"]["todos"]]


def test_it_overwrites_the_text_and_answers_with_its_length(api):
    body = api.ok("gs", TOOL, {"content": TEMPLATE})
    assert body["dialect"] == "goose"
    assert body["output"] == f"Updated ({len(TEMPLATE)} chars)" == "Updated (86 chars)"
    assert steps(body) == [
        ("Requirement 1", "completed"),
        ("Task", "pending"),
        ("Sub-task", "pending"),
        ("Requirement 2", "pending"),
        ("Another task", "pending"),
    ]
    assert api.revision("gs") == 1


def test_it_counts_unicode_characters_not_bytes(api):
    assert api.ok("gs", TOOL, {"content": "- [ ] 中文 🎉"})["output"] == "Updated (10 chars)"


def test_it_answers_todo_write_calls_whose_content_is_a_string(api):
    if weknora.fits("todo_write", {"content": TEMPLATE}):
        pytest.skip("weknora.fits still claims {content} calls (the shared routing change is pending)")
    body = api.ok("gs", "todo_write", {"content": TEMPLATE})
    assert body["dialect"] == "goose"
    assert body["output"] == "Updated (86 chars)"


def test_a_forced_dialect_takes_todo_write(api):
    response = api.call("gs", "todo_write", {"content": TEMPLATE}, query=FORCED)
    assert response.json()["output"] == "Updated (86 chars)"
    response = api.call("gs", "todo_write", {"content": 5}, query=FORCED)
    assert_refused(response, "Error: Missing required parameter: content")


def test_it_keeps_the_other_text_as_the_notes_of_the_step_above_it(api):
    content = (
        "# Fix the parser\n\nContext above every step.\n\n"
        "- [x] Read the failing test\n  It fails on empty input.\n  See tests/test_parse.py\n\n"
        "* [ ] Fix the parser\n"
        "1. [X] numbered\n2) [ ] also numbered\n+ [ ] plus\n"
        "- [-] not a step marker Goose knows\n- [~] nor this\n- [ ]\n[ ] no list marker\n\n"
        "## Notes\nRemember the changelog."
    )
    body = api.ok("gs", TOOL, {"content": content})
    assert steps(body) == [
        ("Read the failing test", "completed"),
        ("Fix the parser", "pending"),
        ("numbered", "completed"),
        ("also numbered", "pending"),
        ("plus", "pending"),
    ]
    notes = [t["notes"] for t in body["data"]["todos"]]
    assert notes == [
        "  It fails on empty input.\n  See tests/test_parse.py",
        None,
        None,
        None,
        "- [-] not a step marker Goose knows\n- [~] nor this\n- [ ]\n[ ] no list marker\n\n"
        "## Notes\nRemember the changelog.",
    ]


def test_it_cuts_long_notes_and_says_so(api):
    body = api.ok("gs", TOOL, {"content": "- [ ] a\n" + "x" * 5000})
    assert body["output"] == "Updated (5008 chars)"
    assert len(body["data"]["todos"][0]["notes"]) == goose.NOTES_MAX
    assert body["data"]["todos"][0]["notes"].endswith("x…")
    assert body["data"]["warnings"][0]["code"] == "notes_cut"


def test_an_empty_text_clears_the_list(api):
    api.ok("gs", TOOL, {"content": TEMPLATE})
    body = api.ok("gs", TOOL, {"content": ""})
    assert body["output"] == "Updated (0 chars)"
    assert body["data"]["todos"] == []
    assert body["data"]["warnings"] == []
    assert api.revision("gs") == 2


def test_a_text_without_checklist_lines_is_accepted_with_no_steps(api):
    api.ok("gs", TOOL, {"content": TEMPLATE})
    body = api.ok("gs", TOOL, {"content": "1. Read the code\n2. Fix it"})
    assert body["output"] == "Updated (26 chars)"
    assert body["data"]["todos"] == []
    assert body["data"]["warnings"][0]["code"] == "no_checklist_items"


def test_it_ignores_extra_keys(api):
    body = api.ok("gs", TOOL, {"content": "- [ ] a", "title": "x", "merge": True})
    assert body["output"] == "Updated (7 chars)"


def test_it_keeps_hostile_text_verbatim(api):
    content = '- [ ] 中文 <b>x</b> 🎉 &amp; "q" \\\n- [x] <script>alert(1)</script>'
    body = api.ok("gs", TOOL, {"content": content})
    assert steps(body) == [('中文 <b>x</b> 🎉 &amp; "q" \\', "pending"), ("<script>alert(1)</script>", "completed")]


def test_it_takes_at_most_fifty_thousand_characters(api):
    api.ok("gs", TOOL, {"content": "- [ ] keep"})
    # Counted in Unicode scalar values: the emoji is one (two in UTF-16, four in UTF-8).
    assert api.ok("gs", TOOL, {"content": "a" * 49_999 + "🎉"})["output"] == "Updated (50000 chars)"
    api.rejected(
        "gs", TOOL, {"content": "a" * 50_001}, "Error: Todo list too large: 50001 chars (max: 50000)", revision=2
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({}, "Error: Missing required parameter: content"),
        ({"Content": "x"}, "Error: Missing required parameter: content"),
        ({"content": None}, "Error: Missing required parameter: content"),
        ({"content": 5}, "Error: Missing required parameter: content"),
        ({"content": ["- [ ] a"]}, "Error: Missing required parameter: content"),
        # rmcp's object() reads a value that is not an object as {}.
        ([], "Error: Missing required parameter: content"),
        ("- [ ] a", "Error: Missing required parameter: content"),
        # A call with no arguments at all.
        (None, "Error: Missing arguments"),
    ],
)
def test_it_refuses_in_gooses_words(api, args, message):
    api.ok("gs", TOOL, {"content": TEMPLATE})
    api.rejected("gs", TOOL, args, message, revision=1)


def test_it_takes_the_chat_completions_form(api):
    response = api.chat("gs", TOOL, '{"content": "- [x] 中文\\n- [ ] b"}', query="?reply=native")
    body = response.json()
    assert response.status_code == 200, body
    assert body["reply"] == {"role": "tool", "tool_call_id": "call_1", "content": "Updated (16 chars)"}
    assert steps(body) == [("中文", "completed"), ("b", "pending")]


def test_it_reads_arguments_text_as_goose_does(api):
    # safely_parse_json retries with control characters escaped: a raw newline is fine.
    response = api.chat("gs", TOOL, '{"content": "- [ ] a\n- [x] b"}', call_id=None, query="?reply=native")
    assert response.status_code == 200, response.content
    assert response.json()["output"] == "Updated (15 chars)"
    assert steps(response.json()) == [("a", "pending"), ("b", "completed")]
    for text in ("", "[]", "null", '"x"', "5"):
        assert_refused(api.chat("gs", TOOL, text, call_id=None), "Error: Missing required parameter: content")
    response = api.chat("gs", TOOL, '{"content": [}', call_id=None)
    body = assert_refused(response, status=400, code="invalid_json")
    assert body["error"]["message"].startswith("The arguments are not valid JSON: Expecting value")
    assert api.revision("gs") == 1


@pytest.mark.parametrize(
    ("args", "fits"),
    [
        ({"content": "- [ ] a"}, True),
        ({"content": ""}, True),
        ({"content": "x", "todos": []}, False),
        ({"content": "x", "steps": []}, False),
        ({"content": 5}, False),
        ({}, False),
        ([], False),
        ({"todos": [{"content": "a", "status": "pending"}]}, False),
    ],
)
def test_it_claims_todo_write_calls_with_a_string_content(args, fits):
    assert goose.fits("todo_write", args) is fits


def test_it_gives_the_model_gooses_schema_under_both_names():
    definitions = goose.definitions()
    assert [d.name for d in definitions] == ["todo_write", "todo__todo_write"]
    for definition in definitions:
        assert definition.description.startswith("Overwrite the entire TODO content.")
        schema = definition.input_schema
        jsonschema.Draft7Validator.check_schema(schema)
        validator = jsonschema.Draft7Validator(schema)
        assert validator.is_valid({"content": TEMPLATE})
        assert validator.is_valid({"content": "", "extra": 1})
        assert not validator.is_valid({"content": 5})
        assert not validator.is_valid({})
