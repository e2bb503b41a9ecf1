"""Routing: the tool name picks the dialect; where dialects share a name the input's
fields decide; `?dialect=` (or the plain form's `dialect`) forces one."""

from __future__ import annotations

import jsonschema
import pytest

from tests.conftest import assert_refused
from todoweb import dialects

GEMINI = {"todos": [{"description": "a", "status": "pending"}]}
WEKNORA = {"task": "t", "steps": [{"id": "1", "description": "a", "status": "pending"}]}


def test_the_tool_name_picks_the_dialect(api):
    assert api.call("s1", "write_todos", GEMINI).json()["dialect"] == "gemini"


@pytest.mark.parametrize("how", ["query", "field"])
def test_a_forced_dialect_takes_the_call(api, how):
    if how == "query":
        r = api.call("s1", "todo_write", WEKNORA, query="?dialect=weknora")
    else:
        r = api.tool("s1", {"tool": "todo_write", "dialect": "weknora", "input": WEKNORA})
    assert r.status_code == 200, r.content
    assert r.json()["dialect"] == "weknora"


def test_a_forced_dialect_must_exist_and_have_the_tool(api):
    body = assert_refused(api.call("s1", "todo_write", WEKNORA, query="?dialect=nope"))
    assert body["error"]["message"].startswith("Unknown dialect 'nope'. Known: ")
    body = assert_refused(api.call("s1", "todo_write", WEKNORA, query="?dialect=claude"))
    assert body["error"]["message"] == "Dialect 'claude' has no tool 'todo_write'. It has: TodoWrite, TodoRead"
    assert api.revision("s1") is None


def test_the_plain_form_dialect_must_be_a_string(api):
    assert_refused(api.tool("s1", {"tool": "todo_write", "dialect": 7, "input": WEKNORA}))


def test_a_forced_dialect_is_part_of_the_idempotency_fingerprint(api):
    headers = {"Idempotency-Key": "k1"}
    assert api.call("s1", "todo_write", WEKNORA, headers=headers).status_code == 200
    r = api.call("s1", "todo_write", WEKNORA, query="?dialect=weknora", headers=headers)
    assert_refused(r, status=422, code="idempotency_conflict")


def test_tool_definitions_list_each_name_once_by_default(api):
    names = [tool["name"] for tool in api.get("/api/v1/tools").json()["tools"]]
    assert len(names) == len(set(names))
    assert {"TodoWrite", "SetTodoList", "todo_write", "update_plan", "write_todos"} <= set(names)


def test_openai_definitions_say_they_are_not_strict(api):
    """The Responses API takes a function without "strict" as strict, which would make
    every optional field required."""
    for fmt in ("openai", "responses"):
        for tool in api.get(f"/api/v1/tools?format={fmt}").json()["tools"]:
            assert tool.get("strict", tool.get("function", {}).get("strict")) is False, tool


def test_short_descriptions_fit_in_1024_characters(api):
    full = {t["name"]: t["description"] for t in api.get("/api/v1/tools").json()["tools"]}
    short = {t["name"]: t["description"] for t in api.get("/api/v1/tools?descriptions=short").json()["tools"]}
    assert short.keys() == full.keys()
    assert any(len(text) > 1024 for text in full.values())
    for name, text in short.items():
        assert 0 < len(text) <= 1024 and "\n" not in text
        assert full[name].replace("\n", " ").startswith(text.removesuffix("…")), name


def test_a_dialect_named_twice_is_listed_once(api):
    tools = api.get("/api/v1/tools?dialects=gemini,gemini").json()["tools"]
    assert [tool["name"] for tool in tools] == ["write_todos"]


# Every tool name several dialects share, with an input of each dialect's shape.
COLLISIONS = [
    ("todo_write", {"task": "t", "steps": [{"id": "1", "description": "a", "status": "pending"}]}, "weknora"),
    ("todo_write", {"task": "t"}, "weknora"),  # WeKnora's own "steps is missing"
    ("todo_write", {"merge": False, "todos": [{"id": "1", "content": "a", "status": "pending"}]}, "cursor"),
    ("todo_write", {"merge": True, "todos": []}, "cursor"),
    ("todo_write", {"content": "- [ ] a\n- [x] b"}, "goose"),
    ("todo_write", {"todos": [{"id": "1", "content": "a", "status": "todo", "priority": "high"}]}, "amp"),
    ("todo_write", {"todos": [{"id": "1", "content": "a", "status": "in-progress"}]}, "amp"),
    ("todo_write", {"todos": [{"id": "1", "content": "a", "status": "pending"}]}, "qwen"),
    ("todo_write", {"todos": []}, "qwen"),
    ("write_todos", {"todos": [{"description": "a", "status": "pending"}]}, "gemini"),
    ("write_todos", {"todos": []}, "gemini"),
    ("write_todos", {"todos": [{"content": "a", "status": "pending"}]}, "langchain"),
]


@pytest.mark.parametrize(("tool", "args", "dialect"), COLLISIONS, ids=lambda v: v if isinstance(v, str) else "")
def test_a_shared_name_is_routed_by_the_inputs_fields(tool, args, dialect):
    assert dialects.resolve(tool, args).NAME == dialect


@pytest.mark.parametrize("tool", sorted(dialects.ROUTES))
def test_every_shared_name_has_its_routing_order_and_covers_its_dialects(tool):
    owners = [module.NAME for module in dialects.tool_names()[tool]]
    assert owners == list(dialects.ROUTES[tool])


@pytest.mark.parametrize(("tool", "args"), [("todo_write", [1, 2]), ("todo_write", "text"), ("todo_write", 7)])
def test_an_input_no_dialect_fits_is_a_422_naming_every_shape(api, tool, args):
    body = assert_refused(api.call("s1", tool, args))
    for module in dialects.tool_names()[tool]:
        assert f"{module.NAME}: {module.SHAPE}" in body["error"]["message"]
    assert api.revision("s1") is None


@pytest.mark.parametrize(("tool", "args", "dialect"), COLLISIONS, ids=lambda v: v if isinstance(v, str) else "")
def test_every_collision_is_answered_by_its_dialect_through_the_endpoint(api, tool, args, dialect):
    r = api.call("routed", tool, args)
    if r.status_code == 200:
        assert r.json()["dialect"] == dialect
    else:  # a refusal in the dialect's own words (WeKnora's missing steps)
        assert (tool, dialect) == ("todo_write", "weknora") and "steps" in r.json()["error"]["message"]


def test_tool_definitions_of_two_dialects_sharing_a_name_are_refused(api):
    body = assert_refused(api.get("/api/v1/tools?dialects=gemini,langchain"))
    assert body["error"]["message"] == (
        "Dialects 'gemini' and 'langchain' both define the tool 'write_todos'; a model can be given only one of them"
    )
    assert [t["name"] for t in api.get("/api/v1/tools?dialects=langchain").json()["tools"]] == ["write_todos"]


@pytest.mark.parametrize("name", sorted(dialects.dialects()))
def test_every_dialect_gives_the_model_usable_tool_definitions(api, name):
    tools = api.get(f"/api/v1/tools?dialects={name}&format=openai").json()["tools"]
    assert [tool["function"]["name"] for tool in tools] == list(dialects.dialects()[name].TOOLS)
    for tool in tools:
        function = tool["function"]
        assert len(function["description"]) > 20
        jsonschema.Draft7Validator.check_schema(function["parameters"])
        assert function["parameters"]["type"] == "object"
