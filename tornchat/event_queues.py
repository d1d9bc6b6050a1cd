"""Event queues: each client's queue of events, filled by the publish call, drained by long-polls.

All of it lives on the IOLoop thread: publishing happens after a commit in a handler or timer,
so there is no locking. A queue holds at most MAX_EVENTS unacknowledged events; a client that
falls further behind has its queue dropped and is told (BAD_EVENT_QUEUE_ID) to register again.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

from storage.errors import ApiError
from storage.groups import ROLE_MEMBER
from storage.realm import EMPTY_TOPIC_DISPLAY_NAME
from storage.users import VISIBLE_TO_ROLE

MAX_EVENTS = 10_000
DEFAULT_LIFESPAN = 600
MAX_LIFESPAN = 7 * 86400
# Private keys a published event may carry for per-queue formatting; never sent to clients.
RAW_CONTENT, LOCAL, SENDER_INFO = "_raw_content", "_local", "_sender"


def bad_queue(queue_id: str) -> ApiError:
    return ApiError(f"Bad event queue id: {queue_id}", "BAD_EVENT_QUEUE_ID", data={"queue_id": queue_id})


class EventQueue:
    """One client's queue and how it wants its events."""

    __slots__ = (
        "id", "user_id", "event_types", "narrow", "apply_markdown", "client_gravatar", "all_public_streams",
        "empty_topic_name", "lifespan", "events", "next_id", "last_access", "waiter", "overflowed",
        "role",
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
        self.lifespan: float = options.get("lifespan", DEFAULT_LIFESPAN)
        self.role: int = options.get("role", ROLE_MEMBER)  # decides whose real emails it may see
        self.events: deque[dict[str, Any]] = deque()
        self.next_id = 0
        self.last_access = now
        self.waiter: asyncio.Future[None] | None = None
        self.overflowed = False

    def wants(self, event: dict[str, Any]) -> bool:
        if self.event_types is not None and event["type"] not in self.event_types:
            return False
        return event["type"] != "message" or matches_narrow(self.narrow, event)

    def push(self, event: dict[str, Any]) -> None:
        if len(self.events) >= MAX_EVENTS:
            self.overflowed = True
            self.events.clear()
            return
        event["id"] = self.next_id
        self.next_id += 1
        self.events.append(event)
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(None)

    def acknowledge(self, last_event_id: int) -> None:
        """Drop the events the client has seen (ids up to last_event_id)."""
        if last_event_id >= self.next_id:
            raise ApiError(f"Event {last_event_id} was not in this queue")
        while self.events and self.events[0]["id"] <= last_event_id:
            self.events.popleft()

    def snapshot(self) -> dict[str, Any]:
        """Return what `EventQueues.load` needs to restore this queue after a restart."""
        data = {name: getattr(self, name) for name in SAVED_OPTIONS}
        data["event_types"] = None if self.event_types is None else sorted(self.event_types)
        data.update(id=self.id, user_id=self.user_id, events=list(self.events), next_id=self.next_id)
        data["last_access"] = self.last_access
        return data


SAVED_OPTIONS = (
    "narrow", "apply_markdown", "client_gravatar", "all_public_streams", "empty_topic_name", "lifespan", "role",
)  # fmt: skip


def matches_narrow(narrow: list[list[str]], event: dict[str, Any]) -> bool:
    """Whether a message event matches a queue's narrow ([operator, operand] pairs, all must hold)."""
    message, flags = event["message"], event.get("flags", [])
    for operator, operand in narrow:
        if not _term_matches(operator, operand, message, flags):
            return False
    return True


NARROW_FLAGS = {"mentioned", "starred", "alerted"}


def _term_matches(operator: str, operand: str, message: dict[str, Any], flags: list[str]) -> bool:
    is_channel = message["type"] == "stream"
    if operator in ("channel", "stream"):
        return is_channel and str(message["display_recipient"]).lower() == str(operand).lower()
    if operator in ("topic", "subject"):
        topic = "" if operand == EMPTY_TOPIC_DISPLAY_NAME else operand
        return is_channel and message["subject"].lower() == topic.lower()
    if operator == "sender":
        return message["sender_email"].lower() == str(operand).lower() or str(message["sender_id"]) == str(operand)
    if operator in ("dm", "pm-with", "pm_with"):
        if is_channel:
            return False
        wanted = {e.strip().lower() for e in str(operand).split(",")}
        emails = {r["email"].lower() for r in message["display_recipient"]}
        return wanted <= emails and len(emails - wanted) <= 1
    if operator == "is":
        if operand in ("dm", "private"):
            return not is_channel
        if operand == "unread":
            return "read" not in flags
        return operand in NARROW_FLAGS and (
            operand in flags or (operand == "mentioned" and "wildcard_mentioned" in flags)
        )
    return True  # other operators are validated at registration; `near` and the like never filter


class EventQueues:
    """Every queue of the process, by id and by user."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self.queues: dict[str, EventQueue] = {}
        self.by_user: dict[int, set[str]] = {}
        self.public_listeners: set[str] = set()  # queues with all_public_streams

    def create(self, user_id: int, **options: Any) -> EventQueue:
        queue_id = f"{int(self.clock())}:{secrets.token_hex(8)}"
        queue = EventQueue(queue_id, user_id, self.clock(), **options)
        self._add(queue)
        return queue

    def _add(self, queue: EventQueue) -> None:
        self.queues[queue.id] = queue
        self.by_user.setdefault(queue.user_id, set()).add(queue.id)
        if queue.all_public_streams:
            self.public_listeners.add(queue.id)

    def get(self, queue_id: str, user_id: int) -> EventQueue:
        """Return the user's live queue; BAD_EVENT_QUEUE_ID for unknown, expired, overflowed or foreign ones."""
        queue = self.queues.get(queue_id)
        if queue is not None and (queue.overflowed or self._expired(queue)):
            self.remove(queue.id)
            queue = None
        if queue is None or queue.user_id != user_id:
            raise bad_queue(queue_id)
        return queue

    def _expired(self, queue: EventQueue) -> bool:
        parked = queue.waiter is not None and not queue.waiter.done()
        return not parked and self.clock() - queue.last_access > queue.lifespan

    def remove(self, queue_id: str) -> None:
        queue = self.queues.pop(queue_id, None)
        if queue is None:
            return
        self.by_user.get(queue.user_id, set()).discard(queue_id)
        self.public_listeners.discard(queue_id)
        if queue.waiter is not None and not queue.waiter.done():
            queue.waiter.set_result(None)

    def collect_garbage(self) -> int:
        """Drop expired queues; return how many."""
        expired = [q.id for q in self.queues.values() if self._expired(q)]
        for queue_id in expired:
            self.remove(queue_id)
        return len(expired)

    def publish(self, event: dict[str, Any], user_ids: Iterable[int]) -> None:
        """Deliver an event to every queue of these users that wants it, formatted per queue."""
        targets = [qid for user_id in user_ids for qid in self.by_user.get(user_id, ())]
        if event["type"] == "message" and event["message"].get("type") == "stream":
            targets.extend(self.public_listeners - set(targets))
        for queue_id in targets:
            queue = self.queues.get(queue_id)
            if queue is not None and not queue.overflowed and queue.wants(event):
                queue.push(format_for(queue, event))

    def answer_all(self) -> None:
        """Wake every parked long-poll (shutdown): they answer with what they have."""
        for queue in self.queues.values():
            if queue.waiter is not None and not queue.waiter.done():
                queue.waiter.set_result(None)

    def save(self, path: str) -> None:
        data = [q.snapshot() for q in self.queues.values() if not q.overflowed]
        temporary = path + ".tmp"
        with open(temporary, "w", encoding="utf-8") as handle:
            json.dump(data, handle)
        os.replace(temporary, path)

    def load(self, path: str) -> int:
        """Restore queues saved at shutdown (expired ones are dropped); return how many."""
        if not os.path.exists(path):
            return 0
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
        os.remove(path)
        for item in data:
            types = item.pop("event_types")
            events, next_id, last_access = item.pop("events"), item.pop("next_id"), item.pop("last_access")
            queue = EventQueue(item.pop("id"), item.pop("user_id"), last_access,
                               event_types=None if types is None else set(types), **item)  # fmt: skip
            queue.events.extend(events)
            queue.next_id = next_id
            if not self._expired(queue):
                self._add(queue)
        return len(self.queues)


def _sees_email(queue: EventQueue, sender: dict[str, Any]) -> bool:
    own = sender["user_id"] == queue.user_id
    return own or sender["is_bot"] or sender["visibility"] in VISIBLE_TO_ROLE[queue.role]


def format_for(queue: EventQueue, event: dict[str, Any]) -> dict[str, Any]:
    """Return a copy of the event as this queue asked for it (content form, avatars, topics)."""
    result = {k: v for k, v in event.items() if not k.startswith("_")}
    if event["type"] != "message":
        return result
    message = dict(result["message"])
    if not queue.apply_markdown and RAW_CONTENT in event:
        message["content"], message["content_type"] = event[RAW_CONTENT], "text/x-markdown"
    sender = event.get(SENDER_INFO)
    if queue.client_gravatar and sender is not None and sender["gravatar"] and _sees_email(queue, sender):
        message["avatar_url"] = None
    if message.get("type") == "stream" and message.get("subject") == "" and not queue.empty_topic_name:
        message["subject"] = EMPTY_TOPIC_DISPLAY_NAME
    result["message"] = message
    local = event.get(LOCAL)
    if local is not None and local.get("queue_id") == queue.id:
        result["local_message_id"] = local.get("local_id")
    return result
