"""Where the layers meet: the Server (database, realm, events, limits) and the route table."""

from __future__ import annotations

import logging
import os
import ssl
import time
from collections.abc import Callable
from typing import Any

import tornado.httpserver
import tornado.httputil
import tornado.ioloop
import tornado.routing
import tornado.web

from scheduler import Scheduler
from storage.db.database import Database
from storage.model.realm import get_realm
from storage.org import users
from storage.push import push_notifications, push_registration
from storage.text import rerender
from tornchat.base import ID, LAST_ACTIVE_RESOLUTION, NotFoundHandler
from tornchat.direct_get import Dispatch, Serve
from tornchat.event_queues import EventQueues, release_garbage_collection
from tornchat.events import EventBus
from tornchat.handlers import (
    alert_words,
    channel_folders,
    channels,
    devices,
    drafts,
    events,
    groups,
    linkifiers,
    message_edit,
    message_flags,
    message_history,
    messages,
    presence,
    profile_fields,
    reactions,
    realm_emoji,
    saved_snippets,
    scheduled_messages,
    server,
    streams,
    subscriptions,
    topics,
    typing_notifications,
    uploads,
    user_topics,
    web,
)
from tornchat.handlers import realm as realm_handlers
from tornchat.handlers import settings as settings_handlers
from tornchat.handlers import users as user_handlers
from tornchat.http_edge import HEADER_READ_LIMIT, EdgeLimits, HTTPServer, log_access
from tornchat.openapi import OpenApiHandler
from tornchat.push_sender import PushSender
from tornchat.ratelimit import LoginLimiter
from tornchat.settings import Settings
from tornchat.write_queue import WriteQueue

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
        self.shut_down = False

    @property
    def queues_path(self) -> str:
        return os.path.join(self.settings.data_dir, "event_queues.json")

    def start(self) -> None:
        """Start the IOLoop timers (call on the running loop): queue collection and the scheduler.

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

    def start_push_sender(self) -> None:
        """With a push service configured, send the outbox: what waited now, new rows as they commit."""
        if self.settings.push_service_url is None or self.push_sender is not None:
            return
        loop = tornado.ioloop.IOLoop.current()
        self.push_sender = PushSender(
            self.db,
            self.clock,
            self.settings.push_service_url,
            call_later=lambda delay, fn: loop.call_later(delay, fn),
            cancel_timer=loop.remove_timeout,
            handlers={
                "register": push_registration.registration_outcome,
                "withdrawn": push_notifications.withdrawn_in_flight,
            },
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
        batcher = self.writes.batcher
        batcher.drain()  # sends still queued are stored, not dropped (unanswered if their connection is gone)
        logging.getLogger("tornchat").info("group commit: %d sends in %d transactions", batcher.calls, batcher.batches)
        # Save again: events published while answered long-polls drained, and by the sends just drained, are kept too.
        if self.shut_down:
            self.queues.save(self.queues_path)
        release_garbage_collection()  # a hold's timer may never run once the loop ends
        self.db.close()


API = r"/api/v1"
ROUTES: list[tuple[str, type[tornado.web.RequestHandler]]] = [
    (r"/server_settings", server.ServerSettingsHandler),
    (r"/openapi\.json", OpenApiHandler),
    (r"/fetch_api_key", server.FetchApiKeyHandler),
    (r"/users", user_handlers.UsersHandler),
    (r"/users/me", user_handlers.OwnUserHandler),
    ("/users/" + ID, user_handlers.UserByIdHandler),
    ("/users/" + ID + "/reactivate", user_handlers.ReactivateUserHandler),
    (r"/users/([^/]*[^/0-9][^/]*)", user_handlers.UserByEmailHandler),  # an email: not all digits
    (r"/user_groups", groups.UserGroupsHandler),
    (r"/user_groups/create", groups.CreateUserGroupHandler),
    (r"/realm/profile_fields", profile_fields.ProfileFieldsHandler),
    (r"/channels/create", channels.CreateChannelHandler),
    *subscriptions.ROUTES,
    *streams.ROUTES,
    *channel_folders.ROUTES,
    *messages.ROUTES,
    *message_edit.ROUTES,
    *message_flags.ROUTES,
    *reactions.ROUTES,
    *realm_emoji.ROUTES,
    *events.ROUTES,
    *scheduled_messages.ROUTES,
    *drafts.ROUTES,
    *saved_snippets.ROUTES,
    *settings_handlers.ROUTES,
    *realm_handlers.ROUTES,
    *devices.ROUTES,
    *linkifiers.ROUTES,
    *presence.ROUTES,
    *typing_notifications.ROUTES,
    *message_history.ROUTES,
    *uploads.ROUTES,
    *user_topics.ROUTES,
    *alert_words.ROUTES,
    *topics.ROUTES,
]


def log_request(handler: tornado.web.RequestHandler) -> None:
    request = handler.request
    log_access(request.method or "", request.path, handler.get_status(), request.request_time())


class Application(tornado.web.Application):
    """Tornado's Application, but a path without a pattern is found by one dict lookup.

    Each such path maps to the rule Tornado's own walk over the rules picks first for it, so every
    route behaves as before; any other path is routed by Tornado.
    """

    def __init__(self, handlers: Any, direct_gets: dict[str, Serve] | None = None, **settings: Any) -> None:
        super().__init__(handlers, **settings)
        # path -> serve(request): GETs without a body answered without a RequestHandler (tornchat/direct_get.py)
        self.direct_gets = direct_gets or {}
        rules = [r for r in self.wildcard_router.rules if isinstance(r.matcher, tornado.routing.PathMatches)]
        self.exact_paths: dict[str, tornado.routing.Rule] = {}
        for rule in rules:
            path = rule.matcher._path if not rule.matcher.regex.groups else None
            first = next((r for r in rules if path is not None and r.matcher.regex.match(path)), None)
            handler = isinstance(rule.target, type) and issubclass(rule.target, tornado.web.RequestHandler)
            if path is not None and handler and first is rule and path not in self.exact_paths:
                self.exact_paths[path] = rule  # only when this rule is what Tornado would pick

    def start_request(
        self, server_conn: object, request_conn: tornado.httputil.HTTPConnection
    ) -> tornado.httputil.HTTPMessageDelegate:
        """Body-less GETs on direct_gets' paths skip the routing below (tornchat/direct_get.py)."""
        return Dispatch(self.direct_gets, super().start_request, server_conn, request_conn)

    def find_handler(self, request: tornado.httputil.HTTPServerRequest, **kwargs: Any) -> Any:
        rule = self.exact_paths.get(request.path)
        if rule is not None:
            return self.get_handler_delegate(request, rule.target, rule.target_kwargs)
        return super().find_handler(request, **kwargs)


