"""Fan-out: one writer, many watchers of its session, against the same writer alone.

One agent writes TodoWrite calls of 5 steps to one session at a fixed rate (5, 20
and 50 writes/s, --seconds each) while 0, 100 and 1000 watchers follow the session
through a share link's websocket (or, with --dashboard, the dashboard's websocket
of a logged-in staff user). The 0-watcher run is the baseline. The watchers run in a
client process of their own (bench/watchers.py: raw asyncio sockets that offer
permessage-deflate like a browser), and the writer in another, as an agent would: a
burst of a thousand frames arriving at the watchers' loop would otherwise hold up
the writer's reading of its answer, and count against the server.

Per run it measures, on the client's clock:
- writes asked and done (answered 200 after starting within the window), answer
  p50/p99 and the p99's ratio to the 0-watcher run at the same rate;
- revisions delivered per watcher (a watcher may skip to the newest: latest wins);
- write -> receipt: from sending a write's POST to a watcher receiving its revision;
- lag: for every revision and watcher, from sending the write to the watcher showing
  that revision or a newer one; the largest is how far behind any watcher ever was;
- settle: from the last write's answer until every watcher shows the last revision;
- the server's RSS (VmRSS of the server processes) before the watchers join, once
  they have joined, and after the writes; bytes on the wire per frame.

    .venv/bin/python bench/fanout.py [--topology one|two] [--dashboard] [--seconds 10]
        [--rates 5,20,50] [--watchers 0,100,1000] [--no-deflate]

With 10000 among --watchers it checks the same at ten times the watchers: every
write done, the answer p99 within 2x the unwatched run's, every watcher on the last
revision within 1 s of the stop, and the server's memory flat over the writes
(`make bench` runs it at 20 writes/s).

--topology one: one process, SQLite, in-memory layer (the default). two: PostgreSQL +
Redis, two processes; the writer posts to A, the watchers watch on B.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from dataclasses import dataclass
from typing import Any

import httpx
import uvloop
from harness import create_token, load_average, manage, percentile, rss_mb, run_client, topology, verdict
from watchers import Watcher, api_client, connect_watchers, now, todo_write, wait_until_shown

ITEMS = 5
SETTLE_TIMEOUT = 12.0  # longer than the hub's 5 s reconciliation: a lost frame still shows
STAFF_USER, STAFF_PASSWORD = "bench-staff", "bench-staff-password-0123"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--topology", choices=["one", "two"], default="one")
    parser.add_argument("--dashboard", action="store_true", help="watch the staff dashboard, not a share link")
    parser.add_argument("--seconds", type=float, default=10, help="seconds of writes per rate")
    parser.add_argument("--rates", default="5,20,50", help="writes per second, comma-separated")
    parser.add_argument("--watchers", default="0,100,1000", help="watcher counts, comma-separated (0 is the baseline)")
    parser.add_argument("--no-deflate", action="store_true", help="do not offer permessage-deflate")
    args = parser.parse_args()
    rates = [float(r) for r in args.rates.split(",")]
    counts = sorted({0} | {int(n) for n in args.watchers.split(",")})

    runs: dict[int, dict[str, Any]] = {}
    with topology(args.topology, "fanout") as (env, servers):
        writer, watched = servers[0], servers[-1]
        token = create_token(env)
        cookie = staff_cookie(env, watched.url) if args.dashboard else ""
        for n in counts:
            key = f"fanout-{n}"
            session_id, ws_path = open_session(writer.url, token, key, dashboard=args.dashboard)
            spec = {
                "watchers": n,
                "rates": rates,
                "seconds": args.seconds,
                "write_url": writer.url,
                "ws_url": watched.url.replace("http://", "ws://") + ws_path,
                "session_id": session_id,
                "key": key,
                "token": token,
                "cookie": cookie,
                "deflate": not args.no_deflate,
                "server_pids": [server.pids() for server in servers],
            }
            print(f"  ... {n} watchers", file=sys.stderr, flush=True)
            runs[n] = run_client("fanout.py", spec)
    report(args, rates, runs)


def open_session(url: str, token: str, key: str, *, dashboard: bool) -> tuple[str, str]:
    """Create the session (its first write); its id and the websocket path to watch it."""
    headers = {"Authorization": f"Bearer {token}"}
    answer = httpx.post(f"{url}/api/v1/sessions/{key}/tool", json=todo_write(f"{key}-0", 0, ITEMS), headers=headers)
    answer.raise_for_status()
    session_id = answer.json()["data"]["session"]["id"]
    if dashboard:
        return session_id, "/ws/dashboard/"
    share = httpx.post(f"{url}/api/v1/sessions/{key}/share", json={"expires_in": 3600}, headers=headers)
    share.raise_for_status()
    return session_id, f"/ws/sessions/{session_id}/?share={share.json()['token']}"


def staff_cookie(env: dict[str, str], url: str) -> str:
    """A staff user (createsuperuser), logged in through the admin's login form."""
    superuser = {
        "DJANGO_SUPERUSER_USERNAME": STAFF_USER,
        "DJANGO_SUPERUSER_PASSWORD": STAFF_PASSWORD,
        "DJANGO_SUPERUSER_EMAIL": "staff@example.com",
    }
    manage(env | superuser, "createsuperuser", "--noinput")
    with httpx.Client(base_url=url) as browser:
        form = browser.get("/admin/login/").text
        csrf = form.split('name="csrfmiddlewaretoken" value="', 1)[1].split('"', 1)[0]
        login = {"csrfmiddlewaretoken": csrf, "username": STAFF_USER, "password": STAFF_PASSWORD, "next": "/admin/"}
        browser.post("/admin/login/?next=/admin/", data=login)
        if "sessionid" not in browser.cookies:
            raise SystemExit("the admin login failed")
        return f"sessionid={browser.cookies['sessionid']}"


