"""Roo Code's update_todo_list through the real URL.

The checklist cases were also run through Roo's own `parseMarkdownChecklist` under
Node: the same lines are items, with the same texts, statuses and md5 ids.
"""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from tests.conftest import assert_refused
from todoweb.dialects import roo

UPDATED = "Todo list updated successfully."
MISSING = (
    '{"status":"error","message":"The tool execution failed","error":"Invalid tool call for '
    "'update_todo_list': missing nativeArgs. This usually means the model streamed invalid or incomplete "
    'arguments and the call could not be finalized."}'
)
# The two examples in Roo's tool description.
INITIAL = "[x] Analyze requirements\n[x] Design architecture\n[-] Implement core logic\n[ ] Write tests\n[ ] Update documentation"
AFTER = (
    "[x] Analyze requirements\n[x] Design architecture\n[x] Implement core logic\n[-] Write tests\n"
    "[ ] Update documentation\n[ ] Add performance benchmarks"
)


def steps(body: dict[str, Any]) -> list[tuple[str, str]]:
    return [(t["content"], t["status"]) for t in body["data"]["todos"]]


def test_it_writes_the_checklist_and_answers_like_roo(api):
    body = api.ok("roo", "update_todo_list", {"todos": INITIAL})
    assert body["dialect"] == "roo"
    assert body["output"] == UPDATED
    assert steps(body) == [
        ("Analyze requirements", "completed"),
        ("Design architecture", "completed"),
        ("Implement core logic", "in_progress"),
        ("Write tests", "pending"),
        ("Update documentation", "pending"),
    ]
    assert body["data"]["warnings"] == []
    assert api.revision("roo") == 1


def test_it_hands_back_roos_own_items_with_their_md5_ids(api):
    body = api.ok("roo", "update_todo_list", {"todos": INITIAL})
    roo_todos = body["data"]["roo_todos"]
    assert roo_todos[0] == {
        "id": "c6f04ac86b18e5945d28a7ab0f0470f9",
        "content": "Analyze requirements",
        "status": "completed",
    }
    assert roo_todos[2]["id"] == "bd3b19a0a00391cccee794851ba25e56"
    assert roo_todos[3]["id"] == "5dd439144585ee3b0b07506252e7195c"


def test_it_replaces_the_list_and_keeps_a_steps_identity_across_a_status_change(api):
    first = api.ok("roo", "update_todo_list", {"todos": INITIAL})
    second = api.ok("roo", "update_todo_list", {"todos": AFTER})
    assert second["output"] == UPDATED
    assert steps(second)[2:4] == [("Implement core logic", "completed"), ("Write tests", "in_progress")]
    assert steps(second)[-1] == ("Add performance benchmarks", "pending")
    # Roo's id is md5(content + status), so it changes; the step's id does not.
    assert second["data"]["roo_todos"][2]["id"] != first["data"]["roo_todos"][2]["id"]
    assert second["data"]["todos"][2]["id"] == first["data"]["todos"][2]["id"]
    assert api.revision("roo") == 2


def test_it_reads_every_form_roos_pattern_takes(api):
    text = "- [ ] a\r\n- [x] b\r\n-[X] c\n  -   [~]   d  \n[  -  ] e\n[ ]\tf\n\u3000[x] g\u3000\n\ufeff[ ] h\n- - [ ] i"
    body = api.ok("roo", "update_todo_list", {"todos": text})
    assert steps(body) == [
        ("a", "pending"),
        ("b", "completed"),
        ("c", "completed"),
        ("d", "in_progress"),
        ("e", "in_progress"),
        ("f", "pending"),
        ("g", "completed"),
        ("h", "pending"),
    ]
    # `- - [ ] i` is skipped: the pattern allows one dash.
    assert body["data"]["warnings"][0] == {
        "code": "skipped_lines",
        "message": "1 line is not a checklist item and Roo skips them",
    }


def test_it_skips_every_other_line_silently(api):
    text = (
        "# Plan\n[] e\n[ ]f\n* [ ] g\n1. [ ] h\n[\u00a0] j\n[ ] l\rm\n[ ] n\u2028o\n[x]\u200b u\n"
        "[ ] kept\n[ ] p\u0085q\n\n   \n"
    )
    body = api.ok("roo", "update_todo_list", {"todos": text})
    assert body["output"] == UPDATED
    # U+0085 and U+200B are not JavaScript whitespace or line terminators.
    assert steps(body) == [("kept", "pending"), ("p\u0085q", "pending")]
    assert body["data"]["warnings"][0]["message"] == "9 lines are not a checklist item and Roo skips them"


