"""A stand-in for Zulip's push bouncer (push.zulipchat.com) on 127.0.0.1, answering as zilencer does.

It runs a small Tornado app in its own thread with its own Curve25519 key pair (the key the apps
seal their token for) and serves, under /api/v1/remotes/:
- `server/register` (form, no authentication): registers a server by zulip_org_id and
  zulip_org_key, or updates it (same key), answering {"created": bool};
- `server/analytics/status` and `server/analytics` (form of JSON strings): learns the realms;
- `push/e2ee/register` (form): opens the sealed registration with its private key, checks it as
  zilencer does (token kind, ios_app_id, APNs tokens in hex, the token's token_id, the timestamp
  within a day) and remembers the token under (realm_uuid, token_id);
- `push/e2ee/notify` (JSON): looks each request's token up, records what FCM or APNs would have
  delivered to the phone (`delivered`), and answers the token ids it does not know
  (`delete_token_ids`).
Every endpoint but `server/register` wants HTTP Basic authentication by a registered server,
else 401 UNAUTHORIZED; a realm it was not told of is 403 MISSING_REMOTE_REALM. Errors are JSON
{"result": "error", "msg", "code"} with zilencer's messages.

Tests switch it between modes: "ok" answers normally; "unavailable" answers every request with 503;
"hang" holds every request until the mode changes; and `stop_listening` makes it unreachable.
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
import urllib.parse
import uuid
from collections.abc import Callable
from typing import Any

import nacl.exceptions
import nacl.public
import tornado.httpserver
import tornado.netutil
import tornado.web

EXPIRY_SECONDS = 24 * 3600  # zilencer's PUSH_REGISTRATION_LIVENESS_TIMEOUT
MODES = ("ok", "unavailable", "hang")
ORG_KEY_LENGTH = 64


def token_id_of(token: str) -> str:
    """The token_id of a token: standard Base64 of the first 8 bytes of its SHA-256."""
    return base64.b64encode(hashlib.sha256(token.encode()).digest()[:8]).decode()


class Refused(Exception):
    def __init__(self, code: str, msg: str, status: int = 400) -> None:
        super().__init__(msg)
        self.code, self.msg, self.status = code, msg, status


def invalid_registration() -> Refused:
    return Refused("INVALID_ENCRYPTED_PUSH_REGISTRATION", "Invalid encrypted_push_registration")


class StandInBouncer:
    """The bouncer; `url` and `public_key` (standard Base64) are what a server and an app know of it."""

    running: dict[str, StandInBouncer] = {}  # by url: what an app finds at a server's bouncer

    @classmethod
    def at(cls, url: str | None) -> StandInBouncer:
        assert url is not None and url in cls.running, f"no stand-in bouncer at {url}"
        return cls.running[url]

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock
        self.private_key = nacl.public.PrivateKey.generate()
        self.public_key = base64.b64encode(bytes(self.private_key.public_key)).decode()
        self.servers: dict[str, dict[str, str]] = {}  # zulip_org_id -> key, hostname, contact_email
        self.realms: dict[str, dict[str, Any]] = {}  # realm uuid -> the server's description, and "server"
        self.registrations: list[dict[str, Any]] = []  # opened registrations, with realm_uuid and token_id
        self.tokens: dict[tuple[str, str], dict[str, Any]] = {}  # (realm_uuid, token_id) -> registration
        self.delivered: list[dict[str, Any]] = []  # what FCM/APNs would have handed each phone
        self.requests: list[tuple[str, Any]] = []  # (endpoint, body) of every request answered
        self.held = 0  # requests waiting in "hang" mode
        self.mode = "ok"
        self._lock = threading.Lock()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        self._ready.wait(10)
        StandInBouncer.running[self.url] = self

    # -- control (from the test thread) ------------------------------------------------------------

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def set_mode(self, mode: str) -> None:
        """Switch mode; requests held by "hang" are answered in the new mode."""
        assert mode in MODES, mode
        self._call(lambda: self._set_mode(mode))

    def stop_listening(self) -> None:
        """Close the listening socket and open connections: the bouncer is unreachable."""
        self._call_async(self._stop_listening)

    def start_listening(self) -> None:
        """Listen again on the same port."""
        self._call(self._listen)

    def close(self) -> None:
        StandInBouncer.running.pop(self.url, None)
        self.loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)

    def registered_token_ids(self) -> list[str]:
        with self._lock:
            return [token_id for _, token_id in self.tokens]

    def forget_token(self, token_id: str) -> None:
        """As when FCM/APNs report a token expired: the bouncer no longer knows it."""
        with self._lock:
            self.tokens = {key: value for key, value in self.tokens.items() if key[1] != token_id}

    def forget_realms(self) -> None:
        """As for a server whose realms the bouncer never heard of (MISSING_REMOTE_REALM)."""
        with self._lock:
            self.realms.clear()

    def endpoints(self) -> list[str]:
        return [endpoint for endpoint, _ in self.requests]

    # -- the server thread ---------------------------------------------------------------------

    def _run(self) -> None:
        asyncio.run(self._main())

    async def _main(self) -> None:
        self.loop = asyncio.get_running_loop()
        self._mode_changed = asyncio.Event()
        app = tornado.web.Application([(r"/api/v1/remotes/(.+)", BouncerHandler, {"bouncer": self})])
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

    def authenticate(self, header: str | None) -> str:
        """Return the zulip_org_id of a request's Basic credentials; refuse as zilencer/auth.py does."""
        try:
            scheme, encoded = (header or "").split(" ", 1)
            role, key = base64.b64decode(encoded, validate=True).decode().split(":", 1)
            assert scheme == "Basic"
        except (ValueError, AssertionError, binascii.Error, UnicodeDecodeError):
            raise Refused("UNAUTHORIZED", "Missing authorization header for basic auth", 401) from None
        server = self.servers.get(role)
        if server is None:
            msg = f"Zulip server auth failure: {role} is not registered -- did you run `manage.py register_server`?"
            raise Refused("UNAUTHORIZED", msg, 401)
        if server["key"] != key:
            raise Refused("UNAUTHORIZED", f"Zulip server auth failure: key does not match role {role}", 401)
        return role

    def realm_of(self, server: str, realm_uuid: Any) -> str:
        realm = self.realms.get(realm_uuid) if isinstance(realm_uuid, str) else None
        if realm is None:
            raise Refused("MISSING_REMOTE_REALM", "Organization not registered", 403)
        if realm["server"] != server:
            msg = "Your organization is registered to a different Zulip server."
            raise Refused("REMOTE_REALM_SERVER_MISMATCH_ERROR", msg, 403)
        return realm_uuid

    def register_server(self, form: dict[str, str]) -> dict[str, Any]:
        for name in ("zulip_org_id", "zulip_org_key", "hostname", "contact_email"):
            if not form.get(name):
                raise Refused("MISSING_ARGUMENT", f"Missing '{name}' argument")
        org_id, key, hostname, email = (form[k] for k in ("zulip_org_id", "zulip_org_key", "hostname", "contact_email"))
        if len(key) != ORG_KEY_LENGTH:
            raise Refused("BAD_REQUEST", f"zulip_org_key is not length {ORG_KEY_LENGTH}")
        if "@" not in email or email.rsplit("@", 1)[1].lower() == "example.com":
            raise Refused("BAD_REQUEST", "Invalid email address.")
        try:
            if str(uuid.UUID(org_id)) != org_id:
                raise ValueError(org_id)
        except ValueError:
            raise Refused("BAD_REQUEST", "Invalid UUID") from None
        with self._lock:
            known = self.servers.get(org_id)
            if known is not None and known["key"] != key:
                raise Refused("INVALID_ZULIP_SERVER", f"Zulip server auth failure: key does not match role {org_id}")
            if known is None and any(s["hostname"] == hostname for s in self.servers.values()):
                msg = f"A server with hostname {hostname} already exists"
                raise Refused("HOSTNAME_ALREADY_IN_USE_BOUNCER_ERROR", msg)
            self.servers[org_id] = {"key": key, "hostname": hostname, "contact_email": email}
        return {"created": known is None}

    def analytics(self, server: str, form: dict[str, str]) -> dict[str, Any]:
        try:
            realms = json.loads(form["realms"])
            for name in ("realm_counts", "installation_counts"):
                assert json.loads(form[name]) == []
            assert isinstance(realms, list)
            for realm in realms:
                assert {"id", "host", "url", "uuid", "uuid_owner_secret", "date_created", "deactivated"} <= set(realm)
                assert str(uuid.UUID(realm["uuid"])) == realm["uuid"]
        except (KeyError, ValueError, TypeError, AssertionError):
            raise Refused("BAD_REQUEST", "Malformed analytics data") from None
        with self._lock:
            for realm in realms:
                self.realms[realm["uuid"]] = {**realm, "server": server}
        return {"realms": {r["uuid"]: {"can_push": True, "expected_end_timestamp": None} for r in realms}}

    def register_device(self, server: str, form: dict[str, str]) -> None:
        for name in ("realm_uuid", "token_id", "bouncer_public_key", "encrypted_push_registration"):
            if name not in form:
                raise Refused("MISSING_ARGUMENT", f"Missing '{name}' argument")
        realm_uuid = self.realm_of(server, form["realm_uuid"])
        if form["bouncer_public_key"] != self.public_key:
            raise Refused("INVALID_BOUNCER_PUBLIC_KEY", "Invalid bouncer_public_key")
        registration = self._open(form["encrypted_push_registration"])
        token, kind, app_id = registration.get("token"), registration.get("token_kind"), registration.get("ios_app_id")
        timestamp = registration.get("timestamp")
        if not isinstance(token, str) or not 0 < len(token) <= 4096 or not isinstance(timestamp, int):
            raise invalid_registration()
        if kind == "apns":
            if not isinstance(app_id, str):
                raise invalid_registration()
            try:
                bytes.fromhex(token)
            except ValueError:
                raise invalid_registration() from None
        elif kind != "fcm" or app_id is not None:
            raise invalid_registration()
        if token_id_of(token) != form["token_id"]:
            raise invalid_registration()
        if self.clock() - timestamp > EXPIRY_SECONDS:
            raise Refused("REQUEST_EXPIRED", "Request expired")
        record = {**registration, "realm_uuid": realm_uuid, "token_id": form["token_id"]}
        with self._lock:
            self.registrations.append(record)
            self.tokens[(realm_uuid, form["token_id"])] = record

    def _open(self, sealed_text: str) -> dict[str, Any]:
        try:
            sealed = base64.b64decode(sealed_text, validate=True)
            registration = json.loads(nacl.public.SealedBox(self.private_key).decrypt(sealed))
            if not isinstance(registration, dict):
                raise ValueError("not an object")
            return registration
        except (ValueError, TypeError, binascii.Error, nacl.exceptions.CryptoError):
            raise invalid_registration() from None

    def notify(self, server: str, body: Any) -> dict[str, Any]:
        if not isinstance(body, dict) or not isinstance(body.get("push_requests"), list):
            raise Refused("BAD_REQUEST", "Malformed JSON")
        realm_uuid = self.realm_of(server, body.get("realm_uuid"))
        deleted: list[str] = []
        counts = {"fcm": 0, "apns": 0}
        for push_request in body["push_requests"]:
            with self._lock:
                known = self.tokens.get((realm_uuid, push_request.get("token_id")))
            if known is None:
                deleted.append(push_request.get("token_id"))
                continue
            self.delivered.append(self._delivery(known, push_request))
            counts[known["token_kind"]] += 1
        return {
            "android_successfully_sent_count": counts["fcm"],
            "apple_successfully_sent_count": counts["apns"],
            "delete_token_ids": deleted,
            "realm_push_status": {"can_push": True, "expected_end_timestamp": None},
        }

    def _delivery(self, known: dict[str, Any], push_request: dict[str, Any]) -> dict[str, Any]:
        """What FCM or APNs hands the phone for this request, checked as zilencer's models do."""
        payload = push_request.get("payload")
        if not isinstance(payload, dict) or not isinstance(payload.get("encrypted_data"), str):
            raise Refused("BAD_REQUEST", "Missing encrypted_data")
        if not isinstance(payload.get("push_key_id"), int):
            raise Refused("BAD_REQUEST", "Missing push_key_id")
        delivery = {"token": known["token"], "token_kind": known["token_kind"], "token_id": known["token_id"]}
        if known["token_kind"] == "fcm":
            if push_request.get("fcm_priority") not in ("high", "normal") or set(payload) != {
                "push_key_id",
                "encrypted_data",
            }:
                raise Refused("BAD_REQUEST", "Malformed FCM push request")
            # FCM allows only string values: push_key_id is stringified, as the app expects.
            data = {"push_key_id": str(payload["push_key_id"]), "encrypted_data": payload["encrypted_data"]}
            return {**delivery, "priority": push_request["fcm_priority"], "data": data}
        headers = push_request.get("http_headers")
        if not isinstance(headers, dict) or headers.get("apns_priority") not in (5, 10):
            raise Refused("BAD_REQUEST", "Malformed APNs push request")
        if headers.get("apns_push_type") not in ("alert", "background") or not isinstance(payload.get("aps"), dict):
            raise Refused("BAD_REQUEST", "Malformed APNs push request")
        return {**delivery, "priority": headers["apns_priority"], "push_type": headers["apns_push_type"],
                "topic": known["ios_app_id"], "data": payload}  # fmt: skip


