"""Event queues: each client's queue of events, filled by the publish call, drained by long-polls.

All of it lives on the IOLoop thread: publishing happens after a commit in a handler or timer,
so there is no locking. A queue holds at most `max_queue_bytes` of events (each counted as its
JSON plus EVENT_OVERHEAD) and MAX_EVENTS events; a client that falls further behind, polling or
not, has its queue dropped and is told (BAD_EVENT_QUEUE_ID) to register again. Queues share the
bodies of the events they hold (tornchat/event_forms.py), and so does the saved-queues file. A
body carries its JSON, encoded once: a poll's answer is assembled from those bytes.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import secrets
import weakref
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

import msgspec

from storage.messages.messages import PUBLIC_CHANNEL
from storage.model.errors import ApiError
from storage.model.roles import ROLE_MEMBER
from tornchat.event_forms import Body, Fanout, entry_json, flags_for, matches_narrow, prepared
from tornchat.settings import DEFAULT_MAX_QUEUE_BYTES

log = logging.getLogger("tornchat.events")

MAX_EVENTS = 10_000
DEFAULT_LIFESPAN = 600
MAX_LIFESPAN = 7 * 86400
# Version of the saved-queues file; a list (the first version) holds every event whole.
SAVED_FORMAT = 2

# A queued event: (its id in this queue, its body without the id, its size in bytes).
Entry = tuple[int, Body, int]


# An event for this many queues wakes a wave of polls: the cyclic garbage collector waits until
# they are answered (WAVE_SECONDS after the last such event). Its passes over the heap came in the
# middle of 1,000 answers, 15 to 40 of them per wave, delaying the last answer by 20-80 ms. A hold
# extended to MAX_HOLD seconds ends then and is followed by as long without one, so that under a
# stream of waves the collector still runs about half the time.
WAVE_QUEUES = 200
WAVE_SECONDS = 0.5
MAX_HOLD = 2.0


class _Hold:
    __slots__ = ("timer", "started")

    def __init__(self, started: float) -> None:
        self.timer: asyncio.TimerHandle | None = None
        self.started = started


_holds: dict[asyncio.AbstractEventLoop, _Hold] = {}  # loops holding the collector off
_rest_until: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, float] = weakref.WeakKeyDictionary()


def hold_garbage_collection() -> None:
    """Hold the cyclic garbage collector off for WAVE_SECONDS (more if called again meanwhile).

    Only on an event loop, and only if the collector runs: another holder (EventQueues.load) keeps its own state.
    """
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return
    for other in [other for other in _holds if other.is_closed()]:  # stopped before its hold ended
        _release_garbage_collection(other)
    now = loop.time()
    hold = _holds.get(loop)
    if hold is None:
        if (not _holds and not gc.isenabled()) or now < _rest_until.get(loop, 0.0):
            return
        hold = _holds[loop] = _Hold(now)
        gc.disable()
    elif now - hold.started >= MAX_HOLD:
        return  # it ends as planned
    if hold.timer is not None:
        hold.timer.cancel()
    hold.timer = loop.call_later(WAVE_SECONDS, _release_garbage_collection, loop)


def release_garbage_collection() -> None:
    """End the running loop's hold now (a server closing: the loop may end before the hold's timer)."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return
    hold = _holds.get(loop)
    if hold is not None:
        if hold.timer is not None:
            hold.timer.cancel()
        _release_garbage_collection(loop)


def _release_garbage_collection(loop: asyncio.AbstractEventLoop) -> None:
    hold = _holds.pop(loop, None)
    if hold is not None and not loop.is_closed() and loop.time() - hold.started >= MAX_HOLD:
        _rest_until[loop] = loop.time() + MAX_HOLD
    if not _holds:
        gc.enable()


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


# Old forms of user_settings events, for clients without the user_settings_object capability.
LEGACY_SETTINGS_EVENTS = frozenset({"update_display_settings", "update_global_notifications"})
SAVED_OPTIONS = (
    "narrow", "apply_markdown", "client_gravatar", "all_public_streams", "empty_topic_name", "linkifier_url_template",
    "user_settings_object",
    "lifespan", "role", "stream_typing_notifications", "simplified_presence_events", "slim_presence",
)  # fmt: skip


