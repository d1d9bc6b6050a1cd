"""End-to-end-encrypted push registration (POST /mobile_push/register) and legacy push tokens.

The client registers a device it created with POST /register_client_device: a push key (the
tag byte 0x31 and a 32-byte secret-box key, with the client's id for it) with which the server
encrypts notifications, and an FCM/APNs token sealed for the public key of Zulip's push bouncer,
which only the bouncer can open. The server forwards the sealed token through the outbox, as the
client sent it, to the bouncer's `remotes/push/e2ee/register` with the realm's uuid (the bouncer,
not the server, checks bouncer_public_key, as in Zulip); the bouncer's answer arrives later
(`registration_outcome`) and reaches the user's clients as a device/update event. Key-only
requests rotate the key; token-only requests rotate the token.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import logging

import msgspec

from storage.db.tx import Tx
from storage.model.errors import ApiError
from storage.model.realm import get_realm
from storage.org import users
from storage.push import devices, push_outbox
from storage.push.devices import Device
from storage.push.push_outbox import OutboxRow

log = logging.getLogger("tornchat.push")

PUSH_KEY_TAG = 0x31  # the cryptosystem of a push key: secret-box with a 32-byte key
PUSH_KEY_LENGTH = 33
TOKEN_ID_LENGTH = 8
MAX_PUSH_KEY_ID = 2**32 - 1
TOKEN_KINDS = ("fcm", "apns")
BOT_REFUSED = "This endpoint does not accept bot requests."
NOT_CONFIGURED = "Server is not configured to use push notification service."
MISSING_FIELDS = "Missing parameters: must provide either all push key fields, all token fields, or both."


class PushRegistration(msgspec.Struct, kw_only=True):
    """The parameters of POST /mobile_push/register, decoded (push_key_id range-checked)."""

    device_id: int
    push_key_id: int | None = None
    push_key: str | None = None
    token_kind: str | None = None
    token_id: str | None = None
    bouncer_public_key: str | None = None
    encrypted_push_registration: str | None = None

    def __post_init__(self) -> None:
        if self.push_key_id is not None and not 0 <= self.push_key_id <= MAX_PUSH_KEY_ID:
            raise ValueError("Invalid push_key_id: Value error, Not a valid unsigned 32-bit integer")
        if self.token_kind is not None and self.token_kind not in TOKEN_KINDS:
            raise ValueError("Invalid token_kind")


def check_human(user: users.User) -> None:
    if user.is_bot:
        raise ApiError(BOT_REFUSED)


def check_push_key(push_key: str) -> bytes:
    """Return the push key's bytes: standard Base64 of 0x31 and 32 key bytes, else raise."""
    try:
        key = base64.b64decode(push_key, validate=True)
    except binascii.Error:
        key = b""
    if len(key) != PUSH_KEY_LENGTH or key[0] != PUSH_KEY_TAG:
        raise ApiError("Invalid `push_key`")
    return key


def check_token_id(token_id: str) -> str:
    """Return the token_id in canonical form: standard Base64 of exactly 8 bytes, else raise."""
    try:
        raw = base64.b64decode(token_id, validate=True)
    except binascii.Error:
        raise ApiError("`token_id` is not Base64 encoded") from None
    if len(raw) != TOKEN_ID_LENGTH:
        raise ApiError("Invalid `token_id`")
    return base64.b64encode(raw).decode()


def token_id_of(token: str) -> str:
    """The token_id of an FCM/APNs token: standard Base64 of the first 8 bytes of its SHA-256."""
    return base64.b64encode(hashlib.sha256(token.encode()).digest()[:TOKEN_ID_LENGTH]).decode()


def _check_sealed_registration(p: PushRegistration) -> None:
    """Refuse at once what the bouncer could never open: no standard Base64, or nothing."""
    try:
        sealed = base64.b64decode(p.encrypted_push_registration or "", validate=True)
    except binascii.Error:
        sealed = b""
    if not sealed:
        raise ApiError("Invalid encrypted_push_registration")


