"""Group commit: write calls that arrive close together share one transaction and one COMMIT.

A COMMIT costs about as much for ten messages as for one (the WAL pages of the b-tree leaves they
touch are written once), so the calls submitted while the event loop was busy run as one batch:
each in its own savepoint (Database.write_batch), then one COMMIT, then each caller is answered in
submission order. A caller is answered only after the COMMIT returned, so an answered write is
as durable as a single-call write (see docs/reliability.md). Everything runs on the thread that
submits (the event loop's) on the Database's one connection: other writes never interleave.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from storage.db import Call, Database, Outcome

# Calls per transaction at most: a longer queue is split, so one batch cannot hold every caller long.
MAX_BATCH = 64
# How many times a flush waits one more turn of the loop while new calls keep arriving.
MAX_GATHER_TURNS = 2

Done = Callable[[BaseException | None, Any], None]
Schedule = Callable[[Callable[[], None]], None]


class WriteBatcher:
    """Collects write calls and runs them in batches on the next turns of the loop.

    `schedule(fn)` must run fn soon on the same thread (the event loop's call_soon). `submit` queues
    a call and its `done(error, result)` callback; the first call of a batch schedules the flush.
    """

    def __init__(self, db: Database, schedule: Schedule, max_batch: int = MAX_BATCH) -> None:
        self.db = db
        self.schedule = schedule
        self.max_batch = max_batch
        self.pending: list[tuple[Call, Done]] = []
        self.scheduled = False
        self._seen = 0  # queue length at the last look: a growing queue waits one more turn
        self._turns = 0
        self.batches = 0  # transactions committed (or attempted), for tests and benchmarks
        self.calls = 0

    def submit(self, done: Done, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        """Queue fn(tx, *args, **kwargs); done(error, result) is called once its batch committed or failed."""
        self.pending.append(((fn, args, kwargs), done))
        if not self.scheduled:
            self.scheduled = True
            self._seen, self._turns = 0, 0
            self.schedule(self._flush)

    def _flush(self) -> None:
        # Requests read in the same turn of the loop reach their handlers a turn or two apart:
        # while the queue still grows and is short of a full batch, wait a turn (at most a few).
        waiting = len(self.pending)
        if waiting > self._seen and waiting < self.max_batch and self._turns < MAX_GATHER_TURNS:
            self._seen, self._turns = waiting, self._turns + 1
            self.schedule(self._flush)
            return
        batch, self.pending = self.pending[: self.max_batch], self.pending[self.max_batch :]
        self.scheduled = False
        if self.pending:
            self.scheduled = True
            self._seen, self._turns = 0, MAX_GATHER_TURNS
            self.schedule(self._flush)
        self.run(batch)

    def run(self, batch: list[tuple[Call, Done]]) -> None:
        """Run one batch now and answer its callers in order."""
        self.batches += 1
        self.calls += len(batch)
        try:
            outcomes: list[Outcome] = self.db.write_batch([call for call, _ in batch])
        except BaseException as error:  # not an Exception of one call: every caller learns of it
            for _, done in batch:
                done(error, None)
            raise
        for (_, done), (error, result) in zip(batch, outcomes, strict=True):
            done(error, result)
