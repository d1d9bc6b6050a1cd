"""POST /messages throughput: 10 concurrent senders to a 1,000-subscriber and to a 10-subscriber channel.

Builds a fresh data directory (SUBSCRIBERS users in channel "big", 10 of them in channel "small",
HISTORY older messages in "big" so each user's rows span several b-tree pages, as in a used
database), starts `python -m tornchat serve` on it in its own process and drives it from this
process: SENDERS asyncio keep-alive connections, each sending its next message as soon as the
previous one is answered (closed loop), COUNT messages per channel after WARMUP unmeasured ones.
Prints msg/s and the p50/p99 latency of the answers.

The floor, measured in the same run on a copy of the same database (same schema, the same
connection settings as the server's: storage.db.connect() and its WAL checkpoint interval): plain
sqlite3 in this process storing the same rows per message, one `messages` row and one
`user_messages` row per subscriber (flags 0, the sender's read), one transaction per message
(BEGIN IMMEDIATE ... COMMIT), one message at a time. It has no HTTP, no validation, no rendering,
no events: the cost of the SQLite rows alone, committed one by one. The ratio is tornchat's msg/s
over the floor's. A second figure, "floor xN", stores the same rows N (= SENDERS) messages per
transaction: what the rows cost when every commit is shared as widely as the senders allow.
Usage: python bench/send_throughput.py [--subscribers 1000] [--history 1000] [--count 300] [--profile DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import random
import shutil
import sqlite3
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from capacity import free_port, percentile, process_cpu, profile, start_server  # noqa: E402
from capacity_load import FILLER, Connection, Person  # noqa: E402

from storage.channels.channel_creation import ChannelOptions, create_channel
from storage.db.database import Database, connect  # noqa: E402
from storage.membership import subscriptions
from storage.model import recipients
from storage.org import users  # noqa: E402

try:
    from storage.db.database import WAL_AUTOCHECKPOINT
except ImportError:  # a build from before group commit (the "before" figures): SQLite's default
    WAL_AUTOCHECKPOINT = 1000
from storage.model.realm import get_realm  # noqa: E402
from tornchat.bootstrap import bootstrap  # noqa: E402
from tornchat.settings import Settings  # noqa: E402

SMALL = 10
CHANNELS = ("big", "small")


def build(data_dir: str, count: int, history: int, senders: int) -> tuple[list[Person], dict[str, tuple[int, int]]]:
    """Create COUNT users, all in "big", SMALL of them in "small"; return the senders and each channel's ids."""
    settings = Settings(data_dir=data_dir, site="http://127.0.0.1:9991", email_host="bench.example")
    owner = bootstrap(settings, "owner@bench.example", "a long bench password")
    db = Database(settings.database_path)

    def setup(tx):  # type: ignore[no-untyped-def]
        people = [users.create_user(tx, f"person{n}@bench.example", f"Person {n}", None) for n in range(count - 1)]
        big = create_channel(tx, owner, "big", ChannelOptions(), True)
        small = create_channel(tx, owner, "small", ChannelOptions(), True)
        subscriptions.subscribe(tx, [big], [owner.id] + [p.id for p in people])
        subscriptions.subscribe(tx, [small], [p.id for p in people[:SMALL]])
        ids = {}
        for channel in (big, small):
            ids[channel.name] = (channel.id, recipients.get_or_create_recipient(tx, recipients.CHANNEL, channel.id))
        receivers = [owner.id] + [p.id for p in people]
        first = (tx.value("SELECT max(id) FROM messages") or 0) + 1
        messages, rows = [], []
        for k in range(history):
            sender = receivers[k % len(receivers)]
            text = f"history {k} {FILLER}"
            messages.append((first + k, sender, ids["big"][1], big.id, f"topic {k % 10}", f"topic {k % 10}", text,
                             f"<p>{text}</p>", tx.timestamp - history + k))  # fmt: skip
            rows.extend((user_id, first + k, 1) for user_id in receivers)
        tx.executemany(
            "INSERT INTO messages (id, sender_id, recipient_id, channel_id, topic, topic_key, content,"
            " rendered_content, date_sent, client) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'bench')",
            messages,
        )
        tx.executemany("INSERT INTO user_messages (user_id, message_id, flags) VALUES (?, ?, ?)", rows)
        realm = get_realm(tx)
        return [Person(p.id, users.api_email(p, realm), p.api_key, list(CHANNELS)) for p in people[:senders]], ids

    try:
        return db.write(setup)
    finally:
        db.conn.execute("ANALYZE")
        db.close()


