"""The base handler: authentication, parameters, the success envelope and the one error renderer."""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import ipaddress
import logging
import traceback
from collections.abc import Mapping
from typing import Any, ClassVar

import msgspec
import tornado.web

from storage.model.errors import ApiError
from storage.org import passwords, users
from tornchat.http_edge import form_charset, parse_form_body
from tornchat.params import NO_PARAMS, Params
from tornchat.server import Server

log = logging.getLogger("tornchat")

# An id path segment: digits only, at most 18 so that it always fits SQLite's 64-bit integers.
ID = r"(\d{1,18})"
HTTP_METHODS = ("get", "post", "put", "patch", "delete")
NOT_LOGGED_IN = "Not logged in: API authentication or user session required"

_encode = msgspec.json.Encoder().encode
# Password hashing (scrypt: ~40 ms of CPU and 16 MiB each) runs off the event loop, two at a time.
PASSWORD_HASHING = concurrent.futures.ThreadPoolExecutor(max_workers=2, thread_name_prefix="tornchat-password")


async def check_password(password: str, stored: str) -> bool:
    """passwords.check_password in the hashing threads, so that other requests go on meanwhile."""
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(PASSWORD_HASHING, passwords.check_password, password, stored)


async def hash_password(password: str) -> str:
    """passwords.hash_password in the hashing threads."""
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(PASSWORD_HASHING, passwords.hash_password, password)


class BaseHandler(tornado.web.RequestHandler):
    """Every API handler: authenticates in prepare(), renders successes and every error as JSON."""

    requires_auth = True
    # What each method decodes, e.g. {"post": CREATE_DRAFTS}: parse() reads it, and tornchat.openapi
    # documents every route from it. A method not named here takes no parameters.
    params: ClassVar[Mapping[str, Params[Any]]] = {}
    server: Server
    user: users.User

    def initialize(self, server: Server) -> None:
        self.server = server
        self._ignored: list[str] = []
        # Tornado parses the body (for every method) just before prepare(), through this method
        # of the request; tornchat's parser accepts empty multipart bodies and answers in JSON.
        request = self.request
        request._parse_body = lambda: parse_form_body(request)  # type: ignore[method-assign]

    def prepare(self) -> None:
        if self.requires_auth:
            self.user = self.authenticate()

    def authenticate(self) -> users.User:
        email, api_key = basic_credentials(self.request.headers.get("Authorization"))
        user = self.server.db.read(users.authenticate, email, api_key, self.server.realm)
        self.server.note_active(user.id)
        return user

    def client_address(self) -> str:
        """The client's IP address: the socket's peer, or what a trusted proxy says it forwarded.

        X-Real-Ip and X-Forwarded-For are anyone's to send: they count only when the peer is
        one of the --trusted-proxy addresses. X-Real-Ip (which the proxy sets) comes first, as in
        Tornado; X-Forwarded-For is read from the right, skipping trusted proxies, since a client
        can put anything it likes on its left.
        """
        peer = self.request.remote_ip
        trusted = self.server.settings.trusted_proxy_networks
        if not is_address_in(peer, trusted):
            return peer
        real = self.request.headers.get("X-Real-Ip", "").strip()
        if _is_ip(real):
            return real
        forwarded = [a.strip() for a in self.request.headers.get("X-Forwarded-For", "").split(",") if a.strip()]
        for address in reversed(forwarded):
            if not is_address_in(address, trusted):
                return address if _is_ip(address) else peer
        return peer

    # -- parameters -------------------------------------------------------------------------

    def argument(self, name: str) -> str | None:
        """The last value of a parameter, from the form body first (in its charset), then the query string."""
        values = self.request.body_arguments.get(name)
        if values:
            return values[-1].decode(form_charset(self.request), errors="replace")
        values = self.request.query_arguments.get(name)
        if values:
            return values[-1].decode("utf-8", errors="replace")
        return None

    def parse(self) -> Any:
        """This method's parameters, decoded by its entry in `params` (HEAD as GET)."""
        method = self.request.method.lower() if self.request.method else "get"
        params = self.params.get("get" if method == "head" else method, NO_PARAMS)
        names = list(self.request.body_arguments) + list(self.request.query_arguments)
        struct, self._ignored = params.parse(self.argument, names)
        return struct

    def client_name(self) -> str:
        """The sending client: the `client` parameter, else the User-Agent's product name."""
        given = self.argument("client")
        if given:
            return given
        agent = self.request.headers.get("User-Agent", "")
        return agent.split("/", 1)[0].strip() or "Unspecified"

    # -- responses --------------------------------------------------------------------------

    def respond(self, data: dict[str, Any] | None = None) -> None:
        self.set_header("Content-Type", "application/json")
        self.finish(success_body(data, self._ignored))

    def compute_etag(self) -> str | None:
        """No ETag on API responses: Tornado's default hashes every body, and no API client sends If-None-Match."""
        return None

    def write_json(self, body: dict[str, Any]) -> None:
        self.set_header("Content-Type", "application/json")
        self.finish(_encode(body) + b"\n")

    def allowed_methods(self) -> list[str]:
        base = tornado.web.RequestHandler
        allowed = [m.upper() for m in HTTP_METHODS if getattr(type(self), m) is not getattr(base, m)]
        if "GET" in allowed:
            allowed.insert(allowed.index("GET") + 1, "HEAD")
        return allowed

    def head(self, *args: str) -> None:
        if "GET" not in self.allowed_methods():
            raise tornado.web.HTTPError(405)
        self.get(*args)  # type: ignore[attr-defined]

    def options(self, *args: str) -> None:
        self.set_header("Allow", ", ".join(self.allowed_methods()))
        self.set_status(204)
        self.finish()

    def log_exception(self, typ: Any, value: Any, tb: Any) -> None:
        # Expected client errors are not worth a traceback; anything else is a bug.
        if isinstance(value, (ApiError, tornado.web.HTTPError)):
            return
        log.error(
            "Uncaught exception %s %s\n%s",
            self.request.method,
            self.request.uri,
            "".join(traceback.format_exception(typ, value, tb)),
        )

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        error = kwargs.get("exc_info", (None, None, None))[1]
        if isinstance(error, ApiError):
            self.set_status(error.status)
            for name, value in error.headers.items():
                self.set_header(name, value)
            self.write_json(error.body())
        elif status_code == 405:
            self.write_json({"result": "error", "msg": "Method Not Allowed", "allowed_methods": self.allowed_methods()})
        elif status_code == 404:
            self.write_json({"result": "error", "msg": "Not Found", "code": "BAD_REQUEST"})
        elif status_code < 500:
            self.write_json({"result": "error", "msg": self._reason, "code": "BAD_REQUEST"})
        else:
            self.set_status(500)
            self.write_json({"result": "error", "msg": "Internal server error", "code": "BAD_REQUEST"})


