"""Every error the tool endpoint answers: its HTTP status, code, message, and nothing written."""

from __future__ import annotations

import json

import pytest
from django.db import InterfaceError, OperationalError
from django.test import Client

from tests.conftest import Api, assert_refused
from todoweb.models import ApiToken, Revision, Session
from todoweb.store import sql

WRITE = {"todos": [{"content": "a", "status": "pending", "activeForm": "doing a"}]}


def assert_error(r, status, code):
    return assert_refused(r, status=status, code=code)


def test_it_rejects_a_body_that_is_not_json(api):
    body = assert_error(api.tool("s1", "{not json"), 400, "invalid_json")
    assert "not valid JSON" in body["error"]["message"]
    assert "reply" not in body


@pytest.mark.parametrize("bad", ["NaN", '{"tool": "TodoWrite", "input": {"x": Infinity}}', "[" * 5000 + "]" * 5000])
def test_it_rejects_json_extensions_and_deep_nesting(api, bad):
    assert_error(api.tool("s1", bad), 400, "invalid_json")


def test_it_rejects_arguments_that_are_not_a_json_object_with_a_reply(api):
    body = {"id": "call_7", "type": "function", "function": {"name": "TodoWrite", "arguments": "{oops"}}
    answer = assert_error(api.tool("s1", body), 400, "invalid_json")
    assert answer["reply"] == {"role": "tool", "tool_call_id": "call_7", "content": answer["error"]["message"]}
    body["function"]["arguments"] = {"todos": []}
    answer = assert_error(api.tool("s1", body), 400, "invalid_json")
    assert answer["reply"]["tool_call_id"] == "call_7"


@pytest.mark.parametrize("body", [[], '"just a string"', 42, {"hello": "world"}, {"type": "tool_use", "name": ""}])
def test_it_rejects_bodies_that_are_no_tool_call(api, body):
    assert_error(api.tool("s1", body), 422, "invalid_input")


def test_it_requires_a_token():
    r = Client().post(
        "/api/v1/sessions/s1/tool", data=json.dumps({"tool": "TodoRead"}), content_type="application/json"
    )
    assert_error(r, 401, "unauthorized")


def test_it_tells_why_in_the_401_challenge_and_names_no_authorization_server(db):
    r = Client().post(
        "/api/v1/sessions/s1/tool",
        data=json.dumps({"tool": "TodoRead"}),
        content_type="application/json",
        headers={"Authorization": "Bearer tw_nope"},
    )
    assert_error(r, 401, "unauthorized")
    assert r["WWW-Authenticate"] == (
        'Bearer realm="todoweb", error="invalid_token", error_description="Unknown or revoked API token", '
        'resource_metadata="http://testserver/.well-known/oauth-protected-resource"'
    )
    metadata = Client().get("/.well-known/oauth-protected-resource")
    assert metadata.status_code == 200
    assert metadata.json() == {
        "resource": "http://testserver",
        "resource_name": "todoweb",
        "bearer_methods_supported": ["header"],
    }


def test_it_tells_a_token_sent_without_bearer_how_to_send_it(db):
    r = Client().get("/api/v1/sessions", headers={"Authorization": "tw_abc"})
    body = assert_error(r, 401, "unauthorized")
    assert body["error"]["message"] == (
        "The Authorization header holds a token without its scheme: "
        "send 'Authorization: Bearer <token>' (or 'X-Api-Key: <token>')"
    )


def test_it_rejects_an_unknown_token_with_a_reply(db):
    r = Client().post(
        "/api/v1/sessions/s1/tool",
        data=json.dumps({"type": "tool_use", "id": "toolu_1", "name": "TodoWrite", "input": WRITE}),
        content_type="application/json",
        headers={"Authorization": "Bearer tw_nope"},
    )
    body = assert_error(r, 401, "unauthorized")
    assert body["reply"]["tool_use_id"] == "toolu_1"
    assert body["reply"]["is_error"] is True


