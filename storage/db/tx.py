"""Transactions: the `Tx` every storage function takes as its first argument.

A Tx is one open transaction on the server's connection: SQL helpers, the clock, a CPU budget for
queries that may scan far, the events to publish after COMMIT, and the user_messages rows a send
defers to its COMMIT. storage/db/database.py opens and ends them.
"""

from __future__ import annotations

import re
import sqlite3
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

Clock = Callable[[], float]
SqlParams = Sequence[Any] | Mapping[str, Any]

# CPU seconds the bounded queries of one transaction may use together (Tx.bounded): a narrow whose
# terms reject every row walks the whole history, and the event loop waits meanwhile.
DEFAULT_QUERY_BUDGET = 0.25
# SQLite virtual-machine instructions between two looks at the clock (about 0.1 ms; 1,000 cost 10%).
PROGRESS_STEPS = 10_000
INSERT_USER_MESSAGES = "INSERT INTO user_messages (user_id, message_id, flags) VALUES (?, ?, ?)"
# A statement that writes user_messages (storage/cache/flag_cache.py keeps flags read from it): INSERT,
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
        "conn", "now", "events", "after_commit", "budget", "cpu_clock", "deferred", "journal_checked",
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
        self.journal_checked = False  # storage/cache/journal.py: other connections' commits looked at
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
        before, so the change journal is not told of these rows (every other write is: _cursor).
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
        """Report a statement writing user_messages to the connection's change journal (storage/cache/journal.py)."""
        journal = getattr(self.conn, "journal", None)
        if journal is not None:
            journal.user_messages_written()

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


def topic_key(topic: str) -> str:
    """Return what topics match on: Python's casefold() ("Über" and "über" are one topic).

    SQLite's NOCASE and lower() fold ASCII letters only, so the key is computed here and stored
    beside every topic (messages.topic_key, user_topics.topic_key); the indexes use it.
    """
    return topic.casefold()
