"""A session's title from the tool call itself: the plain form's `title`, the
X-Todoweb-Title header, `?title=`; through the real URLs."""

from __future__ import annotations

import json
from urllib.parse import quote

import httpx
import pytest

from tests.conftest import assert_refused
from todoweb.models import Session

TODOS = {"todos": [{"content": "Fix the bug", "status": "in_progress", "activeForm": "Fixing the bug"}]}
HEADER = "X-Todoweb-Title"
ANTHROPIC = {"type": "tool_use", "id": "toolu_1", "name": "TodoWrite", "input": TODOS}


def plain(**extra) -> dict:
    return {"tool": "TodoWrite", "input": TODOS} | extra


def as_sent(text: str) -> str:
    """A header as a server hands it over: its UTF-8 bytes read as Latin-1."""
    return text.encode().decode("latin-1")


def title_of(api, key: str) -> str:
    return api.get(f"/api/v1/sessions/{key}").json()["session"]["title"]


def written(response) -> dict:
    assert response.status_code == 200, response.content
    return response.json()


def test_the_plain_forms_title_names_the_session(api):
    answer = written(api.tool("s1", plain(title="Fix the login bug")))
    assert answer["data"]["session"]["title"] == "Fix the login bug"
    assert title_of(api, "s1") == "Fix the login bug"


def test_the_header_names_the_session_whatever_the_envelope(api):
    written(api.tool("s1", ANTHROPIC, headers={HEADER: "From the header"}))
    assert title_of(api, "s1") == "From the header"


def test_the_query_parameter_names_the_session(api):
    written(api.tool("s1", ANTHROPIC, query="?title=" + quote("From the query")))
    assert title_of(api, "s1") == "From the query"


def test_the_body_wins_over_the_header_and_the_header_over_the_query(api):
    written(api.tool("s1", plain(title="body"), headers={HEADER: "header"}, query="?title=query"))
    assert title_of(api, "s1") == "body"
    written(api.tool("s1", plain(), headers={HEADER: "header"}, query="?title=query"))
    assert title_of(api, "s1") == "header"
    written(api.tool("s1", plain(), query="?title=query"))
    assert title_of(api, "s1") == "query"


def test_a_blank_title_is_no_title_and_the_next_source_counts(api):
    written(api.tool("s1", plain(title=" \t "), headers={HEADER: "header"}))
    assert title_of(api, "s1") == "header"
    written(api.tool("s1", plain(title=None), headers={HEADER: "  "}, query="?title=%20"))
    assert title_of(api, "s1") == "header"  # nothing given: the title stays


def test_a_write_without_a_title_keeps_the_title_and_a_rename_holds_until_a_title_comes(api):
    written(api.tool("s1", plain(title="First")))
    api.patch("/api/v1/sessions/s1", {"title": "Renamed by a person"})
    written(api.tool("s1", plain()))
    assert title_of(api, "s1") == "Renamed by a person"
    written(api.tool("s1", plain(title="Second")))
    assert title_of(api, "s1") == "Second"


def test_only_the_plain_form_has_a_title_field(api):
    written(api.tool("s1", ANTHROPIC | {"title": "not a field of tool_use"}))
    assert title_of(api, "s1") == ""


def test_the_callers_title_wins_over_the_one_the_tools_input_carries(api):
    arguments = json.dumps({"explanation": "Codex explains", "plan": [{"step": "Fix", "status": "in_progress"}]})
    call = {"id": "call_1", "type": "function", "function": {"name": "update_plan", "arguments": arguments}}
    written(api.tool("s1", call))
    assert title_of(api, "s1") == "Codex explains"
    written(api.tool("s1", call | {"id": "call_2"}, query="?title=Mine"))
    assert title_of(api, "s1") == "Mine"


def test_the_revision_keeps_the_title_it_was_written_with(api):
    written(api.tool("s1", plain(title="One")))
    written(api.tool("s1", plain(title="Two")))
    assert [r.title for r in Session.objects.get(key="s1").revisions.order_by("number")] == ["One", "Two"]


@pytest.mark.parametrize(
    ("where", "message"),
    [
        ("body", "'title' is longer than 500 characters (501)"),
        ("header", f"The {HEADER} header is longer than 500 characters (501)"),
        ("query", "The title parameter is longer than 500 characters (501)"),
    ],
)
def test_a_title_over_500_characters_is_refused_and_nothing_is_written(api, where, message):
    body, headers, query = plain(), {}, ""
    for length, expected in ((500, 200), (501, 422)):
        title = "题" * length  # characters, not bytes
        if where == "body":
            body = plain(title=title)
        elif where == "header":
            headers = {HEADER: as_sent(title)}
        else:
            query = "?title=" + quote(title)
        response = api.tool(f"s{length}", body, headers=headers, query=query)
        assert response.status_code == expected, response.content
    assert title_of(api, "s500") == "题" * 500
    refused = assert_refused(response, message)
    assert refused["reply"]["is_error"] is True  # the model is told, in its call's form
    assert api.revision("s501") is None


def test_a_title_that_wins_does_not_excuse_a_bad_one_elsewhere(api):
    response = api.tool("s1", plain(title="ok"), query="?title=" + "x" * 501)
    assert_refused(response, "The title parameter is longer than 500 characters (501)")
    assert api.revision("s1") is None


@pytest.mark.parametrize("value", [42, True, ["a"], {"a": 1}])
def test_a_body_title_that_is_not_text_is_refused(api, value):
    assert_refused(api.tool("s1", plain(title=value)), "'title' must be a string")
    assert api.revision("s1") is None


