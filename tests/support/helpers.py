"""Test helpers: a live tornchat server in a thread, API clients, and the envelope assertions."""

from __future__ import annotations

import asyncio
import concurrent.futures
import itertools
import os
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

import requests
import tornado.netutil

from storage.org import groups, passwords, users
from tornchat.app import make_http_server
from tornchat.bootstrap import bootstrap
from tornchat.server import Server
from tornchat.settings import Settings

ROLE_NAMES = {
    "owner": groups.ROLE_OWNER,
    "admin": groups.ROLE_ADMINISTRATOR,
    "moderator": groups.ROLE_MODERATOR,
    "member": groups.ROLE_MEMBER,
    "guest": groups.ROLE_GUEST,
}
PASSWORD = "correct horse battery"


class FakeClock:
    """A clock tests move by hand: no sleeps."""

    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class Client:
    """An API client for one account: HTTP Basic auth over a keep-alive session."""

    def __init__(self, base_url: str, email: str | None, api_key: str | None, user_id: int | None = None) -> None:
        self.base_url = base_url
        self.email = email
        self.api_key = api_key
        self.id = user_id
        self.session = requests.Session()
        if email is not None and api_key is not None:
            self.session.auth = (email, api_key)

    def request(self, method: str, path: str, params: dict[str, Any] | None = None, **kwargs: Any) -> requests.Response:
        """Send a request; non-string values are JSON-encoded, as the zulip client does."""
        encoded = {k: v if isinstance(v, str) else _json(v) for k, v in (params or {}).items()}
        url = self.base_url + "/api/v1" + path
        if method in ("GET", "HEAD"):
            return self.session.request(method, url, params=encoded, **kwargs)
        return self.session.request(method, url, data=encoded, **kwargs)

    def get(self, path: str, params: dict[str, Any] | None = None, **kw: Any) -> requests.Response:
        return self.request("GET", path, params, **kw)

    def post(self, path: str, params: dict[str, Any] | None = None, **kw: Any) -> requests.Response:
        return self.request("POST", path, params, **kw)

    def patch(self, path: str, params: dict[str, Any] | None = None, **kw: Any) -> requests.Response:
        return self.request("PATCH", path, params, **kw)

    def delete(self, path: str, params: dict[str, Any] | None = None, **kw: Any) -> requests.Response:
        return self.request("DELETE", path, params, **kw)


def _json(value: Any) -> str:
    import json

    return json.dumps(value)