# --------------------------------------------------------------------------- the floor


def floor(path: str, ids: tuple[int, int], sender_ids: list[int], count: int, batch: int = 1) -> list[float]:
    """Store COUNT messages as bare rows, BATCH per transaction; return each transaction's seconds.

    The CPU seconds this took are appended last.
    """
    cpu = time.process_time()
    channel_id, recipient_id = ids
    conn = connect(path)  # tornchat's pragmas, and the server's checkpoint interval
    conn.execute(f"PRAGMA wal_autocheckpoint = {WAL_AUTOCHECKPOINT}")
    query = "SELECT user_id FROM subscriptions WHERE channel_id = ?"
    receivers = [row[0] for row in conn.execute(query, (channel_id,))]
    text = f"floor {FILLER}"
    times = []
    for n in range(count):
        sender = sender_ids[n % len(sender_ids)]
        if n % batch == 0:
            started = time.perf_counter()
            conn.execute("BEGIN IMMEDIATE")
        message_id = conn.execute(
            "INSERT INTO messages (sender_id, recipient_id, channel_id, topic, topic_key, content, rendered_content,"
            " date_sent, client) VALUES (?, ?, ?, 'floor', 'floor', ?, ?, ?, 'bench')",
            (sender, recipient_id, channel_id, text, f"<p>{text}</p>", int(time.time())),
        ).lastrowid
        conn.executemany(
            "INSERT INTO user_messages (user_id, message_id, flags) VALUES (?, ?, ?)",
            [(user_id, message_id, int(user_id == sender)) for user_id in sorted(receivers)],
        )
        if n % batch == batch - 1 or n == count - 1:
            conn.execute("COMMIT")
            times.append(time.perf_counter() - started)
    conn.close()
    return [*times, time.process_time() - cpu]


# --------------------------------------------------------------------------- the load


