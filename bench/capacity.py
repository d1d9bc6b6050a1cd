"""Capacity: the largest number of active users one tornchat process serves with every p99 under 500 ms.

For each N the script builds a fresh data directory (N users, 20 channels, each user in 3 to 5 of
them, HISTORY messages per channel over 10 topics), starts `python -m tornchat serve` on it in its
own process, and drives it from CLIENTS load processes (asyncio, a raw HTTP/1.1 keep-alive client,
two connections per user: one for the long-poll, one for everything else). Each simulated user, as
a Zulip web client does:
- registers an event queue at the start (all event types) and keeps one long-poll parked on
  GET /events, re-polling as soon as one answers;
- sends a ~150-character message every minute to one of its channels (random topic);
- reports presence every minute (POST /users/me/presence, status active, last_update_id as the
  modern web client sends it);
- changes narrow every 1 to 3 minutes (mean 2): GET /messages, anchor newest, 100 before, narrowed
  to nothing (the home view), a channel, or a channel and topic, in turn.
The load side (the simulated users and their HTTP client) is bench/capacity_load.py.
Every action is scheduled at a random phase; its latency counts from the moment it was due (so a
slow server cannot hide queueing). "delivery" is the time from a message's scheduled send until a
long-poll of each recipient returns it. SPEED multiplies every rate (1 for the headline figure).
A step passes when, inside the measurement window, every kind's p99 is under 500 ms and no request
failed (one still unanswered GRACE seconds after the window counts as failed). The search doubles N
from --start until a step fails, then bisects.
Usage: python bench/capacity.py [--start 100] [--window 60] [--speed 1] [--clients 1] [--quick]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import platform
import random
import resource
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Any

import msgspec

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from capacity_load import FILLER, KINDS, TOPICS, Person, Plan, Samples, client_process  # noqa: E402

from storage.channels.channel_creation import ChannelOptions, create_channel
from storage.db.database import Database  # noqa: E402
from storage.membership import subscriptions
from storage.model import recipients
from storage.model.realm import get_realm  # noqa: E402
from storage.org import users  # noqa: E402
from tornchat.bootstrap import bootstrap  # noqa: E402
from tornchat.settings import Settings  # noqa: E402

CHANNELS = 20
LIMIT_MS = 500.0


# --------------------------------------------------------------------------- data


def build(data_dir: str, count: int, history: int, seed: int) -> list[Person]:
    """Create the organization: COUNT users in 3-5 of 20 channels, HISTORY messages per channel."""
    settings = Settings(data_dir=data_dir, site="http://127.0.0.1:9991", email_host="bench.example")
    owner = bootstrap(settings, "owner@bench.example", "a long bench password")
    rng = random.Random(seed)
    db = Database(settings.database_path)

    def setup(tx):  # type: ignore[no-untyped-def]
        people = [users.create_user(tx, f"person{n}@bench.example", f"Person {n}", None) for n in range(count)]
        channels = [create_channel(tx, owner, f"channel {c}", ChannelOptions(), True) for c in range(CHANNELS)]
        members: dict[int, list[int]] = {channel.id: [] for channel in channels}
        chosen = {person.id: rng.sample(channels, rng.randint(3, 5)) for person in people}
        for person in people:
            for channel in chosen[person.id]:
                members[channel.id].append(person.id)
        for channel in channels:
            subscriptions.subscribe(tx, [channel], members[channel.id] or [owner.id])
        realm = get_realm(tx)
        first = (tx.value("SELECT max(id) FROM messages") or 0) + 1
        messages, rows = [], []
        for c, channel in enumerate(channels):
            recipient = recipients.get_or_create_recipient(tx, recipients.CHANNEL, channel.id)
            senders = members[channel.id] or [owner.id]
            for k in range(history):
                message_id = first + c * history + k
                topic = f"topic {rng.randrange(TOPICS)}"
                text = f"history {k} {FILLER}"
                messages.append((message_id, rng.choice(senders), recipient, channel.id, topic, topic, text,
                                 f"<p>{text}</p>", int(tx.timestamp) - history + k))  # fmt: skip
                unread = k >= history - 5
                rows.extend((user_id, message_id, 0 if unread else 1) for user_id in senders)
        tx.executemany(
            "INSERT INTO messages (id, sender_id, recipient_id, channel_id, topic, topic_key, content,"
            " rendered_content, date_sent, client) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'bench')",
            messages,
        )
        tx.executemany("INSERT INTO user_messages (user_id, message_id, flags) VALUES (?, ?, ?)", rows)
        return [Person(p.id, users.api_email(p, realm), p.api_key, [c.name for c in chosen[p.id]]) for p in people]

    try:
        return db.write(setup)
    finally:
        db.conn.execute("ANALYZE")
        db.close()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start_server(data_dir: str, port: int) -> subprocess.Popen[bytes]:
    """`python -m tornchat serve` in its own process, its log in DATA_DIR/server.log; return once it answers."""
    log = open(os.path.join(data_dir, "server.log"), "wb")  # noqa: SIM115 (handed to the child)
    root = os.path.join(os.path.dirname(__file__), "..")
    command = [sys.executable, "-m", "tornchat", "serve", "--data-dir", data_dir, "--port", str(port)]
    server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=root)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"the server exited with {server.returncode}; see {log.name}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return server
        except OSError:
            time.sleep(0.1)
    server.kill()
    raise RuntimeError("the server did not start listening within 60 s")


# --------------------------------------------------------------------------- one step, the search


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(fraction * len(ordered) + 0.999999) - 1))]


def process_cpu(pid: int) -> float:
    """CPU seconds (user + system) a process has used so far."""
    with open(f"/proc/{pid}/stat") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def machine_cpu() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine so far, all cores."""
    with open("/proc/stat") as handle:
        ticks = [int(value) for value in handle.readline().split()[1:]]
    tick = os.sysconf("SC_CLK_TCK")
    return (sum(ticks) - ticks[3] - ticks[4]) / tick, sum(ticks) / tick


