"""Long synchronous work on the event loop: how long one request holds tornchat's IOLoop.

A server (tornchat/server.py's Server, tornchat/app.py's HTTP server) runs on an IOLoop in a background thread, with
a probe callback every 2 ms on the same loop; the longest gap between two probe ticks while a
request runs is how long every other client waited (the "loop stall"). The request itself is sent
over HTTP from the main thread, one at a time, and its wall time printed next to the stall.

Data shape (built with storage functions, plus plain SQL for the unread messages): USERS users,
CHANNELS channels, a channel "crowd" with 1,000 subscribers, a reader with UNREAD unread messages.
Usage: python bench/long_requests.py [--users 10000] [--channels 1000] [--unread 50000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import sqlite3
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any

import requests

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from storage.channels.channel_creation import ChannelOptions, create_channel
from storage.membership import subscriptions
from storage.model import recipients
from storage.org import users  # noqa: E402
from tornchat.app import make_http_server  # noqa: E402
from tornchat.bootstrap import bootstrap  # noqa: E402
from tornchat.server import Server  # noqa: E402
from tornchat.settings import Settings  # noqa: E402

PROBE_SECONDS = 0.002


class Bench:
    """A live server with a loop-stall probe."""

    def __init__(self, data_dir: str) -> None:
        self.settings = Settings(data_dir=data_dir, site="http://127.0.0.1:9991", email_host="bench.example")
        self.owner = bootstrap(self.settings, "owner@bench.example", "a long bench password")
        self.ready = threading.Event()
        self.max_gap = 0.0
        threading.Thread(target=lambda: asyncio.run(self._main()), daemon=True).start()
        self.ready.wait(30)

    async def _main(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.server = Server(self.settings)
        http = make_http_server(self.server)
        http.listen(0, "127.0.0.1")
        self.port = next(iter(http._sockets.values())).getsockname()[1]
        self.ready.set()
        last = time.perf_counter()
        while True:
            await asyncio.sleep(PROBE_SECONDS)
            now = time.perf_counter()
            self.max_gap = max(self.max_gap, now - last - PROBE_SECONDS)
            last = now

    def write(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run a storage write on the loop thread (the thread that owns the connection)."""
        future = asyncio.run_coroutine_threadsafe(self._call(fn, *args), self.loop)
        return future.result(3600)

    async def _call(self, fn: Callable[..., Any], *args: Any) -> Any:
        return self.server.db.write(fn, *args)

    def client(self, user: users.User) -> requests.Session:
        session = requests.Session()
        session.auth = (users.api_email(user, self.server.realm), user.api_key)
        return session

    def measure(self, session: requests.Session, method: str, path: str, params: dict[str, str]) -> tuple[float, float]:
        """Send one request; return (wall seconds, longest loop stall seconds) and check it succeeded."""
        time.sleep(0.05)
        self.max_gap = 0.0
        start = time.perf_counter()
        url = f"http://127.0.0.1:{self.port}/api/v1{path}"
        response = session.request(method, url, **{"params" if method == "GET" else "data": params})
        wall = time.perf_counter() - start
        time.sleep(0.01)
        assert response.status_code == 200, response.text[:300]
        return wall, self.max_gap


def populate(bench: Bench, user_count: int, channel_count: int, unread: int) -> dict[str, Any]:
    owner = bench.owner

    def setup(tx):  # type: ignore[no-untyped-def]
        people = [users.create_user(tx, f"person{n}@bench.example", f"Person {n}", None) for n in range(user_count)]
        for c in range(channel_count):
            create_channel(tx, owner, f"channel {c}", ChannelOptions(), True)
        crowd = create_channel(tx, owner, "crowd", ChannelOptions(), True)
        subscriptions.subscribe(tx, [crowd], [owner.id, *(person.id for person in people[:999])])
        render = create_channel(tx, owner, "render", ChannelOptions(), True)
        subscriptions.subscribe(tx, [render], [owner.id])
        reader = people[0]
        recipient = recipients.get_or_create_recipient(tx, 2, crowd.id)
        first = (tx.value("SELECT max(id) FROM messages") or 0) + 1
        tx.executemany(
            "INSERT INTO messages (id, sender_id, recipient_id, channel_id, topic, topic_key, content,"
            " rendered_content, date_sent, client) VALUES (?, ?, ?, ?, 'bulk', 'bulk', 'x', '<p>x</p>', ?, 'bench')",
            ((first + n, owner.id, recipient, crowd.id, tx.timestamp) for n in range(unread)),
        )
        tx.executemany(
            "INSERT INTO user_messages (user_id, message_id, flags) VALUES (?, ?, 0)",
            ((reader.id, first + n) for n in range(unread)),
        )
        return people, reader, first

    people, reader, first = bench.write(setup)
    return {"people": people, "reader": reader, "first_bulk_id": first}


