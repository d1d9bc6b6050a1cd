"""Push test helpers: a live server registered with the stand-in push bouncer, and a client side.

The fixtures `bouncer` (a running StandInBouncer, tests/support/push_bouncer.py) and `push_live` (a
LiveServer registered with that bouncer, its sender running) are in tests/conftest.py;
`push_server` and `stop_server` here start and stop such a server. `push_server` registers the
server and uploads its realm with tornchat's own client code (tornchat/push_bouncer.py).
Client side: `PushClient` makes a push key, a token and its registration sealed for the bouncer,
and `register_device(live, client)` creates and registers a device, waiting for the bouncer's
answer; `delivered(bouncer, client)` opens what reached the client's phone, as the Zulip app does.
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

from storage.model.realm import get_realm
from tests.support.helpers import Client, LiveServer, assert_success
from tests.support.push_bouncer import StandInBouncer, token_id_of
from tornchat import push_bouncer

CONTACT_EMAIL = "admin@tornchat.test"


def stop_server(server: LiveServer, bouncer: StandInBouncer) -> None:
    """Let requests in flight finish (their sockets close) before the server's loop ends."""
    bouncer.set_mode("ok")
    if server.server.push_sender is not None and not server.server.push_sender.stopped:
        send_due(server)
    server.stop()


def bouncer_settings(bouncer: StandInBouncer, credentials: tuple[str, str] | None = None) -> dict[str, str]:
    """Settings of a server signing in to the bouncer (new credentials unless given)."""
    org_id, org_key = credentials or push_bouncer.new_credentials()
    return {"push_bouncer_url": bouncer.url, "zulip_org_id": org_id, "zulip_org_key": org_key}


def push_server(data_dir: str, bouncer: StandInBouncer, register: bool = True, **settings: str) -> LiveServer:
    """Start a LiveServer on data_dir configured for the bouncer and (with register) registered there,
    its realm uploaded; the bouncer follows the server's clock."""
    server = LiveServer(data_dir, **(settings or bouncer_settings(bouncer)))
    bouncer.clock = server.clock
    if register:
        register_server(server)
    return server


def register_server(server: LiveServer) -> None:
    """What `tornchat register-push-bouncer` does, through the same client functions."""
    s = server.settings
    assert s.push_bouncer_url is not None and s.zulip_org_id is not None and s.zulip_org_key is not None
    realm = server.read(get_realm)
    host = push_bouncer.realm_host(realm)
    push_bouncer.register_server(s.push_bouncer_url, s.zulip_org_id, s.zulip_org_key, host, CONTACT_EMAIL)
    push_bouncer.upload_realm(s.push_bouncer_url, s.zulip_org_id, s.zulip_org_key, realm)


def send_due(live: LiveServer) -> None:
    """Send every outbox row due now (by the server's clock) and wait until all are answered."""
    sender = live.server.push_sender
    assert sender is not None, "no push bouncer configured"
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

    def __init__(self, bouncer_public_key: str, token_kind: str = "fcm", token: str | None = None) -> None:
        self.bouncer_public_key = bouncer_public_key
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
        """The registration JSON sealed for the bouncer's public key (standard Base64), as the app makes it."""
        registration: dict[str, Any] = {"token": self.token, "token_kind": self.token_kind, "timestamp": timestamp}
        if self.ios_app_id is not None:
            registration["ios_app_id"] = self.ios_app_id
        registration.update(override)
        box = nacl.public.SealedBox(nacl.public.PublicKey(base64.b64decode(self.bouncer_public_key)))
        return base64.b64encode(box.encrypt(json.dumps(registration).encode())).decode()

    def key_params(self) -> dict[str, Any]:
        return {"push_key": self.push_key, "push_key_id": self.push_key_id}

    def token_params(self, timestamp: int, **override: Any) -> dict[str, Any]:
        return {
            "token_kind": self.token_kind,
            "token_id": self.token_id,
            "bouncer_public_key": self.bouncer_public_key,
            "encrypted_push_registration": self.sealed_registration(timestamp, **override),
        }

    def params(self, device_id: int, timestamp: int) -> dict[str, Any]:
        """Every field of an initial registration."""
        return {"device_id": device_id, **self.key_params(), **self.token_params(timestamp)}

    def decrypt(self, delivery: dict[str, Any]) -> Any:
        """Open what FCM/APNs handed the phone, as the app does: check push_key_id (a string in FCM
        data, a number in an APNs payload), decrypt encrypted_data with the key; the JSON payload."""
        data = delivery["data"]
        expected = str(self.push_key_id) if self.token_kind == "fcm" else self.push_key_id
        assert data["push_key_id"] == expected, (data["push_key_id"], expected)
        box = nacl.secret.SecretBox(self.key)
        return msgspec.json.decode(box.decrypt(base64.b64decode(data["encrypted_data"], validate=True)))


def delivered(bouncer: StandInBouncer, push_client: PushClient) -> list[Any]:
    """The payloads that reached the client's phone, opened with its key, in the order they arrived."""
    return [push_client.decrypt(d) for d in bouncer.delivered if d["token_id"] == push_client.token_id]


def new_device(client: Client) -> int:
    return assert_success(client.post("/register_client_device"))["device_id"]


def register_device(
    live: LiveServer, client: Client, push_client: PushClient | None = None, wait: bool = True
) -> tuple[int, PushClient]:
    """Create a device for client and register it for push; with wait, let the bouncer confirm it.

    Returns (device_id, push_client); the device's push_token_id is set once confirmed.
    """
    push_client = push_client or PushClient(StandInBouncer.at(live.settings.push_bouncer_url).public_key)
    device_id = new_device(client)
    assert_success(client.post("/mobile_push/register", push_client.params(device_id, int(live.clock()))))
    if wait:
        send_due(live)
    return device_id, push_client


def device_row(live: LiveServer, device_id: int) -> dict[str, Any] | None:
    row = live.read(lambda tx: tx.one("SELECT * FROM devices WHERE id = ?", (device_id,)))
    return None if row is None else dict(row)


__all__ = [
    "CONTACT_EMAIL",
    "PushClient",
    "bouncer_settings",
    "delivered",
    "device_row",
    "new_device",
    "outbox",
    "push_server",
    "register_device",
    "register_server",
    "send_due",
    "stop_server",
]
