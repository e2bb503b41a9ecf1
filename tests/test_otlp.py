"""The OTLP receiver (`POST /v1/logs`, `/v1/traces`) with exports the real agents sent
(tests/fixtures/otlp: captured from Claude Code 2.1.197, Codex 0.169.0, Gemini CLI
0.61.0, Qwen Code 0.15.10 and opencode 1.18.33, cut down to their todo calls and a
few other records): each known todo call is the tool endpoint's write, once, in the
agent's order; everything else is accepted and dropped; bad exports are refused and
write nothing."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from google.protobuf.json_format import ParseDict
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest, ExportLogsServiceResponse

from todoweb.models import Revision, Session

FIXTURES = Path(__file__).parent / "fixtures" / "otlp"
PROTOBUF = "application/x-protobuf"

CODEX_SESSION = "01a21046-a598-76f2-89c1-504ee2aabb7c"
CODEX_STEPS = [
    [("Read the code", "in_progress"), ("Fix the bug", "pending"), ("Run the tests", "pending")],
    [("Read the code", "completed"), ("Fix the bug", "in_progress"), ("Run the tests", "pending")],
]
# Each fixture: the session its agent's calls go to, and the plan after each call.
EXPORTS = {
    "codex-logs.json": ("/v1/logs", CODEX_SESSION, "codex", CODEX_STEPS),
    "codex-logs.bin": ("/v1/logs", "01a21046-d184-7ce1-a937-eba70bd5e7fe", "codex", CODEX_STEPS),
    "gemini-cli-logs.json": (
        "/v1/logs",
        "31247e04-490e-48cd-bfcf-fcb33a722afd",
        "gemini",
        [
            [
                ("Read the checkout code", "in_progress"),
                ("Round the total once", "pending"),
                ("Run the tests", "pending"),
            ],
            [
                ("Read the checkout code", "completed"),
                ("Round the total once", "in_progress"),
                ("Run the tests", "pending"),
            ],
        ],
    ),
    "qwen-code-logs.json": (
        "/v1/logs",
        "41b25b21-88f1-4df3-b1fe-cceb35924857",
        "qwen",
        [
            [
                ("Read the checkout code", "in_progress"),
                ("Round the total once", "pending"),
                ("Run the tests", "pending"),
            ],
            [
                ("Read the checkout code", "completed"),
                ("Round the total once", "in_progress"),
                ("Run the tests", "pending"),
            ],
        ],
    ),
    "opencode-traces.json": (
        "/v1/traces",
        "ses_defb61f9effebYNp3J6Iiv0E3x",
        "opencode",
        [
            [
                ("Read the checkout code", "in_progress"),
                ("Round the total once", "pending"),
                ("Run the tests", "pending"),
            ]
        ],
    ),
}


def export(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def post(client, token: str, path: str, body: bytes, content_type: str = "application/json", encoding: str = ""):
    headers = {"Authorization": f"Bearer {token}"} | ({"Content-Encoding": encoding} if encoding else {})
    return client.post(path, data=body, content_type=content_type, headers=headers)


def plans(key: str) -> list[list[tuple[str, str]]]:
    revisions = Revision.objects.filter(session__key=key).order_by("number")
    return [[(todo["content"], todo["status"]) for todo in revision.todos] for revision in revisions]


def log_record(event: str, **attributes: Any) -> dict[str, Any]:
    """A log record as OTLP/JSON writes it, attributes as strings and numbers."""

    def value(found: Any) -> dict[str, Any]:
        return {"intValue": found} if isinstance(found, int) else {"stringValue": found}

    items = [{"key": "event.name", "value": {"stringValue": event}}]
    items += [{"key": key.replace("__", "."), "value": value(found)} for key, found in attributes.items()]
    return {"timeUnixNano": str(attributes.pop("time", 0)), "attributes": items}


def logs_export(*records: dict[str, Any]) -> bytes:
    return json.dumps({"resourceLogs": [{"scopeLogs": [{"logRecords": list(records)}]}]}).encode()


def codex_call(session: str, call_id: str, plan: list[tuple[str, str]], time: int, seq: int) -> dict[str, Any]:
    arguments = json.dumps({"plan": [{"step": step, "status": status} for step, status in plan]})
    record = log_record(
        "codex.tool_result",
        tool_name="update_plan",
        call_id=call_id,
        arguments=arguments,
        conversation__id=session,
        tool_result_seq=seq,
    )
    record["timeUnixNano"] = str(time)
    return record


@pytest.mark.parametrize("name", list(EXPORTS))
def test_it_writes_each_agents_todo_calls_from_its_real_export(client, token, name):
    path, key, dialect, steps = EXPORTS[name]
    content_type = PROTOBUF if name.endswith(".bin") else "application/json"
    response = post(client, token, path, export(name), content_type)
    assert response.status_code == 200, response.content
    assert response["Content-Type"] == content_type
    if content_type == PROTOBUF:
        assert not ExportLogsServiceResponse.FromString(response.content).HasField("partial_success")
    else:
        assert response.json() == {}
    assert plans(key) == steps
    session = Session.objects.get(key=key)
    assert (session.dialect, session.revision, session.reach_warning) == (dialect, len(steps), "")


def test_an_export_sent_again_writes_nothing_new(client, token):
    for _ in range(2):
        assert post(client, token, "/v1/logs", export("gemini-cli-logs.json")).status_code == 200
    assert len(plans("31247e04-490e-48cd-bfcf-fcb33a722afd")) == 2


def test_the_hook_and_the_export_of_one_call_write_it_once(client, token):
    """Codex's hook posts the call first; its export, with the same call id, replays it."""
    hook = {
        "session_id": CODEX_SESSION,
        "hook_event_name": "PostToolUse",
        "tool_name": "update_plan",
        "tool_use_id": "call_fake_0_0",
        "tool_input": {
            "explanation": "Start with the checkout code",
            "plan": [
                {"step": "Read the code", "status": "in_progress"},
                {"step": "Fix the bug", "status": "pending"},
                {"step": "Run the tests", "status": "pending"},
            ],
        },
    }
    answer = client.post(
        "/api/v1/hooks/codex", data=hook, content_type="application/json", headers={"Authorization": f"Bearer {token}"}
    )
    assert answer.status_code == 200, answer.content
    assert post(client, token, "/v1/logs", export("codex-logs.json")).status_code == 200
    assert plans(CODEX_SESSION) == CODEX_STEPS


