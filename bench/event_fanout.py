"""Event fan-out: N parked long-polls on one channel, one message sent, time until each has it.

Also measures the memory of idle event queues. Starts tornchat in a thread on a fresh temporary
database; the long-polls come from this process's Tornado HTTP client on separate connections.
Usage: python bench/event_fanout.py [--polls 1000] [--idle-queues 10000]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import os
import platform
import statistics
import sys
import tempfile
import time
import tracemalloc
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import msgspec  # noqa: E402
from tornado.httpclient import AsyncHTTPClient, HTTPRequest  # noqa: E402

from storage import subscriptions, users  # noqa: E402
from storage.channels import ChannelOptions, create_channel  # noqa: E402
from tests.helpers import LiveServer  # noqa: E402


def auth(user: users.User) -> dict[str, str]:
    token = base64.b64encode(f"{user.delivery_email}:{user.api_key}".encode()).decode()
    return {"Authorization": f"Basic {token}"}


async def fan_out(live: LiveServer, people: list[users.User], sender: users.User) -> list[float]:
    client = AsyncHTTPClient(max_clients=len(people) + 10)
    base = live.base_url + "/api/v1"
    queues = []
    for person in people:
        body = urllib.parse.urlencode({"event_types": '["message"]'})
        response = await client.fetch(f"{base}/register", method="POST", body=body, headers=auth(person))
        queues.append(msgspec.json.decode(response.body)["queue_id"])
    arrived: list[float] = []

    async def poll(person: users.User, queue_id: str) -> None:
        query = urllib.parse.urlencode({"queue_id": queue_id, "last_event_id": -1})
        request = HTTPRequest(f"{base}/events?{query}", headers=auth(person), request_timeout=120)
        response = await client.fetch(request)
        assert msgspec.json.decode(response.body)["events"][0]["type"] == "message"
        arrived.append(time.perf_counter())

    polls = [asyncio.ensure_future(poll(p, q)) for p, q in zip(people, queues, strict=True)]
    # Wait until every long-poll is parked on the server before sending.
    while sum(q.waiter is not None for q in live.server.queues.queues.values()) < len(people):
        await asyncio.sleep(0.05)
    body = urllib.parse.urlencode({"type": "stream", "to": "fanout", "topic": "t", "content": "hello"})
    sent = time.perf_counter()
    await client.fetch(f"{base}/messages", method="POST", body=body, headers=auth(sender))
    await asyncio.gather(*polls)
    return [(t - sent) * 1000 for t in arrived]


def idle_queue_memory(live: LiveServer, user_id: int, count: int) -> float:
    def create() -> float:
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(count):
            live.server.queues.create(user_id, event_types={"message"})
        used = tracemalloc.get_traced_memory()[0] - before
        tracemalloc.stop()
        return used / count

    return float(live.call(create))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--polls", type=int, default=1000)
    parser.add_argument("--idle-queues", type=int, default=10_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        live = LiveServer(os.path.join(directory, "data"))

        def setup(tx):
            people = [users.create_user(tx, f"fan{n}@example.com", f"Fan {n}", None) for n in range(args.polls)]
            channel = create_channel(tx, live.owner_user, "fanout", ChannelOptions(), True)
            subscriptions.subscribe(tx, [channel], [live.owner_user.id] + [p.id for p in people])
            return people

        people = live.write(setup)
        latencies = asyncio.run(fan_out(live, people, live.owner_user))
        latencies.sort()
        per_queue = idle_queue_memory(live, people[0].id, args.idle_queues)
        live.stop()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cpus, Python {platform.python_version()}")
    print(f"{args.polls} parked long-polls on one channel; one message sent; time until each poll answered:")
    print(
        f"  p50 {statistics.median(latencies):7.1f} ms   p99 {latencies[int(len(latencies) * 0.99) - 1]:7.1f} ms"
        f"   max {latencies[-1]:7.1f} ms"
    )
    print(f"idle queue memory: {per_queue:,.0f} bytes per queue ({args.idle_queues:,} queues, tracemalloc)")


if __name__ == "__main__":
    main()
