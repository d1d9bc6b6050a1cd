"""The one publish call every action's events go through.

Actions record events in their transaction (`Tx.publish`); after the commit the database hands
each one here with the ids of the users who may see it. The event queues (tornchat/events/registry.py)
subscribe to it, and so does the scheduler's re-arming (tornchat/server.py); the bus also keeps
the most recent events so they can be inspected.
"""

from __future__ import annotations

import collections
from collections.abc import Callable
from typing import Any

Listener = Callable[[dict[str, Any], list[int]], None]


class EventBus:
    """Fans published events out to listeners and keeps the last `history` of them."""

    def __init__(self, history: int = 1000) -> None:
        self.recent: collections.deque[tuple[dict[str, Any], list[int]]] = collections.deque(maxlen=history)
        self.listeners: list[Listener] = []

    def publish(self, event: dict[str, Any], user_ids: list[int]) -> None:
        self.recent.append((event, user_ids))
        for listener in self.listeners:
            listener(event, user_ids)

    def subscribe(self, listener: Listener) -> None:
        self.listeners.append(listener)