def basic_credentials(header: str | None) -> tuple[str, str]:
    """(email, API key) of an Authorization header; the API's 401 or 400 when there are none."""
    if not header:
        raise users.unauthorized(NOT_LOGGED_IN)
    scheme, _, encoded = header.partition(" ")
    if scheme.lower() != "basic":
        raise ApiError("This endpoint requires HTTP basic authentication.")
    try:
        email, colon, api_key = base64.b64decode(encoded.strip(), validate=True).decode().partition(":")
    except ValueError:  # binascii.Error, non-ASCII header text (latin-1 from Tornado), non-UTF-8 credentials
        colon = ""
    if not colon:
        raise users.unauthorized("Invalid authorization header for basic auth")
    return email, api_key


def success_body(data: dict[str, Any] | None, ignored: list[str]) -> bytes:
    """The success envelope with the endpoint's data and the parameters it ignored, as sent."""
    body: dict[str, Any] = {"result": "success", "msg": ""}
    if data:
        body.update(data)
    if ignored:
        body["ignored_parameters_unsupported"] = ignored
    # A page of messages comes encoded (msgspec.Raw, up to megabytes) as the last field: encoding the
    # envelope around it and then appending the newline would copy it twice, the join copies it once.
    name, value = next(reversed(body.items()))
    if type(value) is msgspec.Raw:
        del body[name]
        return b"".join((_encode(body)[:-1], b",", _encode(name), b":", value, b"}\n"))
    return _encode(body) + b"\n"


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def is_address_in(address: str, networks: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]) -> bool:
    """Whether an IP address (text) lies in one of the networks; False for anything not an address."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip in network for network in networks)


class NotFoundHandler(BaseHandler):
    """Unknown paths: a JSON 404 for any method, without asking for credentials."""

    requires_auth = False

    def prepare(self) -> None:
        raise tornado.web.HTTPError(404)
