"""The SQLite connection, migrations and transactions.

Every storage function takes a `Tx` as its first argument. Handlers never hold a connection:
they hand a function to `Database.read` or `Database.write`, which owns the transaction.
"""

from __future__ import annotations

import logging
import re
import sqlite3
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from importlib import resources
from typing import Any, TypeVar

from storage.checkpoint import Checkpointer

log = logging.getLogger("tornchat.storage")

R = TypeVar("R")

Clock = Callable[[], float]
SqlParams = Sequence[Any] | Mapping[str, Any]
# publish(event, user_ids): called after a commit, once per event the transaction recorded.
Publisher = Callable[[dict[str, Any], list[int]], None]
# One call of Database.write_batch: (fn, args, kwargs), run as fn(tx, *args, **kwargs).
Call = tuple[Callable[..., Any], Sequence[Any], Mapping[str, Any]]
# What a call of write_batch came to: (the exception it raised, None) or (None, its result).
Outcome = tuple[BaseException | None, Any]

# CPU seconds the bounded queries of one transaction may use together (Tx.bounded): a narrow whose
# terms reject every row walks the whole history, and the event loop waits meanwhile.
DEFAULT_QUERY_BUDGET = 0.25
# SQLite virtual-machine instructions between two looks at the clock (about 0.1 ms; 1,000 cost 10%).
PROGRESS_STEPS = 10_000
# Pages the WAL may hold before a COMMIT copies them into the database (about 40 MB of WAL):
# the leaves written by consecutive commits are copied once, not once per commit. With the server's
# checkpointer thread (storage/checkpoint.py) this is the bound: it copies only what the thread has not.
WAL_AUTOCHECKPOINT = 10_000
# Each connection's SQLite page cache (KiB) and memory-mapped part of the file (bytes): connect().
PAGE_CACHE_KIB = 256 * 1024
INSERT_USER_MESSAGES = "INSERT INTO user_messages (user_id, message_id, flags) VALUES (?, ?, ?)"
MMAP_SIZE = 4 << 30
# A statement that writes user_messages (storage/flag_cache.py keeps flags read from it): INSERT,
# REPLACE, UPDATE or DELETE naming the table as its target, whatever precedes it (a WITH clause).
_WRITES_USER_MESSAGES = re.compile(
    r"\b(?:(?:INSERT|REPLACE)(?:\s+OR\s+\w+)?\s+INTO|UPDATE(?:\s+OR\s+\w+)?|DELETE\s+FROM)"
    r"\s+(?:main\s*\.\s*)?[\"`\[]?user_messages\b",
    re.IGNORECASE,
)


class QueryBudgetExceeded(Exception):
    """A bounded query was stopped: the transaction's query budget is spent."""