class LiveServer:
    """A bootstrapped tornchat on a free port, its IOLoop running in a background thread."""

    def __init__(self, data_dir: str, **settings: Any) -> None:
        """settings: extra Settings fields, e.g. push_bouncer_url, zulip_org_id and zulip_org_key."""
        self.clock = FakeClock()
        self.settings = Settings(
            data_dir=data_dir, site="http://127.0.0.1:9991", email_host="zulip.testserver", **settings
        )
        self.owner_user = bootstrap(self.settings, "owner@example.com", PASSWORD)
        self._emails = itertools.count(1)
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        self._ready.wait(10)
        self.owner = self.client_for(self.owner_user)

    def _run(self) -> None:
        asyncio.run(self._main())

    async def _main(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.server = Server(self.settings, clock=self.clock)
        sockets = tornado.netutil.bind_sockets(0, "127.0.0.1")
        self.port = sockets[0].getsockname()[1]
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.http = make_http_server(self.server)
        self.http.add_sockets(sockets)
        self.server.start_push_sender()  # only with a push bouncer configured
        self._stop = asyncio.Event()
        self._ready.set()
        await self._stop.wait()
        self.http.stop()
        await self.http.close_all_connections()
        self.server.close()

    def call(self, fn: Callable[[], Any]) -> Any:
        """Run fn on the server's IOLoop thread (the only thread that touches its database)."""
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()

        def run() -> None:
            try:
                future.set_result(fn())
            except BaseException as error:  # noqa: BLE001 - handed back to the test thread
                future.set_exception(error)

        self.loop.call_soon_threadsafe(run)
        return future.result(10)

    def write(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return self.call(lambda: self.server.db.write(fn, *args, **kwargs))

    def read(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return self.call(lambda: self.server.db.read(fn, *args, **kwargs))

    def events(self) -> list[tuple[dict[str, Any], list[int]]]:
        """Events published so far (event, user ids), oldest first."""
        return self.call(lambda: list(self.server.events.recent))

    def client_for(self, user: users.User) -> Client:
        return Client(self.base_url, users.api_email(user, self.server.realm), user.api_key, user.id)

    def anonymous(self) -> Client:
        return Client(self.base_url, None, None)

    def make_user(
        self,
        role: str = "member",
        email: str | None = None,
        full_name: str | None = None,
        password: str | None = PASSWORD,
        **permissions: bool,
    ) -> Client:
        """Create an account directly in storage and return a client logged in as it."""
        n = next(self._emails)
        email = email or f"user{n}@example.com"
        user = self.write(users.create_user, email, full_name or f"User {n}", password, ROLE_NAMES[role], **permissions)
        return self.client_for(user)

    def user(self, user_id: int) -> users.User:
        found = self.read(users.get_user_by_id, user_id)
        assert found is not None
        return found

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)


class NextServer(LiveServer):
    """A new server process on the data directory, settings and clock of a first one, as after a restart."""

    def __init__(self, first: LiveServer) -> None:
        self.clock = first.clock
        self.settings = first.settings
        self.owner_user = first.owner_user
        self._emails = itertools.count(1000)
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        assert self._ready.wait(10)
        self.owner = self.client_for(self.owner_user)


def wait_for(predicate: Callable[[], bool], what: str) -> None:
    """Wait (bounded) for something another thread does; fail with `what` if it never happens."""
    deadline = time.monotonic() + 10
    while not predicate():
        assert time.monotonic() < deadline, what
        time.sleep(0.01)


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now, for a server about to start in another process."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def assert_success(response: requests.Response) -> dict[str, Any]:
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["result"] == "success" and body["msg"] == "", body
    return body


def assert_error(response: requests.Response, msg: str, code: str = "BAD_REQUEST", status: int = 400) -> dict[str, Any]:
    body = response.json()
    assert (response.status_code, body.get("code"), body.get("msg")) == (status, code, msg), body
    assert body["result"] == "error"
    assert "ignored_parameters_unsupported" not in body
    return body


def data_dir_for(tmp_path: Any) -> str:
    return os.path.join(str(tmp_path), "data")


# -- shared by the user tests ------------------------------------------------------------------


def set_visibility(live, user_id, visibility):
    """Set a user's email_address_visibility directly in storage."""

    def update(tx):
        tx.execute("UPDATE users SET email_address_visibility = ? WHERE id = ?", (visibility, user_id))

    live.write(update)


def make_bot(live, owner_id, email="bot@example.com"):
    """Insert a generic bot owned by owner_id; return its id."""

    def insert(tx):
        cursor = tx.execute(
            "INSERT INTO users (delivery_email, full_name, api_key, role, is_bot, bot_type, bot_owner_id,"
            " date_joined, email_address_visibility) VALUES (?, 'A Bot', ?, 400, 1, 1, ?, ?, ?)",
            (email, passwords.generate_api_key(), owner_id, tx.timestamp, 3),
        )
        return cursor.lastrowid

    return live.write(insert)


def get_user(client, user, params=None):
    return assert_success(client.get(f"/users/{user}", params))["user"]


def events_since(live, count, event_type="realm_user"):
    """Events of one type published after the first `count` events."""
    return [(event, ids) for event, ids in live.events()[count:] if event["type"] == event_type]


def dummy(user_id):
    return f"user{user_id}@zulip.testserver"