@dataclass
class Step:
    users: int
    samples: Samples
    server_cpu: float  # share of one core over the window
    client_cpu: list[float]  # each client process's share of one core
    other_cpu: float  # what the rest of the machine used, in cores
    setup_seconds: float

    @property
    def passed(self) -> bool:
        latencies, failures = self.samples.latencies, self.samples.failures
        return all(latencies[k] and percentile(latencies[k], 0.99) < LIMIT_MS and not failures[k] for k in KINDS)


def merge(parts: list[Samples]) -> Samples:
    total = Samples()
    for part in parts:
        for kind in KINDS:
            total.latencies[kind] += part.latencies[kind]
            total.failures[kind] += part.failures[kind]
        total.register += part.register
        total.lag += part.lag
        total.events += part.events
    return total


def profile(pid: int, path: str, seconds: float) -> subprocess.Popen[bytes]:
    """py-spy (pip install py-spy) sampling the server for SECONDS into PATH, collapsed stacks."""
    command = ["py-spy", "record", "--pid", str(pid), "--duration", str(int(seconds)), "--rate", "200",
               "--nonblocking", "--format", "raw", "--output", path]  # fmt: skip
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def receive(pipe: Any, process: Any, timeout: float) -> bytes:
    """The next message of a client process; raise if it dies or says nothing within TIMEOUT seconds."""
    deadline = time.monotonic() + timeout
    while not pipe.poll(0.5):
        if not process.is_alive() or time.monotonic() > deadline:
            raise RuntimeError(f"client process {process.pid} stopped (exit code {process.exitcode}) or hung")
    return bytes(pipe.recv_bytes())


def run_step(count: int, args: argparse.Namespace) -> Step:
    """Build N users' organization, start a server on it, load it from client processes, measure."""
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="tornchat-capacity-") as data_dir:
        people = build(data_dir, count, args.history, args.seed)
        port = free_port()
        server = start_server(data_dir, port)
        try:
            plan = Plan(port, args.speed, args.warmup, args.window, args.grace)
            context = multiprocessing.get_context("fork")
            pipes, processes = [], []
            for k in range(args.clients):
                parent, child = context.Pipe()
                share = people[k :: args.clients]
                process = context.Process(target=client_process, args=(share, plan, child, args.seed + k), daemon=True)
                process.start()
                pipes.append(parent)
                processes.append(process)
            for pipe, process in zip(pipes, processes, strict=True):
                if receive(pipe, process, 600) != b"registered":
                    raise RuntimeError("a client process did not finish registering")
            setup = time.monotonic() - started
            plan.start = time.monotonic() + 1.0
            for pipe in pipes:
                pipe.send(plan.start)
            time.sleep(max(0.0, plan.start + plan.warmup - time.monotonic()))
            profiler = profile(server.pid, args.profile, plan.window) if args.profile else None
            server_before, machine_before = process_cpu(server.pid), machine_cpu()
            clients_before = [process_cpu(process.pid) for process in processes]  # type: ignore[arg-type]
            time.sleep(max(0.0, plan.start + plan.warmup + plan.window - time.monotonic()))
            server_used = process_cpu(server.pid) - server_before
            clients_used = [process_cpu(p.pid) - b for p, b in zip(processes, clients_before, strict=True)]  # type: ignore[arg-type]
            busy, _ = machine_cpu()
            if profiler is not None:
                profiler.wait(60)
            parts = []
            parts = [msgspec.msgpack.decode(receive(pipe, process, plan.grace + 300), type=Samples)
                     for pipe, process in zip(pipes, processes, strict=True)]  # fmt: skip
            for process in processes:
                process.join(30)
        finally:
            server.terminate()
            try:
                server.wait(30)
            except subprocess.TimeoutExpired:
                server.kill()
            if args.logs:
                os.makedirs(args.logs, exist_ok=True)
                shutil.copy(os.path.join(data_dir, "server.log"), os.path.join(args.logs, f"server-{count}.log"))
    other = (busy - machine_before[0] - server_used - sum(clients_used)) / plan.window
    return Step(count, merge(parts), server_used / plan.window, [c / plan.window for c in clients_used],
                max(0.0, other), setup)  # fmt: skip


