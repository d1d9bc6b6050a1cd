"""Helpers of the push-notification tests: devices made in storage, the outbox read back and opened."""

from __future__ import annotations

import base64
import json
import os
from typing import Any

import msgspec
import nacl.secret

from storage.model import flags


class Phone(msgspec.Struct):
    """A device row with a push key, as a client would have registered it."""

    id: int
    user_id: int
    key: bytes  # the 32-byte secret key, without the 0x31 tag
    key_id: int
    token_id: str


def add_device(
    live, user_id: int, *, token_id: str | None = "dG9rZW4xMjM=", key: bytes | None = None, key_id: int = 7
) -> Phone:
    """Insert a device with a push key and (unless token_id is None) a confirmed FCM token."""
    key = os.urandom(32) if key is None else key
    kind = None if token_id is None else "fcm"

    def insert(tx):
        return tx.execute(
            "INSERT INTO devices (user_id, date_created, push_key, push_key_id, push_token_kind, push_token_id)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (user_id, tx.timestamp, b"\x31" + key, key_id, kind, token_id),
        ).lastrowid

    return Phone(live.write(insert), user_id, key, key_id, token_id or "")


def rotate_key(live, phone: Phone, key_id: int) -> Phone:
    """Give the device a new push key (as a key rotation does); return it with the new key."""
    key = os.urandom(32)
    sql = "UPDATE devices SET push_key = ?, push_key_id = ? WHERE id = ?"
    live.write(lambda tx: tx.execute(sql, (b"\x31" + key, key_id, phone.id)))
    return msgspec.structs.replace(phone, key=key, key_id=key_id)


def open_data(encrypted_data: str, key: bytes) -> dict[str, Any]:
    """Decrypt a notification's encrypted_data with a device key (raises CryptoError for another key)."""
    return json.loads(nacl.secret.SecretBox(key).decrypt(base64.b64decode(encrypted_data, validate=True)))


def outbox(live, device: Phone | None = None) -> list[dict[str, Any]]:
    """The notify rows waiting in push_outbox (of one device if given), oldest first, body decoded."""
    rows = live.read(lambda tx: tx.all("SELECT * FROM push_outbox WHERE kind = 'notify' ORDER BY id"))
    found = [{**dict(row), "body": json.loads(row["body"])} for row in rows]
    return [row for row in found if device is None or row["device_id"] == device.id]


def payloads(live, phone: Phone) -> list[dict[str, Any]]:
    """The decrypted payloads waiting for a device, checking each row's bouncer request on the way."""
    realm_uuid = live.read(lambda tx: tx.value("SELECT uuid FROM realm"))
    result = []
    for row in outbox(live, phone):
        body = row["body"]
        [request] = body["push_requests"]
        assert (body["realm_uuid"], row["device_id"], row["user_id"]) == (realm_uuid, phone.id, phone.user_id)
        assert set(request) == {"token_id", "fcm_priority", "payload"} and request["token_id"] == phone.token_id
        assert set(request["payload"]) == {"push_key_id", "encrypted_data"}
        assert request["payload"]["push_key_id"] == phone.key_id
        payload = open_data(request["payload"]["encrypted_data"], phone.key)
        assert request["fcm_priority"] == ("high" if payload["type"] == "message" else "normal")
        result.append(payload)
    return result


def sealed(row: dict[str, Any]) -> str:
    """The encrypted_data of an outbox row's one bouncer request."""
    [request] = row["body"]["push_requests"]
    return request["payload"]["encrypted_data"]


def notified_message_ids(live, phone: Phone) -> list[int]:
    return [p["message_id"] for p in payloads(live, phone) if p["type"] == "message"]


def mark_sent(live) -> None:
    """Empty the outbox, as the sender does once the bouncer accepts every row."""
    live.write(lambda tx: tx.execute("DELETE FROM push_outbox"))


def active_bit(live, user_id: int, message_id: int) -> bool:
    sql = "SELECT flags FROM user_messages WHERE user_id = ? AND message_id = ?"
    bits = live.read(lambda tx: tx.value(sql, (user_id, message_id)))
    return bool(bits & flags.ACTIVE_MOBILE_PUSH_NOTIFICATION)
