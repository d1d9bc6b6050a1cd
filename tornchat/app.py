"""Where the layers meet: the route table and the Tornado application and HTTP server serving a Server."""

from __future__ import annotations

import ssl
from typing import Any

import tornado.httpserver
import tornado.httputil
import tornado.routing
import tornado.web

from tornchat.base import ID, NotFoundHandler
from tornchat.direct_get import Dispatch, Serve
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
from tornchat.server import Server

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
