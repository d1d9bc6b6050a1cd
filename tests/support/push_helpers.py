"""Push test helpers: a live server configured with the stand-in push service, and a client side.

The fixtures `push_service` (a running StandInPushService, tests/support/push_service.py) and
`push_live` (a LiveServer whose settings point at that service, its sender running) are in
tests/conftest.py; `push_server` and `stop_server` here start and stop such a server.
Client side: `PushClient` makes a push key, a token and its sealed registration, and
`register_device(live, client)` creates and registers a device, waiting for the service's answer.
`send_due(live)` sends what is due in the outbox now and waits for the answers (no sleeping).
"""

from __future__ import annotations

import asyncio
import base64
import json
import secrets
from typing import Any

import msgspec
import nacl.public
import nacl.secret

from tests.support.helpers import Client, LiveServer, assert_success
from tests.support.push_service import StandInPushService, token_id_of


def stop_server(server: LiveServer, service: StandInPushService) -> None:
    """Let requests in flight finish (their sockets close) before the server's loop ends."""
    service.set_mode("ok")
    if server.server.push_sender is not None and not server.server.push_sender.stopped:
        send_due(server)
    server.stop()


def push_server(data_dir: str, service: StandInPushService) -> LiveServer:
    """Start a LiveServer on data_dir configured for the service; the service follows its clock."""
    server = LiveServer(data_dir, push_service_url=service.url, push_service_public_key=service.public_key)
    service.clock = server.clock
    return server


def send_due(live: LiveServer) -> None:
    """Send every outbox row due now (by the server's clock) and wait until all are answered."""
    sender = live.server.push_sender
    assert sender is not None, "no push service configured"
    asyncio.run_coroutine_threadsafe(sender.send_due(), live.loop).result(60)


def outbox(live: LiveServer) -> list[dict[str, Any]]:
    """The push_outbox rows, oldest first, with body decoded."""

    def read(tx: Any) -> list[dict[str, Any]]:
        rows = [dict(row) for row in tx.all("SELECT * FROM push_outbox ORDER BY id")]
        for row in rows:
            row["body"] = json.loads(row["body"])
        return rows

    return live.read(read)


class PushClient:
    """What a mobile client holds: a push key and an FCM/APNs token, and how it registers them."""

    def __init__(self, service_public_key: str, token_kind: str = "fcm", token: str | None = None) -> None:
        self.service_public_key = service_public_key
        self.key = secrets.token_bytes(32)
        self.push_key = base64.b64encode(b"\x31" + self.key).decode()
        self.push_key_id = secrets.randbelow(2**32)
        self.token_kind = token_kind
        self.token = token or secrets.token_hex(32)
        self.ios_app_id = "org.zulip.Zulip" if token_kind == "apns" else None

    @property
    def token_id(self) -> str:
        return token_id_of(self.token)

    def sealed_registration(self, timestamp: int, **override: Any) -> str:
        """The registration JSON sealed for the service's public key (standard Base64)."""
        registration: dict[str, Any] = {"token": self.token, "token_kind": self.token_kind, "timestamp": timestamp}
        if self.ios_app_id is not None:
            registration["ios_app_id"] = self.ios_app_id
        registration.update(override)
        box = nacl.public.SealedBox(nacl.public.PublicKey(base64.b64decode(self.service_public_key)))
        return base64.b64encode(box.encrypt(json.dumps(registration).encode())).decode()

    def key_params(self) -> dict[str, Any]:
        return {"push_key": self.push_key, "push_key_id": self.push_key_id}

    def token_params(self, timestamp: int, **override: Any) -> dict[str, Any]:
        return {
            "token_kind": self.token_kind,
            "token_id": self.token_id,
            "bouncer_public_key": self.service_public_key,
            "encrypted_push_registration": self.sealed_registration(timestamp, **override),
        }

    def params(self, device_id: int, timestamp: int) -> dict[str, Any]:
        """Every field of an initial registration."""
        return {"device_id": device_id, **self.key_params(), **self.token_params(timestamp)}

    def decrypt(self, notification: dict[str, Any]) -> Any:
        """Open a /notify body's encrypted_data with this client's key; return the JSON payload."""
        box = nacl.secret.SecretBox(self.key)
        return msgspec.json.decode(box.decrypt(base64.b64decode(notification["encrypted_data"])))


def new_device(client: Client) -> int:
    return assert_success(client.post("/register_client_device"))["device_id"]


def register_device(
    live: LiveServer, client: Client, push_client: PushClient | None = None, wait: bool = True
) -> tuple[int, PushClient]:
    """Create a device for client and register it for push; with wait, let the service confirm it.

    Returns (device_id, push_client); the device's push_token_id is set once confirmed.
    """
    service_key = live.settings.push_service_public_key
    assert service_key is not None
    push_client = push_client or PushClient(service_key)
    device_id = new_device(client)
    assert_success(client.post("/mobile_push/register", push_client.params(device_id, int(live.clock()))))
    if wait:
        send_due(live)
    return device_id, push_client


def device_row(live: LiveServer, device_id: int) -> dict[str, Any] | None:
    row = live.read(lambda tx: tx.one("SELECT * FROM devices WHERE id = ?", (device_id,)))
    return None if row is None else dict(row)


__all__ = [
    "PushClient",
    "device_row",
    "new_device",
    "outbox",
    "push_server",
    "register_device",
    "send_due",
    "stop_server",
]