@pytest.mark.parametrize("text", ["", "   \n\n", "no checklist here\nat all"])
def test_an_empty_or_garbage_checklist_clears_the_list(api, text):
    api.ok("roo", "update_todo_list", {"todos": INITIAL})
    body = api.ok("roo", "update_todo_list", {"todos": text})
    assert body["output"] == UPDATED
    assert body["data"]["todos"] == []
    assert body["data"]["roo_todos"] == []
    assert api.revision("roo") == 2


@pytest.mark.parametrize("todos", [None, 5, 0, True, [], ["[ ] a"], {"a": "[ ] b"}])
def test_a_todos_that_is_not_a_string_is_an_empty_checklist(api, todos):
    # Roo: parseMarkdownChecklist(todosRaw || "") returns [] for anything but a string.
    api.ok("roo", "update_todo_list", {"todos": INITIAL})
    body = api.ok("roo", "update_todo_list", {"todos": todos})
    assert body["output"] == UPDATED
    assert body["data"]["todos"] == []
    assert body["data"]["warnings"][0]["code"] == "not_a_checklist"
    assert api.revision("roo") == 2


def test_it_keeps_duplicates_and_extra_keys_do_not_matter(api):
    body = api.ok("roo", "update_todo_list", {"todos": "[ ] dup\n[ ] dup\n[x] dup", "extra": 1})
    assert steps(body) == [("dup", "pending"), ("dup", "pending"), ("dup", "completed")]
    assert len({t["id"] for t in body["data"]["todos"]}) == 3
    assert body["data"]["roo_todos"][0]["id"] == body["data"]["roo_todos"][1]["id"]


def test_it_keeps_hostile_text_verbatim(api):
    text = "[ ] 中文 <b>x</b> 🎉 &amp; \"q\" \\ 'x'\n[-] <script>alert(1)</script>"
    body = api.ok("roo", "update_todo_list", {"todos": text})
    assert steps(body) == [
        ("中文 <b>x</b> 🎉 &amp; \"q\" \\ 'x'", "pending"),
        ("<script>alert(1)</script>", "in_progress"),
    ]


@pytest.mark.parametrize("args", [{}, {"todo": "[ ] a"}, {"Todos": "[ ] a"}, [], ["[ ] a"], "[ ] a", 5, None])
def test_it_refuses_a_call_without_todos_in_roos_words(api, args):
    api.ok("roo", "update_todo_list", {"todos": INITIAL})
    api.rejected("roo", "update_todo_list", args, MISSING, revision=1)


def test_it_takes_the_chat_completions_form(api):
    response = api.chat("roo", "update_todo_list", '{"todos": "[x] 中文\\n[-] b"}', query="?reply=native")
    body = response.json()
    assert response.status_code == 200, body
    assert body["reply"] == {"role": "tool", "tool_call_id": "call_1", "content": UPDATED}
    assert steps(body) == [("中文", "completed"), ("b", "in_progress")]


def test_it_answers_unreadable_arguments_in_roos_words(api):
    assert_refused(api.chat("roo", "update_todo_list", "{bad", call_id=None), MISSING, status=400, code="invalid_json")
    # JSON.parse refuses raw control characters inside strings.
    assert_refused(
        api.chat("roo", "update_todo_list", '{"todos": "[ ] a\tb"}', call_id=None),
        MISSING,
        status=400,
        code="invalid_json",
    )
    for text in ("", "[]", "null", '"[ ] a"', "5"):
        assert_refused(api.chat("roo", "update_todo_list", text, call_id=None), MISSING)
    assert api.revision("roo") is None


def test_it_gives_the_model_roos_strict_schema():
    (definition,) = roo.definitions()
    assert definition.name == "update_todo_list"
    assert definition.description.startswith("Replace the entire TODO list with an updated checklist")
    assert '{ "todos": "[x] Analyze requirements\\n[x] Design architecture' in definition.description
    schema = definition.input_schema
    jsonschema.Draft7Validator.check_schema(schema)
    validator = jsonschema.Draft7Validator(schema)
    assert validator.is_valid({"todos": INITIAL})
    assert not validator.is_valid({"todos": ["[ ] a"]})
    assert not validator.is_valid({"todos": "[ ] a", "extra": 1})
    assert not validator.is_valid({})
