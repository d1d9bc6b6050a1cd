"""The SQLite connection and the Database that runs storage functions in transactions.

Every storage function takes a `Tx` (storage/db/tx.py) as its first argument. Handlers never hold
a connection: they hand a function to `Database.read` or `Database.write`, which owns the transaction.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from storage.db.checkpoint import Checkpointer
from storage.db.migrate import migrate
from storage.db.tx import DEFAULT_QUERY_BUDGET, Clock, Tx

R = TypeVar("R")
# publish(event, user_ids): called after a commit, once per event the transaction recorded.
Publisher = Callable[[dict[str, Any], list[int]], None]
# One call of Database.write_batch: (fn, args, kwargs), run as fn(tx, *args, **kwargs).
Call = tuple[Callable[..., Any], Sequence[Any], Mapping[str, Any]]
# What a call of write_batch came to: (the exception it raised, None) or (None, its result).
Outcome = tuple[BaseException | None, Any]

# Pages the WAL may hold before a COMMIT copies them into the database (about 40 MB of WAL):
# the leaves written by consecutive commits are copied once, not once per commit. With the server's
# checkpointer thread (storage/db/checkpoint.py) this is the bound: it copies only what the thread has not.
WAL_AUTOCHECKPOINT = 10_000
# Each connection's SQLite page cache (KiB) and memory-mapped part of the file (bytes): connect().
PAGE_CACHE_KIB = 256 * 1024
MMAP_SIZE = 4 << 30


class Connection(sqlite3.Connection):
    """A connection that can carry its change journal (storage/cache/journal.py installs it on first use)."""

    journal: Any = None


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
    # INSERT OR REPLACE deletes the rows it replaces: with recursive triggers on, that fires their DELETE
    # triggers, so the change journal (storage/cache/journal.py) hears of every row a statement removes.
    conn.execute("PRAGMA recursive_triggers = ON")
    # Page cache and memory map sized for the database: SQLite's default 2 MB cache makes a page
    # of 1,000 messages over a large file miss often (bench/README.md: GET /messages). Both are
    # ceilings: pages are allocated as read, and the map covers only the file as it is.
    conn.execute(f"PRAGMA cache_size = -{PAGE_CACHE_KIB}")
    conn.execute(f"PRAGMA mmap_size = {MMAP_SIZE}")
    return conn


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
        """Copy the WAL into the database on a thread of its own after commits (storage/db/checkpoint.py)."""
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
                self._ended()
                return sorted([i for i, _ in kept] + indexes[position + 1 :])
            except BaseException:
                if self.conn.in_transaction:
                    self.conn.execute("ROLLBACK")
                self._ended()
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
            self._ended()
            for index, _ in kept:
                outcomes[index] = (error, None)
            if not isinstance(error, Exception):
                raise
            return
        self._ended()
        self._committed()
        for _, tx in kept:
            self._after_commit(tx)

    def _ended(self) -> None:
        """The transaction is over, committed or not: the change journal settles the writes it was told of."""
        if self.conn.journal is not None:  # storage/cache/journal.py installs it on first use
            self.conn.journal.settle()

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
            self._ended()
            raise
        self.conn.execute("COMMIT")
        self._ended()
        if begin != "BEGIN":
            self._committed()
        self._after_commit(tx)
        return result