def test_it_rejects_a_revoked_token(api, token):
    ApiToken.objects.update(revoked_at="2026-01-01T00:00:00Z")
    assert_error(api.call("s1", "TodoWrite", WRITE), 401, "unauthorized")


def test_it_forbids_writes_with_a_read_token(read_api):
    assert_error(read_api.call("s1", "TodoWrite", WRITE), 403, "forbidden")
    assert not Session.objects.exists()


def test_it_allows_reads_with_a_read_token(api, read_api):
    api.call("s1", "TodoWrite", WRITE)
    assert read_api.get("/api/v1/sessions/s1").status_code == 200


def test_it_hides_other_projects_sessions(api, db):
    from todoweb.writes.tokens import token_create

    api.call("s1", "TodoWrite", WRITE)
    _, other, _ = token_create(project_slug="other")
    assert_error(Api(other).get("/api/v1/sessions/s1"), 404, "not_found")


def test_it_answers_404_for_a_missing_session(api):
    assert_error(api.get("/api/v1/sessions/nope"), 404, "not_found")
    assert_error(api.get("/api/v1/sessions/nope/revisions"), 404, "not_found")


def test_it_answers_409_on_a_stale_if_match_with_the_current_data(api):
    api.call("s1", "TodoWrite", WRITE)
    r = api.call("s1", "TodoWrite", {"todos": []}, headers={"If-Match": '"0"'})
    body = assert_error(r, 409, "revision_conflict")
    assert body["data"]["revision"] == 1
    assert body["data"]["todos"][0]["content"] == "a"
    assert api.call("s1", "TodoWrite", {"todos": []}, headers={"If-Match": "1"}).status_code == 200


def test_it_answers_409_on_a_stale_expected_revision_in_the_body(api):
    api.call("s1", "TodoWrite", WRITE)
    body = {"tool": "TodoWrite", "input": WRITE, "expected_revision": 5}
    assert_error(api.tool("s1", body), 409, "revision_conflict")
    assert Revision.objects.count() == 1


def test_it_refuses_a_body_over_the_limit(api, settings):
    settings.TODOWEB_MAX_BODY_BYTES = 1000
    big = {
        "type": "tool_use",
        "id": "toolu_big",
        "name": "TodoWrite",
        "input": {"todos": [{"content": "x" * 2000, "status": "pending", "activeForm": "a"}]},
    }
    answer = assert_error(api.tool("s1", big), 413, "payload_too_large")
    size = len(json.dumps(big))
    message = f"The body is {size:,} bytes; todoweb takes at most 1,000 (the server's TODOWEB_MAX_BODY_BYTES)"
    assert answer["error"]["message"] == message
    # The model is told, in its own reply, that its list is too large.
    assert answer["reply"] == {"type": "tool_result", "tool_use_id": "toolu_big", "content": message, "is_error": True}
    assert not Session.objects.exists()


def test_a_body_far_over_the_limit_is_refused_without_reading_it(api, settings):
    settings.TODOWEB_MAX_BODY_BYTES = 1000
    huge = {"tool": "TodoWrite", "id": "c1", "input": {"todos": [], "pad": "x" * 10_000}}
    answer = assert_error(api.tool("s1", huge), 413, "payload_too_large")
    assert "reply" not in answer


