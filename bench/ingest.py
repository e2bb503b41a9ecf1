"""Ingest: TodoWrite calls against Django's own request path, same server, same run.

One `manage.py serve` process; wrk (16 connections, 2 threads) alternates between
`/healthz` (a Django view behind the default middleware: the cost of a request
that does nothing) and TodoWrite calls of 10 steps over 64 sessions, each with a
new call id. Prints both and the ratios; the targets are throughput >= 0.8x and
p99 <= 1.5x the baseline's.

    .venv/bin/python bench/ingest.py [--database sqlite|postgres] [--seconds 10] [--rounds 2] [--db-threads N]
"""

from __future__ import annotations

import argparse
import statistics

from harness import create_token, deployment, fresh_postgres, server, wrk


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--database", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--items", type=int, default=10)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--db-threads", type=int, help="TODOWEB_DB_THREADS (default: the deployment's)")
    args = parser.parse_args()

    database = fresh_postgres() if args.database == "postgres" else None
    threads = {"TODOWEB_DB_THREADS": str(args.db_threads)} if args.db_threads else {}
    with deployment(database, **threads) as env, server(env) as srv:
        url = srv.url
        token = create_token(env)
        write_env = {"TODOWEB_TOKEN": token, "ITEMS": str(args.items), "SESSIONS": "64"}
        wrk(f"{url}/healthz", seconds=2)  # warm-up
        baseline, writes = [], []
        for round_ in range(args.rounds):
            baseline.append(wrk(f"{url}/healthz", seconds=args.seconds, connections=args.connections))
            write_env["RUN"] = f"r{round_}"
            writes.append(
                wrk(url, seconds=args.seconds, connections=args.connections, script="todowrite.lua", env=write_env)
            )

    print(
        f"ingest on {args.database}: {args.connections} connections, TodoWrite of {args.items} steps over 64 sessions"
        + (f", {args.db_threads} database threads" if args.db_threads else "")
    )
    for n, (b, w) in enumerate(zip(baseline, writes, strict=True)):
        print(b.line(f"round {n + 1} /healthz"))
        print(w.line(f"round {n + 1} TodoWrite"))
    rps = statistics.median(w.requests_per_s for w in writes) / statistics.median(b.requests_per_s for b in baseline)
    p99 = statistics.median(w.p99_ms for w in writes) / statistics.median(b.p99_ms for b in baseline)
    p50 = statistics.median(w.p50_ms for w in writes) / statistics.median(b.p50_ms for b in baseline)
    print(
        f"  ratio TodoWrite / healthz: throughput {rps:.2f}x (target >= 0.8x), p50 {p50:.2f}x, p99 {p99:.2f}x (target <= 1.5x)"
    )
    errors = sum(w.errors for w in writes)
    if errors:
        print(f"  WARNING: {errors} writes failed")


if __name__ == "__main__":
    main()
