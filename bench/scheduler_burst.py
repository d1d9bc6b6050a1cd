"""Scheduler burst: 10,000 scheduled messages due at the same second, delivered by the real
Scheduler on a Tornado IOLoop. Measures the total delivery time and how long the IOLoop stalls
(what a request arriving during the burst would wait): the event-loop lag seen by a 10 ms timer
probe, and the wall time of each scheduler turn.

The server is tornchat's own Server (tornchat/server.py) on a fresh temporary database: start()
builds the Scheduler with call_later = IOLoop.call_later and re-arms it on scheduled_messages
events, exactly as in production. The clock is the wall clock shifted so that every message falls
due the moment start() runs. Data shape: 200 users, 20 public channels of 50 subscribers each;
70% of the messages go to channels, 30% are direct messages (one-to-one or three people).
Usage: python bench/scheduler_burst.py [--messages 10000] [--batch-size N ...]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))


from scheduler import delivery  # noqa: E402
from storage.channels.channel_creation import ChannelOptions, create_channel
from storage.membership import subscriptions
from storage.messages import scheduled_messages
from storage.org import users  # noqa: E402
from tornchat.bootstrap import bootstrap  # noqa: E402
from tornchat.server import Server  # noqa: E402
from tornchat.settings import Settings  # noqa: E402

USERS, CHANNELS, SUBSCRIBERS, DIRECT_SHARE = 200, 20, 50, 0.3
PROBE_SECONDS = 0.01


class ShiftedClock:
    """The wall clock plus an offset the bench moves: time runs, and jumps to the due second."""

    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> float:
        return time.time() + self.offset


def populate(server: Server, owner: users.User, count: int, due: int) -> None:
    rng = random.Random(7)

    def setup(tx):
        people = [users.create_user(tx, f"user{n}@bench.example", f"User {n}", None) for n in range(USERS)]
        channels = [create_channel(tx, owner, f"channel {c}", ChannelOptions(), True) for c in range(CHANNELS)]
        members = {}
        for channel in channels:
            chosen = rng.sample(people, SUBSCRIBERS)
            subscriptions.subscribe(tx, [channel], [p.id for p in chosen])
            members[channel.id] = chosen
        return people, members

    people, members = server.db.write(setup)
    for start in range(0, count, 1000):

        def schedule(tx, start=start):
            for n in range(start, min(start + 1000, count)):
                if rng.random() < DIRECT_SHARE:
                    sender, *others = rng.sample(people, rng.choice((2, 3)))
                    to, kind, topic = [o.id for o in others], "direct", None
                else:
                    channel_id = rng.choice(list(members))
                    sender, to, kind, topic = rng.choice(members[channel_id]), channel_id, "stream", f"topic {n % 7}"
                draft = scheduled_messages.Draft(
                    type=kind, to=to, topic=topic, scheduled_delivery_timestamp=due,
                    content=f"Scheduled message {n}: **bold**, `code`, a link https://example.com/{n}",
                )  # fmt: skip
                scheduled_messages.create_scheduled_message(tx, sender, draft, "website")

        server.db.write(schedule)


def burst(server: Server, clock: ShiftedClock, due: int) -> dict[str, Any]:
    """Jump the clock to the due second, start the server's scheduler, and run the loop until done."""
    turns: list[float] = []
    lags: list[float] = []
    run = delivery.Scheduler.run

    async def main() -> float:
        done = asyncio.Event()

        def timed_run(self: delivery.Scheduler) -> None:
            began = time.perf_counter()
            run(self)
            turns.append(time.perf_counter() - began)
            if self.db.read(scheduled_messages.next_due_time) is None:
                done.set()

        async def probe() -> None:
            # Event-loop lag: how much later than asked a 10 ms timer fires, i.e. how long a request
            # (or any callback) arriving during the burst waits for the loop.
            while not done.is_set():
                asked = time.perf_counter()
                await asyncio.sleep(PROBE_SECONDS)
                lags.append(time.perf_counter() - asked - PROBE_SECONDS)

        delivery.Scheduler.run = timed_run  # type: ignore[method-assign]
        prober = asyncio.ensure_future(probe())
        await asyncio.sleep(0.1)  # the probe is running
        clock.offset = due - time.time()
        started = time.perf_counter()
        server.start()
        await done.wait()
        total = time.perf_counter() - started
        await prober
        server.shutdown()
        return total

    try:
        total = asyncio.run(main())
    finally:
        delivery.Scheduler.run = run  # type: ignore[method-assign]
    return {"total": total, "turns": turns, "lags": sorted(lags)}