class Tx:
    """One open transaction: SQL helpers, the clock, and events waiting for the commit."""

    __slots__ = (
        "conn", "now", "events", "after_commit", "budget", "cpu_clock", "deferred", "directory_checked",
        "changes_at_begin",
    )  # fmt: skip

    def __init__(
        self,
        conn: sqlite3.Connection,
        now: float,
        budget: float | None = DEFAULT_QUERY_BUDGET,
        cpu_clock: Clock = time.thread_time,
        deferred: list[tuple[int, int, int]] | None = None,
        changes_at_begin: int | None = None,
    ) -> None:
        self.conn = conn
        self.now = now
        self.events: list[tuple[dict[str, Any], list[int]]] = []
        self.after_commit: list[Callable[[], None]] = []
        self.budget = budget  # CPU seconds left for bounded queries; None: unbounded
        self.cpu_clock = cpu_clock
        # user_messages rows not inserted yet (shared by the calls of one batch): insert_user_messages.
        self.deferred: list[tuple[int, int, int]] = [] if deferred is None else deferred
        self.directory_checked = False  # storage/directory.py: the connection's copies checked in this transaction
        # The connection's total_changes when the transaction began (None: not known, as if written).
        self.changes_at_begin = changes_at_begin

    def unwritten(self) -> bool:
        """Whether the transaction has written nothing yet: all it reads is committed."""
        return self.conn.total_changes == self.changes_at_begin and not self.deferred

    def insert_user_messages(self, rows: Iterable[tuple[int, int, int]]) -> None:
        """Insert (user_id, message_id, flags) rows before the COMMIT, together with the transaction's others.

        Rows of the messages of one transaction (a batch of sends) are inserted sorted by primary key,
        so each receiver's b-tree leaves are visited once per transaction instead of once per message
        (~15% of the rows' CPU for a batch of ten messages to 1,000 users). Any statement of the
        transaction that names user_messages inserts them first, so no one reads around them.

        Only rows of messages inserted in the same transaction: no flags of them can have been read
        before, so storage/flag_cache.py is not told of these rows (every other write is: _cursor).
        """
        self.deferred.extend(rows)

    def flush_user_messages(self) -> None:
        """Insert the deferred user_messages rows now (the Database does before COMMIT)."""
        if self.deferred:
            rows = sorted(self.deferred)
            self.deferred.clear()
            self.conn.executemany(INSERT_USER_MESSAGES, rows)

    def _cursor(self, sql: str) -> sqlite3.Connection:
        if "user_messages" in sql:
            if self.deferred:
                self.flush_user_messages()
            if not sql.startswith("SELECT") and _WRITES_USER_MESSAGES.search(sql):
                self.user_messages_written()
        return self.conn

    def user_messages_written(self) -> None:
        """Flags kept from user_messages (storage/flag_cache.py) may be stale from now on: drop them all."""
        known = getattr(self.conn, "directory", None)
        if known is not None:
            known.flags.clear()

    def execute(self, sql: str, params: SqlParams = ()) -> sqlite3.Cursor:
        return self._cursor(sql).execute(sql, params)

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> sqlite3.Cursor:
        return self._cursor(sql).executemany(sql, rows)

    def one(self, sql: str, params: SqlParams = ()) -> sqlite3.Row | None:
        return self._cursor(sql).execute(sql, params).fetchone()

    def all(self, sql: str, params: SqlParams = ()) -> list[sqlite3.Row]:
        return self._cursor(sql).execute(sql, params).fetchall()

    def tuples(self, sql: str, params: SqlParams = ()) -> list[tuple[Any, ...]]:
        """all() as plain tuples: no sqlite3.Row per row (pages of messages read hundreds)."""
        cursor = self._cursor(sql).cursor()
        cursor.row_factory = None
        return cursor.execute(sql, params).fetchall()

    def value(self, sql: str, params: SqlParams = ()) -> Any:
        row = self._cursor(sql).execute(sql, params).fetchone()
        return None if row is None else row[0]

    def column(self, sql: str, params: SqlParams = ()) -> list[Any]:
        return [row[0] for row in self._cursor(sql).execute(sql, params)]

    def bounded(self, sql: str, params: SqlParams = ()) -> list[tuple[Any, ...]]:
        """Return every row of a query that may scan far (a narrow), within the transaction's budget.

        SQLite's progress handler looks at the CPU clock every PROGRESS_STEPS instructions and
        stops the statement once the budget is spent: raises QueryBudgetExceeded. A stopped
        SELECT leaves the transaction as it was.
        """
        if self.budget is None:
            return self.tuples(sql, params)
        self._cursor(sql)
        clock, started = self.cpu_clock, self.cpu_clock()
        deadline = started + self.budget
        stopped = False

        def over_budget() -> bool:
            nonlocal stopped
            stopped = clock() >= deadline
            return stopped

        self.conn.set_progress_handler(over_budget, PROGRESS_STEPS)
        try:
            return self.tuples(sql, params)
        except sqlite3.OperationalError:
            if stopped:
                raise QueryBudgetExceeded from None
            raise
        finally:
            self.conn.set_progress_handler(None, 0)
            self.budget = max(0.0, self.budget - (clock() - started))

    def publish(self, event: dict[str, Any], user_ids: Iterable[int]) -> None:
        """Queue an event for these users; it is delivered only if the transaction commits."""
        self.events.append((event, sorted(set(user_ids))))

    @property
    def timestamp(self) -> int:
        return int(self.now)


