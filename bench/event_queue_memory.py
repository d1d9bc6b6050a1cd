"""Event-queue memory: idle queues under a sender to a big channel, then a save and a load.

Issue 10, item 9: 1,000 queues that are never polled, each of a subscriber of one channel, while a
sender posts there. Prints the memory the queues hold, the size of the saved-queues file and the
time to write and to load it, with ratios against floors: the file against the bytes of the
distinct events it must keep (each once), the load against a bare JSON parse of the same file.
Starts tornchat in a thread on a fresh temporary database; messages go through POST /messages.
Usage: python bench/event_queue_memory.py [--queues 1000] [--messages 500] [--content 300]
"""

from __future__ import annotations

import argparse
import concurrent.futures
import gc
import json
import os
import platform
import sys
import tempfile
import time
import tracemalloc
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import msgspec  # noqa: E402

from storage.channels.channel_creation import ChannelOptions, create_channel
from storage.membership import subscriptions
from storage.org import users  # noqa: E402
from tests.support.helpers import FakeClock, LiveServer, assert_success  # noqa: E402
from tornchat.events.registry import EventQueues  # noqa: E402


def setup(live: LiveServer, count: int) -> list[users.User]:
    def create(tx: Any) -> list[users.User]:
        people = [users.create_user(tx, f"idle{n}@example.com", f"Idle {n}", None) for n in range(count)]
        channel = create_channel(tx, live.owner_user, "busy", ChannelOptions(), True)
        subscriptions.subscribe(tx, [channel], [live.owner_user.id] + [p.id for p in people])
        return people

    return live.write(create)


def traced(fn: Any) -> tuple[Any, int]:
    """Run fn under tracemalloc; return its result and the bytes it left allocated."""
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    result = fn()
    used = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    return result, used


def call(live: LiveServer, fn: Any) -> Any:
    """LiveServer.call without its 10 s limit: saving the queues took longer before issue 10."""
    done: concurrent.futures.Future[Any] = concurrent.futures.Future()
    live.loop.call_soon_threadsafe(lambda: done.set_result(fn()))
    return done.result(3600)


def distinct_event_bytes(queues: EventQueues) -> int:
    """The JSON size of every distinct event (without its per-queue id), each counted once: the floor."""
    seen: set[bytes] = set()
    total = 0
    for queue in queues.queues.values():
        for event in queue.events:
            body = msgspec.json.encode({k: v for k, v in event.items() if k != "id"})
            if body not in seen:
                seen.add(body)
                total += len(body)
    return total


def run(args: argparse.Namespace, directory: str) -> dict[str, Any]:
    live = LiveServer(os.path.join(directory, "data"))
    people = setup(live, args.queues)
    # Each idle client registered as a plain POST /register does (every event type), never polls.
    live.call(lambda: [live.server.queues.create(p.id) for p in people])
    content = ("word " * (args.content // 5 + 1))[: args.content]

    def send() -> float:
        started = time.perf_counter()
        for n in range(args.messages):
            body = {"type": "stream", "to": "busy", "topic": f"topic {n % 10}", "content": f"{n} {content}"}
            assert_success(live.owner.post("/messages", body))
        return time.perf_counter() - started

    # Python memory the server kept while the messages went out: the queues, and the EventBus's
    # history of the last 1,000 published events (measured apart by clearing it). SQLite's own
    # memory is not traced.
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    sending = send()
    held_memory = tracemalloc.get_traced_memory()[0] - before
    call(live, live.server.events.recent.clear)
    history = held_memory - (tracemalloc.get_traced_memory()[0] - before)
    tracemalloc.stop()

    def held() -> dict[str, Any]:
        queues = live.server.queues.queues.values()
        return {
            "live": sum(not q.overflowed for q in queues),
            "overflowed": sum(q.overflowed for q in queues),
            "events": sum(len(q.events) for q in queues),
            "distinct": distinct_event_bytes(live.server.queues),
        }

    figures = call(live, held) | {"sending": sending, "held": held_memory - history, "history": history}
    path = os.path.join(directory, "event_queues.json")

    def save() -> float:
        started = time.perf_counter()
        live.server.queues.save(path)
        return time.perf_counter() - started

    figures["save"] = call(live, save)
    figures["file"] = os.path.getsize(path)
    live.stop()
    with open(path, "rb") as handle:
        raw = handle.read()
    started = time.perf_counter()
    json.loads(raw)
    figures["parse"] = time.perf_counter() - started
    restored = EventQueues(FakeClock(live.clock.now))
    started = time.perf_counter()
    figures["loaded"] = restored.load(path)
    figures["load"] = time.perf_counter() - started
    with open(os.path.join(directory, "again.json"), "wb") as handle:
        handle.write(raw)
    again = EventQueues(FakeClock(live.clock.now))
    _, figures["memory"] = traced(lambda: again.load(os.path.join(directory, "again.json")))
    return figures


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--queues", type=int, default=1000)
    parser.add_argument("--messages", type=int, default=500)
    parser.add_argument("--content", type=int, default=300, help="characters of each message")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        f = run(args, directory)
    mib = 1024 * 1024
    print(f"machine: {platform.machine()}, {os.cpu_count()} cpus, Python {platform.python_version()}")
    print(
        f"{args.queues:,} idle queues (never polled) of subscribers of one channel; {args.messages:,} messages of "
        f"{args.content} characters sent there in {f['sending']:.1f} s"
    )
    print(f"  queues alive {f['live']:,}, dropped as too far behind {f['overflowed']:,}; events held {f['events']:,}")
    print(
        f"  Python memory kept by the queues (tracemalloc): {f['held'] / mib:,.1f} MiB, "
        f"{f['held'] / max(args.queues, 1) / 1024:,.1f} KiB per queue, "
        f"{f['held'] / f['events'] if f['events'] else 0:,.0f} bytes per event held; "
        f"besides, the EventBus's history of recent events: {f['history'] / mib:,.1f} MiB"
    )
    print(f"  distinct events (the floor, each once): {f['distinct'] / mib:,.2f} MiB")
    print(
        f"  saved file: {f['file'] / mib:,.2f} MiB = {f['file'] / max(f['distinct'], 1):,.1f} x the floor; "
        f"written in {f['save'] * 1000:,.0f} ms"
    )
    print(
        f"  load: {f['loaded']:,} queues in {f['load'] * 1000:,.0f} ms = {f['load'] / max(f['parse'], 1e-9):,.1f} x "
        f"a bare json.loads of the file ({f['parse'] * 1000:,.0f} ms)"
    )
    print(
        f"  memory of the loaded queues (tracemalloc): {f['memory'] / mib:,.1f} MiB, "
        f"{f['memory'] / max(args.queues, 1) / 1024:,.1f} KiB per queue"
    )


if __name__ == "__main__":
    main()