COUNTS = {
    "delivered": "SELECT count(*) FROM scheduled_messages WHERE delivered_message_id IS NOT NULL",
    "failed": "SELECT count(*) FROM scheduled_messages WHERE failed",
    "user_messages": "SELECT count(*) FROM user_messages",
}


def measure(count: int, batch_size: int, budget: float) -> dict[str, object]:
    """Build a fresh database, schedule `count` messages, and time their burst."""
    original_init = delivery.Scheduler.__init__

    def init(self, db, clock, call_later):  # type: ignore[no-untyped-def]
        original_init(self, db, clock, call_later, batch_size, budget)

    delivery.Scheduler.__init__ = init  # type: ignore[method-assign]
    with tempfile.TemporaryDirectory() as directory:
        data_dir = os.path.join(directory, "data")
        settings = Settings(data_dir=data_dir, site="http://127.0.0.1:9991", email_host="bench.example")
        owner = bootstrap(settings, "owner@bench.example", None)
        clock = ShiftedClock()
        server = Server(settings, clock=clock)
        due = int(clock()) + 3600
        began = time.perf_counter()
        populate(server, owner, count, due)
        result = {"setup": time.perf_counter() - began, **burst(server, clock, due)}
        result.update(server.db.read(lambda tx: {name: tx.value(sql) for name, sql in COUNTS.items()}))
        server.close()
    delivery.Scheduler.__init__ = original_init  # type: ignore[method-assign]
    return result


def report(count: int, batch_size: int, budget_ms: float, r: dict[str, Any]) -> None:
    turns, lags = sorted(r["turns"]), r["lags"]
    total = r["total"]
    print(f"batch size {batch_size}, turn budget {budget_ms:g} ms:")
    print(f"  delivered {r['delivered']:,} (failed {r['failed']}), {r['user_messages']:,} user_messages rows")
    print(f"  total delivery {total:.2f} s = {count / total:,.0f} messages/s (setup {r['setup']:.1f} s)")
    print(f"  scheduler turn wall time: {spread(turns)} ({len(turns)} turns)")
    print(f"  IOLoop lag of a 10 ms timer during the burst: {spread(lags)} ({len(lags)} probes)")


def spread(values: list[float]) -> str:
    p50, p99 = statistics.median(values), values[int(len(values) * 0.99) - 1]
    return f"p50 {p50 * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms, max {values[-1] * 1000:.1f} ms"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--batch-size", type=int, nargs="*", default=[delivery.BATCH_SIZE])
    parser.add_argument(
        "--budget-ms",
        type=float,
        default=delivery.TURN_BUDGET_SECONDS * 1000,
        help="time budget of one IOLoop turn (a huge value: turns bounded by the batch size only)",
    )
    args = parser.parse_args()
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cpus, Python {platform.python_version()},"
        f" SQLite {sqlite3.sqlite_version}, load average {os.getloadavg()[0]:.1f} at start"
    )
    print(
        f"data: {args.messages:,} scheduled messages due at the same second; {USERS} users, {CHANNELS} channels"
        f" of {SUBSCRIBERS} subscribers; {DIRECT_SHARE:.0%} direct messages (2-3 people)"
    )
    for batch_size in args.batch_size:
        report(args.messages, batch_size, args.budget_ms, measure(args.messages, batch_size, args.budget_ms / 1000))


if __name__ == "__main__":
    main()
