"""The outbox of requests to the push bouncer (Zulip's mobile push notification service).

A request is committed here, in the transaction of the action that causes it, before anything
tries to send it: a restart or an unreachable service loses nothing. The sender
(`tornchat/push_sender.py`) takes due rows, deletes each once the service accepts it or refuses
it for good, and otherwise pushes its next attempt back.

Storage knows nothing of the IOLoop: the sender registers a plain callback per connection with
`register_waker`, and `enqueue` calls it after the commit so a new row goes out at once.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable
from typing import Any

import msgspec

from storage.db.tx import Tx

KINDS = ("register", "notify")
# Retries: 2 s after the first failure, doubling up to 10 minutes between attempts.
FIRST_RETRY_SECONDS = 2.0
MAX_RETRY_SECONDS = 600.0
# A request still undelivered after a day is dropped: a registration's encrypted timestamp has
# expired by then (the service would answer REQUEST_EXPIRED), and a notification is stale.
MAX_AGE_SECONDS = 24 * 3600

_wakers: dict[int, Callable[[], None]] = {}


class OutboxRow(msgspec.Struct, frozen=True):
    id: int
    device_id: int
    kind: str
    user_id: int | None
    message_id: int | None
    body: dict[str, Any]
    attempts: int
    next_attempt_at: float
    created: int


def register_waker(conn: sqlite3.Connection, wake: Callable[[], None] | None) -> None:
    """Call wake() after every commit on conn that enqueued a row (None: stop calling)."""
    if wake is None:
        _wakers.pop(id(conn), None)
    else:
        _wakers[id(conn)] = wake


def enqueue(
    tx: Tx,
    device_id: int,
    kind: str,
    body: dict[str, Any],
    *,
    user_id: int | None = None,
    message_id: int | None = None,
) -> int:
    """Insert a request due now for the device and wake the sender after the commit; return its id."""
    if kind not in KINDS:
        raise ValueError(f"unknown push outbox kind {kind!r}")
    cursor = tx.execute(
        "INSERT INTO push_outbox (device_id, kind, user_id, message_id, body, next_attempt_at, created)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        (device_id, kind, user_id, message_id, json.dumps(body), tx.now, tx.timestamp),
    )
    wake = _wakers.get(id(tx.conn))
    if wake is not None and wake not in tx.after_commit:
        tx.after_commit.append(wake)
    assert cursor.lastrowid is not None
    return cursor.lastrowid


def list_due(tx: Tx, now: float, limit: int, skip: Iterable[int] = ()) -> list[OutboxRow]:
    """Return up to `limit` rows due at `now`, oldest due first, leaving out the ids in `skip`."""
    skipped = set(skip)
    rows = tx.all(
        # push_outbox_due: next_attempt_at <= ? ORDER BY next_attempt_at
        "SELECT * FROM push_outbox WHERE next_attempt_at <= ? ORDER BY next_attempt_at, id LIMIT ?",
        (now, limit + len(skipped)),
    )
    found = [_row(row) for row in rows if row["id"] not in skipped]
    return found[:limit]


def next_due_at(tx: Tx, skip: Iterable[int] = ()) -> float | None:
    """Return when the earliest row not in `skip` falls due, or None when nothing waits."""
    skipped = list(skip)
    marks = ",".join("?" * len(skipped))
    condition = f" WHERE id NOT IN ({marks})" if skipped else ""
    return tx.value(f"SELECT min(next_attempt_at) FROM push_outbox{condition}", skipped)


def delete_row(tx: Tx, row_id: int) -> bool:
    """Delete a row (sent, or refused for good); return whether it was still there."""
    return tx.execute("DELETE FROM push_outbox WHERE id = ?", (row_id,)).rowcount > 0


def retry_later(tx: Tx, row_id: int) -> float | None:
    """Count a failed attempt and push the next one back; return its time (None: row gone)."""
    attempts = tx.value("SELECT attempts FROM push_outbox WHERE id = ?", (row_id,))
    if attempts is None:
        return None
    delay = min(FIRST_RETRY_SECONDS * 2 ** min(attempts, 30), MAX_RETRY_SECONDS)
    next_at = tx.now + delay
    tx.execute(
        "UPDATE push_outbox SET attempts = attempts + 1, next_attempt_at = ? WHERE id = ?",
        (next_at, row_id),
    )
    return next_at


def is_expired(row: OutboxRow, now: float) -> bool:
    return now - row.created > MAX_AGE_SECONDS


def _row(row: sqlite3.Row) -> OutboxRow:
    return OutboxRow(
        id=row["id"],
        device_id=row["device_id"],
        kind=row["kind"],
        user_id=row["user_id"],
        message_id=row["message_id"],
        body=json.loads(row["body"]),
        attempts=row["attempts"],
        next_attempt_at=row["next_attempt_at"],
        created=row["created"],
    )
