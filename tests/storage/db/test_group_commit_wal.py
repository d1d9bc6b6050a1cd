"""WAL checkpoints on the Checkpointer's thread (storage/db/checkpoint.py): the WAL stays bounded.

The serving connection keeps its automatic checkpoint as the bound; the thread copies the WAL
after commits, truncates it when writes stop after a burst, and closes before the serving
connection, whose close removes the WAL.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable

import pytest

from storage.db import checkpoint
from storage.db.database import Database
from storage.db.tx import Tx
from storage.db.write_batch import COPY_WAIT_SECONDS, WriteBatcher
from tests.support.helpers import wait_for

PAGE_FRAMES = 50  # the serving connection's automatic checkpoint in these tests (pages)


@pytest.fixture
def wal_db(tmp_path):  # type: ignore[no-untyped-def]
    database = Database(os.path.join(str(tmp_path), "db.sqlite3"))
    database.conn.execute(f"PRAGMA wal_autocheckpoint = {PAGE_FRAMES}")
    database.conn.execute("CREATE TABLE blobs (id INTEGER PRIMARY KEY, body BLOB NOT NULL)")
    yield database
    database.close()


def wal_bytes(wal_db: Database) -> int:
    path = wal_db.path + "-wal"
    return os.path.getsize(path) if os.path.exists(path) else 0


def write_pages(tx: Tx, pages: int) -> None:
    """Write about `pages` new pages (rows of 3 KiB: one per 4 KiB page)."""
    tx.executemany("INSERT INTO blobs (body) VALUES (zeroblob(3072))", [()] * pages)


def frame_bytes(wal_db: Database, frames: int) -> int:
    page_size = wal_db.conn.execute("PRAGMA page_size").fetchone()[0]
    return 32 + frames * (24 + page_size)


def test_the_wal_stays_bounded_under_sustained_writes(wal_db):
    wal_db.start_checkpointer()
    largest, batches = 0, 1000
    for _ in range(batches):
        wal_db.write_batch([(write_pages, (5,), {}), (write_pages, (5,), {})])
        largest = max(largest, wal_bytes(wal_db))
    # Without checkpoints the WAL would hold every page written (10,000); it restarts after each full
    # copy, so it stays near the automatic checkpoint's bound (plus what commits while the thread copies).
    assert largest <= frame_bytes(wal_db, batches * 10) / 4
    assert wal_db.checkpointer is not None
    wait_for(lambda: wal_db.checkpointer.checkpoints > 0, "the checkpointer ran")
    assert wal_db.conn.execute("SELECT count(*) FROM blobs").fetchone()[0] == batches * 10


def test_checkpoints_run_on_the_thread_not_after_each_commit(wal_db):
    """Each commit wakes the thread; its checkpoint copies the WAL into the database."""
    wal_db.conn.execute("PRAGMA wal_autocheckpoint = 0")  # the serving connection never copies
    wal_db.start_checkpointer()
    assert wal_db.checkpointer is not None
    wal_db.write(write_pages, 20)
    wait_for(lambda: wal_db.checkpointer.frames >= 20, "a checkpoint after the commit")
    # Everything copied: the next write starts the WAL from its beginning (it does not grow).
    size = wal_bytes(wal_db)
    wal_db.write(write_pages, 5)
    assert wal_bytes(wal_db) == size


def test_the_wal_is_truncated_when_writes_stop(wal_db, monkeypatch):
    monkeypatch.setattr(checkpoint, "TRUNCATE_BYTES", 0)
    wal_db.checkpointer = checkpoint.Checkpointer(wal_db.path, idle_seconds=0.05)
    wal_db.write(write_pages, 20)
    assert wal_bytes(wal_db) > 0
    wait_for(lambda: wal_bytes(wal_db) == 0, "the WAL truncated once idle")
    assert wal_db.read(lambda tx: tx.value("SELECT count(*) FROM blobs")) == 20


def test_close_stops_the_thread_and_removes_the_wal(wal_db):
    wal_db.start_checkpointer()
    checkpointer = wal_db.checkpointer
    assert checkpointer is not None
    wal_db.write(write_pages, 10)
    wal_db.close()
    assert not checkpointer._thread.is_alive()
    assert not os.path.exists(wal_db.path + "-wal")
    again = Database(wal_db.path)
    assert again.read(lambda tx: tx.value("SELECT count(*) FROM blobs")) == 10
    again.close()


def test_when_copied_answers_once_the_whole_wal_is_copied(wal_db):
    """The group commit waits for this before its next batch: that batch starts the WAL afresh."""
    wal_db.conn.execute("PRAGMA wal_autocheckpoint = 0")
    wal_db.start_checkpointer()
    assert wal_db.checkpointer is not None
    wal_db.write(write_pages, 30)
    size = wal_bytes(wal_db)
    answered = threading.Event()
    wal_db.checkpointer.when_copied(answered.set)
    wait_for(answered.is_set, "the checkpointer answered")
    assert not wal_db.checkpointer.restart_due
    wal_db.write(write_pages, 5)
    assert wal_bytes(wal_db) == size  # written from the beginning of the WAL, not appended


class Loop:
    """The batcher's scheduling, run by hand: flushes, timers and the checkpointer's answers."""

    def __init__(self) -> None:
        self.soon: list[Callable[[], None]] = []
        self.later: list[tuple[float, Callable[[], None]]] = []
        self.copy_waiters: list[Callable[[], None]] = []

    def run_soon(self) -> None:
        while self.soon:
            self.soon.pop(0)()


@pytest.mark.parametrize("answer", ["copied", "timeout"])
def test_a_batch_waits_for_the_copy_of_a_large_wal(wal_db, monkeypatch, answer):
    monkeypatch.setattr(checkpoint, "RESTART_FRAMES", 0)  # every WAL counts as large
    wal_db.start_checkpointer()
    loop = Loop()
    batcher = WriteBatcher(
        wal_db,
        loop.soon.append,
        lambda delay, fn: loop.later.append((delay, fn)),
        wait_for_copy=loop.copy_waiters.append,
    )
    done: list[tuple[BaseException | None, object]] = []
    batcher.submit(lambda error, result: done.append((error, result)), write_pages, 3)
    loop.run_soon()
    assert done == [] and len(loop.copy_waiters) == 1 and batcher.copy_waits == 1
    assert loop.later == [(COPY_WAIT_SECONDS, loop.later[0][1])]
    batcher.submit(lambda error, result: done.append((error, result)), write_pages, 2)
    loop.run_soon()
    assert done == []  # a send arriving meanwhile does not end the wait
    first, second = (loop.copy_waiters[0], loop.later[0][1])
    if answer == "timeout":
        first, second = second, first
    first()
    assert done == [(None, None), (None, None)] and batcher.batches == 1
    second()  # the other end of the wait finds nothing to do
    assert batcher.batches == 1
    assert wal_db.read(lambda tx: tx.value("SELECT count(*) FROM blobs")) == 5
