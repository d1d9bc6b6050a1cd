"""A stand-in push notification service for tests: tornchat's push protocol on 127.0.0.1.

It runs a small Tornado app in its own thread with its own Curve25519 key pair and implements
`POST /register` (opens the sealed-box registration, checks it, remembers the token under its
token_id) and `POST /notify` (looks the token up and records the request instead of forwarding it
to FCM/APNs). Tests switch it between modes:
- "ok": answer normally;
- "unavailable": answer every request with 503 (retry later);
- "hang": hold every request until the mode changes (then answer in the new mode);
and can stop listening altogether (`stop_listening`: connections are refused) and start again.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import json
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

import nacl.exceptions
import nacl.public
import tornado.httpserver
import tornado.netutil
import tornado.web

EXPIRY_SECONDS = 24 * 3600
MODES = ("ok", "unavailable", "hang")


def token_id_of(token: str) -> str:
    """The token_id of a token: standard Base64 of the first 8 bytes of its SHA-256."""
    return base64.b64encode(hashlib.sha256(token.encode()).digest()[:8]).decode()


class Refused(Exception):
    def __init__(self, code: str, msg: str) -> None:
        super().__init__(msg)
        self.code, self.msg = code, msg


class StandInPushService:
    """The service; `url` and `public_key` (standard Base64) configure a tornchat server."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock
        self.private_key = nacl.public.PrivateKey.generate()
        self.public_key = base64.b64encode(bytes(self.private_key.public_key)).decode()
        self.registrations: list[dict[str, Any]] = []  # decrypted, plus the outer fields
        self.tokens: dict[str, dict[str, Any]] = {}  # token_id -> the registration holding it
        self.notifications: list[dict[str, Any]] = []  # raw /notify bodies
        self.requests: list[tuple[str, dict[str, Any]]] = []  # (path, body) of every request answered
        self.held = 0  # requests waiting in "hang" mode
        self.mode = "ok"
        self._lock = threading.Lock()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        self._ready.wait(10)

    # -- control (from the test thread) ------------------------------------------------------------

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def set_mode(self, mode: str) -> None:
        """Switch mode; requests held by "hang" are answered in the new mode."""
        assert mode in MODES, mode
        self._call(lambda: self._set_mode(mode))

    def stop_listening(self) -> None:
        """Close the listening socket and open connections: the service is unreachable."""
        self._call_async(self._stop_listening)

    def start_listening(self) -> None:
        """Listen again on the same port."""
        self._call(self._listen)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)

    def registered_token_ids(self) -> list[str]:
        with self._lock:
            return list(self.tokens)

    # -- the server thread ---------------------------------------------------------------------

    def _run(self) -> None:
        asyncio.run(self._main())

    async def _main(self) -> None:
        self.loop = asyncio.get_running_loop()
        self._mode_changed = asyncio.Event()
        app = tornado.web.Application([(r"/(register|notify)", ServiceHandler, {"service": self})])
        self.http = tornado.httpserver.HTTPServer(app)
        sockets = tornado.netutil.bind_sockets(0, "127.0.0.1", family=socket.AF_INET)
        self.port = sockets[0].getsockname()[1]
        self.http.add_sockets(sockets)
        self._stop = asyncio.Event()
        self._ready.set()
        await self._stop.wait()
        self._set_mode("ok")
        self.http.stop()
        await self.http.close_all_connections()

    def _listen(self) -> None:
        sockets = tornado.netutil.bind_sockets(self.port, "127.0.0.1", family=socket.AF_INET)
        self.http = tornado.httpserver.HTTPServer(self.http.request_callback)
        self.http.add_sockets(sockets)

    async def _stop_listening(self) -> None:
        self.http.stop()
        await self.http.close_all_connections()

    def _set_mode(self, mode: str) -> None:
        self.mode = mode
        self._mode_changed.set()
        self._mode_changed = asyncio.Event()

    def _call(self, fn: Callable[[], Any]) -> Any:
        async def run() -> Any:
            return fn()

        return asyncio.run_coroutine_threadsafe(run(), self.loop).result(10)

    def _call_async(self, fn: Callable[[], Any]) -> Any:
        return asyncio.run_coroutine_threadsafe(fn(), self.loop).result(10)

    # -- the protocol ----------------------------------------------------------------------------

    def register(self, body: dict[str, Any]) -> None:
        if body.get("bouncer_public_key") != self.public_key:
            raise Refused("INVALID_BOUNCER_PUBLIC_KEY", "Invalid bouncer_public_key")
        registration = self._open(body)
        try:
            if body["token_kind"] not in ("fcm", "apns") or registration["token_kind"] != body["token_kind"]:
                raise ValueError("token_kind")
            token = registration["token"]
            if not isinstance(token, str) or not token or token_id_of(token) != body["token_id"]:
                raise ValueError("token_id")
            timestamp = registration["timestamp"]
        except (KeyError, TypeError, ValueError):
            raise Refused("INVALID_ENCRYPTED_PUSH_REGISTRATION", "Invalid encrypted_push_registration") from None
        if not isinstance(timestamp, int) or not 0 <= self.clock() - timestamp <= EXPIRY_SECONDS:
            raise Refused("REQUEST_EXPIRED", "Request expired")
        record = {**registration, **{k: body.get(k) for k in ("realm_url", "user_id", "device_id", "token_id")}}
        with self._lock:
            self.registrations.append(record)
            self.tokens[body["token_id"]] = record

    def _open(self, body: dict[str, Any]) -> dict[str, Any]:
        try:
            sealed = base64.b64decode(body["encrypted_push_registration"], validate=True)
            opened = nacl.public.SealedBox(self.private_key).decrypt(sealed)
            registration = json.loads(opened)
            if not isinstance(registration, dict):
                raise ValueError("not an object")
            return registration
        except (KeyError, TypeError, ValueError, binascii.Error, nacl.exceptions.CryptoError):
            raise Refused("INVALID_ENCRYPTED_PUSH_REGISTRATION", "Invalid encrypted_push_registration") from None

    def notify(self, body: dict[str, Any]) -> None:
        missing = [k for k in ("token_kind", "token_id", "push_key_id", "encrypted_data") if k not in body]
        if missing:
            raise Refused("BAD_REQUEST", f"Missing '{missing[0]}' argument")
        with self._lock:
            known = self.tokens.get(body["token_id"])
            if known is None or known["token_kind"] != body["token_kind"]:
                raise Refused("BAD_REQUEST", "Unknown token_id")
            self.notifications.append(body)


class ServiceHandler(tornado.web.RequestHandler):
    def initialize(self, service: StandInPushService) -> None:
        self.service = service

    async def post(self, path: str) -> None:
        service = self.service
        while service.mode == "hang":
            service.held += 1
            try:
                await service._mode_changed.wait()
            finally:
                service.held -= 1
        if service.mode == "unavailable":
            self.set_status(503)
            self.finish({"result": "error", "code": "SERVICE_UNAVAILABLE", "msg": "Try again later"})
            return
        try:
            body = json.loads(self.request.body)
            if not isinstance(body, dict):
                raise ValueError("not an object")
        except ValueError:
            self.set_status(400)
            self.finish({"result": "error", "code": "BAD_REQUEST", "msg": "Malformed JSON"})
            return
        service.requests.append((path, body))
        try:
            service.register(body) if path == "register" else service.notify(body)
        except Refused as refusal:
            self.set_status(400)
            self.finish({"result": "error", "code": refusal.code, "msg": refusal.msg})
            return
        self.finish({"result": "success", "msg": ""})