class BouncerHandler(tornado.web.RequestHandler):
    def initialize(self, bouncer: StandInBouncer) -> None:
        self.bouncer = bouncer

    async def get(self, endpoint: str) -> None:
        await self.answer(endpoint)

    async def post(self, endpoint: str) -> None:
        await self.answer(endpoint)

    async def answer(self, endpoint: str) -> None:
        bouncer = self.bouncer
        while bouncer.mode == "hang":
            bouncer.held += 1
            try:
                await bouncer._mode_changed.wait()
            finally:
                bouncer.held -= 1
        if bouncer.mode == "unavailable":
            self.set_status(503)
            self.finish({"result": "error", "code": "BAD_REQUEST", "msg": "Service unavailable"})
            return
        try:
            result = self.dispatch(endpoint)
        except Refused as refusal:
            self.set_status(refusal.status)
            self.finish({"result": "error", "code": refusal.code, "msg": refusal.msg})
            return
        self.finish({"result": "success", "msg": "", **result})

    def dispatch(self, endpoint: str) -> dict[str, Any]:
        bouncer, method = self.bouncer, self.request.method
        if (method, endpoint) == ("POST", "server/register"):
            form = self.form()
            bouncer.requests.append((endpoint, form))
            return bouncer.register_server(form)
        server = bouncer.authenticate(self.request.headers.get("Authorization"))
        if (method, endpoint) == ("GET", "server/analytics/status"):
            bouncer.requests.append((endpoint, None))
            return {"last_realm_count_id": 0, "last_installation_count_id": 0, "last_realmauditlog_id": 0}
        if (method, endpoint) == ("POST", "server/analytics"):
            form = self.form()
            bouncer.requests.append((endpoint, form))
            return bouncer.analytics(server, form)
        if (method, endpoint) == ("POST", "push/e2ee/register"):
            form = self.form()
            bouncer.requests.append((endpoint, form))
            bouncer.register_device(server, form)
            return {}
        if (method, endpoint) == ("POST", "push/e2ee/notify"):
            try:
                body = json.loads(self.request.body)
            except ValueError:
                raise Refused("BAD_REQUEST", "Malformed JSON") from None
            bouncer.requests.append((endpoint, body))
            return bouncer.notify(server, body)
        raise Refused("BAD_REQUEST", f"Unknown endpoint {method} {endpoint}", 404)

    def form(self) -> dict[str, str]:
        if not self.request.headers.get("Content-Type", "").startswith("application/x-www-form-urlencoded"):
            raise Refused("BAD_REQUEST", "Expected a form")
        return dict(urllib.parse.parse_qsl(self.request.body.decode(), keep_blank_values=True))
