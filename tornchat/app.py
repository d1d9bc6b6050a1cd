"""Where the layers meet: the Tornado application and HTTP server serving a Server, from the route table."""

from __future__ import annotations

import ssl
from typing import Any

import tornado.httpserver
import tornado.httputil
import tornado.routing
import tornado.web

from tornchat.base import NotFoundHandler
from tornchat.direct_get import Dispatch, Serve
from tornchat.handlers import avatars, messages, realm_emoji, realm_images, server_files, uploads, web
from tornchat.http_edge import HEADER_READ_LIMIT, EdgeLimits, HTTPServer, log_access
from tornchat.openapi import served_document
from tornchat.routes import API, ROUTES
from tornchat.server import Server


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
    handlers: list[tuple[str, type[tornado.web.RequestHandler], dict[str, Any]]] = [
        (API + path, handler, {"server": server_state}) for path, handler in ROUTES
    ]
    handlers += [(path, handler, {"server": server_state}) for path, handler in realm_emoji.IMAGE_ROUTES]
    handlers += [(path, handler, {"server": server_state}) for path, handler in uploads.SITE_ROUTES]
    handlers += [(path, handler, {"server": server_state}) for path, handler in avatars.SITE_ROUTES]
    handlers += [(path, handler, {"server": server_state}) for path, handler in realm_images.SITE_ROUTES]
    # Before the web client's /static/(.*): the files Zulip serves under /static/ (tornchat/handlers/server_files.py).
    handlers += [
        (path, server_files.ServerFileHandler, {"server": server_state, "build": build, "content_type": kind})
        for path, build, kind in server_files.FILES
    ]
    handlers += web.routes(server_state)  # the web client at / and /static/
    return Application(
        handlers,
        direct_gets={API + "/messages": messages.direct_get_messages(server_state)},
        default_handler_class=NotFoundHandler,
        default_handler_args={"server": server_state},
        log_function=log_request,
        openapi_document=served_document,  # GET /api/v1/openapi.json (tornchat/handlers/openapi.py)
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