HOSTILE = [
    ("<script>alert(1)</script>", "<script>alert(1)</script>"),  # kept as text, escaped where shown
    ("Ship 🚀 v2 👩‍💻", "Ship 🚀 v2 👩‍💻"),  # a ZWJ sequence stays whole
    ("修复登录错误", "修复登录错误"),
    ("red\x1b[31m alert\x07 done", "red [31m alert done"),
    ("two\nlines\r\n\tand tabs", "two lines and tabs"),
    ("del\x7fand c1\x85\x9b", "del and c1"),
    ("  padded   words  ", "padded words"),
]


@pytest.mark.parametrize(
    ("where", "given", "stored"),
    [
        (where, given, stored)
        for where in ("body", "header", "query")
        for given, stored in HOSTILE
        # HTTP itself has no line break inside a header.
        if not (where == "header" and ("\n" in given or "\r" in given))
    ],
)
def test_hostile_titles_are_stored_as_text_on_one_line(api, where, given, stored):
    if where == "body":
        response = api.tool("s1", plain(title=given))
    elif where == "header":
        response = api.tool("s1", plain(), headers={HEADER: as_sent(given)})
    else:
        response = api.tool("s1", plain(), query="?title=" + quote(given))
    assert written(response)["data"]["session"]["title"] == stored


def test_the_header_takes_rfc_8187s_percent_escaped_utf8(api):
    written(api.tool("s1", plain(), headers={HEADER: "UTF-8''" + quote("修复 🚀")}))
    assert title_of(api, "s1") == "修复 🚀"
    written(api.tool("s1", plain(), headers={HEADER: "utf-8''100%25 done"}))
    assert title_of(api, "s1") == "100% done"
    response = api.tool("s2", plain(), headers={HEADER: "UTF-8''%FF%FE"})
    assert_refused(response, f"{HEADER}: the percent-escapes after UTF-8'' are not UTF-8")
    assert api.revision("s2") is None


def test_a_latin1_header_is_read_as_latin1(api):
    written(api.tool("s1", plain(), headers={HEADER: "caf\xe9"}))  # one byte 0xE9: not UTF-8
    assert title_of(api, "s1") == "café"


def test_the_same_call_with_the_same_title_is_replayed_and_with_another_is_a_conflict(api):
    first = written(api.tool("s1", plain(id="c1", title="One")))
    again = api.tool("s1", plain(id="c1", title="One"))
    assert again.headers["Idempotent-Replayed"] == "true" and again.json() == first
    assert_refused(api.tool("s1", plain(id="c1", title="Two")), code="idempotency_conflict")
    assert_refused(api.tool("s1", plain(id="c1"), query="?title=Two"), code="idempotency_conflict")
    assert title_of(api, "s1") == "One" and api.revision("s1") == 1


def test_a_call_without_a_title_keeps_its_fingerprint():
    """Calls stored before titles existed are still replayed: no title, no change."""
    from todoweb.calls.envelopes import parse_call, with_title

    body = plain(id="c1")
    call = parse_call(body)
    assert with_title(call, body, header=None, query=None).fingerprint() == call.fingerprint()
    assert with_title(call, body, header="T", query=None).fingerprint() != call.fingerprint()


def test_the_title_shows_escaped_on_the_dashboard_and_the_panel(api, client, member):
    client.force_login(member)
    hostile = "<img src=x onerror=alert(1)> 修复 🚀"
    written(api.tool("s1", plain(title=hostile)))
    session = Session.objects.get(key="s1")
    escaped = "&lt;img src=x onerror=alert(1)&gt; 修复 🚀"
    dashboard = client.get("/").content.decode()
    panel = client.get(session.get_absolute_url()).content.decode()
    for html in (dashboard, panel):
        assert "<img src=x" not in html and escaped in html
    assert f'<a class="card-title" href="{session.get_absolute_url()}">{escaped}</a>' in dashboard
    assert f'<h1 id="title">{escaped}</h1>' in panel


def test_summaries_carry_the_title(api):
    written(api.tool("s1", plain(), query="?title=" + quote("Listed")))
    [summary] = api.get("/api/v1/sessions").json()["sessions"]
    assert summary["title"] == "Listed"


def test_the_openapi_schema_describes_the_three_ways(api):
    schema = api.get("/api/v1/openapi.json").json()
    operation = schema["paths"]["/api/v1/sessions/{session_key}/tool"]["post"]
    parameters = {(p["in"], p["name"]): p for p in operation["parameters"]}
    assert parameters[("header", HEADER)]["schema"] == {"type": "string", "maxLength": 500}
    assert parameters[("query", "title")]["schema"] == {"type": "string", "maxLength": 500}
    assert "wins over the header" in parameters[("query", "title")]["description"]
    forms = operation["requestBody"]["content"]["application/json"]["schema"]["oneOf"]
    [plain_form] = [form for form in forms if form["title"] == "Plain form"]
    assert plain_form["properties"]["title"]["maxLength"] == 500


def test_a_real_server_reads_a_raw_utf8_header(asgi_server, token):
    """Over real HTTP, where the header's bytes reach the server as they were sent."""
    title = "修复 🚀 <b>"
    response = httpx.post(
        f"{asgi_server.url}/api/v1/sessions/s1/tool",
        json=plain(),
        headers={"Authorization": f"Bearer {token}", HEADER: title.encode()},
    )
    assert response.status_code == 200, response.text
    assert response.json()["data"]["session"]["title"] == title
