"""Real-time events: POST /register, GET /events (long-poll), DELETE /events."""

from __future__ import annotations

import asyncio
import weakref
from typing import Annotated, Any, Literal

import msgspec

from storage.fetch.narrow_terms import parse_narrow
from storage.model.errors import ApiError
from storage.model.user import User
from storage.register.register import fetch_initial_state
from tornchat import FEATURE_LEVEL, ZULIP_VERSION
from tornchat.base import BaseHandler
from tornchat.events.queue import DEFAULT_LIFESPAN, MAX_LIFESPAN, MOBILE_LIFESPAN, EventQueue, bad_queue
from tornchat.params import Params

# Operators an event queue's narrow can filter on (Zulip's, plus direct-message conversations).
NARROW_OPERATORS = {"channel", "stream", "topic", "sender", "is", "dm", "pm-with", "pm_with"}
INCLUDE_SUBSCRIBERS = {"true", "false", "partial"}
# A queue keeps its event_types for its life: bounded like its narrow. Zulip has under 100 event
# types, each name under 50 characters.
MAX_EVENT_TYPES = 200
MAX_EVENT_TYPE_LENGTH = 100


class QueueOptions(msgspec.Struct, kw_only=True):
    """How a queue wants its events; POST /register and GET /events (dont_block, no queue) take them."""

    apply_markdown: bool = False
    client_gravatar: bool = True
    event_types: list[str] | None = None
    narrow: list[list[str]] = []
    all_public_streams: bool = False
    client_capabilities: dict[str, Any] | None = None
    queue_lifespan_secs: int = 0
    # Zulip 12.0 (feature level 481): seconds without a poll before the queue is dropped, or
    # "mobile"; it wins over the older queue_lifespan_secs.
    idle_queue_timeout: Annotated[int, msgspec.Meta(ge=1)] | Literal["mobile"] | None = None
    slim_presence: bool = False  # presence events without `email`


class Register(QueueOptions, kw_only=True):
    fetch_event_types: list[str] | None = None
    # "true", "false" or "partial", sent verbatim or JSON-encoded depending on the client.
    include_subscribers: str = "false"
    presence_history_limit_days: int | None = None
    presence_last_update_id: int | None = None


class GetEvents(QueueOptions, kw_only=True):
    queue_id: str | None = None
    last_event_id: int | None = None
    dont_block: bool = False


class DeleteQueue(msgspec.Struct):
    queue_id: str


REGISTER = Params(Register)
GET_EVENTS = Params(GetEvents)
DELETE_QUEUE = Params(DeleteQueue)


def check_narrow(narrow: list[list[str]]) -> None:
    """Raise the API's error for a queue narrow that is malformed, over GET /messages' bounds or unsupported."""
    # The bounds of GET /messages (terms, operand length, NUL, users named) hold here too: a
    # queue's narrow is kept for its life and evaluated on every message published to it.
    for term in parse_narrow(narrow):
        if term.operator not in NARROW_OPERATORS:
            raise ApiError(f"Operator {term.operator} not supported.")


def check_event_types(event_types: list[str] | None) -> None:
    """Raise the API's error for more event types, or longer ones, than a queue keeps."""
    if event_types is None:
        return
    if len(event_types) > MAX_EVENT_TYPES:
        raise ApiError(f"event_types is too long (limit: {MAX_EVENT_TYPES} items)")
    for index, name in enumerate(event_types):
        if len(name) > MAX_EVENT_TYPE_LENGTH:
            raise ApiError(f"event_types[{index}] is too long (limit: {MAX_EVENT_TYPE_LENGTH} characters)")


def include_subscribers(value: str) -> str:
    value = value.strip('"')
    if value not in INCLUDE_SUBSCRIBERS:
        raise ApiError("Invalid include_subscribers")
    return value


