"""Real-time events: POST /register, GET /events (long-poll), DELETE /events."""

from __future__ import annotations

import asyncio
from typing import Any, Literal

import msgspec

from storage.errors import ApiError
from storage.narrow import KNOWN_OPERATORS
from storage.register import fetch_initial_state
from tornchat import FEATURE_LEVEL, ZULIP_VERSION
from tornchat.base import BaseHandler
from tornchat.event_queues import DEFAULT_LIFESPAN, MAX_LIFESPAN, EventQueue
from tornchat.params import Params


class Register(msgspec.Struct, kw_only=True):
    apply_markdown: bool = False
    client_gravatar: bool = True
    event_types: list[str] | None = None
    fetch_event_types: list[str] | None = None
    narrow: list[list[str]] = []
    all_public_streams: bool = False
    include_subscribers: Literal["true", "false", "partial"] | bool = False
    client_capabilities: dict[str, Any] | None = None
    queue_lifespan_secs: int = 0
    slim_presence: bool = False
    presence_history_limit_days: int | None = None


class GetEvents(msgspec.Struct, kw_only=True):
    queue_id: str | None = None
    last_event_id: int | None = None
    dont_block: bool = False


class DeleteQueue(msgspec.Struct):
    queue_id: str


REGISTER = Params(Register)
GET_EVENTS = Params(GetEvents)
DELETE_QUEUE = Params(DeleteQueue)


def check_narrow(narrow: list[list[str]]) -> None:
    for index, pair in enumerate(narrow):
        if len(pair) != 2:
            raise ApiError(f"Invalid narrow[{index}]: Value error, element is not a string pair")
        if pair[0] not in KNOWN_OPERATORS:
            raise ApiError(f"Invalid narrow operator: unknown operator {pair[0]}", "BAD_NARROW",
                           data={"desc": f"unknown operator {pair[0]}"})  # fmt: skip


class RegisterHandler(BaseHandler):
    def post(self) -> None:
        p = self.parse(REGISTER)
        if p.all_public_streams and self.user.is_guest:
            raise ApiError("User not authorized for this query")
        check_narrow(p.narrow)
        lifespan = DEFAULT_LIFESPAN if p.queue_lifespan_secs <= 0 else min(p.queue_lifespan_secs, MAX_LIFESPAN)
        include = (
            p.include_subscribers if isinstance(p.include_subscribers, str) else str(p.include_subscribers).lower()
        )
        capabilities = p.client_capabilities or {}
        fetch = p.fetch_event_types if p.fetch_event_types is not None else p.event_types
        options = {"server_generation": self.server.generation, "include_subscribers": include,
                   "client_gravatar": p.client_gravatar}  # fmt: skip
        # The queue is created and the state read in one synchronous step on the IOLoop thread:
        # every event committed after this snapshot lands in the queue, none before it.
        state = self.server.db.read(
            fetch_initial_state, self.user, self.server.realm, None if fetch is None else set(fetch), options
        )
        queue = self.server.queues.create(
            self.user.id, event_types=None if p.event_types is None else set(p.event_types), narrow=p.narrow,
            apply_markdown=p.apply_markdown, client_gravatar=p.client_gravatar,
            all_public_streams=p.all_public_streams, empty_topic_name=bool(capabilities.get("empty_topic_name")),
            lifespan=lifespan, role=self.user.role,
        )  # fmt: skip
        state.update(queue_id=queue.id, last_event_id=-1, zulip_version=ZULIP_VERSION,
                     zulip_feature_level=FEATURE_LEVEL, zulip_merge_base=ZULIP_VERSION)  # fmt: skip
        self.respond(state)


class EventsHandler(BaseHandler):
    """Long-polls park here until their queue has an event, a heartbeat is due, or the client leaves."""

    queue: EventQueue | None = None

    async def get(self) -> None:
        p = self.parse(GET_EVENTS)
        if p.queue_id is None:
            raise ApiError("Missing 'queue_id' argument", "REQUEST_VARIABLE_MISSING", data={"var_name": "queue_id"})
        if p.last_event_id is None:
            raise ApiError("Missing 'last_event_id' argument", "REQUEST_VARIABLE_MISSING",
                           data={"var_name": "last_event_id"})  # fmt: skip
        queue = self.server.queues.get(p.queue_id, self.user.id)
        if p.last_event_id >= 0:
            queue.acknowledge(p.last_event_id)
        if not queue.events and not p.dont_block:
            await self.wait_for_events(queue)
        queue.last_access = self.server.clock()
        if self.request.connection.stream.closed():  # type: ignore[union-attr]
            return
        self.respond({"events": list(queue.events), "queue_id": queue.id})

    async def wait_for_events(self, queue: EventQueue) -> None:
        loop = asyncio.get_running_loop()
        queue.waiter = waiter = loop.create_future()
        self.queue = queue
        try:
            await asyncio.wait_for(asyncio.shield(waiter), self.server.heartbeat_seconds)
        except TimeoutError:
            queue.push({"type": "heartbeat"})
        finally:
            if queue.waiter is waiter:
                queue.waiter = None
            self.queue = None

    def on_connection_close(self) -> None:
        # The client left: free the parked waiter at once instead of at the heartbeat.
        queue = self.queue
        if queue is not None and queue.waiter is not None and not queue.waiter.done():
            queue.waiter.set_result(None)

    def delete(self) -> None:
        p = self.parse(DELETE_QUEUE)
        self.server.queues.get(p.queue_id, self.user.id)
        self.server.queues.remove(p.queue_id)
        self.respond()


ROUTES = [(r"/register", RegisterHandler), (r"/events", EventsHandler)]
