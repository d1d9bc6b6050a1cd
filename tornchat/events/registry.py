"""Every event queue of the process, by id and by user: creation, expiry, delivery of published events.

The publish call (tornchat/events/bus.py) hands each event here with the ids of the users who may
see it; each queue of theirs that wants it gets it in its form (tornchat/events/forms.py). The
queues are saved at shutdown and restored at the next start (tornchat/events/saved.py).
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Iterable
from typing import Any

from storage.messages.messages import PUBLIC_CHANNEL
from tornchat.events import gc_hold
from tornchat.events.forms import Fanout, flags_for, matches_narrow
from tornchat.events.queue import EventQueue, bad_queue
from tornchat.events.saved import read_saved, write_saved
from tornchat.settings import DEFAULT_MAX_QUEUE_BYTES

# Old forms of user_settings events, for clients without the user_settings_object capability.
LEGACY_SETTINGS_EVENTS = frozenset({"update_display_settings", "update_global_notifications"})


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
        if len(recipients) >= gc_hold.WAVE_QUEUES:
            gc_hold.hold_garbage_collection()
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
        """Write every live queue to `path` (atomically), for `load` at the next start."""
        write_saved(path, self.queues.values())

    def load(self, path: str) -> int:
        """Restore queues saved at shutdown (not expired ones, nor ones over the size limit); return how many."""
        if not os.path.exists(path):
            return 0
        for queue in read_saved(path):
            # A queue over the limit (lowered since it was saved) is as far behind as an overflowed one.
            too_big = queue.size > self.max_queue_bytes and len(queue.entries) > 1
            if not self._dead(queue) and not too_big:
                self._add(queue)
        return len(self.queues)