def _field_group(*values: object) -> bool:
    """Whether a group of fields was given: all of them (True), none (False), or some (raise)."""
    given = sum(value is not None for value in values)
    if 0 < given < len(values):
        raise ApiError(MISSING_FIELDS)
    return given == len(values)


def register_push_device(tx: Tx, user: users.User, p: PushRegistration, configured: bool) -> None:
    """Register, re-register, or rotate the key or the token of the user's device.

    Raises for bots, an unconfigured push bouncer, someone else's or an unknown device, an
    incomplete set of fields, invalid values, a rotation without a registration, and a token
    registration while another one for the device is still waiting for the bouncer.
    """
    check_human(user)
    if not configured:
        raise ApiError(NOT_CONFIGURED, "PUSH_SERVICE_NOT_CONFIGURED")
    device = devices.access_device(tx, user, p.device_id)
    has_token = _field_group(p.token_kind, p.token_id, p.bouncer_public_key, p.encrypted_push_registration)
    if not _field_group(p.push_key, p.push_key_id) and not has_token:
        raise ApiError(MISSING_FIELDS)
    push_key = check_push_key(p.push_key) if p.push_key is not None else None
    token_id = check_token_id(p.token_id) if p.token_id is not None else None
    if has_token:
        _check_sealed_registration(p)
    if push_key is not None and p.push_key_id is not None and token_id is None:
        _rotate_key(tx, device, push_key, p.push_key_id)
        return
    assert token_id is not None and p.token_kind is not None
    if device.push_key is None and push_key is None:
        raise ApiError("No push registration exists to rotate token for.")
    if device.pending_push_token_id is not None and device.push_registration_error_code is None:
        raise ApiError("A registration for the device already in progress.")
    registered = device.push_token_id == token_id and device.push_token_kind == p.token_kind
    if registered and device.pending_push_token_id is None:
        # The service already holds this token: at most the key changes.
        if push_key is not None and p.push_key_id is not None:
            _rotate_key(tx, device, push_key, p.push_key_id)
        return
    _register_token(tx, device, p, push_key, token_id)


def _rotate_key(tx: Tx, device: Device, push_key: bytes, push_key_id: int) -> None:
    if device.push_key is None:
        raise ApiError("No push registration exists to rotate key for.")
    if bytes(device.push_key) == push_key and device.push_key_id == push_key_id:
        return
    tx.execute("UPDATE devices SET push_key = ?, push_key_id = ? WHERE id = ?", (push_key, push_key_id, device.id))
    devices.publish_update(tx, device, push_key_id=push_key_id)


def _register_token(tx: Tx, device: Device, p: PushRegistration, push_key: bytes | None, token_id: str) -> None:
    """Record the token as pending, tell the user's clients, and queue it for the bouncer."""
    changed: dict[str, object] = {}
    if push_key is not None:
        tx.execute(
            "UPDATE devices SET push_key = ?, push_key_id = ? WHERE id = ?", (push_key, p.push_key_id, device.id)
        )
        changed["push_key_id"] = p.push_key_id
    tx.execute(
        "UPDATE devices SET pending_push_token_kind = ?, pending_push_token_id = ?,"
        " push_token_last_updated_timestamp = ?, push_registration_error_code = NULL WHERE id = ?",
        (p.token_kind, token_id, tx.timestamp, device.id),
    )
    # Requests still waiting for an older token of this device are superseded by this one.
    tx.execute("DELETE FROM push_outbox WHERE device_id = ? AND kind = 'register'", (device.id,))
    # The form of the bouncer's remotes/push/e2ee/register (zerver/lib/push_registration.py).
    body = {
        "realm_uuid": get_realm(tx).uuid,
        "token_id": token_id,
        "bouncer_public_key": p.bouncer_public_key,
        "encrypted_push_registration": p.encrypted_push_registration,
    }
    push_outbox.enqueue(tx, device.id, "register", body, user_id=device.user_id)
    changed.update(
        pending_push_token_id=token_id,
        push_token_last_updated_timestamp=tx.timestamp,
        push_registration_error_code=None,
    )
    devices.publish_update(tx, device, **changed)


