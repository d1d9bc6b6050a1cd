"""GET /messages: tornchat against the floor (issue 12), both over HTTP, measured by wrk.

One command reproduces the table in bench/README.md:

    python bench/get_messages_vs_floor.py            # 1M messages, realistic shape (~10 minutes to build)
    python bench/get_messages_vs_floor.py --messages 100000 --duration 5    # a quick run

It builds (or reuses) the database of bench/get_messages.py (--shape real|old, --messages N),
checks that both servers answer every request byte for byte alike (bench/floor_check.py), then
starts `tornchat serve` and bench/floor_server.py, each in its own process, and measures each
case on both alternately (A B, then B A in the next of --pairs 3): req/s with 50 connections and
p50/p99 with one (wrk -t1, bench/*.lua rotating 1,000 requests: different users, channels,
topics, anchors, search words). Only the server being measured has work at any time.
Needs wrk (Debian: apt-get install wrk).
"""

from __future__ import annotations

import argparse
import base64
import os
import platform
import random
import re
import signal
import sqlite3
import statistics
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections import Counter

import msgspec

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from get_messages import prepare_data  # noqa: E402

CASES = [
    # name, anchor, num_before, num_after, narrow kind
    ("newest 1000, no narrow", "newest", 1000, 0, None),
    ("newest 1000, channel + topic", "newest", 1000, 0, "topic"),
    ("anchor mid, 500/500", "mid", 500, 500, None),
    ("newest 100", "newest", 100, 0, None),
    ("newest 5000", "newest", 5000, 0, None),
    ("first_unread, 200/200", "first_unread", 200, 200, None),  # the web app's first fetch
    ("search, newest 100", "newest", 100, 0, "search"),
]
REQUESTS_PER_CASE = 1000