async def send_all(
    port: int, senders: list[Person], channel: str, count: int, warmup: int
) -> tuple[float, list[float]]:
    """Send WARMUP then COUNT messages from the senders at once; return (seconds, latencies in ms) of COUNT."""
    connections = [Connection(port, person) for person in senders]
    rng = random.Random(channel)
    latencies: list[float] = []

    async def sender(connection: Connection, quota: int, measured: bool) -> None:
        for _ in range(quota):
            params = {"type": "stream", "to": channel, "topic": f"topic {rng.randrange(10)}", "content": FILLER}
            started = time.perf_counter()
            status, body = await connection.request("POST", "/messages", params)
            if status != 200:
                raise RuntimeError(f"POST /messages answered {status}: {body[:200]!r}")
            if measured:
                latencies.append((time.perf_counter() - started) * 1000)

    async def phase(total: int, measured: bool) -> float:
        quotas = [total // len(connections) + (i < total % len(connections)) for i in range(len(connections))]
        started = time.perf_counter()
        await asyncio.gather(*(sender(c, q, measured) for c, q in zip(connections, quotas, strict=True)))
        return time.perf_counter() - started

    await phase(warmup, False)
    seconds = await phase(count, True)
    for connection in connections:
        connection.close()
    return seconds, latencies


def report(name: str, count: int, seconds: float, latencies: list[float], cpu: float) -> dict[str, float]:
    """Print and return msg/s, p50/p99 (ms) and CPU milliseconds per message."""
    rate, cpu_ms = count / seconds, cpu * 1000 / count
    p50, p99 = percentile(latencies, 0.5), percentile(latencies, 0.99)
    print(
        f"  {name:<10} {rate:8.1f} msg/s   p50 {p50:7.1f} ms   p99 {p99:7.1f} ms   CPU {cpu_ms:5.2f} ms/msg", flush=True
    )
    return {"rate": rate, "p50": p50, "p99": p99, "cpu": cpu_ms}


def run_floor(
    name: str, path: str, ids: tuple[int, int], sender_ids: list[int], count: int, batch: int
) -> dict[str, float]:
    *times, cpu = floor(path, ids, sender_ids, count, batch)
    return report(name, count, sum(times), [t * 1000 for t in times], cpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--subscribers", type=int, default=1000)
    parser.add_argument("--history", type=int, default=1000, help="older messages in the big channel")
    parser.add_argument("--senders", type=int, default=10)
    parser.add_argument("--count", type=int, default=300, help="measured messages per channel")
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--port", type=int, default=0, help="server port (default: a free one)")
    parser.add_argument("--tmp", help="where the data directory is made (default: the system's)")
    parser.add_argument("--profile", metavar="DIR", help="py-spy the server during each channel's run into DIR")
    args = parser.parse_args()
    machine = f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs"
    print(f"machine: {machine}, load {os.getloadavg()[0]:.2f}; python {platform.python_version()},"
          f" sqlite {sqlite3.sqlite_version}")  # fmt: skip
    data_dir = tempfile.mkdtemp(prefix="send-throughput-", dir=args.tmp)
    try:
        started = time.perf_counter()
        senders, ids = build(data_dir, args.subscribers, args.history, args.senders)
        took = time.perf_counter() - started
        print(f"built {args.subscribers} users, {args.history} history messages in {took:.1f} s")
        database = os.path.join(data_dir, "tornchat.sqlite3")
        floor_db = os.path.join(data_dir, "floor.db")
        shutil.copyfile(database, floor_db)
        port = args.port or free_port()
        server = start_server(data_dir, port)
        results = {}
        try:
            for channel in CHANNELS:
                subscribers = args.subscribers if channel == "big" else SMALL
                shape = f"{subscribers} subscribers), {args.senders} senders, {args.count} messages"
                print(f"channel {channel!r} ({shape}:")
                sender_ids = [p.id for p in senders]
                floor(floor_db, ids[channel], sender_ids, args.warmup)
                low = run_floor("floor", floor_db, ids[channel], sender_ids, args.count, 1)
                shared = run_floor(
                    f"floor x{len(senders)}", floor_db, ids[channel], sender_ids, args.count, len(senders)
                )
                spy = None
                if args.profile:
                    os.makedirs(args.profile, exist_ok=True)
                    estimate = 2 + args.count / max(low["rate"] / 4, 1)
                    spy = profile(server.pid, os.path.join(args.profile, f"{channel}.txt"), estimate)
                cpu = process_cpu(server.pid)
                seconds, latencies = asyncio.run(send_all(port, senders, channel, args.count, args.warmup))
                # The server's CPU covers the warm-up sends too: count its share of the measured ones.
                cpu = (process_cpu(server.pid) - cpu) * args.count / (args.count + args.warmup)
                high = report("tornchat", args.count, seconds, latencies, cpu)
                print(f"  ratio tornchat/floor {high['rate'] / low['rate']:.2f}, tornchat/floor x{len(senders)}"
                      f" {high['rate'] / shared['rate']:.2f}; server CPU {cpu / seconds:.0%} of a core")  # fmt: skip
                results[channel] = (high, low, shared)
                if spy is not None:
                    spy.wait()
        finally:
            server.terminate()
            server.wait(30)
        with open(os.path.join(data_dir, "server.log")) as log:
            print("server:", *[line.split(" ", 3)[-1].strip() for line in log if "group commit" in line])
        n = len(senders)
        print(f"\n| channel | tornchat msg/s | p50 ms | p99 ms | CPU ms/msg | floor msg/s (CPU ms/msg) | ratio |"
              f" floor x{n} msg/s (CPU ms/msg) | ratio |")  # fmt: skip
        print("|---|---|---|---|---|---|---|---|---|")
        for channel, (high, low, shared) in results.items():
            rate = high["rate"]
            print(f"| {channel} | {rate:.1f} | {high['p50']:.1f} | {high['p99']:.1f} | {high['cpu']:.2f} |"
                  f" {low['rate']:.1f} ({low['cpu']:.2f}) | {rate / low['rate']:.2f} |"
                  f" {shared['rate']:.1f} ({shared['cpu']:.2f}) | {rate / shared['rate']:.2f} |")  # fmt: skip
        print(f"load after: {os.getloadavg()[0]:.2f}")
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
