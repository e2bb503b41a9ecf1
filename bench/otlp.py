"""The OTLP receiver's cost for what most of an export is: records that are no todo
tool call (API requests, user prompts, metrics-like events), which it must accept and
drop. Against the tool endpoint's TodoWrite write, on the same server in the same run.

One `manage.py serve` process (SQLite unless --database postgres). wrk posts one
export of 1,000 unrelated log records (JSON, then protobuf, each ~Claude Code's
`claude_code.api_request` shape) to /v1/logs, and 10-step TodoWrite calls to the
tool endpoint; with one connection (the time an exporter waits) and 16 (throughput).
Target: an export of 1,000 unrelated records costs at most 2x a tool call (p50 with
one connection, and requests per second with 16).

    .venv/bin/python bench/otlp.py [--database sqlite|postgres] [--seconds 10]
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from google.protobuf.json_format import ParseDict
from harness import create_token, deployment, fresh_postgres, load_average, server, verdict, wrk
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

RECORDS = 1000
MOST = 2.0


def unrelated_export() -> dict:
    """1,000 log records as Claude Code sends them for its model requests."""

    def attribute(key: str, value: str | int) -> dict:
        return {"key": key, "value": {"intValue": value} if isinstance(value, int) else {"stringValue": value}}

    records = [
        {
            "timeUnixNano": str(1_795_000_000_000_000_000 + n),
            "body": {"stringValue": "claude_code.api_request"},
            "attributes": [
                attribute("event.name", "api_request"),
                attribute("session.id", "9f1c2d3e-0000-4000-8000-000000000001"),
                attribute("event.sequence", n),
                attribute("event.timestamp", "2026-11-25T01:16:35.215Z"),
                attribute("model", "claude-sonnet-4-5"),
                attribute("cost_usd", "0.0123"),
                attribute("duration_ms", "1834"),
                attribute("input_tokens", "5321"),
                attribute("output_tokens", "812"),
                attribute("cache_read_tokens", "41200"),
                attribute("prompt.id", "6c1e7f0a-0000-4000-8000-000000000002"),
            ],
        }
        for n in range(RECORDS)
    ]
    resource = {"attributes": [attribute("service.name", "claude-code"), attribute("service.version", "2.1.197")]}
    scope = {"scope": {"name": "com.anthropic.claude_code.events"}, "logRecords": records}
    return {"resourceLogs": [{"resource": resource, "scopeLogs": [scope]}]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--database", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--seconds", type=int, default=10)
    args = parser.parse_args()

    export = unrelated_export()
    folder = Path(tempfile.mkdtemp(prefix="todoweb-bench-otlp-"))
    bodies = {
        "JSON": (folder / "export.json", json.dumps(export).encode(), "application/json"),
        "protobuf": (
            folder / "export.bin",
            ParseDict(export, ExportLogsServiceRequest()).SerializeToString(),
            "application/x-protobuf",
        ),
    }
    for path, body, _ in bodies.values():
        path.write_bytes(body)

    database = fresh_postgres("todoweb_bench_otlp") if args.database == "postgres" else None
    with deployment(database) as env, server(env) as srv:
        token = create_token(env)
        base = {"TODOWEB_TOKEN": token, "SESSIONS": "64", "RUN": "otlp"}
        print(
            f"OTLP exports of {RECORDS} unrelated records against a TodoWrite call, on {args.database} ({load_average()})"
        )
        for name, (_, body, _) in bodies.items():
            print(f"  {name} export: {len(body):,} bytes")
        wrk(srv.url, seconds=2, script="todowrite.lua", env=base)  # warm-up
        for path, _, content_type in bodies.values():
            wrk(
                srv.url,
                seconds=2,
                script="otlp_export.lua",
                env=base | {"BODY_FILE": str(path), "CONTENT_TYPE": content_type},
            )
        for connections in (1, 16):
            threads = 1 if connections == 1 else 2
            write = wrk(
                srv.url,
                seconds=args.seconds,
                connections=connections,
                threads=threads,
                script="todowrite.lua",
                env=base,
            )
            print(write.line(f"TodoWrite, {connections} conn"))
            assert write.errors == 0, "the server answered errors"
            for name, (path, _, content_type) in bodies.items():
                exported = wrk(
                    srv.url,
                    seconds=args.seconds,
                    connections=connections,
                    threads=threads,
                    script="otlp_export.lua",
                    env=base | {"BODY_FILE": str(path), "CONTENT_TYPE": content_type},
                )
                print(exported.line(f"{name} export, {connections} conn"))
                assert exported.errors == 0, "the server answered errors"
                if connections == 1:
                    ratio = exported.p50_ms / write.p50_ms
                    print(f"  {name} export / tool call, p50: {ratio:.2f}x  [{verdict(ratio <= MOST)}: <= {MOST:.0f}x]")
                else:
                    ratio = write.requests_per_s / exported.requests_per_s
                    print(
                        f"  {name} export / tool call, cost per request: {ratio:.2f}x  [{verdict(ratio <= MOST)}: <= {MOST:.0f}x]"
                    )


if __name__ == "__main__":
    main()
