"""What linkifiers and push notifications cost the hot paths, as ratios against a floor in the same run.

Builds a small organization (200 users in one channel, 2,000 messages over 200 topics named like
"issue #N", so topics give links) and times, through the storage functions the handlers call:
- GET /messages newest 1000 with no linkifiers (the floor) and with 20 linkifiers: warm (topic links
  cached) and cold (the first fetch after a linkifier change, which re-runs the patterns);
- sending a 300-character message with no linkifiers (the floor) and with 20;
- sending an @all message to the channel with no push devices (the floor) and with 100 of the 200
  members holding a registered push device (one encrypted outbox row each).
Usage: python bench/linkifiers_push.py [--repeat N]
"""

from __future__ import annotations

import argparse
import base64
import os
import platform
import secrets
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from storage.channels.channel_creation import ChannelOptions, create_channel
from storage.db.database import Database  # noqa: E402
from storage.fetch.message_fetch import GetMessages, get_messages  # noqa: E402
from storage.messages.messages import SendRequest, send_message  # noqa: E402
from storage.model import recipients  # noqa: E402
from storage.org import linkifiers, users
from tornchat.bootstrap import bootstrap  # noqa: E402
from tornchat.settings import Settings  # noqa: E402

USERS, TOPICS, MESSAGES, LINKIFIERS, DEVICES = 200, 200, 2000, 20, 100
CONTENT = ("See #1234 and PROJ-42 in the notes, then ask in the thread about it. " * 5)[:300]


def build(db: Database, owner: users.User) -> tuple[int, list[users.User]]:
    def setup(tx):
        people = [users.create_user(tx, f"p{n}@bench.example", f"Person {n}", None) for n in range(USERS)]
        channel = create_channel(tx, owner, "general", ChannelOptions(), True)
        recipients.get_or_create_recipient(tx, recipients.CHANNEL, channel.id)
        tx.executemany(
            "INSERT INTO subscriptions (user_id, channel_id, color) VALUES (?, ?, '#76ce90')",
            [(user.id, channel.id) for user in [owner, *people]],
        )
        return channel.id, people

    channel_id, people = db.write(setup)
    for n in range(MESSAGES):
        request = SendRequest(type="stream", to=channel_id, topic=f"issue #{n % TOPICS}", content=f"message {n}")
        db.write(send_message, people[n % USERS], request)
    return channel_id, people


def add_linkifiers(db: Database, owner: users.User) -> None:
    for n in range(LINKIFIERS):
        fields = linkifiers.LinkifierFields(f"[A-Z]{{{n % 4 + 2}}}{n}-(?P<id>[0-9]+)", f"https://t{n}.example/{{id}}")
        db.write(linkifiers.create_linkifier, owner, fields)
    # One that every topic and message hits.
    db.write(
        linkifiers.create_linkifier, owner, linkifiers.LinkifierFields("#(?P<id>[0-9]+)", "https://i.example/{id}")
    )


def add_devices(db: Database, people: list[users.User]) -> None:
    def insert(tx):
        for user in people[:DEVICES]:
            key = b"\x31" + secrets.token_bytes(32)
            token_id = base64.b64encode(secrets.token_bytes(8)).decode()
            tx.execute(
                "INSERT INTO devices (user_id, date_created, push_key, push_key_id, push_token_kind, push_token_id)"
                " VALUES (?, ?, ?, ?, 'fcm', ?)",
                (user.id, tx.timestamp, key, secrets.randbelow(2**32), token_id),
            )

    db.write(insert)


def alternating(
    floor: Callable[[], object], measured: Callable[[], object], repeat: int, before: Callable[[], object] | None = None
) -> tuple[float, float]:
    """Median ms of floor and measured, run alternately (A B A B) so load on the machine hits both."""
    timings: tuple[list[float], list[float]] = ([], [])
    for _ in range(repeat):
        for side, fn in enumerate((floor, measured)):
            if before is not None and side == 1:
                before()
            started = time.perf_counter()
            fn()
            timings[side].append(time.perf_counter() - started)
    return statistics.median(timings[0]) * 1000, statistics.median(timings[1]) * 1000  # fmt: skip


def report(name: str, times: tuple[float, float]) -> None:
    floor, measured = times
    print(f"  {name:<46} {floor:8.2f} ms  {measured:8.2f} ms   x{measured / floor:5.2f}")


class Organization:
    """One generated organization in its own database; `plain` is the floor, `featured` the measured."""

    def __init__(self, data_dir: str) -> None:
        settings = Settings(data_dir=data_dir)
        self.owner = bootstrap(settings, "owner@bench.example", "a long bench password")
        self.db = Database(settings.database_path)
        self.channel_id, self.people = build(self.db, self.owner)
        self.newest = GetMessages(anchor="newest", num_before=1000, num_after=0)

    def fetch(self) -> object:
        return self.db.read(get_messages, self.people[1], self.newest)

    def send(self, sender: int, content: str) -> object:
        request = SendRequest(type="stream", to=self.channel_id, topic="t", content=content)
        return self.db.write(send_message, self.people[sender], request)

    def bump(self) -> None:
        """A linkifier change: every cache keyed on the old version goes stale."""
        self.db.write(lambda tx: tx.execute("UPDATE linkifier_state SET version = version + 1"))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as plain_dir, tempfile.TemporaryDirectory() as featured_dir:
        plain, featured = Organization(plain_dir), Organization(featured_dir)
        add_linkifiers(featured.db, featured.owner)
        add_devices(featured.db, featured.people)
        print(f"machine: {platform.machine()}, {os.cpu_count()} cpus, Python {platform.python_version()},"
              f" SQLite {sqlite3.sqlite_version}")  # fmt: skip
        print(f"data: two organizations of {USERS} users in one channel, {MESSAGES:,} messages over {TOPICS}"
              f" topics; the floor has no linkifiers and no push devices, the other {LINKIFIERS + 1} linkifiers"
              f" and {DEVICES} devices; medians of {args.repeat}, floor and measured alternating")  # fmt: skip
        print(f"  {'case':<46} {'floor':>11} {'measured':>11}   ratio")
        featured.fetch()  # warm the caches once
        report("GET /messages newest 1000, warm topic links", alternating(plain.fetch, featured.fetch, args.repeat))
        report("  ... cold (first fetch after a change)",
               alternating(plain.fetch, featured.fetch, args.repeat, before=featured.bump))  # fmt: skip
        report("send 300 characters (no mention)",
               alternating(lambda: plain.send(2, CONTENT), lambda: featured.send(2, CONTENT), args.repeat))  # fmt: skip
        mention = "@**all** standup"
        report(f"send @all to {USERS + 1}, {DEVICES} of them with devices",
               alternating(lambda: plain.send(DEVICES + 1, mention), lambda: featured.send(DEVICES + 1, mention),
                           args.repeat))  # fmt: skip
        queued = featured.db.read(lambda tx: tx.value("SELECT count(*) FROM push_outbox"))
        print(f"  ({queued:,} notifications queued in the outbox)")
        plain.db.close()
        featured.db.close()


if __name__ == "__main__":
    main()
