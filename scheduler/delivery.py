"""deliver_due (the testable unit) and Scheduler (the IOLoop timer that calls it)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from storage.db.database import Database
from storage.messages.scheduled_messages import (
    INTERNAL_ERROR,
    deliver_one,
    due_ids,
    fail_scheduled_message,
    next_due_time,
)

log = logging.getLogger("tornchat.scheduler")

# One IOLoop turn delivers at most BATCH_SIZE messages and stops early once it has used
# TURN_BUDGET_SECONDS; the loop serves requests between turns. A message costs a few milliseconds
# (rendering, one row per receiver, events), far more in a large channel, so the time budget, not
# the count, is what bounds the stall when 10,000 messages fall due at once (bench/scheduler_burst.py).
BATCH_SIZE = 100
TURN_BUDGET_SECONDS = 0.01
# After an error outside any one message (the database unreadable, say), try again this much later.
RETRY_SECONDS = 5.0

CallLater = Callable[[float, Callable[[], None]], Any]


def deliver_due(
    db: Database, now: float, limit: int = BATCH_SIZE, keep_going: Callable[[], bool] | None = None
) -> list[int | None]:
    """Deliver up to `limit` messages due at `now`, each in its own transaction, while `keep_going()`
    (asked before each message after the first) says so.

    Returns, per attempted scheduled message, the new message id or None when it failed. A message
    whose delivery raises something unexpected is marked failed ("Internal server error"), so that
    one bad row can never be retried forever.
    """
    results: list[int | None] = []
    for scheduled_id in db.read(due_ids, now, limit):
        if results and keep_going is not None and not keep_going():
            break
        try:
            results.append(db.write(deliver_one, scheduled_id))
        except Exception:
            log.exception("delivery of scheduled message %s failed", scheduled_id)
            db.write(fail_scheduled_message, scheduled_id, INTERNAL_ERROR)
            results.append(None)
    return results


class Scheduler:
    """Keeps one timer armed for the next due time; delivers in batches when it fires.

    `arm` is called whenever scheduled messages change (tornchat/server.py does it on every
    scheduled_messages event). Everything runs on the IOLoop's thread.
    """

    def __init__(
        self,
        db: Database,
        clock: Callable[[], float],
        call_later: CallLater,
        batch_size: int = BATCH_SIZE,
        turn_budget: float = TURN_BUDGET_SECONDS,
        monotonic: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.db = db
        self.clock = clock  # wall time: when messages are due
        self.call_later = call_later
        self.batch_size = batch_size
        self.turn_budget = turn_budget
        self.monotonic = monotonic  # how long a turn has run (the wall clock may jump)
        self.timer: Any = None
        self.armed_for: int | None = None
        # While a batch runs its own deliveries publish scheduled_messages events; the batch
        # re-arms once at its end instead of once per event.
        self.delivering = False

    def arm(self) -> None:
        """(Re-)arm the timer for the next due message; no timer when nothing waits."""
        if self.delivering:
            return
        due = self.db.read(next_due_time)
        if due == self.armed_for and self.timer is not None:
            return
        self.cancel()
        if due is not None:
            self.armed_for = due
            self.timer = self.call_later(max(0.0, due - self.clock()), self.run)

    def cancel(self) -> None:
        """Stop the timer, if one is armed."""
        if self.timer is not None:
            self.timer.cancel()
        self.timer, self.armed_for = None, None

    def run(self) -> None:
        """Deliver one batch; if it was full, come back on the next loop turn, else re-arm (which
        also comes back at once if the turn's budget ran out with messages still due)."""
        self.timer, self.armed_for = None, None
        self.delivering = True
        started = self.monotonic()
        try:
            attempted = deliver_due(
                self.db, self.clock(), self.batch_size, lambda: self.monotonic() - started < self.turn_budget
            )
        except Exception:
            log.exception("scheduled message delivery failed; retrying in %s s", RETRY_SECONDS)
            self.timer = self.call_later(RETRY_SECONDS, self.run)
            return
        finally:
            self.delivering = False
        if len(attempted) >= self.batch_size:
            self.timer = self.call_later(0, self.run)
        else:
            self.arm()