CONTENTS = {
    "nested quotes": "> " * 5000,
    "nested lists": "".join("  " * n + "- a\n" for n in range(100)) * 3,
    "emphasis runs": "*a **b " * 1400,
    "open brackets": "[" * 10000,
    "links": "[a](https://e.x/) " * 550,
    "bare urls": "https://example.com/a " * 450,
    "mentions of unknown users": "@**nobody** " * 830,
    "table": "|" + "a|" * 2000 + "\n|" + "-|" * 2000 + "\n",
    "nested spoilers": "```spoiler a\n" * 600,
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--users", type=int, default=10000)
    parser.add_argument("--channels", type=int, default=1000)
    parser.add_argument("--unread", type=int, default=50000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    machine = f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}"
    print(f"{machine}, SQLite {sqlite3.sqlite_version}")
    print(f"{args.users} users, {args.channels} channels, crowd of 1,000 subscribers, {args.unread} unread messages")
    with tempfile.TemporaryDirectory() as data_dir:
        bench = Bench(data_dir)
        start = time.perf_counter()
        data = populate(bench, args.users, args.channels, args.unread)
        print(f"populated in {time.perf_counter() - start:.1f} s")
        owner = bench.client(bench.owner)
        cases: list[tuple[str, requests.Session, str, str, Callable[[], dict[str, str]]]] = []
        for shape, content in CONTENTS.items():
            body = {"type": "stream", "to": "render", "topic": "t", "content": content[:10000]}
            cases.append((f"send 10,000 chars: {shape}", owner, "POST", "/messages", lambda body=body: body))
        crowd_message = {"type": "stream", "to": "crowd", "topic": "t", "content": "hello"}
        cases.append(("send to 1,000 subscribers", owner, "POST", "/messages", lambda: crowd_message))
        cases.append(("GET /users", owner, "GET", "/users", dict))
        cases.append(("POST /register (all state)", owner, "POST", "/register", dict))
        ids = [str(person.id) for person in data["people"][:1000]]
        counter = iter(range(10**6))

        def subscribe() -> dict[str, str]:
            return {"subscriptions": f'[{{"name": "new {next(counter)}"}}]', "principals": f"[{','.join(ids)}]"}

        cases.append(("subscribe 1,000 users to a new channel", owner, "POST", "/users/me/subscriptions", subscribe))
        reader = bench.client(data["reader"])
        newest = {"anchor": "newest", "num_before": "5000", "num_after": "0", "narrow": "[]"}
        cases.append(("GET /messages, newest 5,000", reader, "GET", "/messages", lambda: newest))
        # These change the data: run once each, last.
        once = [
            (f"mark_all_as_read of {args.unread} messages", reader, "POST", "/mark_all_as_read", dict),
            (
                f"move a topic of {args.unread} messages (change_all)",
                owner,
                "PATCH",
                f"/messages/{data['first_bulk_id']}",
                lambda: {"topic": "moved", "propagate_mode": "change_all"},
            ),
        ]
        print(f"{'request':48} {'wall ms (max)':>14} {'loop stall ms (max)':>20}")
        for number, (name, session, method, path, params) in enumerate(cases + once):
            repeat = args.repeat if number < len(cases) else 1
            runs = [bench.measure(session, method, path, params()) for _ in range(repeat)]
            wall = max(run[0] for run in runs) * 1000
            stall = max(run[1] for run in runs) * 1000
            print(f"{name:48} {wall:14.0f} {stall:20.0f}")


if __name__ == "__main__":
    main()
