"""LangChain's write_todos with `content` through the real URL.

Every reply and error text below is what langchain 1.4.7 / langgraph 1.2.22 answered
for the same arguments (create_agent with TodoListMiddleware and a fake model).
"""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from tests.conftest import assert_refused
from todoweb.dialects import gemini, langchain

MALFORMED = "Tool call write_todos could not be executed - arguments were malformed or truncated."
# An empty list, or items with neither `content` nor `description`, go to Gemini unless
# the call names its dialect (see the routing tests at the end).
FORCED = "?dialect=langchain&reply=native"


def ok(api, key: str, args: Any) -> dict:
    response = api.call(key, "write_todos", args, query=FORCED)
    assert response.status_code == 200, response.content
    return response.json()


def rejected(api, key: str, args: Any, message: str, *, revision: int | None = None, status: int = 422) -> dict:
    """Refused with `message` (error and reply), nothing written."""
    body = assert_refused(api.call(key, "write_todos", args, query=FORCED), message, status=status)
    assert body["reply"]["is_error"] is True
    assert api.revision(key) == revision
    return body


def todo(content: Any = "a", status: Any = "pending", **extra: Any) -> dict[str, Any]:
    return {"content": content, "status": status, **extra}


def error(kwargs: str, *lines: str) -> str:
    return (
        f"Error invoking tool 'write_todos' with kwargs {kwargs} with error:\n "
        + "\n".join(lines)
        + "\n Please fix the error and try again."
    )


def test_it_writes_the_list_and_answers_with_the_python_repr(api):
    body = api.ok("lc", "write_todos", {"todos": [todo("A", "in_progress"), todo("B", "pending")]})
    assert body["dialect"] == "langchain"
    assert body["output"] == (
        "Updated todo list to [{'content': 'A', 'status': 'in_progress'}, {'content': 'B', 'status': 'pending'}]"
    )
    assert [(t["content"], t["status"]) for t in body["data"]["todos"]] == [("A", "in_progress"), ("B", "pending")]
    assert api.revision("lc") == 1


def test_it_clears_the_list_with_an_empty_one(api):
    ok(api, "lc", {"todos": [todo("A")]})
    body = ok(api, "lc", {"todos": []})
    assert body["output"] == "Updated todo list to []"
    assert body["data"]["todos"] == []
    assert api.revision("lc") == 2


def test_it_drops_extra_keys_and_shows_content_before_status(api):
    args = {"todos": [{"status": "pending", "content": "A", "activeForm": "Doing A"}], "extra": 1}
    body = ok(api, "lc", args)
    assert body["output"] == "Updated todo list to [{'content': 'A', 'status': 'pending'}]"
    assert body["data"]["todos"][0]["active_form"] is None


def test_it_accepts_what_the_tool_does_not_check(api, project):
    project.single_in_progress = "off"
    project.save()
    args = {"todos": [todo("", "completed"), todo("x", "in_progress"), todo("y", "in_progress")]}
    body = ok(api, "lc", args)
    assert body["output"] == (
        "Updated todo list to [{'content': '', 'status': 'completed'}, {'content': 'x', 'status': 'in_progress'}, "
        "{'content': 'y', 'status': 'in_progress'}]"
    )
    assert [t["status"] for t in body["data"]["todos"]] == ["completed", "in_progress", "in_progress"]


