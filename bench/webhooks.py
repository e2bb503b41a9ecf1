"""Webhooks on the hot path: the same TodoWrite load on a project with 3 endpoints
(every event, a receiver on the loopback answering 204) against a project without,
on one `manage.py serve` process (with its in-process worker delivering), same run.
After each round with endpoints the bench waits until every delivery is made, so
that no round runs beside the previous round's backlog.

The load (`--load lifecycle`, the default): 10-step plans over 64 sessions, 16
connections, each session's plan moving one step per write and completing every 11th,
each from a step of its own (bench/wrk/lifecycle.lua): a session.completed per 11
writes and a session.created per new session, for each of the 3 endpoints, all made in
the writes' transactions and delivered meanwhile. `--load lockstep`: the same with
every session in step, so that all 64 complete within 64 writes in a row (p99 then
measures such a burst). `--load ingest` runs bench/ingest.py's script instead (64
sessions whose plans go round: fewer events). `--worker off` delivers nothing: the
write path's own cost. Each round's sessions are made by a second of the same load
first, so that a round measures writes to sessions under way; `--no-warm-up` measures
from the first write instead, 64 sessions (and their session.created) made at once.

Each side goes first every other round, and the ratios are of the rounds' medians
(targets: throughput >= 0.95x, p99 <= 1.1x): with fewer than about 10 rounds the
p99 ratio moves by 0.05 from run to run. Also prints how many deliveries were made,
and delivered by the end.

    .venv/bin/python bench/webhooks.py [--database sqlite|postgres] [--seconds 8] [--rounds 10] [--worker off]
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
from harness import create_token, deployment, fresh_postgres, server, verdict, wrk

EVENTS = ["session.created", "session.completed", "session.failed", "session.idle", "plan.edited", "step.failed"]


class Receiver:
    """Counts what it is sent; answers 204."""

    def __init__(self) -> None:
        self.count = 0
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with receiver.lock:
                    receiver.count += 1
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--database", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--seconds", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument(
        "--load",
        choices=["ingest", "lifecycle", "lockstep"],
        default="lifecycle",
        help="ingest: bench/ingest.py's todowrite.lua (64 sessions whose plans go round, completing now and "
        "then); lifecycle: 64 sessions whose plans move on and complete (events all along); lockstep: "
        "lifecycle with the sessions in step (their completions in bursts of 64)",
    )
    parser.add_argument(
        "--worker",
        choices=["in-process", "off"],
        default="in-process",
        help="off: TODOWEB_WEBHOOK_WORKER=0, nothing delivered (the write path's own cost)",
    )
    parser.add_argument(
        "--no-warm-up",
        dest="warm_up",
        action="store_false",
        help="measure from the round's first write, 64 sessions (and their session.created) made at once",
    )
    args = parser.parse_args()
    script = "todowrite.lua" if args.load == "ingest" else "lifecycle.lua"

    receiver = Receiver()
    database = fresh_postgres("todoweb_bench_webhooks") if args.database == "postgres" else None
    worker = {"TODOWEB_WEBHOOK_WORKER": "0"} if args.worker == "off" else {}
    with deployment(database, TODOWEB_WEBHOOKS_ALLOW_PRIVATE="1", **worker) as env, server(env) as srv:
        url = srv.url
        plain, hooked = create_token(env, "plain"), create_token(env, "hooked")
        for n in range(3):
            made = httpx.post(
                f"{url}/api/v1/webhooks",
                json={"url": f"{receiver.url}/{n}", "events": EVENTS},
                headers={"Authorization": f"Bearer {hooked}"},
            )
            assert made.status_code == 201, made.text
        wrk(f"{url}/healthz", seconds=2)  # warm-up
        headers = {"Authorization": f"Bearer {hooked}"}
        hooks = httpx.get(f"{url}/api/v1/webhooks", headers=headers).json()["webhooks"]

        def tally() -> tuple[int, int]:
            made = delivered = 0
            for hook in hooks:
                log = httpx.get(
                    f"{url}/api/v1/webhooks/{hook['id']}/deliveries?limit=200", headers=headers, timeout=30
                ).json()
                pages = [log["deliveries"]]
                while log["next_cursor"]:
                    log = httpx.get(
                        f"{url}/api/v1/webhooks/{hook['id']}/deliveries?limit=200&before={log['next_cursor']}",
                        headers=headers,
                        timeout=30,
                    ).json()
                    pages.append(log["deliveries"])
                for page in pages:
                    made += len(page)
                    delivered += sum(d["status"] == "delivered" for d in page)
            return made, delivered

        def caught_up() -> tuple[int, int, int, float]:
            """Wait until every delivery made is delivered, so that no round runs beside
            the previous round's backlog: (made, delivered when the load stopped,
            delivered, seconds waited)."""
            made, at_end = tally()
            started = time.monotonic()
            delivered = at_end
            while delivered < made and time.monotonic() - started < 120:
                time.sleep(0.5)
                made, delivered = tally()
            return made, at_end, delivered, time.monotonic() - started

        without, with_, drains = [], [], []
        for round_ in range(args.rounds):
            pair = [(plain, without, "plain"), (hooked, with_, "hooked")]
            # Each side goes first every other round: neither always meets the database the
            # other has just grown.
            for token, results, name in pair if round_ % 2 == 0 else reversed(pair):
                write_env = {"TODOWEB_TOKEN": token, "ITEMS": "10", "SESSIONS": "64", "RUN": f"{name}{round_}"}
                write_env["STAGGER"] = "0" if args.load == "lockstep" else "1"
                if args.warm_up:
                    # The round's sessions made first: the round measures writes to sessions
                    # under way, not 64 sessions made at once.
                    wrk(url, seconds=1, connections=args.connections, script=script, env=write_env | {"CALLS": "warm"})
                results.append(
                    wrk(url, seconds=args.seconds, connections=args.connections, script=script, env=write_env)
                )
                if token == hooked and args.worker != "off":
                    drains.append(caught_up())

    print(
        f"webhooks on {args.database}, {args.load} load ({script}): {args.connections} connections, "
        f"TodoWrite of 10 steps over 64 sessions, worker {args.worker}"
    )
    for n, (a, b) in enumerate(zip(without, with_, strict=True)):
        print(a.line(f"round {n + 1} no endpoints"))
        print(b.line(f"round {n + 1} 3 endpoints"))
    rps = statistics.median(b.requests_per_s for b in with_) / statistics.median(a.requests_per_s for a in without)
    p50 = statistics.median(b.p50_ms for b in with_) / statistics.median(a.p50_ms for a in without)
    p99 = statistics.median(b.p99_ms for b in with_) / statistics.median(a.p99_ms for a in without)
    print(
        f"  ratio 3 endpoints / none: throughput {rps:.2f}x (target >= 0.95x) {verdict(rps >= 0.95)}, "
        f"p50 {p50:.2f}x, p99 {p99:.2f}x (target <= 1.1x) {verdict(p99 <= 1.1)}"
    )
    for n, ((made, at_end, delivered, waited), hooked_round) in enumerate(zip(drains, with_, strict=False)):
        print(
            f"  round {n + 1}: {made} deliveries made in all for {hooked_round.requests} writes; {at_end} delivered "
            f"when the load stopped, {delivered} after {waited:.1f} s more"
        )
    print(f"  the receiver got {receiver.count}")
    errors = sum(r.errors for r in without + with_)
    if errors:
        print(f"  WARNING: {errors} writes failed")


if __name__ == "__main__":
    main()