def make_app(server_state: Server, **settings: Any) -> tornado.web.Application:
    """Return the Tornado application serving the API from this Server."""
    handlers = [(API + path, handler, {"server": server_state}) for path, handler in ROUTES]
    handlers += [(path, handler, {"server": server_state}) for path, handler in realm_emoji.IMAGE_ROUTES]
    handlers += [(path, handler, {"server": server_state}) for path, handler in uploads.SITE_ROUTES]
    handlers += web.routes(server_state)  # the web client at / and /static/
    return Application(
        handlers,
        direct_gets={API + "/messages": messages.direct_get_messages(server_state)},
        default_handler_class=NotFoundHandler,
        default_handler_args={"server": server_state},
        log_function=log_request,
        **settings,
    )


def make_http_server(server_state: Server, ssl_context: ssl.SSLContext | None = None) -> tornado.httpserver.HTTPServer:
    """Return the HTTP server for this Server, with the limits and timeouts of its settings.

    With an SSL context (tornchat.tls.make_ssl_context) it serves HTTPS.

    X-Real-Ip and X-Forwarded-For are not applied here (no xheaders): BaseHandler.client_address
    believes them only from a trusted proxy.
    """
    settings = server_state.settings
    return HTTPServer(
        EdgeLimits(
            make_app(server_state),
            settings.max_body_size,
            {API + uploads.UPLOAD_PATH: settings.upload_body_limit},
            header_timeout=settings.header_timeout,
        ),
        max_body_size=settings.max_body_size,
        max_header_size=HEADER_READ_LIMIT,
        body_timeout=settings.body_timeout,
        ssl_options=ssl_context,
    )