class Connection(sqlite3.Connection):
    """A connection that can carry its in-memory copies (storage/directory.py installs them on first use)."""

    directory: Any = None


def connect(path: str) -> sqlite3.Connection:
    """Open a connection with tornchat's pragmas: WAL, foreign keys, explicit transactions."""
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, factory=Connection)
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA journal_mode = WAL")
    # NORMAL is durable against a crash of the process (kill -9): a committed transaction is in
    # the WAL file before COMMIT returns; only an operating-system crash could lose the last ones.
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("PRAGMA busy_timeout = 5000")
    # Page cache and memory map sized for the database (issue 12): SQLite's default 2 MB cache
    # makes a page of 1,000 messages over a large file miss often. Both are ceilings: pages are
    # allocated as read, and the map covers only the file as it is.
    conn.execute(f"PRAGMA cache_size = -{PAGE_CACHE_KIB}")
    conn.execute(f"PRAGMA mmap_size = {MMAP_SIZE}")
    return conn


def topic_key(topic: str) -> str:
    """Return what topics match on: Python's casefold() ("Über" and "über" are one topic).

    SQLite's NOCASE and lower() fold ASCII letters only, so the key is computed here and stored
    beside every topic (messages.topic_key, user_topics.topic_key); the indexes use it.
    """
    return topic.casefold()


def _compare_folded(a: str, b: str) -> int:
    a, b = a.casefold(), b.casefold()
    return (a > b) - (a < b)


# Registered only while migrations run: 0003 created an index and a column with the TOPIC
# collation (until 0008 replaced them by topic_key), and 0008 fills topic_key with casefold().
# The finished database needs neither, so any SQLite tool can open, check and query it.
_MIGRATION_COLLATIONS = {"TOPIC": _compare_folded}
_MIGRATION_FUNCTIONS = {"casefold": topic_key}


def migration_scripts() -> list[tuple[int, str, str]]:
    """Return (number, name, sql) of every migration file, in order."""
    found = []
    for entry in resources.files("storage").joinpath("migrations").iterdir():
        if entry.name.endswith(".sql"):
            number = int(entry.name.split("_", 1)[0])
            found.append((number, entry.name, entry.read_text(encoding="utf-8")))
    return sorted(found)


class DatabaseTooNew(Exception):
    """The database records a migration this build does not have: a newer tornchat wrote it."""

    def __init__(self, path: str, newest: int, known: int) -> None:
        super().__init__(
            f"the database at {path} was written by a newer tornchat (migration {newest:04d};"
            f" this build knows up to {known:04d}): upgrade tornchat or restore a backup"
        )


def _applied_migrations(conn: sqlite3.Connection) -> set[int]:
    """Return the numbers recorded in the migrations table (none if the table does not exist yet)."""
    if conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'migrations'").fetchone() is None:
        return set()
    return {row[0] for row in conn.execute("SELECT id FROM migrations")}