def queue_options(p: QueueOptions, user: User) -> dict[str, Any]:
    """Validate a new queue's options; return the keyword arguments of EventQueues.create."""
    if p.all_public_streams and user.is_guest:
        raise ApiError("User not authorized for this query")
    check_narrow(p.narrow)
    check_event_types(p.event_types)
    capabilities = p.client_capabilities or {}
    return {
        "event_types": None if p.event_types is None else set(p.event_types),
        "narrow": p.narrow,
        "apply_markdown": p.apply_markdown,
        "client_gravatar": p.client_gravatar,
        "all_public_streams": p.all_public_streams,
        "empty_topic_name": bool(capabilities.get("empty_topic_name")),
        # Zulip sends linkifiers only to clients that understand RFC 6570 url_template (FL 176).
        "linkifier_url_template": bool(capabilities.get("linkifier_url_template")),
        # Settings events in the modern form only (user_settings), or also in the legacy forms (FL 89).
        "user_settings_object": bool(capabilities.get("user_settings_object")),
        # Zulip sends channel typing events only to clients that declare they show them (FL 58), and
        # presence events in the modern format to those declaring simplified_presence_events (FL 419).
        "stream_typing_notifications": bool(capabilities.get("stream_typing_notifications")),
        "simplified_presence_events": bool(capabilities.get("simplified_presence_events")),
        "slim_presence": p.slim_presence,
        "lifespan": queue_lifespan(p),
        "role": user.role,
    }


def queue_lifespan(p: QueueOptions) -> int:
    """Seconds the queue lives without a poll: idle_queue_timeout, else queue_lifespan_secs, at most 7 days."""
    if p.idle_queue_timeout == "mobile":
        return MOBILE_LIFESPAN
    if p.idle_queue_timeout is not None:
        return min(p.idle_queue_timeout, MAX_LIFESPAN)
    return DEFAULT_LIFESPAN if p.queue_lifespan_secs <= 0 else min(p.queue_lifespan_secs, MAX_LIFESPAN)


class RegisterHandler(BaseHandler):
    params = {"post": REGISTER}

    def post(self) -> None:
        p = self.parse()
        options = queue_options(p, self.user)
        fetch = p.fetch_event_types if p.fetch_event_types is not None else p.event_types
        state_options = {
            "server_generation": self.server.generation,
            "client_gravatar": p.client_gravatar,
            "include_subscribers": include_subscribers(p.include_subscribers),
            "empty_topic_name": options["empty_topic_name"],
            "linkifier_url_template": options["linkifier_url_template"],
            "user_settings_object": options["user_settings_object"],
            "push_enabled": self.server.settings.push_configured,
            "slim_presence": p.slim_presence,
            "presence_last_update_id": p.presence_last_update_id,
            "presence_history_limit_days": p.presence_history_limit_days,
            "max_file_upload_size_mib": self.server.settings.max_file_upload_size_mib,
        }
        # The state is read and the queue created in one synchronous step on the IOLoop thread
        # (no await in between, and publishing runs on this thread too): every event committed
        # after the snapshot lands in the queue, and none before it.
        state = self.server.db.read(
            fetch_initial_state, self.user, self.server.realm, None if fetch is None else set(fetch), state_options
        )
        queue = self.server.queues.create(self.user.id, **options)
        state.update(queue_id=queue.id, last_event_id=-1, idle_queue_timeout_secs=int(queue.lifespan),
                     zulip_version=ZULIP_VERSION, zulip_feature_level=FEATURE_LEVEL,
                     zulip_merge_base=ZULIP_VERSION)  # fmt: skip
        self.respond(state)