class EventQueues:
    """Every queue of the process, by id and by user."""

    def __init__(self, clock: Callable[[], float], max_queue_bytes: int = DEFAULT_MAX_QUEUE_BYTES) -> None:
        self.clock = clock
        self.max_queue_bytes = max_queue_bytes
        self.queues: dict[str, EventQueue] = {}
        self.by_user: dict[int, set[str]] = {}
        self.public_listeners: set[str] = set()  # queues with all_public_streams

    def create(self, user_id: int, **options: Any) -> EventQueue:
        queue_id = f"{int(self.clock())}:{secrets.token_hex(8)}"
        queue = EventQueue(queue_id, user_id, self.clock(), **options)
        self._add(queue)
        return queue

    def _add(self, queue: EventQueue) -> None:
        queue.max_bytes = self.max_queue_bytes
        self.queues[queue.id] = queue
        self.by_user.setdefault(queue.user_id, set()).add(queue.id)
        if queue.all_public_streams:
            self.public_listeners.add(queue.id)

    def get(self, queue_id: str, user_id: int) -> EventQueue:
        """Return the user's live queue; BAD_EVENT_QUEUE_ID for unknown, expired, overflowed or foreign ones."""
        queue = self.queues.get(queue_id)
        if queue is not None and self._dead(queue):
            self.remove(queue.id)
            queue = None
        # Another user's queue is answered like an unknown one: its existence is not revealed.
        if queue is None or queue.user_id != user_id:
            raise bad_queue(queue_id)
        return queue

    def _dead(self, queue: EventQueue) -> bool:
        """Overflowed, or idle (no poll parked) for longer than its lifespan."""
        return queue.overflowed or (not queue.parked and self.clock() - queue.last_access > queue.lifespan)

    def remove(self, queue_id: str) -> None:
        queue = self.queues.pop(queue_id, None)
        if queue is None:
            return
        self.by_user.get(queue.user_id, set()).discard(queue_id)
        if not self.by_user.get(queue.user_id):
            self.by_user.pop(queue.user_id, None)
        self.public_listeners.discard(queue_id)
        queue.wake()

    def collect_garbage(self) -> int:
        """Drop expired and overflowed queues; return how many."""
        dead = [q.id for q in self.queues.values() if self._dead(q)]
        for queue_id in dead:
            self.remove(queue_id)
        return len(dead)

    def publish(self, event: dict[str, Any], user_ids: Iterable[int]) -> None:
        """Deliver an event to every queue of these users that wants it, formatted per queue."""
        fanout = Fanout(event)
        recipients = dict.fromkeys(qid for user_id in user_ids for qid in self.by_user.get(user_id, ()))
        if len(recipients) >= WAVE_QUEUES:
            hold_garbage_collection()
        for queue_id in recipients:
            self._deliver(self.queues[queue_id], fanout, True)
        # all_public_streams queues see public channels' messages even without a subscription.
        if event["type"] == "message" and event.get(PUBLIC_CHANNEL):
            for queue_id in self.public_listeners.difference(recipients):
                self._deliver(self.queues[queue_id], fanout, False)

    def _deliver(self, queue: EventQueue, fanout: Fanout, recipient: bool) -> None:
        event_type = fanout.event["type"]
        if queue.overflowed or (queue.event_types is not None and event_type not in queue.event_types):
            return
        if event_type == "realm_linkifiers" and not queue.linkifier_url_template:
            return  # clients without the linkifier_url_template capability get no linkifiers (Zulip)
        if event_type in LEGACY_SETTINGS_EVENTS and queue.user_settings_object:
            return  # clients with the user_settings_object capability get user_settings events only (Zulip)
        if event_type == "muted_topics" and queue.event_types is not None and "user_topic" in queue.event_types:
            return  # a client asking for both gets user_topic only; muted_topics is for older servers (Zulip)
        if event_type == "typing" and "stream_id" in fanout.event and not queue.stream_typing_notifications:
            return  # nor channel typing events without stream_typing_notifications
        if event_type == "message":
            self._deliver_message(queue, fanout, recipient)
        else:
            queue.push(*fanout.form(queue))

    @staticmethod
    def _deliver_message(queue: EventQueue, fanout: Fanout, recipient: bool) -> None:
        """Queue a message once, with the queue user's flags.

        A message published as one event per flag set can reach an all_public_streams queue first
        as an onlooker (no flags) and then as a recipient. All of a commit's events are published
        in one synchronous loop, so the onlooker copy is still queued: it gets the real flags.
        """
        event = fanout.event
        message_id, flags = event["message"]["id"], flags_for(queue, event, recipient)
        if message_id == queue.last_message_id:
            copy = queue.onlooker_copy
            if recipient and copy is not None:
                queue.onlooker_copy = None
                keep = matches_narrow(queue, event["message"], flags)
                queue.replace(copy, fanout.form(queue, flags) if keep else None)
            return
        if not matches_narrow(queue, event["message"], flags):
            return
        body, size = fanout.form(queue, flags)
        queue.last_message_id, queue.onlooker_copy = message_id, None if recipient else body
        queue.push(body, size)

    def answer_all(self) -> None:
        """Wake every parked long-poll (shutdown): they answer with what they have."""
        now = self.clock()
        for queue in self.queues.values():
            if queue.parked:
                queue.last_access = now  # the poll ends now: its lifespan starts again
                queue.wake()

    def save(self, path: str) -> None:
        """Write every live queue to `path` (atomically), for `load` at the next start.

        Each event body is written once however many queues hold it; a queue lists its events'
        ids and the indexes of their bodies (flat lists of integers: quick to write and to read).
        """
        bodies: list[msgspec.Raw] = []  # each body's JSON, as encoded when it was queued
        index_of: dict[int, int] = {}  # id(body) -> its index in bodies; bodies are alive meanwhile
        saved = []
        for queue in self.queues.values():
            if queue.overflowed:
                continue
            indexes = []
            for _, body, _ in queue.entries:
                index = index_of.get(id(body))
                if index is None:
                    index = index_of[id(body)] = len(bodies)
                    bodies.append(msgspec.Raw(body.json))
                indexes.append(index)
            event_ids = [event_id for event_id, _, _ in queue.entries]
            saved.append({**queue.snapshot(), "event_ids": event_ids, "event_bodies": indexes})
        temporary = path + ".tmp"
        with open(temporary, "wb") as handle:
            handle.write(msgspec.json.encode({"format": SAVED_FORMAT, "bodies": bodies, "queues": saved}))
        os.replace(temporary, path)

    def load(self, path: str) -> int:
        """Restore queues saved at shutdown (not expired ones, nor ones over the size limit); return how many."""
        if not os.path.exists(path):
            return 0
        # The cyclic garbage collector is off meanwhile: the file makes one container per event and
        # no cycles, and the collector's passes over the growing heap took 5/6 of the time.
        collecting = gc.isenabled()
        gc.disable()
        try:
            with open(path, "rb") as handle:
                queues = parse_saved(handle.read())
        except (OSError, ValueError, KeyError, TypeError, IndexError) as error:
            # A damaged file must not stop the server: clients simply register again.
            log.warning("Ignoring unreadable saved event queues %s: %s", path, error)
            queues = []
        finally:
            if collecting:
                gc.enable()
        os.remove(path)
        for queue in queues:
            # A queue over the limit (lowered since it was saved) is as far behind as an overflowed one.
            too_big = queue.size > self.max_queue_bytes and len(queue.entries) > 1
            if not self._dead(queue) and not too_big:
                self._add(queue)
        return len(self.queues)