def migrate(conn: sqlite3.Connection, now: float, until: int | None = None) -> list[str]:
    """Apply the migrations not yet recorded (up to number `until`, if given); return their names.

    Raises DatabaseTooNew, before writing anything, if the database records a migration newer than
    this build's newest; sqlite3.IntegrityError, with nothing of that migration applied, if one breaks a
    foreign key.
    """
    scripts = migration_scripts()
    applied = _applied_migrations(conn)
    known = max((number for number, _, _ in scripts), default=0)
    # Migrations are numbered in order and never removed: one past the newest file came from a newer build.
    if applied and max(applied) > known:
        path = conn.execute("PRAGMA database_list").fetchone()[2] or ":memory:"
        raise DatabaseTooNew(path, max(applied), known)
    conn.execute(
        "CREATE TABLE IF NOT EXISTS migrations ("
        " id INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)"
    )
    pending = [m for m in scripts if m[0] not in applied and (until is None or m[0] <= until)]
    if not pending:
        return []
    # Table rebuilds (SQLite's 12-step ALTER TABLE procedure) drop tables that others reference:
    # foreign keys are off meanwhile (the pragma is a no-op inside a transaction) and each
    # migration is checked with foreign_key_check before it commits.
    conn.execute("PRAGMA foreign_keys = OFF")
    for name, collation in _MIGRATION_COLLATIONS.items():
        conn.create_collation(name, collation)
    for name, function in _MIGRATION_FUNCTIONS.items():
        conn.create_function(name, 1, function, deterministic=True)
    try:
        for number, name, sql in pending:
            _apply(conn, number, name, sql, now)
    finally:
        for name in _MIGRATION_COLLATIONS:
            conn.create_collation(name, None)
        for name in _MIGRATION_FUNCTIONS:
            conn.create_function(name, 1, None)
        conn.execute("PRAGMA foreign_keys = ON")
    return [name for _, name, _ in pending]


def _apply(conn: sqlite3.Connection, number: int, name: str, sql: str, now: float) -> None:
    """Run one migration file and its record in one transaction."""
    try:
        # executescript commits first and runs statements as given: the BEGIN around the file
        # makes the migration and its record one transaction.
        conn.executescript(
            f"BEGIN IMMEDIATE;\n{sql}\n"
            f"INSERT INTO migrations (id, name, applied_at) VALUES ({number}, '{name}', {int(now)});\n"
        )
        broken = conn.execute("PRAGMA foreign_key_check").fetchall()
        if broken:
            raise sqlite3.IntegrityError(f"migration {name} breaks foreign keys: {[tuple(r) for r in broken[:5]]}")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