# --- the client process -------------------------------------------------------------


@dataclass
class Write:
    sent: float
    answered: float
    status: int | str
    revision: int | None


def server_rss(spec: dict[str, Any]) -> list[float]:
    """The RSS of each server (A, B), in MB."""
    return [rss_mb(pids) for pids in spec["server_pids"]]


async def client(spec: dict[str, Any]) -> dict[str, Any]:
    rss_before = server_rss(spec)
    started = now()
    watchers = await connect_watchers(
        spec["ws_url"], spec["watchers"], session_id=spec["session_id"], cookie=spec["cookie"], deflate=spec["deflate"]
    )
    joined_s = now() - started
    rss_joined = server_rss(spec)
    phases = []
    for rate in spec["rates"]:
        frames_before = sum(len(w.seen) for w in watchers)
        bytes_before = sum(w.wire_bytes for w in watchers)
        writes = await writer_process(spec, rate)
        answered = [w for w in writes if w.revision is not None]
        if answered:
            await wait_until_shown(watchers, answered[-1].revision, SETTLE_TIMEOUT)
        frames = sum(len(w.seen) for w in watchers) - frames_before
        wire = sum(w.wire_bytes for w in watchers) - bytes_before
        phases.append(measure(rate, spec["seconds"], writes, watchers) | {"bytes_per_frame": wire / max(frames, 1)})
        await asyncio.sleep(0.5)
    result = {
        "watchers": spec["watchers"],
        "joined_s": joined_s,
        "rss_before_mb": rss_before,
        "rss_joined_mb": rss_joined,
        "rss_after_mb": server_rss(spec),
        "client_cpu_s": time.process_time(),
        "phases": phases,
    }
    for watcher in watchers:
        watcher.close()
    return result


async def writer_process(spec: dict[str, Any], rate: float) -> list[Write]:
    """The writes at `rate`, made by a process of their own (`fanout.py --writer`) while
    this one's loop receives the frames. Both read the same monotonic clock."""
    job = {key: spec[key] for key in ("write_url", "token", "key", "seconds")} | {"rate": rate}
    process = await asyncio.create_subprocess_exec(
        sys.executable, __file__, "--writer", stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
    )
    out, _ = await process.communicate(json.dumps(job).encode())
    if process.returncode != 0:
        raise SystemExit(f"the writer failed (exit {process.returncode})")
    return [Write(**write) for write in json.loads(out)]


async def writer(job: dict[str, Any]) -> list[dict[str, Any]]:
    async with api_client(job["write_url"], job["token"]) as api:
        writes = await write_at(api, job["key"], job["rate"], job["seconds"])
    return [vars(write) for write in writes]