def make_requests(database: str, seed: int = 5) -> dict[str, list[tuple[str, str]]]:
    """(path, Authorization header) of 1,000 requests per case, deterministic for a database."""
    rng = random.Random(seed)
    db = sqlite3.connect(database)
    people = db.execute("SELECT id, delivery_email, api_key FROM users WHERE is_active AND NOT is_bot").fetchall()
    top = db.execute("SELECT max(id) FROM messages").fetchone()[0]
    topics: dict[int, tuple[list[str], list[int]]] = {}
    for channel_id, topic, count in db.execute(
        "SELECT channel_id, topic, count(*) FROM messages WHERE channel_id IS NOT NULL GROUP BY recipient_id, topic_key"
    ):
        names, counts = topics.setdefault(channel_id, ([], []))
        names.append(topic or "general chat")
        counts.append(count)
    sample = db.execute("SELECT content FROM messages WHERE id % ? = 0", (max(1, top // 3000),)).fetchall()
    ranked = Counter(word.strip(".").lower() for (content,) in sample for word in content.split()).most_common()
    words = [word for word, _ in ranked[100:300]]  # in 1-4% of messages
    result: dict[str, list[tuple[str, str]]] = {}
    for name, anchor, before, after, kind in CASES:
        requests = []
        for n in range(REQUESTS_PER_CASE):
            user_id, email, key = people[n % len(people)]
            params: dict[str, object] = {"anchor": anchor, "num_before": before, "num_after": after}
            if anchor == "mid":
                params["anchor"] = db.execute(
                    "SELECT message_id FROM user_messages WHERE user_id = ? AND message_id >= ? ORDER BY message_id"
                    " LIMIT 1",
                    (user_id, rng.randrange(top // 4, 3 * top // 4)),
                ).fetchone()[0]
            if kind == "topic":
                channels = [
                    c for (c,) in db.execute("SELECT channel_id FROM subscriptions WHERE user_id = ?", (user_id,))
                ]
                # One in ten visits a channel the user is not subscribed to (history: "historical" flags).
                channel = rng.choice([c for c in channels if c in topics] if n % 10 else sorted(topics))
                topic = rng.choices(topics[channel][0], weights=topics[channel][1])[0]
                narrow = [{"operator": "channel", "operand": channel}, {"operator": "topic", "operand": topic}]
                params["narrow"] = msgspec.json.encode(narrow).decode()
            elif kind == "search":
                params["narrow"] = msgspec.json.encode([{"operator": "search", "operand": rng.choice(words)}]).decode()
            token = base64.b64encode(f"{email}:{key}".encode()).decode()
            requests.append((f"/api/v1/messages?{urllib.parse.urlencode(params)}", f"Basic {token}"))
        result[name] = requests
    db.close()
    return result


# -- servers ----------------------------------------------------------------------------------


def start_server(
    kind: str, data: str, port: int, log_path: str, cache_mib: int | None = None
) -> subprocess.Popen[bytes]:
    """Start tornchat (with --message-cache-mib, if given) or the floor in its own process; return once it answers."""
    if kind == "tornchat":
        command = [sys.executable, "-m", "tornchat", "serve", "--data-dir", data, "--port", str(port)]
        if cache_mib is not None:
            command += ["--message-cache-mib", str(cache_mib)]
    else:
        command = [sys.executable, os.path.join(HERE, "floor_server.py"), "--data", data, "--port", str(port)]
    log = open(log_path, "ab")  # noqa: SIM115 (the child writes to it until stopped)
    process = subprocess.Popen(command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"{kind} exited with {process.returncode}; see {log_path}")
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/messages", timeout=1)
        except urllib.error.HTTPError:
            return process  # 401: it answers
        except OSError:
            time.sleep(0.2)
    process.kill()
    raise SystemExit(f"{kind} did not answer within 120 s; see {log_path}")


def stop_server(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def fetch(port: int, path: str, auth: str) -> tuple[int, bytes]:
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", headers={"Authorization": auth})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


# -- wrk --------------------------------------------------------------------------------------

LUA = os.path.join(HERE, "rotate_requests.lua")


def write_requests(path: str, requests: list[tuple[str, str]]) -> None:
    with open(path, "w") as handle:
        handle.writelines(f"{p}\t{a}\n" for p, a in requests)


def drain(port: int, requests_file: str) -> None:
    """Wait until the server has answered what wrk left queued when it stopped (requests are answered in turn)."""
    with open(requests_file) as handle:
        path, auth = handle.readline().rstrip("\n").split("\t")
    for _ in range(2):
        fetch(port, path, auth)


class Run(msgspec.Struct):
    rps: float
    p50: float  # ms
    p99: float
    errors: int
    count: int  # requests answered


def wrk(port: int, requests_file: str, connections: int, seconds: int) -> Run:
    command = ["wrk", "-t1", f"-c{connections}", f"-d{seconds}s", "--timeout", "60s", "--latency", "-s", LUA,
               f"http://127.0.0.1:{port}", "--", requests_file]  # fmt: skip
    out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    count = int(re.search(r"(\d+) requests in", out).group(1))  # type: ignore[union-attr]
    return Run(rps, _latency(out, "50"), _latency(out, "99"), int(errors.group(1)) if errors else 0, count)


def _latency(out: str, percent: str) -> float:
    value, unit = re.search(rf"^\s+{percent}%\s+([\d.]+)(us|ms|s)\s*$", out, re.M).groups()  # type: ignore[union-attr]
    return float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]


# -- the run ----------------------------------------------------------------------------------

SERVERS = ("tornchat", "floor")


def report(kind: str, name: str, busy: Run, single: Run) -> None:
    errors = f"  ({busy.errors + single.errors} non-2xx!)" if busy.errors + single.errors else ""
    print(f"    {kind:<8} {name:<30} {busy.rps:8.1f} req/s   p50 {single.p50:7.2f} ms"
          f"  p99 {single.p99:7.2f} ms  n={busy.count}/{single.count}{errors}", flush=True)  # fmt: skip


def measure_pair(data: str, files: dict[str, str], args: argparse.Namespace, order: tuple[str, ...]) -> dict:
    """Start both servers, then measure each case on one after the other (warm-up and 50 connections,
    then 1 connection), in `order`; stop them. Returns {kind: {case: (busy, single)}}.

    Both servers stay up for the whole pair, so the two runs a ratio compares are seconds apart
    rather than a whole pass over the cases: the machine's load drifts over minutes.
    """
    ports = {kind: args.port + offset for offset, kind in enumerate(SERVERS)}
    processes = {}
    results: dict[str, dict[str, tuple]] = {kind: {} for kind in SERVERS}
    try:
        for kind in order:
            log_path = os.path.join(args.work, f"{kind}.log")
            processes[kind] = start_server(kind, data, ports[kind], log_path, args.message_cache_mib)
        for name, path in files.items():
            busy = {}
            for kind in order:
                wrk(ports[kind], path, 8, args.warmup)
                drain(ports[kind], path)
                busy[kind] = wrk(ports[kind], path, 50, args.duration)
                drain(ports[kind], path)
            for kind in order:
                single = wrk(ports[kind], path, 1, args.duration)
                results[kind][name] = (busy[kind], single)
                report(kind, name, busy[kind], single)
    finally:
        for process in processes.values():
            stop_server(process)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description="GET /messages: tornchat against the floor (issue 12)")
    parser.add_argument("--shape", choices=["real", "old"], default="real")
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--data", help="data directory (default: get_messages.py's for the shape and size)")
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--duration", type=int, default=10, help="seconds of each wrk run")
    parser.add_argument("--warmup", type=int, default=3, help="seconds of warm-up per case and server")
    parser.add_argument("--cases", help="comma-separated case numbers (1-7) to run; default all")
    parser.add_argument("--no-check", action="store_true", help="skip the byte-for-byte check")
    parser.add_argument("--work", default="/tmp/tornchat-vs-floor", help="request files and server logs")
    parser.add_argument("--port", type=int, default=9931, help="tornchat's port; the floor's is the next")
    parser.add_argument(
        "--message-cache-mib", type=int, help="tornchat's encoded-message cache (0: off; default: its default)"
    )
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # stop the servers it started (finally clauses)
    settings = prepare_data(args.shape, args.messages, args.data)
    data = settings.data_dir
    os.makedirs(args.work, exist_ok=True)
    requests = make_requests(settings.database_path)
    if args.cases:
        wanted = {CASES[int(n) - 1][0] for n in args.cases.split(",")}
        requests = {name: r for name, r in requests.items() if name in wanted}
    files = {}
    for number, (name, rows) in enumerate(requests.items()):
        files[name] = os.path.join(args.work, f"case{number}.txt")
        write_requests(files[name], rows)
    db = sqlite3.connect(settings.database_path)
    counts = [db.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in ("messages", "user_messages", "users")]
    db.close()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cpus, Python {platform.python_version()},"
          f" SQLite {sqlite3.sqlite_version}, load average {os.getloadavg()[0]:.1f} at start")  # fmt: skip
    print(
        f"data: {args.shape} shape, {counts[0]:,} messages, {counts[1]:,} user_messages, {counts[2]:,} users ({data})"
    )
    if not args.no_check:
        import floor_check

        if not floor_check.check(data, requests, args.port, args.work, cache_mib=args.message_cache_mib):
            raise SystemExit("the floor's answers differ from tornchat's: not measuring")
    runs: dict[str, dict[str, list[tuple]]] = {kind: {name: [] for name in files} for kind in SERVERS}
    for pair in range(args.pairs):
        order = SERVERS if pair % 2 == 0 else SERVERS[::-1]  # A B, then B A: neither always goes first
        print(f"  pair {pair + 1}/{args.pairs} ({' then '.join(order)} on each case)", flush=True)
        for kind, measured in measure_pair(data, files, args, order).items():
            for name, result in measured.items():
                runs[kind][name].append(result)
    cache = "default" if args.message_cache_mib is None else f"{args.message_cache_mib} MiB"
    print(f"load average {os.getloadavg()[0]:.1f} at the end; tornchat's message cache: {cache}")
    print_table(runs, files)


def print_table(runs: dict[str, dict[str, list[tuple]]], files: dict[str, str]) -> None:
    """Medians over the pairs, and each pair's ratio tornchat / floor."""
    print("\n| case | tornchat req/s, -c50 | floor req/s, -c50 | ratio per pair | -c1 p50 tornchat / floor"
          " | -c1 p99 tornchat / floor |")  # fmt: skip
    print("|---|---|---|---|---|---|")
    for name in files:
        ours, floor = runs["tornchat"][name], runs["floor"][name]
        ratios = " ".join(f"{a[0].rps / b[0].rps:.2f}" for a, b in zip(ours, floor, strict=True))

        def median(results: list[tuple], pick) -> float:
            return statistics.median(pick(r) for r in results)

        print(
            f"| {name} | {median(ours, lambda r: r[0].rps):,.1f} | {median(floor, lambda r: r[0].rps):,.1f} | {ratios}"
            f" | {median(ours, lambda r: r[1].p50):.1f} / {median(floor, lambda r: r[1].p50):.1f} ms"
            f" | {median(ours, lambda r: r[1].p99):.1f} / {median(floor, lambda r: r[1].p99):.1f} ms |"
        )


if __name__ == "__main__":
    main()
