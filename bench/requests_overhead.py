"""Per-request overhead of the HTTP layer: auth, parameter decoding, storage read, JSON envelope.

Starts tornchat in a thread on a fresh temporary database with USERS accounts, then sends
sequential keep-alive requests from this process and prints throughput and latency percentiles.
Usage: python bench/requests_overhead.py [--requests N] [--users N]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from storage.org import users  # noqa: E402
from tests.support.helpers import LiveServer  # noqa: E402


def measure(client, path: str, params: dict, count: int) -> list[float]:
    timings = []
    for _ in range(count):
        started = time.perf_counter()
        response = client.get(path, params)
        timings.append(time.perf_counter() - started)
        assert response.status_code == 200, response.text
    return timings


def report(name: str, timings: list[float]) -> None:
    timings = sorted(timings)
    p50 = statistics.median(timings) * 1000
    p99 = timings[int(len(timings) * 0.99) - 1] * 1000
    print(f"{name:<32} {len(timings) / sum(timings):8.0f} req/s   p50 {p50:6.2f} ms   p99 {p99:6.2f} ms")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--users", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        live = LiveServer(os.path.join(directory, "data"))

        def many(tx):
            for n in range(args.users):
                # No password: hashing 1,000 scrypt passwords would dominate the setup time.
                users.create_user(tx, f"bench{n}@example.com", f"Bench User {n}", None)

        live.write(many)
        print(f"machine: {platform.machine()} {os.cpu_count()} cpus, Python {platform.python_version()}")
        print(f"data: {args.users + 1} users; {args.requests} sequential keep-alive requests per endpoint")
        client = live.owner
        measure(client, "/users/me", {}, 100)  # warm up
        report("GET /users/me", measure(client, "/users/me", {}, args.requests))
        report("GET /server_settings", measure(live.anonymous(), "/server_settings", {}, args.requests))
        report(f"GET /users ({args.users + 1} users)", measure(client, "/users", {}, max(20, args.requests // 50)))
        live.stop()


if __name__ == "__main__":
    main()