def test_calls_are_written_in_the_order_the_agent_made_them(client, token):
    first = [("Plan", "in_progress")]
    second = [("Plan", "completed"), ("Build", "in_progress")]
    # The export lists the later call first; the times (and the sequence) say otherwise.
    body = logs_export(codex_call("ordered", "c2", second, 2_000, 2), codex_call("ordered", "c1", first, 1_000, 1))
    assert post(client, token, "/v1/logs", body).status_code == 200
    assert plans("ordered") == [first, second]


def test_a_gzipped_export_is_read(client, token):
    body = gzip.compress(export("qwen-code-logs.json"))
    assert post(client, token, "/v1/logs", body, encoding="gzip").status_code == 200
    assert len(plans("41b25b21-88f1-4df3-b1fe-cceb35924857")) == 2


@pytest.mark.parametrize("name", ["claude-code-logs.json", "claude-code-logs.bin"])
def test_claude_codes_cut_todowrite_is_not_written_and_the_board_says_why(client, token, name):
    """Claude Code's telemetry sends TodoWrite's items as "<nested>": nothing is
    written, the answer counts the refused records, and the session's panel warns."""
    content_type = PROTOBUF if name.endswith(".bin") else "application/json"
    response = post(client, token, "/v1/logs", export(name), content_type)
    assert response.status_code == 200
    if content_type == PROTOBUF:
        partial = ExportLogsServiceResponse.FromString(response.content).partial_success
        rejected, message = partial.rejected_log_records, partial.error_message
    else:
        partial = response.json()["partialSuccess"]
        rejected, message = int(partial["rejectedLogRecords"]), partial["errorMessage"]
    assert rejected == 2 and "its arguments arrived cut by the exporter" in message
    [session] = Session.objects.all()
    assert session.revision == 0 and "use the Task* tools" in session.reach_warning


def test_the_panel_shows_the_warning(client, token, member):
    post(client, token, "/v1/logs", export("claude-code-logs.json"))
    session = Session.objects.get()
    client.force_login(member)
    page = client.get(session.get_absolute_url())
    assert page.status_code == 200
    assert b'id="reach-warning"' in page.content and b"cut the arguments of its TodoWrite calls" in page.content


def test_claude_codes_task_tools_come_whole_and_are_written(client, token):
    """TaskCreate and TaskUpdate take flat inputs, which Claude Code's telemetry keeps."""
    create = log_record(
        "tool_result",
        tool_name="TaskCreate",
        tool_use_id="toolu_1",
        tool_input=json.dumps({"subject": "Fix the bug", "description": "Round once", "activeForm": "Fixing"}),
        session__id="claude-tasks",
        event__sequence=1,
    )
    update = log_record(
        "tool_result",
        tool_name="TaskUpdate",
        tool_use_id="toolu_2",
        tool_input=json.dumps({"taskId": "1", "status": "in_progress"}),
        session__id="claude-tasks",
        event__sequence=2,
    )
    for record in (create, update):
        record["body"] = {"stringValue": "claude_code.tool_result"}
    assert post(client, token, "/v1/logs", logs_export(create, update)).status_code == 200
    assert plans("claude-tasks") == [[("Fix the bug", "pending")], [("Fix the bug", "in_progress")]]