def test_it_refuses_a_body_over_djangos_own_limit(api, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 100
    r = api.client.post(
        "/api/v1/sessions/s1/tool",
        data=json.dumps({"tool": "TodoWrite", "input": {"todos": [], "pad": "x" * 500}}),
        content_type="application/json",
        headers=api.headers,
    )
    assert_error(r, 413, "payload_too_large")


def test_it_requires_json_content_type(api):
    r = api.client.post(
        "/api/v1/sessions/s1/tool", data="tool=TodoRead", content_type="text/plain", headers=api.headers
    )
    assert_error(r, 415, "unsupported_media_type")


@pytest.mark.parametrize("key", ["a" * 201, "has space", "semi;colon", "émoji🚀"])
def test_it_rejects_bad_session_keys(api, key):
    assert_error(api.call(key, "TodoWrite", WRITE), 422, "invalid_input")


def test_it_accepts_every_allowed_key_character(api):
    assert api.call("A-z_0.9:x@y", "TodoWrite", WRITE).status_code == 200


def test_it_refuses_text_no_database_can_store(api):
    for bad in ["nul\u0000byte", "\ud800lone"]:
        args = {"todos": [{"content": bad, "status": "pending", "activeForm": "a"}]}
        assert_error(api.call("s1", "TodoWrite", args), 422, "invalid_input")
    raw = '{"id":"c","type":"function","function":{"name":"TodoWrite","arguments":"{\\"todos\\":[{\\"content\\":\\"\\\\u0000\\"}]}"}}'
    assert_error(api.tool("s1", raw), 422, "invalid_input")
    assert not Session.objects.exists()


def test_it_rejects_bad_query_parameters(api):
    assert_error(api.call("s1", "TodoWrite", WRITE, query="?reply=loud"), 422, "invalid_input")
    assert_error(api.get("/api/v1/sessions?limit=0"), 422, "invalid_input")
    assert_error(api.get("/api/v1/sessions?cursor=%%%"), 422, "invalid_input")
    assert_error(api.get("/api/v1/tools?dialects=nope"), 422, "invalid_input")


def test_it_rejects_a_bad_if_match(api):
    assert_error(api.call("s1", "TodoWrite", WRITE, headers={"If-Match": "abc"}), 400, "invalid_if_match")
    assert_error(api.tool("s1", {"tool": "TodoWrite", "input": WRITE, "expected_revision": "1"}), 422, "invalid_input")


def test_it_caps_text_the_database_limits_on_every_backend(api):
    long_title = "t" * 600
    r = api.call("s1", "update_plan", {"explanation": long_title, "plan": [{"step": "a", "status": "pending"}]})
    assert r.status_code == 200
    assert r.json()["data"]["session"]["title"] == long_title[:500]
    api.call("s2", "TaskCreate", {"subject": "a", "description": "d"})
    r = api.call("s2", "TaskUpdate", {"taskId": "1", "owner": "o" * 300})
    assert_error(r, 422, "invalid_input")
    assert "owner" in r.json()["error"]["message"]
    assert_error(api.get("/api/v1/sessions?q=a%00b"), 422, "invalid_input")


def test_it_still_answers_a_committed_write_when_the_channel_layer_fails(api, monkeypatch):
    from channels.layers import get_channel_layer

    from todoweb.live.layer import ProcessLayer

    async def broken(group, event):
        raise ConnectionError("channel layer down")

    def broken_put(frames):
        raise RuntimeError("queues gone")

    layer = get_channel_layer()
    if isinstance(layer, ProcessLayer):  # the one process's layer, which writes publish to at once
        monkeypatch.setattr(layer, "put_frames", broken_put)
    else:
        monkeypatch.setattr(layer, "group_send", broken)
    r = api.call("s1", "TodoWrite", WRITE)
    assert r.status_code == 200
    assert r.json()["data"]["revision"] == 1


@pytest.mark.parametrize("failure", [OperationalError("server closed the connection"), InterfaceError("gone")])
def test_a_database_out_of_reach_is_a_503_with_retry_after_and_a_reply(api, monkeypatch, failure):
    def unreachable(*args, **kwargs):
        raise failure

    monkeypatch.setattr(sql, "token_and_session", unreachable)
    r = api.tool("s1", {"type": "tool_use", "id": "call_9", "name": "TodoWrite", "input": WRITE})
    answer = assert_error(r, 503, "unavailable")
    assert r["Retry-After"] == "1"
    assert "nothing was written" in answer["error"]["message"]
    assert answer["reply"]["tool_use_id"] == "call_9"
    assert not Revision.objects.exists()
