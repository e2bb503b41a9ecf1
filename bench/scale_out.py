"""Scale-out: writes/s of two server processes against one, same deployment, same run.

PostgreSQL (a fresh database) + Redis. wrk (16 connections, 2 threads) sends TodoWrite
calls of 10 steps over 64 sessions (bench/wrk/todowrite.lua) to `manage.py serve
--workers 1` (the baseline), then to `--workers 2`. Prints writes/s, p50/p99 and the
ratio (target >= 1.6x), and what each write cost: CPU seconds of the server processes
(utime + stime of the process tree, from /proc, before and after), of wrk, and how
busy the machine's cores were. On 2 cores the client competes with the servers, so
the CPU per write says whether a second process costs more than it brings, and
what two processes would give with a core each (2 x CPU per write with one / with two).

    .venv/bin/python bench/scale_out.py [--seconds 10] [--rounds 1] [--connections 16]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
from dataclasses import dataclass
from pathlib import Path

from harness import REDIS, WrkResult, cpu_seconds, create_token, deployment, fresh_postgres, server, verdict, wrk


@dataclass
class Run:
    workers: int
    result: WrkResult
    server_cpu_s: float
    wrk_cpu_s: float
    busy_cores: float

    @property
    def server_cpu_ms_per_write(self) -> float:
        return self.server_cpu_s / max(self.result.requests, 1) * 1000

    def line(self) -> str:
        writes = max(self.result.requests, 1)
        return (
            self.result.line(f"--workers {self.workers}")
            + f"\n  {'':<28} CPU per write: server {self.server_cpu_ms_per_write:.2f} ms,"
            f" wrk {self.wrk_cpu_s / writes * 1000:.2f} ms; cores busy {self.busy_cores:.2f} of {os.cpu_count()}"
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--items", type=int, default=10)
    args = parser.parse_args()

    database = fresh_postgres("todoweb_bench_scale")
    runs: dict[int, list[Run]] = {1: [], 2: []}
    with deployment(database, REDIS, TODOWEB_CHANNEL_PREFIX=f"todoweb-bench-scale-{os.getpid()}") as env:
        token = create_token(env)
        for round_ in range(args.rounds):
            for workers in (1, 2):
                write_env = {"TODOWEB_TOKEN": token, "ITEMS": str(args.items), "SESSIONS": "64"}
                runs[workers].append(measure(env, workers, args, write_env, f"r{round_}w{workers}"))

    print(
        f"scale-out on PostgreSQL + Redis: {args.connections} connections, TodoWrite of {args.items} steps"
        f" over 64 sessions, {args.seconds} s per run"
    )
    for one, two in zip(runs[1], runs[2], strict=True):
        print(one.line())
        print(two.line())
    ratio = statistics.median(r.result.requests_per_s for r in runs[2]) / statistics.median(
        r.result.requests_per_s for r in runs[1]
    )
    print(f"  ratio 2 processes / 1: writes/s {ratio:.2f}x (target >= 1.6x: {verdict(ratio >= 1.6)})")
    # One process keeps about one core busy (its GIL); with a core for each process
    # and for PostgreSQL and the client, writes/s would follow the CPU per write.
    one_ms, two_ms = (statistics.median(r.server_cpu_ms_per_write for r in runs[n]) for n in (1, 2))
    projected = 2 * one_ms / two_ms
    print(
        f"  as CPU per write: {one_ms:.2f} ms with 1 process, {two_ms:.2f} ms with 2: on a core each,"
        f" 2 processes would make {projected:.2f}x the writes/s of 1 (target >= 1.6x: {verdict(projected >= 1.6)})"
    )
    errors = sum(r.result.errors for rs in runs.values() for r in rs)
    if errors:
        print(f"  WARNING: {errors} writes failed")


def measure(env: dict[str, str], workers: int, args: argparse.Namespace, write_env: dict[str, str], run: str) -> Run:
    """One server with `workers` processes under the write load, and what it cost."""
    with server(env, workers=workers) as srv:
        wrk(srv.url, seconds=2, connections=args.connections, script="todowrite.lua", env=write_env | {"RUN": "warm"})
        pids = srv.pids()  # the workers have all started by now
        server_before, wrk_before, busy_before = cpu_seconds(pids), children_cpu_s(), machine_busy_s()
        result = wrk(srv.url, seconds=args.seconds, connections=args.connections, script="todowrite.lua",
                     env=write_env | {"RUN": run})  # fmt: skip
        return Run(
            workers=workers,
            result=result,
            server_cpu_s=cpu_seconds(pids) - server_before,
            wrk_cpu_s=children_cpu_s() - wrk_before,
            busy_cores=(machine_busy_s() - busy_before) / args.seconds,
        )


def children_cpu_s() -> float:
    """CPU time of this process's finished children (wrk, once it has been waited for)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def machine_busy_s() -> float:
    """CPU seconds every core has spent on anything but idling and waiting (/proc/stat)."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


if __name__ == "__main__":
    main()