def test_it_keeps_hostile_text_verbatim(api):
    content = 'it\'s "q" \\ 中文 <b>x</b> 🎉 \n tab\t'
    body = ok(api, "lc", {"todos": [todo(content)]})
    assert body["data"]["todos"][0]["content"] == content
    assert body["output"] == (
        "Updated todo list to [{'content': 'it\\'s \"q\" \\\\ 中文 <b>x</b> 🎉 \\n tab\\t', 'status': 'pending'}]"
    )
    body = ok(api, "lc", {"todos": [todo("\u00a0<script>alert(1)</script>", "completed")]})
    assert (
        body["output"] == "Updated todo list to [{'content': '\\xa0<script>alert(1)</script>', 'status': 'completed'}]"
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        # The examples of LangChain's own docs.
        (
            {"todos": [todo("A", "done")]},
            error(
                "{'todos': [{'content': 'A', 'status': 'done'}]}",
                "todos.0.status: Input should be 'pending', 'in_progress' or 'completed'",
            ),
        ),
        (
            {"todos": [{"status": "pending"}]},
            error("{'todos': [{'status': 'pending'}]}", "todos.0.content: Field required"),
        ),
        ({}, error("{}", "todos: Field required")),
        (
            {"todos": "not a list"},
            error("{'todos': 'not a list'}", "todos: Input should be a valid list"),
        ),
        (
            {"todos": [{"content": 5, "status": "x"}, {"content": "b"}]},
            error(
                "{'todos': [{'content': 5, 'status': 'x'}, {'content': 'b'}]}",
                "todos.0.content: Input should be a valid string",
                "todos.0.status: Input should be 'pending', 'in_progress' or 'completed'",
                "todos.1.status: Field required",
            ),
        ),
        # More of the real tool's answers.
        ({"todos": None}, error("{'todos': None}", "todos: Input should be a valid list")),
        ({"todos": {}}, error("{'todos': {}}", "todos: Input should be a valid list")),
        ({"Todos": []}, error("{'Todos': []}", "todos: Field required")),
        ({"todos": [None]}, error("{'todos': [None]}", "todos.0: Input should be a valid dictionary")),
        ({"todos": [[]]}, error("{'todos': [[]]}", "todos.0: Input should be a valid dictionary")),
        (
            {"todos": [todo("A", "PENDING")]},
            error(
                "{'todos': [{'content': 'A', 'status': 'PENDING'}]}",
                "todos.0.status: Input should be 'pending', 'in_progress' or 'completed'",
            ),
        ),
        (
            {"todos": [todo("A", "in progress")]},
            error(
                "{'todos': [{'content': 'A', 'status': 'in progress'}]}",
                "todos.0.status: Input should be 'pending', 'in_progress' or 'completed'",
            ),
        ),
        (
            {"todos": [todo("A", 1)]},
            error(
                "{'todos': [{'content': 'A', 'status': 1}]}",
                "todos.0.status: Input should be 'pending', 'in_progress' or 'completed'",
            ),
        ),
        (
            {"todos": [todo(True)]},
            error(
                "{'todos': [{'content': True, 'status': 'pending'}]}", "todos.0.content: Input should be a valid string"
            ),
        ),
        (
            {"todos": [todo(1.5)]},
            error(
                "{'todos': [{'content': 1.5, 'status': 'pending'}]}", "todos.0.content: Input should be a valid string"
            ),
        ),
        (
            {"todos": [todo(None, None)]},
            error(
                "{'todos': [{'content': None, 'status': None}]}",
                "todos.0.content: Input should be a valid string",
                "todos.0.status: Input should be 'pending', 'in_progress' or 'completed'",
            ),
        ),
        (
            {"todos": [todo("A", "done")], "extra": 1},
            error(
                "{'todos': [{'content': 'A', 'status': 'done'}], 'extra': 1}",
                "todos.0.status: Input should be 'pending', 'in_progress' or 'completed'",
            ),
        ),
        (
            {"todos": [todo("A"), 5, "s", True, None, 1.5]},
            error(
                "{'todos': [{'content': 'A', 'status': 'pending'}, 5, 's', True, None, 1.5]}",
                *(f"todos.{i}: Input should be a valid dictionary" for i in range(1, 6)),
            ),
        ),
    ],
)
def test_it_refuses_what_langgraph_refuses_in_its_words(api, args, message):
    ok(api, "lc", {"todos": [todo("keep")]})
    rejected(api, "lc", args, message, revision=1)


def test_it_names_at_most_twenty_errors(api):
    # LangChain prints them all; todoweb keeps an answer's size bounded.
    args = {"todos": [todo(status="done")] * 25}
    kwargs = "{'todos': [" + ", ".join(["{'content': 'a', 'status': 'done'}"] * 25) + "]}"
    lines = [f"todos.{i}.status: Input should be 'pending', 'in_progress' or 'completed'" for i in range(20)]
    body = rejected(api, "lc", args, error(kwargs, *lines, "… and 5 more"))
    assert body["error"]["details"]["count"] == 25