def registration_outcome(tx: Tx, row: OutboxRow, error_code: str | None) -> None:
    """Record the bouncer's answer to a 'register' outbox row and tell the user's clients.

    Accepted: the pending token becomes the device's token, and the user's legacy registrations
    of the same token are removed. Refused: the device keeps the error code until the next
    registration. An answer about a token the device no longer waits for changes nothing.
    """
    device = devices.get_device(tx, row.device_id)
    if device is None or device.pending_push_token_id != row.body.get("token_id"):
        return
    if error_code is not None:
        if error_code == "REQUEST_EXPIRED":
            log.error("Push registration request for device_id=%d expired.", device.id)
        tx.execute("UPDATE devices SET push_registration_error_code = ? WHERE id = ?", (error_code, device.id))
        devices.publish_update(tx, device, push_registration_error_code=error_code)
        return
    tx.execute(
        "UPDATE devices SET push_token_kind = pending_push_token_kind, push_token_id = pending_push_token_id,"
        " pending_push_token_kind = NULL, pending_push_token_id = NULL, push_registration_error_code = NULL"
        " WHERE id = ?",
        (device.id,),
    )
    devices.publish_update(tx, device, push_token_id=device.pending_push_token_id, pending_push_token_id=None)
    assert device.pending_push_token_kind is not None
    remove_legacy_tokens_with_id(tx, device.user_id, device.pending_push_token_kind, device.pending_push_token_id)


# -- legacy (unencrypted) registrations ------------------------------------------------------------

LEGACY_TOKEN_MAX_LENGTH = 4096


def check_legacy_token(kind: str, token: str) -> None:
    if token == "" or len(token) > LEGACY_TOKEN_MAX_LENGTH:
        raise ApiError("Empty or invalid length token")
    if kind == "apns":
        try:
            base64.b64decode(token)  # as Zulip: the token must at least decode
        except (binascii.Error, ValueError):
            raise ApiError("Invalid APNS token") from None


def add_legacy_token(tx: Tx, user: users.User, kind: str, token: str, ios_app_id: str | None = None) -> None:
    """Store a legacy push token of the user (again: it keeps its first registration)."""
    check_human(user)
    check_legacy_token(kind, token)
    tx.execute(
        "INSERT INTO legacy_push_tokens (user_id, kind, token, ios_app_id, date_created) VALUES (?, ?, ?, ?, ?)"
        " ON CONFLICT (user_id, kind, token) DO UPDATE SET ios_app_id = excluded.ios_app_id",
        (user.id, kind, token, ios_app_id, tx.timestamp),
    )


def remove_legacy_token(tx: Tx, user: users.User, kind: str, token: str) -> None:
    """Delete the user's legacy push token; raise "Device not recognized" when there is none."""
    check_human(user)
    check_legacy_token(kind, token)
    cursor = tx.execute(
        "DELETE FROM legacy_push_tokens WHERE user_id = ? AND kind = ? AND token = ?", (user.id, kind, token)
    )
    if cursor.rowcount == 0:
        raise ApiError("Device not recognized", "INVALID_PUSH_DEVICE_TOKEN")


def remove_legacy_tokens_with_id(tx: Tx, user_id: int, kind: str, token_id: str) -> int:
    """Delete the user's legacy tokens of this kind whose token_id matches; return how many."""
    rows = tx.all("SELECT id, token FROM legacy_push_tokens WHERE user_id = ? AND kind = ?", (user_id, kind))
    matching = [(row["id"],) for row in rows if token_id_of(row["token"]) == token_id]
    tx.executemany("DELETE FROM legacy_push_tokens WHERE id = ?", matching)
    return len(matching)
