"""The OTLP/HTTP receiver: `POST /v1/logs`, `/v1/traces` (and `/v1/metrics`, accepted
and dropped, since exporters send them to the same base URL).

An agent whose telemetry points here (`OTEL_EXPORTER_OTLP_ENDPOINT`, with the token in
`OTEL_EXPORTER_OTLP_HEADERS`) puts its plan on the board with no hook and no MCP:
each todo tool call found in an export (calls.telemetry) is the same write the tool
endpoint makes, keyed by the call id (so a hook and the export together write once)
and in the order the agent made them. Protobuf and JSON, gzip, chunked bodies.

Exporters retry an answer of 429 or 5xx and drop the rest, so a call the board
refuses (a truncated input, a list its dialect refuses) is reported in the answer's
`partialSuccess` and logged, never turned into an error that would make the exporter
send the whole batch again.
"""

from __future__ import annotations

import importlib
import logging
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson
from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from todoweb.calls.envelopes import ToolCall
from todoweb.calls.errors import ApiError, InvalidJson, TodowebError
from todoweb.calls.jsonio import loads
from todoweb.calls.telemetry import TelemetryCall, calls_in_logs, calls_in_traces, may_hold_calls
from todoweb.models import ApiToken
from todoweb.store.database import in_database_thread
from todoweb.web.api.body import content_length
from todoweb.web.api.errors import error_response
from todoweb.web.auth import require_write, token_auth
from todoweb.web.recording import record_call_of
from todoweb.writes import telemetry_warnings
from todoweb.writes.record import CallRequest

if TYPE_CHECKING:
    from google.protobuf.message import Message

logger = logging.getLogger(__name__)

PROTOBUF = "application/x-protobuf"


@dataclass(frozen=True)
class Signal:
    """One OTLP signal: its export's messages (named, in opentelemetry-proto's module
    `service`: protobuf is imported by the first export, as it costs a process 3 MB),
    the calls found in it, and the answer's field that counts what was refused."""

    service: str
    kind: str  # ExportLogsServiceRequest and ExportLogsServiceResponse: "Logs"
    find_calls: Callable[[dict[str, Any]], list[TelemetryCall]]
    rejected_field: str

    def request_type(self) -> type[Message]:
        return getattr(self.module(), f"Export{self.kind}ServiceRequest")

    def response_type(self) -> type[Message]:
        return getattr(self.module(), f"Export{self.kind}ServiceResponse")

    def module(self) -> Any:
        return importlib.import_module(f"opentelemetry.proto.collector.{self.service}")


LOGS = Signal("logs.v1.logs_service_pb2", "Logs", calls_in_logs, "rejected_log_records")
TRACES = Signal("trace.v1.trace_service_pb2", "Trace", calls_in_traces, "rejected_spans")
# Metrics hold no tool calls: read (a broken one is refused) and dropped.
METRICS = Signal("metrics.v1.metrics_service_pb2", "Metrics", lambda export: [], "rejected_data_points")


def receiver(signal: Signal) -> Callable[[HttpRequest], Any]:
    @csrf_exempt
    async def receive(request: HttpRequest) -> HttpResponse:
        if request.method != "POST":
            return JsonResponse(
                {"ok": False, "error": {"code": "method_not_allowed", "message": "POST only"}}, status=405
            )
        try:
            token = await in_database_thread(write_token, request)
            body = read_body(request)
            calls = found_calls(signal, body, request.content_type)
        except Exception as error:
            return error_response(request, error)
        rejected = [problem for call in calls if (problem := await record(token, call))]
        return answer(signal, request.content_type, rejected)

    return receive


def write_token(request: HttpRequest) -> ApiToken:
    token = token_auth(request)
    require_write(token)
    return token


