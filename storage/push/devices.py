"""Client devices: POST /register_client_device, POST /remove_client_device, and the `devices` state.

A device belongs to one user and is shown only to that user: every lookup is by (id, user), and
an unknown id and another user's device get the same "Invalid `device_id`" error, so no user
learns which ids exist. Events go to the owner's own clients only.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

import msgspec

from storage.db.tx import Tx
from storage.model.errors import ApiError
from storage.org import users

DEVICE_STATE_FIELDS = (
    "push_key_id",
    "push_token_id",
    "pending_push_token_id",
    "push_token_last_updated_timestamp",
    "push_registration_error_code",
)


class Device(msgspec.Struct, frozen=True):
    id: int
    user_id: int
    push_key: bytes | None
    push_key_id: int | None
    push_token_kind: str | None
    push_token_id: str | None
    pending_push_token_kind: str | None
    pending_push_token_id: str | None
    push_token_last_updated_timestamp: int | None
    push_registration_error_code: str | None

    @property
    def secret_key(self) -> bytes | None:
        """The 32-byte secret-box key of push_key (without its 0x31 tag byte), or None."""
        return None if self.push_key is None else bytes(self.push_key[1:])


def invalid_device() -> ApiError:
    return ApiError("Invalid `device_id`")


def device_from_row(row: sqlite3.Row) -> Device:
    return Device(**{field: row[field] for field in Device.__struct_fields__})


def get_device(tx: Tx, device_id: int) -> Device | None:
    """Return any user's device by id, or None (for the server's own use, never a client's)."""
    row = tx.one("SELECT * FROM devices WHERE id = ?", (device_id,))
    return None if row is None else device_from_row(row)


def access_device(tx: Tx, user: users.User, device_id: int) -> Device:
    """Return the user's own device; raise "Invalid `device_id`" for unknown or others' ids."""
    # devices_by_user: user_id = ? (and the id)
    row = tx.one("SELECT * FROM devices WHERE user_id = ? AND id = ?", (user.id, device_id))
    if row is None:
        raise invalid_device()
    return device_from_row(row)


def list_devices(tx: Tx, user_id: int) -> list[Device]:
    """Return the user's devices in id order."""
    return [device_from_row(row) for row in tx.all("SELECT * FROM devices WHERE user_id = ? ORDER BY id", (user_id,))]


def device_state(device: Device) -> dict[str, Any]:
    """The client-visible push state of a device (the values of POST /register's `devices`)."""
    return {field: getattr(device, field) for field in DEVICE_STATE_FIELDS}


def devices_state(tx: Tx, user: users.User) -> dict[str, Any]:
    """POST /register's `devices`: the user's devices keyed by id as a string."""
    return {"devices": {str(device.id): device_state(device) for device in list_devices(tx, user.id)}}


def create_device(tx: Tx, user: users.User) -> int:
    """Register a new device of the user; send device/add to the user; return its id."""
    cursor = tx.execute("INSERT INTO devices (user_id, date_created) VALUES (?, ?)", (user.id, tx.timestamp))
    device_id = cursor.lastrowid
    assert device_id is not None
    tx.publish({"type": "device", "op": "add", "device_id": device_id}, [user.id])
    return device_id


def remove_device(tx: Tx, user: users.User, device_id: int) -> None:
    """Remove the user's own device and its waiting push requests; send device/remove.

    Raises "Invalid `device_id`" for unknown or other users' devices. The outbox rows go with
    the device (ON DELETE CASCADE), so a removed device gets no further notifications.
    """
    device = access_device(tx, user, device_id)
    tx.execute("DELETE FROM devices WHERE id = ?", (device.id,))
    tx.publish({"type": "device", "op": "remove", "device_id": device.id}, [user.id])


def publish_update(tx: Tx, device: Device, **changed: Any) -> None:
    """Send device/update with the changed fields to the device's owner."""
    tx.publish({"type": "device", "op": "update", "device_id": device.id, **changed}, [device.user_id])


def forget_tokens(tx: Tx, token_ids: list[str]) -> None:
    """The push bouncer no longer knows these tokens (FCM/APNs found them expired or invalid): the
    devices holding one lose it and get no more notifications until they register a new token."""
    rows = tx.all(
        "SELECT * FROM devices WHERE push_token_id IN (SELECT value FROM json_each(?))", (json.dumps(token_ids),)
    )
    for device in map(device_from_row, rows):
        tx.execute("UPDATE devices SET push_token_id = NULL, push_token_kind = NULL WHERE id = ?", (device.id,))
        publish_update(tx, device, push_token_id=None)
