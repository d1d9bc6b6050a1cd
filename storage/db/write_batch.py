"""Group commit: write calls that arrive close together share one transaction and one COMMIT.

A COMMIT costs about as much for ten messages as for one (the WAL pages of the b-tree leaves they
touch are written once), so the calls submitted while the event loop was busy run as one batch
(Database.write_batch: one transaction; a call refused before writing is simply left out, one that
fails after writing makes the others run again without it), then one COMMIT, then each caller is
answered in submission order. A caller is answered only after the COMMIT returned, so an answered
write is as durable as a single-call write (see docs/reliability.md). Everything runs on the
thread that submits (the event loop's) on the Database's one connection: other writes never
interleave with a batch.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Callable
from typing import Any

from storage.db.database import Call, Database, Outcome

# Calls per transaction at most: a longer queue is split, so one batch cannot hold every caller long.
MAX_BATCH = 64
# The longest a flush waits for the callers it expects (as many as the largest of the last RECENT
# batches), and the share of the last batch's duration it may wait: a short batch is not worth a
# long wait. Senders answered by one batch come back while the next is queued: waiting a little
# for them merges two half batches (two COMMITs) into one.
GATHER_SECONDS = 0.005
GATHER_SHARE = 0.25
RECENT = 8
# The longest the next batch waits for the checkpointer to copy a large WAL (storage/db/checkpoint.py);
# after it the batch runs anyway (the serving connection's automatic checkpoint bounds the WAL).
COPY_WAIT_SECONDS = 0.2

Done = Callable[[BaseException | None, Any], None]
Schedule = Callable[[Callable[[], None]], None]
ScheduleLater = Callable[[float, Callable[[], None]], None]
# wait_for_copy(fn): fn() runs on the batcher's thread once the checkpointer copied the whole WAL.
WaitForCopy = Callable[[Callable[[], None]], None]


class WriteBatcher:
    """Collects write calls and runs them in batches on the next turns of the loop.

    `schedule(fn)` runs fn soon on the same thread (the event loop's call_soon), `schedule_later(delay,
    fn)` after a delay. The first call queued schedules a flush. A flush runs what is queued unless
    fewer calls wait than the largest of the last batches held (the senders' concurrency); then it
    waits (GATHER_SECONDS at most) for the rest and runs as soon as they are all queued. A lone
    sender never waits.
    """

    def __init__(
        self,
        db: Database,
        schedule: Schedule,
        schedule_later: ScheduleLater,
        max_batch: int = MAX_BATCH,
        wait_for_copy: WaitForCopy | None = None,
    ) -> None:
        self.db = db
        self.schedule = schedule
        self.schedule_later = schedule_later
        self.wait_for_copy = wait_for_copy
        self._holding = False  # the due flush waits for the checkpointer
        self._copied = False  # the checkpointer answered: the next flush does not wait again
        self.copy_waits = 0
        self.max_batch = max_batch
        self.pending: list[tuple[Call, Done]] = []
        self.scheduled = False  # a flush is due (soon, or when the wait ends)
        self.recent: collections.deque[int] = collections.deque([1], maxlen=RECENT)  # sizes of the last batches
        self.last_seconds = 0.0  # how long the last batch took
        self._waiting = False  # the due flush is the end of a wait
        self._token = 0  # only the newest scheduled flush runs
        self.batches = 0  # transactions committed (or attempted), for logs and benchmarks
        self.calls = 0

    def submit(self, done: Done, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        """Queue fn(tx, *args, **kwargs); done(error, result) is called once its batch committed or failed."""
        self.pending.append(((fn, args, kwargs), done))
        if not self.scheduled:
            self.scheduled = True
            self._arm(None)
        elif self._waiting and not self._holding and len(self.pending) >= self.expected:
            self._arm(None)  # everyone expected is here: stop waiting

    def _arm(self, delay: float | None) -> None:
        self._token += 1
        token = self._token
        self._waiting = delay is not None

        def flush() -> None:
            if token == self._token:
                self._flush()

        if delay is None:
            self.schedule(flush)
        else:
            self.schedule_later(delay, flush)

    @property
    def expected(self) -> int:
        return min(max(self.recent), self.max_batch)

    def _flush(self) -> None:
        wait = min(GATHER_SECONDS, GATHER_SHARE * self.last_seconds)
        if not self._waiting and len(self.pending) < self.expected and wait > 0:
            self._arm(wait)
            return
        if self._wait_for_copy():
            return
        batch, self.pending = self.pending[: self.max_batch], self.pending[self.max_batch :]
        self.scheduled = False
        started = time.perf_counter()
        try:
            self.run(batch)
        finally:
            self.last_seconds = time.perf_counter() - started
            self.recent.append(len(batch))
            if self.pending and not self.scheduled:
                self.scheduled = True
                self._arm(None)

    def _wait_for_copy(self) -> bool:
        """Hold the next batch until the checkpointer has copied a large WAL; return whether it waits.

        The transaction that begins after every frame was copied starts the WAL from its beginning:
        under sustained sends one always began before the last copy ended, and the WAL grew to the
        serving connection's bound, whose checkpoint then held the event loop. The loop serves
        other requests meanwhile; the wait ends when the thread answers or after COPY_WAIT_SECONDS.
        """
        checkpointer = self.db.checkpointer
        if self._copied or self.wait_for_copy is None or checkpointer is None or not checkpointer.restart_due:
            self._copied = False
            return False
        self._token += 1
        token = self._token
        self._waiting = self._holding = True
        self.copy_waits += 1

        def copied() -> None:
            if token == self._token:
                self._token += 1
                self._holding, self._copied = False, True
                self._flush()

        self.wait_for_copy(copied)
        self.schedule_later(COPY_WAIT_SECONDS, copied)
        return True

    def drain(self) -> None:
        """Run every queued call now (before the connection closes); a scheduled flush then finds nothing."""
        self._token += 1
        self.scheduled = self._waiting = self._holding = False
        while self.pending:
            batch, self.pending = self.pending[: self.max_batch], self.pending[self.max_batch :]
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
