"""The SQLite connection, migrations and transactions.

Every storage function takes a `Tx` as its first argument. Handlers never hold a connection:
they hand a function to `Database.read` or `Database.write`, which owns the transaction.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from importlib import resources
from typing import Any, TypeVar

log = logging.getLogger("tornchat.storage")

R = TypeVar("R")

Clock = Callable[[], float]
SqlParams = Sequence[Any] | Mapping[str, Any]
# publish(event, user_ids): called after a commit, once per event the transaction recorded.
Publisher = Callable[[dict[str, Any], list[int]], None]


class Tx:
    """One open transaction: SQL helpers, the clock, and events waiting for the commit."""

    __slots__ = ("conn", "now", "events", "after_commit")

    def __init__(self, conn: sqlite3.Connection, now: float) -> None:
        self.conn = conn
        self.now = now
        self.events: list[tuple[dict[str, Any], list[int]]] = []
        self.after_commit: list[Callable[[], None]] = []

    def execute(self, sql: str, params: SqlParams = ()) -> sqlite3.Cursor:
        return self.conn.execute(sql, params)

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> sqlite3.Cursor:
        return self.conn.executemany(sql, rows)

    def one(self, sql: str, params: SqlParams = ()) -> sqlite3.Row | None:
        return self.conn.execute(sql, params).fetchone()

    def all(self, sql: str, params: SqlParams = ()) -> list[sqlite3.Row]:
        return self.conn.execute(sql, params).fetchall()

    def value(self, sql: str, params: SqlParams = ()) -> Any:
        row = self.conn.execute(sql, params).fetchone()
        return None if row is None else row[0]

    def column(self, sql: str, params: SqlParams = ()) -> list[Any]:
        return [row[0] for row in self.conn.execute(sql, params)]

    def publish(self, event: dict[str, Any], user_ids: Iterable[int]) -> None:
        """Queue an event for these users; it is delivered only if the transaction commits."""
        self.events.append((event, sorted(set(user_ids))))

    @property
    def timestamp(self) -> int:
        return int(self.now)


def connect(path: str) -> sqlite3.Connection:
    """Open a connection with tornchat's pragmas: WAL, foreign keys, explicit transactions."""
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA journal_mode = WAL")
    # NORMAL is durable against a crash of the process (kill -9): a committed transaction is in
    # the WAL file before COMMIT returns; only an operating-system crash could lose the last ones.
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("PRAGMA busy_timeout = 5000")
    conn.create_collation("TOPIC", compare_topics)
    return conn


def compare_topics(a: str, b: str) -> int:
    """The TOPIC collation: topics are equal regardless of case, Unicode included ("Über" = "über").

    SQLite's NOCASE folds ASCII letters only. Every connection registers this collation, so the
    messages_by_topic index and topic comparisons work for any script a topic is written in.
    """
    a, b = a.casefold(), b.casefold()
    return (a > b) - (a < b)


def migration_scripts() -> list[tuple[int, str, str]]:
    """Return (number, name, sql) of every migration file, in order."""
    found = []
    for entry in resources.files("storage").joinpath("migrations").iterdir():
        if entry.name.endswith(".sql"):
            number = int(entry.name.split("_", 1)[0])
            found.append((number, entry.name, entry.read_text(encoding="utf-8")))
    return sorted(found)


def migrate(conn: sqlite3.Connection, now: float) -> list[str]:
    """Apply the migrations not yet recorded in the migrations table; return their names."""
    conn.execute(
        "CREATE TABLE IF NOT EXISTS migrations ("
        " id INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)"
    )
    applied = {row[0] for row in conn.execute("SELECT id FROM migrations")}
    done = []
    for number, name, sql in migration_scripts():
        if number in applied:
            continue
        # executescript commits first and runs statements as given: the BEGIN/COMMIT around the
        # file makes each migration and its record one transaction.
        conn.executescript(
            f"BEGIN IMMEDIATE;\n{sql}\n"
            f"INSERT INTO migrations (id, name, applied_at) VALUES ({number}, '{name}', {int(now)});\n"
            "COMMIT;"
        )
        done.append(name)
    return done


class Database:
    """Owns the connection; runs storage functions inside read or write transactions."""

    def __init__(self, path: str, clock: Clock = time.time, publish: Publisher | None = None) -> None:
        self.path = path
        self.clock = clock
        self.publish = publish
        self.conn = connect(path)
        migrate(self.conn, clock())

    def close(self) -> None:
        self.conn.close()

    def read(self, fn: Callable[..., R], *args: Any, **kwargs: Any) -> R:
        """Run fn(tx, ...) in a read transaction (one consistent snapshot)."""
        return self._run("BEGIN", fn, args, kwargs)

    def write(self, fn: Callable[..., R], *args: Any, **kwargs: Any) -> R:
        """Run fn(tx, ...) in a write transaction; commit, then publish the events it recorded."""
        return self._run("BEGIN IMMEDIATE", fn, args, kwargs)

    def _run(self, begin: str, fn: Callable[..., R], args: Any, kwargs: Any) -> R:
        tx = Tx(self.conn, self.clock())
        self.conn.execute(begin)
        try:
            result = fn(tx, *args, **kwargs)
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")
        if self.publish is not None:
            for event, user_ids in tx.events:
                self.publish(event, user_ids)
        for callback in tx.after_commit:
            callback()
        return result