def test_everything_else_is_accepted_and_dropped(client, token):
    records = [log_record("api_request", model="m", cost_usd=1, time=i) for i in range(1000)]
    records.append(
        log_record("codex.tool_result", tool_name="shell", call_id="x", arguments="{}", conversation__id="s")
    )
    response = post(client, token, "/v1/logs", logs_export(*records))
    assert response.status_code == 200 and response.json() == {}
    metrics = post(client, token, "/v1/metrics", b'{"resourceMetrics": []}')
    assert metrics.status_code == 200 and metrics.json() == {}
    assert not Session.objects.exists()


def test_a_list_the_dialect_refuses_is_reported_and_the_rest_written(client, token):
    good = codex_call("mixed", "c1", [("Plan", "in_progress")], 1_000, 1)
    bad = codex_call("mixed", "c2", [("Plan", "done-ish")], 2_000, 2)
    response = post(client, token, "/v1/logs", logs_export(good, bad))
    assert response.status_code == 200
    partial = response.json()["partialSuccess"]
    assert (
        partial["rejectedLogRecords"] == "1" and "Codex's update_plan call in session mixed" in partial["errorMessage"]
    )
    assert plans("mixed") == [[("Plan", "in_progress")]]


@pytest.mark.parametrize(
    ("body", "content_type", "encoding", "status", "code"),
    [
        (b"[not an export]", "application/json", "", 400, "invalid_json"),
        (b'{"resourceLogs": [{"codex.tool_result"', "application/json", "", 400, "invalid_json"),
        (b"\xff\x00 not protobuf codex.tool_result", PROTOBUF, "", 400, "invalid_body"),
        (b"{}", "text/plain", "", 415, "unsupported_media_type"),
        (b"{}", "application/json", "br", 415, "unsupported_media_type"),
        (b"not gzip", "application/json", "gzip", 400, "invalid_body"),
    ],
    ids=["not-an-object", "bad-json", "bad-protobuf", "content-type", "encoding", "bad-gzip"],
)
def test_a_bad_export_is_refused_and_writes_nothing(client, token, body, content_type, encoding, status, code):
    response = post(client, token, "/v1/logs", body, content_type, encoding)
    assert response.status_code == status and response.json()["error"]["code"] == code, response.content
    assert not Session.objects.exists()


def test_it_needs_a_write_token(client, token, read_token):
    body = export("codex-logs.json")
    assert client.post("/v1/logs", data=body, content_type="application/json").status_code == 401
    assert post(client, "tw_unknown", "/v1/logs", body).status_code == 401
    assert post(client, read_token, "/v1/logs", body).status_code == 403
    assert client.get("/v1/logs", headers={"Authorization": f"Bearer {token}"}).status_code == 405
    assert not Session.objects.exists()


def test_an_export_over_the_limit_is_refused_before_and_after_gzip(client, token, settings):
    settings.TODOWEB_OTLP_MAX_BODY_BYTES = 50_000
    big = logs_export(*[log_record("api_request", padding="x" * 1000) for _ in range(100)])
    assert len(big) > 50_000
    assert post(client, token, "/v1/logs", big).status_code == 413
    bomb = gzip.compress(big)
    assert len(bomb) < 50_000
    response = post(client, token, "/v1/logs", bomb, encoding="gzip")
    assert response.status_code == 413 and "TODOWEB_OTLP_MAX_BODY_BYTES" in response.json()["error"]["message"]


def test_hostile_text_in_an_export_is_stored_as_text(client, token):
    hostile = '<script>alert("x")</script> \u202e 🚀 修复'
    body = logs_export(codex_call("hostile", "h1", [(hostile, "in_progress")], 1, 1))
    assert post(client, token, "/v1/logs", body).status_code == 200
    assert plans("hostile") == [[(hostile, "in_progress")]]


@pytest.mark.django_db(transaction=True)
def test_a_chunked_protobuf_export_over_http(asgi_server, token):
    """As Claude Code, Gemini CLI and Qwen Code send it: no Content-Length."""
    message = ParseDict(json.loads(export("codex-logs.json")), ExportLogsServiceRequest())
    body = message.SerializeToString()

    def chunks():
        for start in range(0, len(body), 1000):
            yield body[start : start + 1000]

    response = httpx.post(
        f"{asgi_server.url}/v1/logs",
        content=chunks(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": PROTOBUF},
    )
    assert response.status_code == 200 and response.headers["content-type"] == PROTOBUF
    assert plans(CODEX_SESSION) == CODEX_STEPS
