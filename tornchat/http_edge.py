"""Limits at the HTTP edge: oversized bodies, URLs and headers get a JSON answer, not a silent close.

Tornado enforces its own limits (`max_body_size`, `max_header_size`) by closing the connection,
with at most a bare "400 Bad Request". `EdgeLimits` wraps the application and looks at each
request's head before Tornado reads the body: a declared Content-Length over the limit gets a
JSON 413 (the POST paths in `larger_bodies`, uploads, have their own limit), a URL over
MAX_URL_LENGTH a 414, header fields over MAX_HEADER_FIELDS_SIZE a 431. The connection is then
taken from Tornado (`detach`), answered and closed, so the body is never read.

What Tornado still answers itself (docs/reliability.md): a chunked body that grows past the limit
(a bare 400), a head over HEADER_READ_LIMIT, and the body timeout (the connection closes).

The header timeout (a connection that has not sent a whole head that long since it opened or since
its last answer is closed) is kept by `EdgeLimits` too: a sweep a few times per timeout closes the
connections waiting too long. Tornado's own header timeout started and cancelled a timer on every
request (`gen.with_timeout`), 3% of the server's time on small pages.

`parse_form_body` replaces Tornado's body parsing for API handlers: it accepts what real clients
send (zulip-js posts an empty multipart body), reads the media type case-insensitively, and turns a
malformed body into the API's JSON error.
"""

from __future__ import annotations

import codecs
import http
import logging
import re
import time
from collections.abc import Callable
from typing import Any

import msgspec
import tornado.httpserver
import tornado.iostream
from tornado import httputil
from tornado.ioloop import PeriodicCallback

from storage.model.errors import ApiError

# Zulip's nginx reads request heads in 8 KiB buffers; tornchat, which often sees a narrow in the
# query string, answers 414 only beyond 64 KiB, Tornado's own default limit for a whole head.
MAX_URL_LENGTH = 64 * 1024
MAX_HEADER_FIELDS_SIZE = 64 * 1024
# The most Tornado buffers while reading a head: the two limits above and some slack. A longer
# head is dropped by Tornado without an answer.
HEADER_READ_LIMIT = MAX_URL_LENGTH + MAX_HEADER_FIELDS_SIZE + 8 * 1024
_DIGITS = re.compile(r"\s*(\d+)\s*")
access_log = logging.getLogger("tornchat.access")


FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")


def _media_type(content_type: str) -> tuple[str, str]:
    """Split a Content-Type into its lowercased media type and the parameters after it."""
    media, _, parameters = content_type.partition(";")
    return media.strip().lower(), parameters


