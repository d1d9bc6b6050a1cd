"""deliver_due (the testable unit) and Scheduler (the IOLoop timer that calls it)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Protocol

from storage.db import Database
from storage.scheduled_messages import deliver_one, due_ids, next_due_time

log = logging.getLogger("tornchat.scheduler")

# Messages delivered per IOLoop turn: each is its own transaction of a few milliseconds, and
# between batches the loop serves requests, so 10,000 messages due at once never stall it long.
BATCH_SIZE = 50


def deliver_due(db: Database, now: float, limit: int = BATCH_SIZE) -> list[int | None]:
    """Deliver up to `limit` messages due at `now`, each in its own transaction.

    Returns, per attempted scheduled message, the new message id or None when it failed.
    """
    results = []
    for scheduled_id in db.read(due_ids, now, limit):
        results.append(db.write(deliver_one, scheduled_id))
    return results


class Timer(Protocol):
    def cancel(self) -> None: ...


class Scheduler:
    """Keeps one timer armed for the next due time; delivers in batches when it fires."""

    def __init__(
        self,
        db: Database,
        clock: Callable[[], float],
        call_later: Callable[[float, Callable[[], None]], Any],
        batch_size: int = BATCH_SIZE,
    ) -> None:
        self.db = db
        self.clock = clock
        self.call_later = call_later
        self.batch_size = batch_size
        self.timer: Any = None
        self.armed_for: int | None = None

    def arm(self) -> None:
        """(Re-)arm the timer for the next due message; no timer when nothing waits."""
        due = self.db.read(next_due_time)
        if due == self.armed_for and self.timer is not None:
            return
        self.cancel()
        self.armed_for = due
        if due is not None:
            self.timer = self.call_later(max(0.0, due - self.clock()), self.run)

    def cancel(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
        self.timer, self.armed_for = None, None

    def run(self) -> None:
        """Deliver one batch; if more are due, come back on the next loop turn, else re-arm."""
        self.timer, self.armed_for = None, None
        try:
            delivered = deliver_due(self.db, self.clock(), self.batch_size)
        except Exception:  # noqa: BLE001 - a bug must not stop future deliveries
            log.exception("scheduled message delivery failed")
            delivered = []
        if len(delivered) >= self.batch_size:
            self.timer = self.call_later(0, self.run)
        else:
            self.arm()
