"""One client's event queue: the events it holds, how it wants them, and its limits.

All of it lives on the IOLoop thread: publishing happens after a commit in a handler or timer,
so there is no locking. A queue holds at most `max_queue_bytes` of events (each counted as its
JSON plus EVENT_OVERHEAD) and MAX_EVENTS events; a client that falls further behind, polling or
not, has its queue dropped and is told (BAD_EVENT_QUEUE_ID) to register again. The queues of the
process are in tornchat/events/registry.py.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from typing import Any

from storage.model.errors import ApiError
from storage.model.roles import ROLE_MEMBER
from tornchat.events.body import Body, entry_json, prepared
from tornchat.settings import DEFAULT_MAX_QUEUE_BYTES

log = logging.getLogger("tornchat.events")

MAX_EVENTS = 10_000
DEFAULT_LIFESPAN = 600
MAX_LIFESPAN = 7 * 86400
# POST /register's idle_queue_timeout="mobile" (Zulip 12.0, feature level 481): a phone's queue
# outlives hours in a pocket without a poll; twelve hours, as Zulip's MOBILE_EVENT_QUEUE_TIMEOUT_SECS.
MOBILE_LIFESPAN = 12 * 3600

# A queued event: (its id in this queue, its body without the id, its size in bytes).
Entry = tuple[int, Body, int]
# What a saved queue keeps of its options, besides its event types (snapshot; tornchat/events/saved.py).
SAVED_OPTIONS = (
    "narrow", "apply_markdown", "client_gravatar", "all_public_streams", "empty_topic_name", "linkifier_url_template",
    "user_settings_object",
    "lifespan", "role", "stream_typing_notifications", "simplified_presence_events", "slim_presence",
)  # fmt: skip


def bad_queue(queue_id: str) -> ApiError:
    return ApiError(f"Bad event queue id: {queue_id}", "BAD_EVENT_QUEUE_ID", data={"queue_id": queue_id})


class EventQueue:
    """One client's queue and how it wants its events."""

    __slots__ = (
        "id", "user_id", "event_types", "narrow", "apply_markdown", "client_gravatar", "all_public_streams",
        "empty_topic_name", "linkifier_url_template", "lifespan", "entries", "size", "max_bytes", "next_id",
        "newest_pruned_id", "last_access", "waiter", "overflowed", "role", "last_message_id", "onlooker_copy",
        "user_settings_object",
        "stream_typing_notifications", "simplified_presence_events", "slim_presence",
    )  # fmt: skip

    def __init__(self, queue_id: str, user_id: int, now: float, **options: Any) -> None:
        self.id = queue_id
        self.user_id = user_id
        self.event_types: set[str] | None = options.get("event_types")
        self.narrow: list[list[str]] = options.get("narrow") or []
        self.apply_markdown: bool = options.get("apply_markdown", False)
        self.client_gravatar: bool = options.get("client_gravatar", True)
        self.all_public_streams: bool = options.get("all_public_streams", False)
        self.empty_topic_name: bool = options.get("empty_topic_name", False)
        self.linkifier_url_template: bool = options.get("linkifier_url_template", False)
        self.user_settings_object: bool = options.get("user_settings_object", False)
        self.stream_typing_notifications: bool = options.get("stream_typing_notifications", False)
        self.simplified_presence_events: bool = options.get("simplified_presence_events", False)
        self.slim_presence: bool = options.get("slim_presence", False)
        self.lifespan: float = options.get("lifespan", DEFAULT_LIFESPAN)
        self.role: int = options.get("role", ROLE_MEMBER)  # decides whose real emails it may see
        self.entries: deque[Entry] = deque()
        self.size = 0  # bytes of the entries
        self.max_bytes = DEFAULT_MAX_QUEUE_BYTES  # set by EventQueues
        self.next_id = 0
        self.newest_pruned_id: int | None = None
        self.last_access = now
        self.waiter: asyncio.Future[None] | None = None
        self.overflowed = False
        self.last_message_id: int | None = None  # never deliver one message twice to a queue
        self.onlooker_copy: Body | None = None  # see EventQueues._deliver_message

    @property
    def events(self) -> list[dict[str, Any]]:
        """The queued events as a poll answers them."""
        return [{**body, "id": event_id} for event_id, body, _ in self.entries]

    def events_json(self) -> bytes:
        """The JSON of `events`, joined from the bodies' encoded JSON."""
        return b"[" + b",".join([entry_json(event_id, body) for event_id, body, _ in self.entries]) + b"]"

    @property
    def parked(self) -> bool:
        return self.waiter is not None and not self.waiter.done()

    def wake(self) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(None)

    def push(self, body: dict[str, Any], size: int | None = None) -> None:
        """Queue an event body (never changed afterwards; it may be shared) under the next id.

        A Body is queued as it is (with its size, if given); any other dict becomes one.
        """
        if not isinstance(body, Body) or size is None:
            body, size = prepared(body)
        # One event always fits an empty queue: its client is not behind, however large the event.
        if self.entries and (len(self.entries) >= MAX_EVENTS or self.size + size > self.max_bytes):
            self._overflow()
            return
        event_id = self.next_id
        self.next_id += 1
        if not self._coalesce(event_id, body):
            self.entries.append((event_id, body, size))
            self.size += size
        elif self.size > self.max_bytes:
            self._overflow()
            return
        self.wake()

    def _overflow(self) -> None:
        # The client is too far behind to catch up: drop everything, it must register again.
        log.info("Event queue %s of user %d dropped: %d events, %d bytes", self.id, self.user_id,
                 len(self.entries), self.size)  # fmt: skip
        self.overflowed = True
        self.entries.clear()
        self.size = 0
        self.wake()

    def _coalesce(self, event_id: int, body: Body) -> bool:
        """Merge a flag event into an identical queued one (Zulip's virtual events); True if merged.

        A storm of "mark as read" requests then costs one queued event. Removing `read` is never
        merged: those events carry per-message details.
        """
        if body["type"] != "update_message_flags" or not self.entries or body.get("all"):
            return False
        if body["operation"] == "remove" and body["flag"] == "read":
            return False
        _, last, last_size = self.entries[-1]
        same = last["type"] == "update_message_flags" and not last.get("all")
        if not (same and (last["operation"], last["flag"]) == (body["operation"], body["flag"])):
            return False
        merged, size = prepared({**last, "messages": sorted(set(last["messages"]) | set(body["messages"]))})
        self.entries[-1] = (event_id, merged, size)
        self.size += size - last_size
        return True

    def replace(self, body: Body, new: tuple[Body, int] | None) -> None:
        """Put a new (body, size) in place of a queued body (found by identity), or drop the event if None."""
        for index in range(len(self.entries) - 1, -1, -1):
            event_id, queued, size = self.entries[index]
            if queued is body:
                if new is None:
                    del self.entries[index]
                    self.size -= size
                else:
                    self.entries[index] = (event_id, *new)
                    self.size += new[1] - size
                return

    def acknowledge(self, last_event_id: int) -> None:
        """Drop the events the client has seen (ids up to last_event_id); raise for impossible ids."""
        if self.newest_pruned_id is not None and last_event_id < self.newest_pruned_id:
            raise ApiError(f"An event newer than {last_event_id} has already been pruned!")
        if last_event_id >= self.next_id:
            raise ApiError(f"Event {last_event_id} was not in this queue")
        while self.entries and self.entries[0][0] <= last_event_id:
            event_id, _, size = self.entries.popleft()
            self.newest_pruned_id = event_id
            self.size -= size
        if last_event_id >= 0:
            self.newest_pruned_id = max(self.newest_pruned_id or -1, last_event_id)

    def snapshot(self) -> dict[str, Any]:
        """Return what `EventQueues.load` needs to restore this queue after a restart, but its events."""
        data = {name: getattr(self, name) for name in SAVED_OPTIONS}
        data["event_types"] = None if self.event_types is None else sorted(self.event_types)
        data.update(id=self.id, user_id=self.user_id, next_id=self.next_id)
        data.update(newest_pruned_id=self.newest_pruned_id, last_access=self.last_access)
        return data