class Database:
    """Owns the connection; runs storage functions inside read or write transactions."""

    def __init__(self, path: str, clock: Clock = time.time, publish: Publisher | None = None) -> None:
        self.path = path
        self.clock = clock
        self.publish = publish
        # Each transaction's budget for bounded queries (None: unbounded) and the clock it is
        # measured with: the CPU time of the thread that runs SQLite (the event loop's).
        self.query_budget: float | None = DEFAULT_QUERY_BUDGET
        self.cpu_clock: Clock = time.thread_time
        self.conn = connect(path)
        # The server's connection copies the WAL into the database every WAL_AUTOCHECKPOINT pages
        # instead of SQLite's 1,000: a message to 1,000 users dirties ~1,500 pages, so with the
        # default nearly every COMMIT ran a checkpoint (two fsyncs and every page written twice).
        self.conn.execute(f"PRAGMA wal_autocheckpoint = {WAL_AUTOCHECKPOINT}")
        try:
            migrate(self.conn, clock())
        except BaseException:
            self.conn.close()  # a refused (newer) or broken database is left as it was found
            raise
        self.checkpointer: Checkpointer | None = None

    def start_checkpointer(self) -> None:
        """Copy the WAL into the database on a thread of its own after commits (the server's, storage/checkpoint.py)."""
        if self.checkpointer is None:
            self.checkpointer = Checkpointer(self.path)

    def close(self) -> None:
        # The checkpointer's connection closes first: the last one to close copies and removes the WAL.
        if self.checkpointer is not None:
            self.checkpointer.close()
            self.checkpointer = None
        self.conn.close()

    def read(self, fn: Callable[..., R], *args: Any, **kwargs: Any) -> R:
        """Run fn(tx, ...) in a read transaction (one consistent snapshot)."""
        return self._run("BEGIN", fn, args, kwargs)

    def write(self, fn: Callable[..., R], *args: Any, **kwargs: Any) -> R:
        """Run fn(tx, ...) in a write transaction; commit, then publish the events it recorded."""
        return self._run("BEGIN IMMEDIATE", fn, args, kwargs)

    def write_batch(self, calls: Sequence[Call]) -> list[Outcome]:
        """Run many fn(tx, ...) calls in one write transaction and one COMMIT; return their outcomes.

        Returns one (exception or None, result) per call, in order. A call that raises gets its
        exception and nothing of it is kept: if it wrote nothing (the usual refusals: bad input,
        no access, raised before any INSERT/UPDATE/DELETE, as sqlite3's total_changes tells), the
        batch goes on; if it had written, the transaction is rolled back and the other calls run
        again without it (no savepoint per call: one costs a copy of every page a call touches,
        which doubled the CPU of a message to 1,000 users). After the COMMIT, the events of the
        kept calls are published in call order, then their after_commit callbacks run. If COMMIT
        fails, every call not yet failed gets that error.
        """
        outcomes: list[Outcome | None] = [None] * len(calls)
        pending = list(range(len(calls)))
        while pending:
            pending = self._run_batch(calls, pending, outcomes)
        return [outcome for outcome in outcomes if outcome is not None]

    def _run_batch(self, calls: Sequence[Call], indexes: list[int], outcomes: list[Outcome | None]) -> list[int]:
        """One transaction over these calls, their outcomes filled in; return the calls to run again."""
        now, kept, deferred = self.clock(), [], []
        began = self.conn.total_changes
        self.conn.execute("BEGIN IMMEDIATE")
        for position, index in enumerate(indexes):
            fn, args, kwargs = calls[index]
            tx = Tx(self.conn, now, self.query_budget, self.cpu_clock, deferred, began)
            changes, rows = self.conn.total_changes, len(deferred)
            try:
                result = fn(tx, *args, **kwargs)
            except Exception as error:
                outcomes[index] = (error, None)
                if self.conn.in_transaction and self.conn.total_changes == changes and len(deferred) == rows:
                    continue  # refused before writing anything: the others go on
                if self.conn.in_transaction:
                    self.conn.execute("ROLLBACK")
                return sorted([i for i, _ in kept] + indexes[position + 1 :])
            except BaseException:
                if self.conn.in_transaction:
                    self.conn.execute("ROLLBACK")
                raise
            outcomes[index] = (None, result)
            kept.append((index, tx))
        self._commit_batch(kept, outcomes)
        return []

    def _commit_batch(self, kept: list[tuple[int, Tx]], outcomes: list[Outcome | None]) -> None:
        try:
            if kept:
                kept[0][1].flush_user_messages()  # every call's deferred rows: the list is shared
            self.conn.execute("COMMIT")
        except BaseException as error:
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
            for index, _ in kept:
                outcomes[index] = (error, None)
            if not isinstance(error, Exception):
                raise
            return
        self._committed()
        for _, tx in kept:
            self._after_commit(tx)

    def _committed(self) -> None:
        if self.checkpointer is not None:
            self.checkpointer.notify()

    def _after_commit(self, tx: Tx) -> None:
        if self.publish is not None:
            for event, user_ids in tx.events:
                self.publish(event, user_ids)
        for callback in tx.after_commit:
            callback()

    def _run(self, begin: str, fn: Callable[..., R], args: Any, kwargs: Any) -> R:
        tx = Tx(self.conn, self.clock(), self.query_budget, self.cpu_clock, None, self.conn.total_changes)
        self.conn.execute(begin)
        try:
            result = fn(tx, *args, **kwargs)
            tx.flush_user_messages()
        except BaseException:
            if self.conn.in_transaction:  # an interrupted write statement rolls back by itself
                self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")
        if begin != "BEGIN":
            self._committed()
        self._after_commit(tx)
        return result