def read_body(request: HttpRequest) -> bytes:
    """The export, unzipped, within TODOWEB_OTLP_MAX_BODY_BYTES (before and after gzip)."""
    limit = settings.TODOWEB_OTLP_MAX_BODY_BYTES
    if content_length(request) > limit:
        raise too_large(limit)
    body = request.read(limit + 1)
    if len(body) > limit:
        raise too_large(limit)
    encoding = request.headers.get("Content-Encoding", "identity").strip().lower()
    if encoding in ("", "identity"):
        return body
    if encoding not in ("gzip", "deflate"):
        raise ApiError(
            415, "unsupported_media_type", f"Content-Encoding '{encoding[:40]}' is not read: send gzip or none"
        )
    unzip = zlib.decompressobj(wbits=47)  # gzip or zlib, by the header
    try:
        unzipped = unzip.decompress(body, limit + 1)
    except zlib.error:
        raise ApiError(400, "invalid_body", f"The body is not valid {encoding}") from None
    if len(unzipped) > limit or unzip.unconsumed_tail:
        raise too_large(limit)
    return unzipped


def too_large(limit: int) -> ApiError:
    return ApiError(
        413,
        "payload_too_large",
        f"The export is over {limit:,} bytes (the server's TODOWEB_OTLP_MAX_BODY_BYTES): export in smaller batches",
        details={"max_body_bytes": limit},
    )


def found_calls(signal: Signal, body: bytes, content_type: str | None) -> list[TelemetryCall]:
    """The todo tool calls of an export. Only an export that names a known source is
    decoded whole and walked; the others are checked for their form and dropped."""
    if content_type not in ("application/json", PROTOBUF):
        raise ApiError(
            415, "unsupported_media_type", f"Send OTLP as '{PROTOBUF}' or 'application/json', not '{content_type}'"
        )
    if content_type == PROTOBUF:
        from google.protobuf.json_format import MessageToDict
        from google.protobuf.message import DecodeError

        try:
            message = signal.request_type().FromString(body)
        except DecodeError:
            raise ApiError(400, "invalid_body", "The body is not a protobuf OTLP export") from None
        if not may_hold_calls(body):
            return []
        export = MessageToDict(message)
    else:
        if not may_hold_calls(body):
            # Not decoded (most of the cost of an export of other records), only checked
            # to be an object, as every OTLP/JSON export is.
            if not body[:64].lstrip().startswith(b"{") or not body[-64:].rstrip().endswith(b"}"):
                raise InvalidJson("The body is not an OTLP/JSON export (a JSON object)")
            return []
        try:
            export = orjson.loads(body)
        except orjson.JSONDecodeError:
            raise InvalidJson("The body is not valid JSON") from None
    return signal.find_calls(export if isinstance(export, dict) else {})


async def record(token: ApiToken, found: TelemetryCall) -> str | None:
    """Write one call as the tool endpoint would; why the board refused it, if it did."""
    where = f"{found.source.label}'s {found.tool} call in session {found.session_key}"
    if found.truncated:
        await in_database_thread(telemetry_warnings.note_truncated, token.project, found)
        return f"{where}: its arguments arrived cut by the exporter ({found.source.whole_input})"
    try:
        arguments = loads(found.arguments, what=f"The arguments of {found.tool}")
        call = ToolCall("plain", found.tool, found.call_id, arguments, dialect=found.dialect)
        write = CallRequest(
            session_key=found.session_key,
            call=call,
            idempotency_key=found.idempotency_key,
            route=f"OpenTelemetry ({found.source.label})",
        )
        await record_call_of(token, write)
    except TodowebError as error:
        logger.info("OTLP: %s was refused: %s", where, error)
        return f"{where}: {error}"
    return None


def answer(signal: Signal, content_type: str | None, rejected: list[str]) -> HttpResponse:
    """OTLP's answer: empty when every call was written, else a partial success."""
    from google.protobuf.json_format import MessageToDict

    response = signal.response_type()()
    if rejected:
        partial = response.partial_success  # type: ignore[attr-defined]
        setattr(partial, signal.rejected_field, len(rejected))
        partial.error_message = "; ".join(rejected)[:4000]
    if content_type == PROTOBUF:
        return HttpResponse(response.SerializeToString(), content_type=PROTOBUF)
    return HttpResponse(orjson.dumps(MessageToDict(response)), content_type="application/json")


logs = receiver(LOGS)
traces = receiver(TRACES)
metrics = receiver(METRICS)
