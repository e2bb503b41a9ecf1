"""Requests at the edges of HTTP, through the ASGI application as a server runs it
(the API's own handler, not the test client's): a NUL in the URL, header bytes that
Latin-1 reads as digits, a Host outside ALLOWED_HOSTS, paths and methods the API
does not have. Each is answered in the API's error shape, never with a 500."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import httpx
import pytest
from channels.testing import WebsocketCommunicator

from todoweb.asgi import application, django_asgi_app
from todoweb.models import Revision
from todoweb.serve.handlers import http_application

pytestmark = pytest.mark.django_db(transaction=True)

PLAN = {"todos": [{"content": "Write the fix", "status": "in_progress", "activeForm": "Writing the fix"}]}


@pytest.fixture
async def server() -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=application)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        yield client


def error_of(answer: httpx.Response, status: int, code: str) -> dict:
    assert answer.status_code == status, answer.content
    body = answer.json()
    assert body["ok"] is False and body["error"]["code"] == code, body
    return body


async def test_a_nul_in_the_url_is_refused_before_any_query(server, token, member):
    bearer = {"Authorization": f"Bearer {token}"}
    answer = await server.post("/api/v1/sessions/a%00b/tool", json={"tool": "TodoWrite", "input": PLAN}, headers=bearer)
    error = error_of(answer, 400, "invalid_input")
    assert error["error"]["message"] == "The URL may not contain the NUL character (%00)"
    error_of(await server.get("/api/v1/sessions?q=a%00b", headers=bearer), 400, "invalid_input")
    page = await server.get("/s/a%00b/")
    assert page.status_code == 400 and "NUL" in page.text
    assert (await server.get("/?q=%00")).status_code == 400
    socket = WebsocketCommunicator(application, "/ws/sessions/a\x00b/", headers=[(b"origin", b"http://127.0.0.1")])
    connected, _ = await socket.connect()
    assert not connected
    assert await Revision.objects.acount() == 0


@pytest.mark.parametrize("if_match", [b"\xb2", b'"\xb9"', b"3\xb3", b'W/"\xb2"'])
async def test_latin_1_digits_in_if_match_are_a_bad_header_not_a_crash(server, token, if_match):
    bearer = ("Authorization", f"Bearer {token}")
    assert (
        await server.post("/api/v1/sessions/s1/tool", json={"tool": "TodoWrite", "input": PLAN}, headers=[bearer])
    ).status_code == 200
    edit = {"todos": [{"content": "Write the fix", "status": "completed"}]}
    answer = await server.post("/api/v1/sessions/s1/edits", json=edit, headers=[bearer, (b"If-Match", if_match)])
    error_of(answer, 400, "invalid_if_match")
    again = await server.post(
        "/api/v1/sessions/s1/tool", json={"tool": "TodoWrite", "input": PLAN}, headers=[bearer, (b"If-Match", if_match)]
    )
    assert error_of(again, 400, "invalid_if_match")["reply"]["is_error"] is True
    assert await Revision.objects.acount() == 1


async def test_a_host_outside_allowed_hosts_is_a_400_not_a_500(server, token):
    bearer = {"Authorization": f"Bearer {token}"}
    await server.post("/api/v1/sessions/s1/tool", json={"tool": "TodoWrite", "input": PLAN}, headers=bearer)
    answer = await server.post("/api/v1/sessions/s1/share", json={}, headers=bearer | {"Host": "evil.example"})
    message = error_of(answer, 400, "disallowed_host")["error"]["message"]
    assert message == "The Host header 'evil.example' is not one this server answers to (ALLOWED_HOSTS)"


async def test_unknown_paths_and_methods_under_the_api_answer_in_its_error_shape(server, token):
    bearer = {"Authorization": f"Bearer {token}"}
    missing = error_of(await server.get("/api/v1/nope", headers=bearer), 404, "not_found")
    assert missing["error"]["message"] == "No such endpoint: GET /api/v1/nope (see /api/v1/docs)"
    error_of(await server.get("/api/v2/sessions"), 404, "not_found")
    wrong = await server.put("/api/v1/sessions/s1/tool", json={}, headers=bearer)
    body = error_of(wrong, 405, "method_not_allowed")
    assert body["error"]["details"] == {"allowed": ["POST"]} and wrong.headers["Allow"] == "POST"
    assert body["error"]["message"] == "Method not allowed: PUT /api/v1/sessions/s1/tool; it takes POST"


@pytest.mark.parametrize(
    "trusted, proxy, scheme",
    [(["127.0.0.1"], "127.0.0.1", "https"), (["127.0.0.1"], "203.0.113.7", "http"), ([], "127.0.0.1", "http")],
)
async def test_the_scheme_a_trusted_proxy_forwards_is_the_requests(token, settings, trusted, proxy, scheme):
    """Behind a proxy at an address in FORWARDED_ALLOW_IPS, an answer's links take the
    scheme it forwards; from any other address, or with no proxy configured (the
    default, even from this machine), not."""
    settings.FORWARDED_ALLOW_IPS = trusted
    bearer = {"Authorization": f"Bearer {token}", "X-Forwarded-Proto": "https"}
    transport = httpx.ASGITransport(app=http_application(django_asgi_app), client=(proxy, 5000))
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        await client.post("/api/v1/sessions/s1/tool", json={"tool": "TodoWrite", "input": PLAN}, headers=bearer)
        share = await client.post("/api/v1/sessions/s1/share", json={}, headers=bearer)
    assert share.status_code == 201, share.content
    assert share.json()["url"].startswith(f"{scheme}://127.0.0.1/s/")


HOOK = {
    "session_id": "s1",
    "hook_event_name": "PostToolUse",
    "tool_name": "TodoWrite",
    "tool_input": PLAN,
    "tool_response": {},
}
MCP_CALL = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "TodoWrite", "arguments": PLAN}}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"}
# Every JSON endpoint: (path, body, extra headers).
JSON_ENDPOINTS = {
    "tool endpoint": ("/api/v1/sessions/s1/tool", {"tool": "TodoWrite", "input": PLAN}, {}),
    "hook": ("/api/v1/hooks/claude-code", HOOK, {}),
    "edits": ("/api/v1/sessions/s1/edits", {"todos": PLAN["todos"]}, {}),
    "OTLP": ("/v1/logs", {"resourceLogs": []}, {}),
    "MCP": ("/mcp?session=s1", MCP_CALL, MCP_HEADERS),
}


@pytest.mark.parametrize("charset", ["utf-16", "UTF-16LE", "iso-8859-1", '"utf-32"'])
@pytest.mark.parametrize("endpoint", JSON_ENDPOINTS.values(), ids=JSON_ENDPOINTS.keys())
async def test_a_json_body_in_another_charset_than_utf_8_is_refused(server, token, endpoint, charset):
    path, body, extra = endpoint
    encoding = charset.strip('"').lower()
    headers = extra | {"Authorization": f"Bearer {token}", "Content-Type": f"application/json; charset={charset}"}
    answer = await server.post(path, content=json.dumps(body).encode(encoding), headers=headers)
    assert answer.status_code == 415, answer.text
    error = answer.json()["error"]
    declared = charset.strip('"')
    message = (
        f"The body is declared as charset={declared}; todoweb takes JSON in UTF-8 only: send UTF-8 text, "
        "with 'charset=utf-8' or no charset"
    )
    assert error["message"] == message
    assert error.get("data", {"code": error.get("code")})["code"] == "unsupported_media_type"
    assert await Revision.objects.acount() == 0


@pytest.mark.parametrize(
    "content_type", ["application/json", "application/json; charset=utf-8", "application/json; charset=UTF-8"]
)
async def test_a_json_body_in_utf_8_is_taken_with_or_without_its_charset(server, token, content_type):
    headers = {"Authorization": f"Bearer {token}", "Content-Type": content_type}
    write = {"tool": "TodoWrite", "input": PLAN}
    assert (
        await server.post("/api/v1/sessions/s1/tool", content=json.dumps(write), headers=headers)
    ).status_code == 200
    assert (
        await server.post("/api/v1/hooks/claude-code", content=json.dumps(HOOK), headers=headers)
    ).status_code == 200
    mcp = await server.post("/mcp?session=s1", content=json.dumps(MCP_CALL), headers=headers | MCP_HEADERS)
    assert mcp.status_code == 200, mcp.text
    otlp = await server.post("/v1/logs", content=b'{"resourceLogs": []}', headers=headers)
    assert otlp.status_code == 200, otlp.text
    assert await Revision.objects.acount() == 3