def parse_form_body(request: httputil.HTTPServerRequest) -> None:
    """Fill request.body_arguments, files and arguments from a form body, as Tornado does, but:

    an empty body of a form type (zulip-js's POST without parameters, a multipart body with no
    parts) holds no parameters instead of failing; the media type is matched case-insensitively;
    a body Tornado cannot parse is the API's 400 naming what is wrong, not a bare "Bad Request".
    Other media types (JSON, text) carry no parameters, as in Zulip.
    """
    media, parameters = _media_type(request.headers.get("Content-Type", ""))
    if media not in FORM_TYPES or not request.body:
        return
    try:
        httputil.parse_body_arguments(
            f"{media};{parameters}" if parameters else media,
            request.body,
            request.body_arguments,
            request.files,
            request.headers,
        )
    except httputil.HTTPInputError as error:
        text, twice = str(error), "Invalid multipart/form-data: " * 2
        if text.startswith(twice):  # Tornado wraps its own message in the same words
            text = text[len(twice) // 2 :]
        raise ApiError(f"Malformed request body: {text}") from None
    for name, values in request.body_arguments.items():
        request.arguments.setdefault(name, []).extend(values)


def form_charset(request: httputil.HTTPServerRequest) -> str:
    """The character set a form body's text is in: its Content-Type's `charset`, else UTF-8.

    An unknown charset is ignored (UTF-8), as Django does.
    """
    _, parameters = _media_type(request.headers.get("Content-Type", ""))
    for parameter in parameters.split(";"):
        name, _, value = parameter.strip().partition("=")
        if name.strip().lower() == "charset":
            try:
                return codecs.lookup(value.strip().strip('"')).name
            except LookupError:
                return "utf-8"
    return "utf-8"


def refusal(
    start_line: httputil.RequestStartLine, headers: httputil.HTTPHeaders, max_body_size: int
) -> tuple[int, str] | None:
    """The (status, message) refusing a request by its head, or None to serve it."""
    if len(start_line.path) > MAX_URL_LENGTH:
        return 414, f"Request URL is too long (limit: {MAX_URL_LENGTH} bytes)"
    if sum(len(name) + len(value) + 4 for name, value in headers.get_all()) > MAX_HEADER_FIELDS_SIZE:
        return 431, f"Request headers are too large (limit: {MAX_HEADER_FIELDS_SIZE} bytes)"
    length = _DIGITS.fullmatch(headers.get("Content-Length", ""))
    if length is not None and int(length.group(1)) > max_body_size:
        return 413, f"Request body is too large (limit: {max_body_size} bytes)"
    host_error = _host_error(start_line, headers)
    if host_error is not None:
        return 400, host_error
    return None


# Host values Tornado's own check always accepts (a name or IPv4 address, an optional port).
_PLAIN_HOST = re.compile(r"[A-Za-z0-9.-]+(?::[0-9]*)?")


def _host_error(start_line: httputil.RequestStartLine, headers: httputil.HTTPHeaders) -> str | None:
    """Tornado's reason for refusing the Host header (missing in HTTP/1.1, malformed, repeated), or None.

    Tornado answers those with a bare "400 Bad Request"; asking it here, by building the request the
    way it would, lets the edge answer with the API's envelope instead.
    """
    host = headers.get("Host")
    if host is not None and _PLAIN_HOST.fullmatch(host):
        return None
    try:
        httputil.HTTPServerRequest(start_line=start_line, headers=headers)
    except httputil.HTTPInputError as error:
        return str(error)
    return None


def error_response(status: int, msg: str) -> bytes:
    """A complete HTTP/1.1 response carrying the API's error envelope; it closes the connection."""
    body = msgspec.json.encode({"result": "error", "msg": msg, "code": "BAD_REQUEST"}) + b"\n"
    head = (
        f"HTTP/1.1 {status} {http.HTTPStatus(status).phrase}\r\n"
        "Content-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n"
    )
    return head.encode("latin-1") + body


ACCESS_FORMAT = "%s %s %d %.1fms"
# (time.time() of the answer, the line's message) -> None: where `tornchat serve` takes its access
# lines instead of LogRecords (tornchat/log_output.py: configure_logging sets its handler's
# access_line). None: records, as usual.
AccessWriter = Callable[[float, str], None]
_access_writer: AccessWriter | None = None


def write_access_lines_to(writer: AccessWriter | None) -> None:
    """Have log_access hand its lines to `writer` (None: back to LogRecords through `access_log`)."""
    global _access_writer
    _access_writer = writer


def log_access(method: str, path: str, status: int, seconds: float) -> None:
    """The access-log line of an answered request."""
    if access_log.isEnabledFor(logging.INFO):
        fields = (method, path, status, 1000 * seconds)
        if _access_writer is not None:
            _access_writer(time.time(), ACCESS_FORMAT % fields)
            return
        # The record is made directly: Logger.info would also walk the stack for a caller no format
        # shows. The fields stay the record's args (log handlers read them), formatted only when emitted.
        record = access_log.makeRecord(access_log.name, logging.INFO, __file__, 0, ACCESS_FORMAT, fields, None)
        access_log.handle(record)


class EdgeLimits(httputil.HTTPServerConnectionDelegate):
    """Wraps the application: requests within the limits reach it unchanged."""

    def __init__(
        self,
        application: httputil.HTTPServerConnectionDelegate,
        max_body_size: int,
        larger_bodies: dict[str, int] | None = None,
        header_timeout: float | None = None,
    ) -> None:
        """larger_bodies: {path: limit} for the POST paths whose bodies may exceed max_body_size (uploads).

        header_timeout: seconds a connection may take to send a request's head, counted from its
        opening or its previous answer (the server passes Tornado none of its own).
        """
        self.application = application
        self.max_body_size = max_body_size
        self.larger_bodies = larger_bodies or {}
        self.header_timeout = header_timeout
        self.current: dict[object, _CheckedRequest] = {}  # open connection -> its latest request
        self.sweeper: PeriodicCallback | None = None

    def start_request(self, server_conn: object, request_conn: httputil.HTTPConnection) -> httputil.HTTPMessageDelegate:
        inner = self.application.start_request(server_conn, request_conn)
        checked = _CheckedRequest(inner, request_conn, self.max_body_size, self.larger_bodies)
        if self.header_timeout is not None:
            self.current[server_conn] = checked
            if self.sweeper is None:
                # A few sweeps per timeout: a connection goes at most a quarter of it late (a second at most).
                self.sweeper = PeriodicCallback(self.sweep, 1000 * min(1.0, self.header_timeout / 4))
                self.sweeper.start()
        return checked

    def on_close(self, server_conn: object) -> None:
        self.current.pop(server_conn, None)
        self.application.on_close(server_conn)

    def sweep(self) -> None:
        """Close the connections whose head is overdue; stop sweeping once none is open."""
        if not self.current:
            if self.sweeper is not None:
                self.sweeper.stop()
                self.sweeper = None
            return
        assert self.header_timeout is not None
        deadline = time.monotonic() - self.header_timeout
        for checked in list(self.current.values()):
            if checked.waiting_since is not None and checked.waiting_since < deadline:
                checked.waiting_since = None
                checked.connection.close()  # its read ends, and the connection's on_close follows


class _CheckedRequest(httputil.HTTPMessageDelegate):
    def __init__(
        self,
        inner: httputil.HTTPMessageDelegate,
        connection: httputil.HTTPConnection,
        limit: int,
        larger_bodies: dict[str, int],
    ) -> None:
        self.inner = inner
        self.connection = connection
        self.limit = limit
        self.larger_bodies = larger_bodies
        self.waiting_since: float | None = time.monotonic()  # None once the head is in

    def headers_received(
        self, start_line: httputil.RequestStartLine | httputil.ResponseStartLine, headers: httputil.HTTPHeaders
    ) -> object:
        assert isinstance(start_line, httputil.RequestStartLine)
        self.waiting_since = None
        larger = self.larger_bodies.get(start_line.path.split("?", 1)[0]) if start_line.method == "POST" else None
        if larger is not None:
            self.limit = larger
            self.connection.set_max_body_size(larger)  # type: ignore[attr-defined]
        refused = refusal(start_line, headers, self.limit)
        if refused is None:
            return self.inner.headers_received(start_line, headers)
        access_log.info("%s %s %d refused", start_line.method, start_line.path[:200], refused[0])
        # Taken from Tornado, which then stops reading this connection: the body is never read.
        stream = self.connection.detach()  # type: ignore[attr-defined]
        stream.write(error_response(*refused)).add_done_callback(lambda _: stream.close())
        return None

    def data_received(self, chunk: bytes) -> object:
        return self.inner.data_received(chunk)

    def finish(self) -> None:
        self.inner.finish()

    def on_connection_close(self) -> None:
        self.inner.on_connection_close()


class HTTPServer(tornado.httpserver.HTTPServer):
    """Tornado's HTTPServer with TCP_NODELAY set once per connection instead of twice per request,
    and a closed connection reported to the application (EdgeLimits forgets it). Where EdgeLimits
    keeps the header timeout, Tornado keeps none (without one it would time each head out after an hour).

    Tornado's HTTP1Connection turns Nagle's algorithm off when a response is finished and back on
    before the next request: two setsockopt calls (and two lookups of the socket's family) per
    request, 3% of the server's time on a page of 100 cached messages. Nagle's algorithm holds back
    a small write until the previous one is acknowledged; it helps a response written in many small
    pieces. tornchat writes each response whole (head and body in one write, a handler's body at
    finish, files in 64 KiB pieces), so the option stays on for the connection's life.
    """

    def initialize(self, *args: Any, **kwargs: Any) -> None:
        super().initialize(*args, **kwargs)
        if isinstance(self.request_callback, EdgeLimits) and self.request_callback.header_timeout is not None:
            self.conn_params.header_timeout = None

    def handle_stream(self, stream: tornado.iostream.IOStream, address: tuple[str, int]) -> None:
        stream.set_nodelay(True)  # does nothing on a socket that is not TCP
        stream.set_nodelay = _nodelay_kept  # type: ignore[method-assign]
        super().handle_stream(stream, address)

    def on_close(self, server_conn: object) -> None:
        super().on_close(server_conn)
        if isinstance(self.request_callback, httputil.HTTPServerConnectionDelegate):  # Tornado does not pass it on
            self.request_callback.on_close(server_conn)


def _nodelay_kept(value: bool) -> None:
    """A stream's set_nodelay once HTTPServer set the option for good."""
