"""Checkpoints on a thread of their own: the WAL is copied into the database off the event loop.

A checkpoint copies the pages committed to the WAL into the database file and syncs it: for a
message to 1,000 users that is ~2,000 pages of 4 KiB, tens of milliseconds of writes and fsyncs
during which the event loop answered nothing when the serving connection ran it after a COMMIT.
The Checkpointer runs `PRAGMA wal_checkpoint(PASSIVE)` on its own connection after commits (at most
one per INTERVAL seconds, so a burst of commits is copied together); sqlite3 releases the GIL while
SQLite works, so the copy uses another core. A passive checkpoint never blocks a writer and never
waits for one.

The WAL stays bounded: the serving connection keeps its automatic checkpoint (storage.db's
WAL_AUTOCHECKPOINT pages), which then copies only what this thread has not copied yet; once every
frame is copied, the next write transaction starts the WAL from its beginning. When no write came
for IDLE_SECONDS and the WAL file is larger than TRUNCATE_BYTES (after a burst), it is emptied with
a TRUNCATE checkpoint (which makes other connections reload what they cache: only after a burst).
Durability is unchanged: a COMMIT is in the WAL before it returns, checkpointed or not.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
from collections.abc import Callable

log = logging.getLogger("tornchat.storage")

# The shortest time between two checkpoints of this thread: commits in between are copied together.
INTERVAL = 0.05
# Frames in the WAL above which the group commit waits (without blocking the event loop) for this
# thread to copy every frame before its next transaction: that transaction then starts the WAL
# from its beginning. Under sustained sends a transaction always began before the copy of the last
# one finished, so the WAL only restarted when it reached the serving connection's bound.
RESTART_FRAMES = 8_000
# A WAL file larger than this after IDLE_SECONDS without a write is truncated.
IDLE_SECONDS = 1.0
TRUNCATE_BYTES = 16 << 20


class Checkpointer:
    """A thread with its own connection copying the WAL of `path` into the database after commits."""

    def __init__(self, path: str, interval: float = INTERVAL, idle_seconds: float = IDLE_SECONDS) -> None:
        self.path = path
        self.interval = interval
        self.idle_seconds = idle_seconds
        self.checkpoints = 0  # checkpoints run (passive and truncating), for tests and logs
        self.frames = 0  # WAL frames the last checkpoint found
        self._wake = threading.Event()
        self._closing = threading.Event()
        self._hurry = threading.Event()  # ends the pause between two checkpoints
        self._waiters: list[Callable[[], None]] = []
        self._lock = threading.Lock()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="tornchat-checkpoint", daemon=True)
        self._thread.start()
        self._ready.wait()

    def notify(self) -> None:
        """A write transaction committed: checkpoint soon."""
        self._wake.set()

    @property
    def restart_due(self) -> bool:
        """Whether the WAL held RESTART_FRAMES or more at the last checkpoint."""
        return self.frames >= RESTART_FRAMES

    def when_copied(self, callback: Callable[[], None]) -> None:
        """Call callback() on this thread once a checkpoint has copied every frame of the WAL (soon)."""
        with self._lock:
            self._waiters.append(callback)
        self._hurry.set()
        self._wake.set()

    def close(self) -> None:
        """Stop the thread (after the checkpoint it may be running) and close its connection."""
        self._closing.set()
        self._hurry.set()
        self._wake.set()
        self._thread.join()
        self._answer()  # nobody waits for a checkpoint that will not come

    def _run(self) -> None:
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        try:
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA busy_timeout = 0")  # a TRUNCATE that meets a writer gives up at once
        finally:
            self._ready.set()
        try:
            while not self._closing.is_set():
                if self._wake.wait(self.idle_seconds):
                    self._wake.clear()
                    if self._closing.is_set():
                        break
                    if self._checkpoint(conn, "PASSIVE"):
                        self._answer()
                    elif self._waiters:
                        self._wake.set()  # a commit came meanwhile: again after the pause
                    self._hurry.wait(self.interval)
                    self._hurry.clear()
                elif self._wal_bytes() > TRUNCATE_BYTES:
                    self._checkpoint(conn, "TRUNCATE")
        finally:
            conn.close()

    def _checkpoint(self, conn: sqlite3.Connection, mode: str) -> bool:
        """Run one checkpoint; return whether it copied every frame of the WAL."""
        try:
            busy, frames, copied = conn.execute(f"PRAGMA wal_checkpoint({mode})").fetchone()
        except sqlite3.Error as error:  # another checkpoint or a writer holds a lock: the next one catches up
            log.debug("background checkpoint (%s) skipped: %s", mode, error)
            return False
        self.checkpoints += 1
        if busy:
            return False
        self.frames = frames
        return frames == copied

    def _answer(self) -> None:
        with self._lock:
            waiters, self._waiters = self._waiters, []
        if waiters:
            self.frames = 0  # the next write transaction starts the WAL afresh
        for callback in waiters:
            callback()

    def _wal_bytes(self) -> int:
        try:
            return os.path.getsize(self.path + "-wal")
        except OSError:
            return 0