def test_it_reads_falsy_arguments_as_no_arguments(api):
    # langchain-openai: `"args": function_args or {}`.
    for args in ([], "", 0, False, None):
        rejected(api, "lc", args, error("{}", "todos: Field required"))
    for args in ([todo()], "todos", 5, True):
        rejected(api, "lc", args, MALFORMED)


def test_it_takes_the_chat_completions_form(api):
    response = api.chat(
        "lc", "write_todos", '{"todos": [{"content": "中文 🎉", "status": "completed"}]}', query="?reply=native"
    )
    body = response.json()
    assert response.status_code == 200, body
    assert body["reply"] == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": "Updated todo list to [{'content': '中文 🎉', 'status': 'completed'}]",
    }
    assert body["data"]["todos"][0]["status"] == "completed"


def test_it_reads_arguments_text_as_langchain_openai_does(api):
    # Control characters inside strings are allowed (json.loads with strict=False).
    # (Routing cannot read such text, so the call names its dialect.)
    response = api.chat("lc", "write_todos", '{"todos": [{"content": "a\tb", "status": "pending"}]}', query=FORCED)
    assert response.status_code == 200, response.content
    assert response.json()["output"] == "Updated todo list to [{'content': 'a\\tb', 'status': 'pending'}]"
    for text in ("", "[]", "null", "0", '""', "false"):
        assert_refused(
            api.chat("lc", "write_todos", text, query=FORCED, call_id=None), error("{}", "todos: Field required")
        )
    for text in ("5", '"x"', "true", '[{"content": "a"}]'):
        assert_refused(api.chat("lc", "write_todos", text, query=FORCED, call_id=None), MALFORMED)
    assert_refused(
        api.chat("lc", "write_todos", "{bad", query=FORCED, call_id=None), MALFORMED, status=400, code="invalid_json"
    )
    assert_refused(
        api.chat("lc", "write_todos", '{"todos": []} x', query=FORCED, call_id=None),
        MALFORMED,
        status=400,
        code="invalid_json",
    )
    assert api.revision("lc") == 1


def test_it_takes_write_todos_calls_whose_items_use_content(api):
    assert api.call("r", "write_todos", {"todos": [todo()]}).json()["dialect"] == "langchain"
    gemini_items = {"todos": [{"description": "b", "status": "pending"}]}
    assert api.call("r", "write_todos", gemini_items).json()["dialect"] == "gemini"
    # An empty list is Gemini's, and so is a list mixing both kinds of item.
    assert api.call("r", "write_todos", {"todos": []}).json()["dialect"] == "gemini"
    mixed = {"todos": [todo(), {"description": "b", "status": "pending"}]}
    assert_refused(api.call("r", "write_todos", mixed), "params/todos/0 must have required property 'description'")


@pytest.mark.parametrize(
    "args",
    [
        {"todos": [todo()]},
        {"todos": [{"content": "a"}, "x"]},
        {"todos": []},
        {},
        {"todos": "x"},
        {"todos": ["x"]},
        {"todos": [{"content": "a"}, {"description": "b"}]},
        [],
        None,
    ],
)
def test_it_claims_exactly_what_gemini_leaves(args):
    assert langchain.fits("write_todos", args) is not gemini.fits("write_todos", args)


def test_a_forced_dialect_gets_langchains_answer(api):
    response = api.call("lc", "write_todos", {"todos": []}, query="?dialect=langchain&reply=native")
    assert response.json()["output"] == "Updated todo list to []"


def test_it_gives_the_model_langchains_schema():
    (definition,) = langchain.definitions()
    assert definition.name == "write_todos"
    assert definition.description.startswith("Use this tool to create and manage a structured task list")
    schema = definition.input_schema
    jsonschema.Draft7Validator.check_schema(schema)
    validator = jsonschema.Draft7Validator(schema)
    assert validator.is_valid({"todos": [todo("A", "in_progress")]})
    assert validator.is_valid({"todos": [todo("A", activeForm="x")], "extra": 1})  # extras are ignored
    assert not validator.is_valid({"todos": [todo(status="done")]})
    assert not validator.is_valid({"todos": [{"status": "pending"}]})
