"""Codex's update_plan through the real URL.

Positions in the expected messages are serde_json's: line, and UTF-8 bytes since the
line start, of the character looked at (syntax) or of the last one read (types, fields).
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import jsonschema
import pytest

from tests.conftest import assert_refused
from todoweb.calls.errors import InvalidInput
from todoweb.calls.jsonio import UNPARSED
from todoweb.dialects import codex

CALL_IDS = itertools.count(1)
PREFIX = "failed to parse function arguments: "
VARIANTS = "expected one of `pending`, `in_progress`, `completed`"


def chat(arguments: str, call_id: str | None = None) -> dict[str, Any]:
    # A fresh call id each time: a repeated id would replay the first answer.
    call_id = call_id or f"call_{next(CALL_IDS)}"
    return {"id": call_id, "type": "function", "function": {"name": "update_plan", "arguments": arguments}}


def responses(arguments: str) -> dict[str, Any]:
    return {"type": "function_call", "call_id": "fc_1", "name": "update_plan", "arguments": arguments}


def parse_error(raw: str) -> str:
    with pytest.raises(InvalidInput) as raised:
        codex.call("update_plan", UNPARSED, [], raw=raw)
    return raised.value.message.removeprefix(PREFIX)


def test_it_updates_the_plan_and_answers_plan_updated(api):
    arguments = json.dumps(
        {
            "explanation": "Fix the flaky test first",
            "plan": [
                {"step": "Reproduce the failure", "status": "completed"},
                {"step": "Fix the race", "status": "in_progress"},
                {"step": "Run the suite", "status": "pending"},
            ],
        }
    )
    response = api.tool("c1", chat(arguments, "call_1"), query="?reply=native")
    body = response.json()
    assert response.status_code == 200, body
    assert body["ok"] is True
    assert body["dialect"] == "codex"
    assert body["output"] == "Plan updated"
    assert body["reply"] == {"role": "tool", "tool_call_id": "call_1", "content": "Plan updated"}
    assert [(t["content"], t["status"]) for t in body["data"]["todos"]] == [
        ("Reproduce the failure", "completed"),
        ("Fix the race", "in_progress"),
        ("Run the suite", "pending"),
    ]
    # The explanation names the session.
    assert body["data"]["session"]["title"] == "Fix the flaky test first"
    assert api.revision("c1") == 1


def test_it_answers_the_responses_form(api):
    response = api.tool("c1", responses('{"plan":[{"step":"a","status":"pending"}]}'), query="?reply=native")
    assert response.status_code == 200, response.json()
    assert response.json()["reply"] == {"type": "function_call_output", "call_id": "fc_1", "output": "Plan updated"}


@pytest.mark.parametrize("explanation", [None, "", "   "])
def test_it_takes_an_empty_or_null_explanation_without_a_title(api, explanation):
    response = api.call("c1", "update_plan", {"explanation": explanation, "plan": []}, query="?reply=native")
    assert response.status_code == 200, response.json()
    assert response.json()["output"] == "Plan updated"
    assert response.json()["data"]["session"]["title"] == ""


def test_it_accepts_several_in_progress_and_leaves_it_to_the_policy(api, project):
    plan = [{"step": "a", "status": "in_progress"}, {"step": "b", "status": "in_progress"}]
    response = api.call("c1", "update_plan", {"plan": plan})
    assert response.status_code == 200, response.json()
    assert [w["code"] for w in response.json()["data"]["warnings"]] == ["multiple_in_progress"]

    project.single_in_progress = "off"
    project.save()
    response = api.call("c2", "update_plan", {"plan": plan})
    assert response.status_code == 200
    assert response.json()["data"]["warnings"] == []

    project.single_in_progress = "reject"
    project.save()
    response = api.call("c3", "update_plan", {"plan": plan})
    assert response.status_code == 422
    assert response.json()["error"]["message"].startswith("Only one step can be in progress")


@pytest.mark.parametrize("step", ["", "   ", "\u3000"])
def test_it_accepts_empty_and_blank_steps(api, step):
    response = api.call("c1", "update_plan", {"plan": [{"step": step, "status": "pending"}]})
    assert response.status_code == 200, response.json()
    assert response.json()["data"]["todos"][0]["content"] == step


def test_it_has_no_item_limit_of_its_own(api):
    plan = [{"step": f"s{i}", "status": "pending"} for i in range(80)]
    assert api.call("c1", "update_plan", {"plan": plan}).status_code == 200


def test_it_accepts_an_item_written_as_an_array(api):
    response = api.tool("c1", chat('{"plan": [["Write it", "in_progress"], {"step": "Ship it", "status": "pending"}]}'))
    assert response.status_code == 200, response.json()
    assert [(t["content"], t["status"]) for t in response.json()["data"]["todos"]] == [
        ("Write it", "in_progress"),
        ("Ship it", "pending"),
    ]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (
            '{"plan": [{"step": "a", "status": "pending", "priority": "high"}]}',
            "unknown field `priority`, expected `step` or `status` at line 1 column 55",
        ),
        ('{"foo": 1, "plan": []}', "unknown field `foo`, expected `explanation` or `plan` at line 1 column 6"),
        (
            '{"plan": [{"step": "a", "status": "PENDING"}]}',
            f"unknown variant `PENDING`, {VARIANTS} at line 1 column 43",
        ),
        ('{"plan": [{"step": "a", "status": "done"}]}', f"unknown variant `done`, {VARIANTS} at line 1 column 40"),
        ('{"plan": [{"step": "a", "status": 5}]}', "expected value at line 1 column 35"),
        ('{"plan": [{"step": "a", "status": null}]}', "expected value at line 1 column 35"),
        ('{"plan": [{"step": "a", "status": true}]}', "expected value at line 1 column 35"),
        ('{"explanation": 5, "plan": []}', "invalid type: integer `5`, expected a string at line 1 column 17"),
        ('{"explanation": ["x"], "plan": []}', "invalid type: sequence, expected a string at line 1 column 16"),
        (
            '{"plan": [{"step": 7, "status": "pending"}]}',
            "invalid type: integer `7`, expected a string at line 1 column 20",
        ),
        ('{"plan": "all of it"}', 'invalid type: string "all of it", expected a sequence at line 1 column 20'),
        ('{"plan": {"step": "a"}}', "invalid type: map, expected a sequence at line 1 column 9"),
        ('{"plan": ["a"]}', 'invalid type: string "a", expected struct PlanItemArg at line 1 column 13'),
        ('{"plan": [null]}', "invalid type: null, expected struct PlanItemArg at line 1 column 14"),
        ('{"plan": null}', "invalid type: null, expected a sequence at line 1 column 13"),
        ("{}", "missing field `plan` at line 1 column 2"),
        ('{"explanation": "x"}', "missing field `plan` at line 1 column 20"),
        ('{"plan": [{"step": "a"}]}', "missing field `status` at line 1 column 23"),
        ('{"plan": [{"status": "pending"}]}', "missing field `step` at line 1 column 31"),
        ('{"plan": [{}]}', "missing field `step` at line 1 column 12"),
        ('{"plan": [], "plan": []}', "duplicate field `plan` at line 1 column 19"),
        ('{"plan": [{"step": "a", "step": "b", "status": "pending"}]}', "duplicate field `step` at line 1 column 30"),
        ('{"plan": [["a"]]}', "invalid length 1, expected struct PlanItemArg with 2 elements at line 1 column 15"),
        ('{"plan": [[]]}', "invalid length 0, expected struct PlanItemArg with 2 elements at line 1 column 12"),
        ("[]", "invalid length 1, expected struct UpdatePlanArgs with 2 elements at line 1 column 2"),
        ("5", "invalid type: integer `5`, expected struct UpdatePlanArgs at line 1 column 1"),
        ("null", "invalid type: null, expected struct UpdatePlanArgs at line 1 column 4"),
        ('"plan"', 'invalid type: string "plan", expected struct UpdatePlanArgs at line 1 column 6'),
    ],
)
def test_it_rejects_what_serde_rejects_in_serde_words(api, arguments, message):
    api.tool("c1", chat('{"plan": [{"step": "keep me", "status": "pending"}]}'))
    response = api.tool("c1", chat(arguments))
    assert_refused(response, PREFIX + message)
    assert response.json()["error"]["details"]["line"] == 1
    assert api.revision("c1") == 1
    assert api.get("/api/v1/sessions/c1").json()["todos"][0]["content"] == "keep me"


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ("", "EOF while parsing a value at line 1 column 0"),
        ("   ", "EOF while parsing a value at line 1 column 3"),
        ('{"plan": []} x', "trailing characters at line 1 column 14"),
        ('{"plan": []}{"plan": []}', "trailing characters at line 1 column 13"),
        ('{"plan": [],}', "trailing comma at line 1 column 13"),
        ('{"plan": [{"step": "a", "status": "pending"},]}', "trailing comma at line 1 column 46"),
        ('{"plan": [{"step": "a", "status": "pending"}]', "EOF while parsing an object at line 1 column 45"),
        ('{"plan": [', "EOF while parsing a list at line 1 column 10"),
        ('{"plan" []}', "expected `:` at line 1 column 9"),
        ("{plan: []}", "key must be a string at line 1 column 2"),
        ('{"plan": [{"step": "a" "status": "pending"}]}', "expected `,` or `}` at line 1 column 24"),
        ('{"plan": [{"step": tru}]}', "expected ident at line 1 column 23"),
        ('{"plan": [{"step": "a\\x"}]}', "invalid escape at line 1 column 23"),
        ('{"plan": 01}', "invalid number at line 1 column 11"),
        ('{"plan": NaN}', "expected value at line 1 column 10"),
    ],
)
def test_it_reports_broken_json_like_serde(api, arguments, message):
    response = api.tool("c1", chat(arguments))
    assert_refused(response, PREFIX + message, status=400, code="invalid_json")
    assert api.revision("c1") is None


def test_it_reports_the_first_problem_in_text_order():
    # An unknown field before a bad status wins, and the reverse.
    assert parse_error('{"plan": [{"priority": 1, "step": "a", "status": "BAD"}]}').startswith(
        "unknown field `priority`"
    )
    assert parse_error('{"plan": [{"status": "BAD", "priority": 1}]}').startswith("unknown variant `BAD`")
    # A later item's problem does not hide an earlier one's.
    assert parse_error('{"plan": [{"step": 1}, {"x": 1}]}').startswith("invalid type: integer `1`")
    # An unknown top-level key after a broken plan loses to the plan.
    assert parse_error('{"plan": [{"step": "a"}], "foo": 1}') == "missing field `status` at line 1 column 23"
    # A missing field is only known at the closing brace, after any later problem in that object.
    assert parse_error('{"plan": [{"step": "a", "bogus": 1}]}').startswith("unknown field `bogus`")


def test_it_counts_lines_and_utf8_bytes_as_serde_does():
    raw = '{\n  "plan": [\n    {"step": "写测试", "status": "bad"}\n  ]\n}'
    # Line 3: 4 spaces, `{"step": ` (9), `"写测试"` (2 + 9 bytes), `, "status": ` (12), `"bad"` (5).
    assert parse_error(raw) == f"unknown variant `bad`, {VARIANTS} at line 3 column 41"
    assert parse_error('{"plan": "a\nb"}') == (
        "control character (\\u0000-\\u001F) found while parsing a string at line 2 column 0"
    )


def test_it_places_field_errors_after_whitespace_as_serde_does():
    # serde skips the whitespace before the colon before it places an unknown key.
    assert parse_error('{"foo"  : 1}') == "unknown field `foo`, expected `explanation` or `plan` at line 1 column 8"
    assert parse_error('{"explanation": "x"  }') == "missing field `plan` at line 1 column 22"


def test_it_refuses_lone_surrogates_as_serde_does():
    # (Through the API the envelope refuses them first: no database stores them.)
    assert (
        parse_error('{"plan": [["\\udc00", "pending"]]}') == "lone leading surrogate in hex escape at line 1 column 18"
    )
    assert parse_error('{"plan": [["\\ud800", "pending"]]}') == "unexpected end of hex escape at line 1 column 19"
    assert parse_error('{"plan": [["\\ud800\\u0041", "pending"]]}') == (
        "lone leading surrogate in hex escape at line 1 column 24"
    )


def test_it_shows_unexpected_numbers_and_strings_as_serde_does():
    assert parse_error('{"plan": -5}') == "invalid type: integer `-5`, expected a sequence at line 1 column 11"
    assert parse_error('{"plan": 1.5}') == "invalid type: floating point `1.5`, expected a sequence at line 1 column 12"
    assert (
        parse_error('{"plan": 1e3}') == "invalid type: floating point `1000.0`, expected a sequence at line 1 column 12"
    )
    assert parse_error('{"plan": -0}') == "invalid type: floating point `-0.0`, expected a sequence at line 1 column 11"
    big = "18446744073709551616"
    assert parse_error(f'{{"plan": {big}}}').startswith("invalid type: floating point `18446744073709552000.0`")
    assert parse_error('{"plan": 1e999}') == "number out of range at line 1 column 14"
    # An exponent past i32 fails at the digit that overflows, unless the number is 0 or tiny.
    assert parse_error('{"plan": 1e99999999999}') == "number out of range at line 1 column 21"
    assert parse_error('{"plan": 1e-99999999999}').startswith("invalid type: floating point `0.0`")
    assert parse_error('{"plan": "say \\"hi\\"\\n"}').startswith('invalid type: string "say \\"hi\\"\\n", expected')


def test_it_accepts_the_other_forms_serde_accepts():
    outcome = codex.call("update_plan", UNPARSED, [], raw='[null, [["a", "completed"]]]')
    assert [(i.content, i.status) for i in outcome.items] == [("a", "completed")]
    outcome = codex.call("update_plan", UNPARSED, [], raw='{"plan": [{"step": "a", "status": {"in_progress": null}}]}')
    assert outcome.items[0].status == "in_progress"
    outcome = codex.call("update_plan", UNPARSED, [], raw='{"plan": [["\\ud83d\\ude00 \\u00e9", "pending"]]}')
    assert outcome.items[0].content == "\U0001f600 é"


def test_it_scans_compact_json_for_the_plain_and_anthropic_forms(api):
    # No arguments text: the input is written as compact JSON and read like the model's text.
    plan = [{"step": "a", "status": "pending", "priority": "high"}]
    response = api.call("c1", "update_plan", {"plan": plan})
    assert_refused(response, PREFIX + "unknown field `priority`, expected `step` or `status` at line 1 column 50")
    block = {"type": "tool_use", "id": "toolu_1", "name": "update_plan", "input": {"plan": [{"step": "a"}]}}
    response = api.tool("c1", block)
    assert_refused(response, PREFIX + "missing field `status` at line 1 column 21")
    assert response.json()["reply"]["is_error"] is True
    assert api.revision("c1") is None


def test_it_reads_a_missing_plain_input_as_an_empty_object(api):
    response = api.tool("c1", {"tool": "update_plan"})
    assert_refused(response, PREFIX + "missing field `plan` at line 1 column 2")


def test_it_gives_the_model_the_real_schema():
    (definition,) = codex.definitions()
    assert definition.name == "update_plan"
    assert "in_progress" in definition.description
    schema = definition.input_schema
    assert schema["required"] == ["plan"]
    assert schema["additionalProperties"] is False
    assert schema["properties"]["plan"]["items"]["additionalProperties"] is False
    jsonschema.Draft7Validator.check_schema(schema)
    validator = jsonschema.Draft7Validator(schema)
    assert validator.is_valid({"explanation": "why", "plan": [{"step": "a", "status": "pending"}]})
    assert not validator.is_valid({"plan": [{"step": "a", "status": "pending", "priority": "high"}]})
    assert not validator.is_valid({"explanation": "why"})
