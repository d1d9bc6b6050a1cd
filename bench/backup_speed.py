"""`tornchat backup` / `restore` speed, and what a backup costs a server writing meanwhile.

A data directory is bootstrapped and filled with plain SQL (MESSAGES channel messages, each with
READERS user_messages rows). Then create_backup runs while a writer thread commits one small
transaction after another on its own connection (as the server does); the writer's longest commit
during the backup shows whether the backup holds writers back. Restore is timed last.
Usage: python bench/backup_speed.py [--messages 200000] [--readers 10]
"""

from __future__ import annotations

import argparse
import os
import platform
import sqlite3
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from storage.channels.channel_creation import ChannelOptions, create_channel
from storage.db import backup
from storage.db.database import Database, connect  # noqa: E402
from storage.model import recipients
from storage.org import users  # noqa: E402
from tornchat.bootstrap import bootstrap  # noqa: E402
from tornchat.settings import Settings  # noqa: E402


def populate(settings: Settings, owner: users.User, messages: int, readers: int) -> None:
    db = Database(settings.database_path)

    def fill(tx):  # type: ignore[no-untyped-def]
        people = [users.create_user(tx, f"reader{n}@bench.example", f"Reader {n}", None) for n in range(readers)]
        channel = create_channel(tx, owner, "bulk", ChannelOptions(), True)
        recipient = recipients.get_or_create_recipient(tx, recipients.CHANNEL, channel.id)
        first = (tx.value("SELECT max(id) FROM messages") or 0) + 1
        tx.executemany(
            "INSERT INTO messages (id, sender_id, recipient_id, channel_id, topic, topic_key, content,"
            " rendered_content, date_sent, client) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'bench')",
            (
                (
                    first + n,
                    owner.id,
                    recipient,
                    channel.id,
                    f"topic {n % 50}",
                    f"topic {n % 50}",
                    "x" * 200,
                    "<p>" + "x" * 200 + "</p>",
                    tx.timestamp,
                )  # fmt: skip
                for n in range(messages)
            ),
        )
        tx.executemany(
            "INSERT INTO user_messages (user_id, message_id, flags) VALUES (?, ?, 0)",
            ((person.id, first + n) for person in people for n in range(messages)),
        )
        return channel.id, recipient

    db.write(fill)
    db.close()


class Writer(threading.Thread):
    """Commits small transactions back to back; records each commit's duration."""

    def __init__(self, path: str) -> None:
        super().__init__(daemon=True)
        self.conn = connect(path)
        self.durations: list[float] = []
        self.stopping = threading.Event()

    def run(self) -> None:
        while not self.stopping.is_set():
            start = time.perf_counter()
            self.conn.execute("BEGIN IMMEDIATE")
            self.conn.execute("UPDATE realm SET name = name")
            self.conn.execute("COMMIT")
            self.durations.append(time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=200000)
    parser.add_argument("--readers", type=int, default=10)
    args = parser.parse_args()
    machine = f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}"
    print(f"{machine}, SQLite {sqlite3.sqlite_version}")
    with tempfile.TemporaryDirectory() as work:
        settings = Settings(data_dir=os.path.join(work, "data"), site="http://127.0.0.1:9991")
        owner = bootstrap(settings, "owner@bench.example", "a long bench password")
        populate(settings, owner, args.messages, args.readers)
        size = os.path.getsize(settings.database_path)
        print(
            f"{args.messages} messages, {args.messages * args.readers} user_messages rows, database {size / 1e6:.0f} MB"
        )
        writer = Writer(settings.database_path)
        writer.start()
        time.sleep(0.5)
        before = len(writer.durations)
        archive = os.path.join(work, "backup.tar.gz")
        start = time.perf_counter()
        backup.create_backup(settings.data_dir, archive, time.time())
        took = time.perf_counter() - start
        during = writer.durations[before:]
        writer.stopping.set()
        writer.join()
        print(f"backup: {took:.2f} s, archive {os.path.getsize(archive) / 1e6:.0f} MB")
        print(f"writer during the backup: {len(during)} commits, longest {max(during) * 1000:.1f} ms")
        start = time.perf_counter()
        backup.restore_backup(archive, os.path.join(work, "restored"))
        print(f"restore: {time.perf_counter() - start:.2f} s")
        start = time.perf_counter()
        backup.copy_database(settings.database_path, os.path.join(work, "copy.sqlite3"))
        print(f"of which the database copy and its checks: {time.perf_counter() - start:.2f} s")


if __name__ == "__main__":
    main()
