"""Brute-force protection: count recent failures per key and refuse while over the limit."""

from __future__ import annotations

import collections
import math
from collections.abc import Callable


class FailureLimiter:
    """At most `limit` failures per key within `window` seconds; memory bounded by `max_keys`."""

    def __init__(self, limit: int, window: float, clock: Callable[[], float], max_keys: int = 100_000) -> None:
        self.limit = limit
        self.window = window
        self.clock = clock
        self.max_keys = max_keys
        self.failures: collections.OrderedDict[str, collections.deque[float]] = collections.OrderedDict()

    def _recent(self, key: str) -> collections.deque[float] | None:
        times = self.failures.get(key)
        if times is None:
            return None
        cutoff = self.clock() - self.window
        while times and times[0] <= cutoff:
            times.popleft()
        if not times:
            del self.failures[key]
            return None
        return times

    def retry_after(self, key: str) -> int | None:
        """Return the seconds until the key may try again, or None if it may now."""
        times = self._recent(key)
        if times is None or len(times) < self.limit:
            return None
        return max(1, math.ceil(times[0] + self.window - self.clock()))

    def record_failure(self, key: str) -> None:
        times = self._recent(key) or collections.deque()
        times.append(self.clock())
        self.failures[key] = times
        self.failures.move_to_end(key)
        while len(self.failures) > self.max_keys:
            self.failures.popitem(last=False)

    def reset(self, key: str) -> None:
        self.failures.pop(key, None)
