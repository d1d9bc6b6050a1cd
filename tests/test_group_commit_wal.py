"""WAL checkpoints on the Checkpointer's thread (storage/checkpoint.py): the WAL stays bounded.

The serving connection keeps its automatic checkpoint as the bound; the thread copies the WAL
after commits, truncates it when writes stop after a burst, and closes before the serving
connection, whose close removes the WAL.
"""

from __future__ import annotations

import os

import pytest

from storage import checkpoint
from storage.db import Database, Tx
from tests.helpers import wait_for

PAGE_FRAMES = 50  # the serving connection's automatic checkpoint in these tests (pages)


@pytest.fixture
def db(tmp_path):  # type: ignore[no-untyped-def]
    database = Database(os.path.join(str(tmp_path), "db.sqlite3"))
    database.conn.execute(f"PRAGMA wal_autocheckpoint = {PAGE_FRAMES}")
    database.conn.execute("CREATE TABLE blobs (id INTEGER PRIMARY KEY, body BLOB NOT NULL)")
    yield database
    database.close()


def wal_bytes(db: Database) -> int:
    path = db.path + "-wal"
    return os.path.getsize(path) if os.path.exists(path) else 0


def write_pages(tx: Tx, pages: int) -> None:
    """Write about `pages` new pages (rows of 3 KiB: one per 4 KiB page)."""
    tx.executemany("INSERT INTO blobs (body) VALUES (zeroblob(3072))", [()] * pages)


def frame_bytes(db: Database, frames: int) -> int:
    page_size = db.conn.execute("PRAGMA page_size").fetchone()[0]
    return 32 + frames * (24 + page_size)


def test_the_wal_stays_bounded_under_sustained_writes(db):
    db.start_checkpointer()
    largest, batches = 0, 600
    for _ in range(batches):
        db.write_batch([(write_pages, (5,), {}), (write_pages, (5,), {})])
        largest = max(largest, wal_bytes(db))
    # Without checkpoints the WAL would hold every page written (6,000); it restarts after each full
    # copy, so it stays near the automatic checkpoint's bound (plus what commits while the thread copies).
    assert largest <= frame_bytes(db, 24 * PAGE_FRAMES) < frame_bytes(db, batches * 10) / 4
    assert db.checkpointer is not None
    wait_for(lambda: db.checkpointer.checkpoints > 0, "the checkpointer ran")
    assert db.conn.execute("SELECT count(*) FROM blobs").fetchone()[0] == batches * 10


def test_checkpoints_run_on_the_thread_not_after_each_commit(db):
    """Each commit wakes the thread; its checkpoint copies the WAL into the database."""
    db.conn.execute("PRAGMA wal_autocheckpoint = 0")  # the serving connection never copies
    db.start_checkpointer()
    assert db.checkpointer is not None
    db.write(write_pages, 20)
    wait_for(lambda: db.checkpointer.frames >= 20, "a checkpoint after the commit")
    # Everything copied: the next write starts the WAL from its beginning (it does not grow).
    size = wal_bytes(db)
    db.write(write_pages, 5)
    assert wal_bytes(db) == size


def test_the_wal_is_truncated_when_writes_stop(db, monkeypatch):
    monkeypatch.setattr(checkpoint, "TRUNCATE_BYTES", 0)
    db.checkpointer = checkpoint.Checkpointer(db.path, idle_seconds=0.05)
    db.write(write_pages, 20)
    assert wal_bytes(db) > 0
    wait_for(lambda: wal_bytes(db) == 0, "the WAL truncated once idle")
    assert db.read(lambda tx: tx.value("SELECT count(*) FROM blobs")) == 20


def test_close_stops_the_thread_and_removes_the_wal(db):
    db.start_checkpointer()
    checkpointer = db.checkpointer
    assert checkpointer is not None
    db.write(write_pages, 10)
    db.close()
    assert not checkpointer._thread.is_alive()
    assert not os.path.exists(db.path + "-wal")
    again = Database(db.path)
    assert again.read(lambda tx: tx.value("SELECT count(*) FROM blobs")) == 10
    again.close()