async def write_at(api: httpx.AsyncClient, key: str, rate: float, seconds: float) -> list[Write]:
    """One agent's writes at `rate` per second for `seconds`: each starts on schedule, or
    as soon as the one before it was answered; none starts after the window."""
    start = now()
    writes = []
    for i in range(round(rate * seconds)):
        delay = start + i / rate - now()
        if delay > 0:
            await asyncio.sleep(delay)
        if now() >= start + seconds:
            break
        sent = now()
        try:
            answer = await api.post(f"/api/v1/sessions/{key}/tool", json=todo_write(f"{key}-{rate}-{i}", i + 1, ITEMS))
            answered = now()
            revision = answer.json()["data"]["revision"] if answer.status_code == 200 else None
            writes.append(Write(sent, answered, answer.status_code, revision))
        except httpx.HTTPError as exc:
            writes.append(Write(sent, now(), type(exc).__name__, None))
    return writes


def measure(rate: float, seconds: float, writes: list[Write], watchers: list[Watcher]) -> dict[str, Any]:
    """What one rate's writes cost the writer and how they reached the watchers."""
    answered = [w for w in writes if w.revision is not None]
    sent_at = {w.revision: w.sent for w in answered}
    revisions = sorted(sent_at)
    delivered, receipts, lags, settles, backwards, repeats = [], [], [], [], 0, 0
    for watcher in watchers:
        seen = [(r, t) for r, t in watcher.seen if revisions and r >= revisions[0]]
        backwards += sum(1 for (a, _), (b, _) in zip(seen, seen[1:], strict=False) if b < a)
        repeats += sum(1 for (a, _), (b, _) in zip(seen, seen[1:], strict=False) if b == a)
        delivered.append(len({r for r, _ in seen} & sent_at.keys()))
        receipts += [(t - sent_at[r]) * 1000 for r, t in seen if r in sent_at]
        lags += lags_of(seen, revisions, sent_at)
        if answered:
            shown = watcher.shown_at(answered[-1].revision)
            # 0 if the frame came before the writer's answer did
            settles.append(float("inf") if shown is None else max(0.0, shown - answered[-1].answered) * 1000)
    latencies = [(w.answered - w.sent) * 1000 for w in writes]
    return {
        "rate": rate,
        "asked": round(rate * seconds),
        "done": len(answered),
        "failed": sorted({str(w.status) for w in writes if w.revision is None}),
        "answer_p50_ms": percentile(latencies, 50),
        "answer_p99_ms": percentile(latencies, 99),
        "revisions": len(revisions),
        "delivered_min": min(delivered, default=0),
        "delivered_mean": sum(delivered) / len(delivered) if delivered else 0,
        "all_delivered": sum(1 for d in delivered if d == len(revisions)),
        "receipt_p50_ms": percentile(receipts, 50),
        "receipt_p99_ms": percentile(receipts, 99),
        "max_lag_ms": max(lags, default=float("nan")),
        "settle_ms": max(settles, default=float("nan")),
        "backwards": backwards,
        "repeats": repeats,
        "load": load_average(),
    }


def lags_of(seen: list[tuple[int, float]], revisions: list[int], sent_at: dict[int, float]) -> list[float]:
    """Per revision, ms from its write being sent until this watcher showed it or a later
    one (inf if it never did). `seen` goes forward, so one pass does."""
    lags, j = [], 0
    for revision in revisions:
        while j < len(seen) and seen[j][0] < revision:
            j += 1
        lags.append((seen[j][1] - sent_at[revision]) * 1000 if j < len(seen) else float("inf"))
    return lags


# --- the report ---------------------------------------------------------------------