class EventsHandler(BaseHandler):
    """Long-polls park here until their queue has an event, a heartbeat is due, or the client leaves.

    One event wakes many parked polls at once: each answer is assembled from its events' JSON
    (encoded once per form when published), carries no ETag (a poll's answer is never the same
    twice), and its access-log line is written after the whole wave is answered.
    """

    params = {"get": GET_EVENTS, "delete": DELETE_QUEUE}

    waiter: asyncio.Future[None] | None = None
    woken = False  # whether this poll was parked and woken

    async def get(self) -> None:
        p = self.parse()
        if p.queue_id is None:
            # Both checks are Zulip's fetch_events (zerver/tornado/event_queue.py): plain BAD_REQUEST
            # errors, not the REQUEST_VARIABLE_MISSING of a required parameter, since each parameter is
            # optional on its own (a queue-less non-blocking poll needs neither).
            if not p.dont_block:
                raise ApiError("Missing 'queue_id' argument")
            # Zulip's shortcut: a non-blocking poll without a queue allocates one.
            queue = self.server.queues.create(self.user.id, **queue_options(p, self.user))
            self.respond({"events": [], "queue_id": queue.id})
            return
        if p.last_event_id is None:
            raise ApiError("Missing 'last_event_id' argument")
        queue = self.server.queues.get(p.queue_id, self.user.id)
        queue.acknowledge(p.last_event_id)
        if not queue.entries and not p.dont_block:
            await self.wait_for_events(queue)
            if self.request.connection.stream.closed():  # type: ignore[union-attr]
                return  # the client left: nobody to answer
            if queue.overflowed or self.server.queues.queues.get(queue.id) is not queue:
                self.server.queues.remove(queue.id)
                raise bad_queue(queue.id)  # deleted or overflowed while the poll was parked
        queue.last_access = self.server.clock()
        self.respond({"events": msgspec.Raw(queue.events_json()), "queue_id": queue.id})

    def compute_etag(self) -> None:
        return None

    def check_etag_header(self) -> bool:
        return False  # no ETag, so never a 304: If-None-Match is not even parsed

    async def head(self, *args: str) -> None:  # type: ignore[override]
        await self.get()

    async def wait_for_events(self, queue: EventQueue) -> None:
        # A newer poll of the same queue replaces a parked one, which answers at once.
        queue.wake()
        loop = asyncio.get_running_loop()
        queue.waiter = self.waiter = waiter = loop.create_future()

        def heartbeat() -> None:
            if not waiter.done():
                queue.push({"type": "heartbeat"})  # wakes this poll: the queue was empty
                if not waiter.done():
                    waiter.set_result(None)

        timer = loop.call_later(self.server.heartbeat_seconds, heartbeat)
        try:
            await waiter
        finally:
            timer.cancel()
            if queue.waiter is waiter:
                queue.waiter = None
            self.waiter = None
            self.woken = True

    def _log(self) -> None:
        # Polls woken together log after the last of them is answered, not between their answers.
        if not self.woken:
            super()._log()
            return
        loop = asyncio.get_running_loop()
        log = DEFERRED_LOGS.get(loop)
        if log is None:
            log = DEFERRED_LOGS[loop] = DeferredLog(loop)
        log.add(self)

    def on_connection_close(self) -> None:
        # The client left: free the parked poll at once instead of at the heartbeat.
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(None)

    def delete(self) -> None:
        p = self.parse()
        self.server.queues.get(p.queue_id, self.user.id)
        self.server.queues.remove(p.queue_id)
        self.respond()


class DeferredLog:
    """Woken polls whose access-log lines are due: written once no poll has been woken for QUIET
    seconds (the wave is answered), or at the latest MAX_DELAY seconds after the first. Each line
    keeps the duration measured when its poll finished."""

    QUIET = 0.02
    MAX_DELAY = 1.0

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.pending: list[EventsHandler] = []
        self.first = self.last = 0.0

    def add(self, handler: EventsHandler) -> None:
        self.last = self.loop.time()
        if not self.pending:
            self.first = self.last
            self.loop.call_later(self.QUIET, self.write)
        self.pending.append(handler)

    def write(self) -> None:
        now = self.loop.time()
        if now - self.last < self.QUIET and now - self.first < self.MAX_DELAY:
            self.loop.call_later(self.QUIET, self.write)
            return
        self.flush()

    def flush(self) -> None:
        """Write the pending lines now."""
        handlers, self.pending = self.pending, []
        for handler in handlers:
            super(EventsHandler, handler)._log()


# Per event loop (one per server: tests run several), its deferred access-log lines.
DEFERRED_LOGS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, DeferredLog] = weakref.WeakKeyDictionary()


ROUTES = [(r"/register", RegisterHandler), (r"/events", EventsHandler)]
