"""GETs answered without a RequestHandler (bench/README.md, third round).

Tornado builds a RequestHandler for every request: a headers object, a coroutine, prepare, flush
and finish, the transforms. For a page of cached messages that was about a fifth of the request.
A path in Application.direct_gets answers a GET carrying no body through DirectGet instead: its
`serve(request)` does what the route's handler does (credentials, parameters, the read) and
returns the success body; DirectGet writes it, or the API's error for whatever it raised, with
the headers Tornado would send and the same access-log line. HEAD, a GET with a body and every
other method still reach the route's RequestHandler.

Such a GET is picked out when its headers arrive (`Dispatch`), before Tornado's routing builds
an HTTPServerRequest (which parses the host and copies the query arguments): `serve` reads a
DirectRequest, which holds only what it needs.
"""

from __future__ import annotations

import logging
import time
import traceback
from collections.abc import Awaitable, Callable

import msgspec
import tornado
from tornado import httputil
from tornado.concurrent import Future
from tornado.escape import parse_qs_bytes

from storage.model.errors import ApiError
from tornchat.http_edge import log_access

log = logging.getLogger("tornchat")


class DirectRequest:
    """A body-less GET as `serve` reads it: the parts of an HTTPServerRequest it uses, and no others."""

    __slots__ = ("method", "uri", "path", "query_arguments", "headers", "connection", "_started")

    def __init__(
        self, connection: httputil.HTTPConnection, start_line: httputil.RequestStartLine, headers: httputil.HTTPHeaders
    ) -> None:
        self.method = start_line.method
        self.uri = start_line.path
        self.path, _, query = start_line.path.partition("?")  # as HTTPServerRequest splits it
        self.query_arguments = parse_qs_bytes(query, keep_blank_values=True)
        self.headers = headers
        self.connection = connection
        self._started = time.perf_counter()

    def request_time(self) -> float:
        """Seconds since the request's headers arrived."""
        return time.perf_counter() - self._started


Serve = Callable[[DirectRequest], bytes]
SERVER_HEADER = f"TornadoServer/{tornado.version}"
_encode = msgspec.json.Encoder().encode
_INTERNAL_ERROR = _encode({"result": "error", "msg": "Internal server error", "code": "BAD_REQUEST"}) + b"\n"


def carries_body(headers: httputil.HTTPHeaders) -> bool:
    """Whether a request announces a body (its form parameters would count: the handler reads them)."""
    length = headers.get("Content-Length")
    return (length is not None and length.strip() != "0") or "Transfer-Encoding" in headers


class _Date:
    """The Date header's text, formatted once per second."""

    second = -1
    text = ""

    @classmethod
    def now(cls) -> str:
        now = time.time()
        if int(now) != cls.second:
            cls.second, cls.text = int(now), httputil.format_timestamp(now)
        return cls.text


class DirectGet(httputil.HTTPMessageDelegate):
    """One GET: serve it when its (empty) body has been read, answer, log."""

    def __init__(self, request: DirectRequest, serve: Serve) -> None:
        self.request = request
        self.serve = serve

    def headers_received(
        self, start_line: httputil.RequestStartLine | httputil.ResponseStartLine, headers: httputil.HTTPHeaders
    ) -> None:
        return None

    def data_received(self, chunk: bytes) -> None:  # not routed here with a body; nothing to keep
        return None

    def finish(self) -> None:
        request = self.request
        extra: dict[str, str] = {}
        try:
            body, status = self.serve(request), 200
        except ApiError as error:
            body, status, extra = _encode(error.body()) + b"\n", error.status, error.headers
        except Exception:  # a bug: logged as RequestHandler logs it, answered as its write_error does
            log.error("Uncaught exception %s %s\n%s", request.method, request.uri, traceback.format_exc())
            body, status = _INTERNAL_ERROR, 500
        headers = httputil.HTTPHeaders(
            {"Server": SERVER_HEADER, "Content-Type": "application/json", "Date": _Date.now()}
        )
        for name, value in extra.items():
            headers[name] = value
        headers["Content-Length"] = str(len(body))
        start_line = httputil.ResponseStartLine("HTTP/1.1", status, httputil.responses.get(status, "Unknown"))
        connection = request.connection
        written = connection.write_headers(start_line, headers, body)
        written.add_done_callback(_observe)  # a client gone meanwhile is not an error worth a log line
        connection.finish()
        log_access(request.method, request.path, status, request.request_time())

    def on_connection_close(self) -> None:
        return None


def _observe(future: Future[None]) -> None:
    future.exception()


class Dispatch(httputil.HTTPMessageDelegate):
    """One request: a body-less GET on a path of `direct_gets` goes to DirectGet, the rest to `routed`.

    `routed(server_conn, request_conn)` is Tornado's routing (Router.start_request), started only
    for a request that needs it.
    """

    def __init__(
        self,
        direct_gets: dict[str, Serve],
        routed: Callable[[object, httputil.HTTPConnection], httputil.HTTPMessageDelegate],
        server_conn: object,
        request_conn: httputil.HTTPConnection,
    ) -> None:
        self.direct_gets = direct_gets
        self.routed = routed
        self.server_conn = server_conn
        self.request_conn = request_conn
        self.delegate: httputil.HTTPMessageDelegate | None = None

    def headers_received(
        self, start_line: httputil.RequestStartLine | httputil.ResponseStartLine, headers: httputil.HTTPHeaders
    ) -> Awaitable[None] | None:
        assert isinstance(start_line, httputil.RequestStartLine)
        serve = self.direct_gets.get(start_line.path.partition("?")[0]) if start_line.method == "GET" else None
        if serve is not None and not carries_body(headers):
            self.delegate = DirectGet(DirectRequest(self.request_conn, start_line, headers), serve)
            return None
        self.delegate = self.routed(self.server_conn, self.request_conn)
        return self.delegate.headers_received(start_line, headers)

    def data_received(self, chunk: bytes) -> Awaitable[None] | None:
        assert self.delegate is not None
        return self.delegate.data_received(chunk)

    def finish(self) -> None:
        assert self.delegate is not None
        self.delegate.finish()

    def on_connection_close(self) -> None:
        if self.delegate is not None:  # None only if headers_received raised before choosing one
            self.delegate.on_connection_close()