def report(args: argparse.Namespace, rates: list[float], runs: dict[int, dict[str, Any]]) -> None:
    where = (
        "one process, SQLite, in-memory layer"
        if args.topology == "one"
        else "PostgreSQL + Redis, writes on A, watchers on B"
    )
    what = "staff dashboard" if args.dashboard else "share-link session"
    deflate = "no compression" if args.no_deflate else "permessage-deflate offered"
    print(f"fanout ({where}): {what} watchers ({deflate}), TodoWrite of {ITEMS} steps, {args.seconds:g} s per rate")
    baseline = {p["rate"]: p for p in runs[0]["phases"]}
    for n, run in runs.items():
        print(
            f"  {n} watchers: joined in {run['joined_s']:.1f} s; server RSS {rss(run['rss_before_mb'])} before,"
            f" {rss(run['rss_joined_mb'])} joined, {rss(run['rss_after_mb'])} after;"
            f" the client used {run['client_cpu_s']:.1f} CPU s"
        )
        for p in run["phases"]:
            ratio = p["answer_p99_ms"] / baseline[p["rate"]]["answer_p99_ms"]
            line = (
                f"    {p['rate']:4g}/s  writes {p['done']}/{p['asked']}"
                f"  answer p50 {p['answer_p50_ms']:6.1f} p99 {p['answer_p99_ms']:6.1f} ms ({ratio:.2f}x baseline)"
            )
            if n:
                line += (
                    f"  delivered {p['delivered_mean']:.1f}/{p['revisions']} per watcher"
                    f" (min {p['delivered_min']}, all {p['all_delivered']}/{n})"
                    f"  receipt p50 {p['receipt_p50_ms']:.0f} p99 {p['receipt_p99_ms']:.0f} ms"
                    f"  max lag {p['max_lag_ms']:.0f} ms  settle {p['settle_ms']:.0f} ms"
                    f"  {p['bytes_per_frame']:.0f} B/frame"
                )
            if p["failed"]:
                line += f"  FAILED: {', '.join(p['failed'])}"
            if p["backwards"]:
                line += f"  WENT BACKWARDS {p['backwards']} times"
            if p["repeats"]:
                line += f"  {p['repeats']} frames repeated the revision before"
            print(line + f"  ({p['load']})")
    targets(runs, baseline)


def targets(runs: dict[int, dict[str, Any]], baseline: dict[float, dict[str, Any]]) -> None:
    if 20 not in baseline:
        return
    limit = 2 * baseline[20]["answer_p99_ms"]
    for n, checks in {
        100: lambda p, run: [
            ("every revision delivered", p["all_delivered"] == 100, f"{p['all_delivered']}/100 watchers got all"),
            ("p99 write->receipt <= 250 ms", p["receipt_p99_ms"] <= 250, f"{p['receipt_p99_ms']:.0f} ms"),
        ],
        1000: lambda p, run: [
            ("no watcher > 1 s behind", p["max_lag_ms"] <= 1000, f"max lag {p['max_lag_ms']:.0f} ms"),
            ("all on the last revision <= 1 s after", p["settle_ms"] <= 1000, f"{p['settle_ms']:.0f} ms"),
        ],
        10000: lambda p, run: [
            ("all on the last revision <= 1 s after", p["settle_ms"] <= 1000, f"{p['settle_ms']:.0f} ms"),
            # Latest-wins keeps nothing per revision: the server's memory stays what
            # the sockets themselves take.
            ("memory flat over the writes", memory_growth(run) <= 1.1, f"RSS after {memory_growth(run):.2f}x joined"),
        ],
    }.items():
        phase = next((p for p in runs.get(n, {}).get("phases", []) if p["rate"] == 20), None)
        if phase is None:
            continue
        results = [
            ("all writes done", phase["done"] == phase["asked"], f"{phase['done']}/{phase['asked']}"),
            (
                "answer p99 <= 2x baseline",
                phase["answer_p99_ms"] <= limit,
                f"{phase['answer_p99_ms'] / limit * 2:.2f}x",
            ),
            *checks(phase, runs[n]),
        ]
        print(f"  targets, {n} watchers @ 20/s:")
        for name, met, figure in results:
            print(f"    {name:<40} {verdict(met):<7} ({figure})")


def memory_growth(run: dict[str, Any]) -> float:
    """The most any server process's RSS grew over the writes, as a ratio to when the watchers had joined."""
    return max(after / joined for after, joined in zip(run["rss_after_mb"], run["rss_joined_mb"], strict=True))


def rss(mb: list[float]) -> str:
    if len(mb) == 1:
        return f"{mb[0]:.0f} MB"
    return " ".join(f"{name} {value:.0f} MB" for name, value in zip("AB", mb, strict=True))


if __name__ == "__main__":
    if "--client" in sys.argv:
        print(json.dumps(uvloop.run(client(json.load(sys.stdin)))))
    elif "--writer" in sys.argv:
        print(json.dumps(asyncio.run(writer(json.load(sys.stdin)))))
    else:
        main()