def row(step: Step) -> str:
    cells = [f"{step.users:>6}"]
    for kind in KINDS:
        values = step.samples.latencies[kind]
        p50, p99 = (percentile(values, 0.5), percentile(values, 0.99)) if values else (float("nan"),) * 2
        failed = f" !{step.samples.failures[kind]}" if step.samples.failures[kind] else ""
        cells.append(f"{p50:7.1f} {p99:7.1f}{failed}")
    clients = "+".join(f"{c:.0%}" for c in step.client_cpu)
    lag = percentile(step.samples.lag, 0.99) if step.samples.lag else float("nan")
    register = percentile(step.samples.register, 0.5) if step.samples.register else float("nan")
    cells += [f"{step.server_cpu:5.0%}", f"{clients:>9}", f"{lag:6.1f}", f"{step.other_cpu:5.2f}",
              f"{register:6.1f}", "pass" if step.passed else "FAIL"]  # fmt: skip
    return " | ".join(cells)


HEADER = (
    "     N | send p50/p99 ms | fetch p50/p99   | presence p50/p99 | delivery p50/p99 | server"
    " | client cpu | lag99 | other | reg50 | p99<500"
)


def next_count(passed: int, failed: int | None, resolution: float) -> int | None:
    """Double until a step fails, then bisect until the gap is within RESOLUTION of the passing N."""
    if failed is None:
        return passed * 2
    if failed - passed <= max(1, int(resolution * passed)):
        return None
    middle = (passed + failed) // 2
    return max(passed + 1, min(failed - 1, round(middle, -1) if failed - passed > 20 else middle))


def search(args: argparse.Namespace) -> tuple[list[Step], int]:
    steps: list[Step] = []
    passed, failed = 0, None
    count: int | None = args.start
    while count is not None:
        step = run_step(count, args)
        steps.append(step)
        print(row(step), flush=True)
        if step.passed:
            passed = count
        else:
            failed = count
        if failed is None and count * 2 > args.max_users:
            break
        count = next_count(passed, failed, args.resolution) if passed else (failed or 2) // 2 or None
    return steps, passed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--start", type=int, default=100, help="first N of the search (default 100)")
    parser.add_argument("--max-users", type=int, default=10_000, help="stop doubling past this N")
    parser.add_argument("--resolution", type=float, default=0.15, help="bisect until failing N <= passing N x (1+R)")
    parser.add_argument("--window", type=float, default=60.0, help="measured seconds per step (default 60)")
    parser.add_argument("--warmup", type=float, default=10.0, help="seconds of load before the window")
    parser.add_argument("--grace", type=float, default=5.0, help="seconds of load after it, for late answers")
    parser.add_argument("--speed", type=float, default=1.0, help="multiply every per-user rate (default 1)")
    parser.add_argument("--history", type=int, default=200, help="messages per channel before the start")
    parser.add_argument("--clients", type=int, default=1, help="load client processes (default 1)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--logs", metavar="DIR", help="keep each step's server log (access times) in DIR")
    parser.add_argument("--profile", metavar="PATH", help="py-spy the server during each window (collapsed stacks)")
    parser.add_argument("--users", type=int, help="run this one N only (no search)")
    parser.add_argument("--quick", action="store_true", help="smoke test: N=20 then 40, 10x rates, 3 s windows")
    args = parser.parse_args()
    if args.quick:
        args.start, args.max_users, args.window, args.warmup, args.grace, args.speed = 20, 40, 3.0, 0.5, 0.5, 10.0
        args.history = 30
    resource.setrlimit(resource.RLIMIT_NOFILE, (resource.getrlimit(resource.RLIMIT_NOFILE)[1],) * 2)
    print(f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, SQLite"
          f" {sqlite3.sqlite_version}; load average before: {os.getloadavg()[0]:.2f}")  # fmt: skip
    print(f"per user: a message and a presence report every {60 / args.speed:g} s, a fetch of 100 every"
          f" {60 / args.speed:g}-{180 / args.speed:g} s, one long-poll; {args.clients} client process(es);"
          f" window {args.window:g} s after {args.warmup:g} s; {args.history} messages per channel")  # fmt: skip
    print("latencies in ms from when each action was due; server/client cpu: share of one core;"
          " lag99: p99 of the client loop's lateness (ms); other: cores used by everything else;"
          " reg50: p50 of POST /register (ms, setup, not in the criterion)")  # fmt: skip
    print(HEADER, flush=True)
    if args.users:
        step = run_step(args.users, args)
        print(row(step))
        return
    steps, best = search(args)
    print(f"largest N with every p99 under {LIMIT_MS:.0f} ms: {best or 'none'}"
          f" (resolution {args.resolution:.0%}, {len(steps)} steps)")  # fmt: skip


if __name__ == "__main__":
    main()
