"""The Server: what every handler reaches through `self.server` (database, realm, event queues, limits, timers)."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from typing import Any

import tornado.ioloop

from scheduler import Scheduler
from storage.db.database import Database
from storage.model.realm import get_realm
from storage.org import users
from storage.push import devices, push_notifications, push_registration
from storage.text import rerender
from tornchat.events.bus import EventBus
from tornchat.events.gc_hold import release_garbage_collection
from tornchat.events.registry import EventQueues
from tornchat.push_sender import BouncerConfig, PushSender
from tornchat.ratelimit import LoginLimiter
from tornchat.settings import Settings
from tornchat.thumbnailer import Thumbnailer
from tornchat.write_queue import WriteQueue

# How often a user's last_active column is refreshed (it feeds "active in the last 14 days").
LAST_ACTIVE_RESOLUTION = 15 * 60
# A parked long-poll answers with a heartbeat after this long without events (Zulip: 45-55 s).
HEARTBEAT_SECONDS = 50.0
QUEUE_GC_SECONDS = 60


class Server:
    """Everything a handler reaches through `self.server`, created once per process."""

    def __init__(self, settings: Settings, clock: Callable[[], float] = time.time) -> None:
        self.settings = settings
        self.clock = clock
        self.events = EventBus()
        self.db = Database(settings.database_path, clock, self.events.publish)
        self.writes = WriteQueue(self.db)  # group commit for POST /messages
        self.db.start_checkpointer()  # WAL checkpoints off the event loop (storage/db/checkpoint.py)
        self.db.write(rerender.rerender_images)  # HTML saved before images became links
        self.realm = self.db.read(get_realm)
        self.login_limiter = LoginLimiter(clock)
        self._last_active: dict[int, float] = {}
        # Event queues: every published event reaches the queues of its users.
        self.queues = EventQueues(clock, settings.max_queue_bytes)
        self.queues.load(self.queues_path)
        self.events.subscribe(self.queues.publish)
        self.heartbeat_seconds = HEARTBEAT_SECONDS
        self.generation = int(clock())
        self._timers: list[tornado.ioloop.PeriodicCallback] = []
        self.scheduler: Scheduler | None = None
        self.push_sender: PushSender | None = None
        self.thumbnailer = Thumbnailer(self.db, settings.data_dir)  # image decoding off the event loop
        self.shut_down = False

    @property
    def queues_path(self) -> str:
        return os.path.join(self.settings.data_dir, "event_queues.json")

    def start(self) -> None:
        """Start the IOLoop timers (call on the running loop): queue collection, the scheduler, thumbnails.

        The scheduler delivers what fell due while the server was down (or fails what is too
        late) right away, then re-arms whenever a scheduled message is added, edited or removed.
        """
        collector = tornado.ioloop.PeriodicCallback(self._collect_queues, QUEUE_GC_SECONDS * 1000)
        collector.start()
        self._timers.append(collector)
        loop = tornado.ioloop.IOLoop.current()
        self.scheduler = Scheduler(self.db, self.clock, lambda delay, fn: loop.call_later(delay, fn))
        self.events.subscribe(self._rearm_scheduler)
        self.scheduler.run()
        self.start_push_sender()
        self.thumbnailer.schedule_waiting()  # images whose thumbnails the last process did not make

    def start_push_sender(self) -> None:
        """With a push bouncer configured, send the outbox: what waited now, new rows as they commit."""
        settings = self.settings
        if settings.push_bouncer_url is None or self.push_sender is not None:
            return
        assert settings.zulip_org_id is not None and settings.zulip_org_key is not None
        loop = tornado.ioloop.IOLoop.current()
        self.push_sender = PushSender(
            self.db,
            self.clock,
            BouncerConfig(settings.push_bouncer_url, settings.zulip_org_id, settings.zulip_org_key),
            call_later=lambda delay, fn: loop.call_later(delay, fn),
            cancel_timer=loop.remove_timeout,
            handlers={
                "register": push_registration.registration_outcome,
                "withdrawn": push_notifications.withdrawn_in_flight,
            },
            forget_tokens=devices.forget_tokens,
        )
        self.push_sender.start()

    def _collect_queues(self) -> None:
        self.queues.collect_garbage()

    def _rearm_scheduler(self, event: dict[str, Any], user_ids: list[int]) -> None:
        if event["type"] == "scheduled_messages" and self.scheduler is not None:
            self.scheduler.arm()

    def shutdown(self) -> None:
        """Answer parked long-polls and save the queues so clients resume after a restart."""
        for timer in self._timers:
            timer.stop()
        if self.scheduler is not None:
            self.scheduler.cancel()
        if self.push_sender is not None:
            self.push_sender.stop()
        self.queues.answer_all()
        self.queues.save(self.queues_path)
        self.shut_down = True

    def note_active(self, user_id: int) -> None:
        """Record activity, writing at most once per LAST_ACTIVE_RESOLUTION per user."""
        now = self.clock()
        if now - self._last_active.get(user_id, float("-inf")) >= LAST_ACTIVE_RESOLUTION:
            self._last_active[user_id] = now
            self.db.write(users.touch_last_active, user_id)

    def close(self) -> None:
        if self.push_sender is not None:
            self.push_sender.stop()
        self.thumbnailer.close()
        batcher = self.writes.batcher
        batcher.drain()  # sends still queued are stored, not dropped (unanswered if their connection is gone)
        logging.getLogger("tornchat").info("group commit: %d sends in %d transactions", batcher.calls, batcher.batches)
        # Save again: events published while answered long-polls drained, and by the sends just drained, are kept too.
        if self.shut_down:
            self.queues.save(self.queues_path)
        release_garbage_collection()  # a hold's timer may never run once the loop ends
        self.db.close()