def parse_saved(data: bytes) -> list[EventQueue]:
    """The queues of a saved-queues file; raise ValueError, KeyError, TypeError or IndexError if damaged."""
    saved = msgspec.json.decode(data)
    if isinstance(saved, list):
        saved = _upgrade(saved)
    if saved["format"] != SAVED_FORMAT:
        raise ValueError(f"unknown format {saved['format']!r}")
    bodies, sizes = [], []
    for body in saved["bodies"]:
        if not isinstance(body, dict):
            raise TypeError(f"an event body is a {type(body).__name__}")
        body, size = prepared(body)
        bodies.append(body)
        sizes.append(size)
    queues = []
    for item in saved["queues"]:
        queue = _restore(item)
        ids, indexes = item["event_ids"], item["event_bodies"]
        queue.entries.extend((event_id, bodies[i], sizes[i]) for event_id, i in zip(ids, indexes, strict=True))
        queue.size = sum(sizes[index] for index in indexes)
        queues.append(queue)
    return queues


def _upgrade(queues: list[dict[str, Any]]) -> dict[str, Any]:
    """Turn the first format (a list of queues, each with its events whole) into the current one."""
    bodies: list[dict[str, Any]] = []
    for item in queues:
        events = item.pop("events")
        item["event_ids"] = [event.pop("id") for event in events]
        item["event_bodies"] = list(range(len(bodies), len(bodies) + len(events)))
        bodies.extend(events)
    return {"format": SAVED_FORMAT, "bodies": bodies, "queues": queues}


def _restore(item: dict[str, Any]) -> EventQueue:
    """A queue with the saved options and counters of `item`, without its events."""
    options = {name: item[name] for name in SAVED_OPTIONS if name in item}
    types = item["event_types"]
    queue = EventQueue(item["id"], item["user_id"], item["last_access"],
                       event_types=None if types is None else set(types), **options)  # fmt: skip
    queue.next_id, queue.newest_pruned_id = item["next_id"], item.get("newest_pruned_id")
    return queue
