"""Mobile push notifications, end-to-end encrypted with each device's key (Zulip's E2EE protocol).

Who: when a message is stored, each receiver other than the sender who is an active human, has
not read it, and has a device with a push key and a confirmed token, is notified when
  - it is a direct message to them;
  - it mentions them personally or through a group (the `mentioned` flag; as in Zulip, this
    notifies even in a muted channel or topic);
  - it mentions everyone (@**all**, @**topic**) and the subscription's wildcard_mentions_notify
    allows it: unset means the user's default (on), except in a muted channel or topic;
    set, it overrides a channel mute (not a topic mute), as in Zulip;
  - it is in a topic they follow (Zulip's enable_followed_topic_push_notifications, on by
    default), or in a channel whose push_notifications setting they turned on (the user's
    default is off), in both cases unless the channel or the topic is muted.
Muting follows Zulip's hierarchy: a muted topic is always muted; a muted channel is muted except
for topics the user unmuted or follows. A message from a user the receiver muted arrives read
(storage/messages/muted_users.py), so it notifies nobody who muted its sender, as in Zulip.

Payload (Zulip's E2EE payload, api/mobile-notifications, as the Zulip app decodes it): realm_url,
realm_name, user_id, sender_id, sender_full_name, sender_avatar_url, time, type "message",
message_id, content (the plain-text excerpt of storage/push/push_content.py, 200 characters and "…"
at most), recipient_type "channel" with channel_id, channel_name and topic, or "direct" with
recipient_user_ids (every participant's id, sorted: the app reads a direct message's conversation
from it) and, for a group conversation, pm_users (the same ids as a comma-separated string, as
Zulip's documentation shows). A group mention without a personal one adds mentioned_user_group_id
and mentioned_user_group_name (the smallest mentioned group the user is in). The removal payload:
realm_url, realm_name, user_id, type "remove", message_ids (the newest 200 at most).

Each payload is JSON, sealed with nacl.secret.SecretBox under the device's 32-byte key (its
push_key without the 0x31 tag), and queued in push_outbox (one row per device) as the body of a
request to the bouncer's `remotes/push/e2ee/notify`: {"realm_uuid", "push_requests": [one request]},
the request being Zulip's FCMPushRequest (token_id, fcm_priority, payload {push_key_id,
encrypted_data}) or APNsPushRequest (token_id, http_headers {apns_priority, apns_push_type},
payload {push_key_id, encrypted_data, aps}); a removal goes at normal priority (APNs: a silent
background push). tornchat/push_sender.py sends it.

Withdrawal: a queued notification sets the user's hidden ACTIVE_MOBILE_PUSH_NOTIFICATION bit.
When the message is read or deleted, a row still waiting in the outbox is deleted (never sent);
a device whose row already left gets a "remove" notification; the bit is cleared.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable
from typing import Any

import msgspec
import nacl.secret

from storage.db.tx import Tx, topic_key
from storage.model import flags
from storage.model.message import Destination, Rendered
from storage.model.realm import Realm, get_realm
from storage.model.user import User
from storage.org import groups
from storage.org.users import absolute_avatar_url
from storage.push import push_outbox
from storage.push.devices import Device, device_from_row
from storage.push.push_content import notification_text
from storage.push.push_outbox import OutboxRow

ACTIVE = flags.ACTIVE_MOBILE_PUSH_NOTIFICATION
WILDCARD = flags.STREAM_WILDCARD_MENTIONED | flags.TOPIC_WILDCARD_MENTIONED
TOPIC_MUTED, TOPIC_UNMUTED, TOPIC_FOLLOWED = 1, 2, 3
# Zulip's cap: a removal names the newest 200 messages (APNs payloads are limited to 4 KB).
MAX_REMOVE_IDS = 200

# The devices that can receive notifications, of a list of users (devices_by_user per user): a
# key and a confirmed token (POST /mobile_push/register stores only valid 0x31 keys).
PUSH_DEVICES = (
    "SELECT d.* FROM devices AS d WHERE d.user_id IN (SELECT value FROM json_each(?)) AND d.push_key IS NOT NULL"
    " AND d.push_token_id IS NOT NULL ORDER BY d.user_id, d.id"
)
# Each candidate's settings for a channel message: subscription and topic visibility policy.
CHANNEL_SETTINGS = (
    "SELECT u.id, s.is_muted, s.push_notifications, s.wildcard_mentions_notify, ut.visibility_policy"
    " FROM users AS u LEFT JOIN subscriptions AS s ON s.user_id = u.id AND s.channel_id = ?"
    " LEFT JOIN user_topics AS ut ON ut.user_id = u.id AND ut.channel_id = ? AND ut.topic_key = ?"
    " WHERE u.id IN (SELECT value FROM json_each(?))"
)

# Dropping a user's waiting notifications of some messages, by push_outbox_by_message.
WITHDRAW_WAITING = (
    "DELETE FROM push_outbox WHERE message_id IN (SELECT value FROM json_each(?)) AND user_id = ?"
    " AND kind = 'notify' RETURNING device_id, message_id"
)


class NewMessage(msgspec.Struct):
    """What a notification says about a new message, shared by its receivers."""

    id: int
    sender: User
    time: int
    content: str
    channel_id: int | None
    channel_name: str
    topic: str
    participants: list[int]  # a direct message's conversation, the sender included


def push_devices(tx: Tx, user_ids: Iterable[int]) -> list[Device]:
    """Return the devices of these users that have a push key and a confirmed token."""
    return [device_from_row(row) for row in tx.all(PUSH_DEVICES, (json.dumps(sorted(set(user_ids))),))]


# What APNs shows before the app has decrypted a notification (Zulip's E2EE APNs request), and
# the silent push of a removal.
APNS_ALERT = {"mutable-content": 1, "alert": {"title": "New notification"}, "sound": "default"}
APNS_BACKGROUND = {"content-available": 1}


def encrypted_body(realm: Realm, device: Device, payload: dict[str, Any]) -> dict[str, Any]:
    """Return the body of a notify request carrying the payload sealed with the device's key."""
    assert device.secret_key is not None
    box = nacl.secret.SecretBox(device.secret_key)
    sealed = box.encrypt(msgspec.json.encode(payload))
    data = {"push_key_id": device.push_key_id, "encrypted_data": base64.b64encode(bytes(sealed)).decode("ascii")}
    urgent = payload["type"] == "message"
    if device.push_token_kind == "apns":
        request: dict[str, Any] = {
            "token_id": device.push_token_id,
            "http_headers": {
                "apns_priority": 10 if urgent else 5,
                "apns_push_type": "alert" if urgent else "background",
            },
            "payload": {**data, "aps": APNS_ALERT if urgent else APNS_BACKGROUND},
        }
    else:
        request = {"token_id": device.push_token_id, "fcm_priority": "high" if urgent else "normal", "payload": data}
    return {"realm_uuid": realm.uuid, "push_requests": [request]}


def base_payload(realm: Realm, user_id: int) -> dict[str, Any]:
    """Return the fields every payload carries: the realm and the user it is addressed to."""
    return {"realm_url": realm.url, "realm_name": realm.name, "user_id": user_id}


# -- who is notified ---------------------------------------------------------------------------


def _allows(setting: int | None, default: bool, channel_muted: bool, overrides_mute: bool) -> bool:
    """Zulip's hierarchy of a channel's notification setting (the topic mute was checked before)."""
    if channel_muted:
        return overrides_mute and bool(setting)
    return default if setting is None else bool(setting)


def _wants_channel_notification(bits: int, settings: Any) -> bool:
    policy = settings["visibility_policy"]
    if policy == TOPIC_MUTED:
        return False
    if policy == TOPIC_FOLLOWED:
        return True
    channel_muted = bool(settings["is_muted"]) and policy != TOPIC_UNMUTED
    # Stricter than Zulip, where a personal mention notifies even in a muted channel: nothing from a
    # channel or topic the user muted, unless a setting they turned on for it says otherwise.
    if bits & flags.MENTIONED and not channel_muted:
        return True
    if bits & WILDCARD and _allows(settings["wildcard_mentions_notify"], True, channel_muted, True):
        return True
    return _allows(settings["push_notifications"], False, channel_muted, False)


def users_to_notify(tx: Tx, message: NewMessage, bits: dict[int, int], candidates: set[int]) -> list[int]:
    """Return the candidates (receivers with push devices) this new message notifies."""
    humans = tx.column(
        "SELECT id FROM users WHERE id IN (SELECT value FROM json_each(?)) AND is_active AND NOT is_bot",
        (json.dumps(sorted(candidates - {message.sender.id})),),
    )
    users = [user_id for user_id in humans if not bits[user_id] & flags.READ]
    if message.channel_id is None or not users:
        return sorted(users)
    params = (message.channel_id, message.channel_id, topic_key(message.topic), json.dumps(users))
    rows = tx.all(CHANNEL_SETTINGS, params)
    return sorted(row["id"] for row in rows if _wants_channel_notification(bits[row["id"]], row))


def mentioned_groups(
    tx: Tx, rendered: Rendered, user_ids: list[int], bits: dict[int, int]
) -> dict[int, tuple[int, str]]:
    """Return, for users mentioned only through groups, the smallest mentioned group they are in."""
    only_group = [u for u in user_ids if bits[u] & flags.GROUP_MENTIONED and u not in rendered.mentioned_user_ids]
    if not only_group:
        return {}
    result: dict[int, tuple[int, str]] = {}
    members = {group_id: set(groups.recursive_member_ids(tx, group_id)) for group_id in rendered.mentioned_group_ids}
    for group_id in sorted(members, key=lambda g: (len(members[g]), g)):
        name = tx.value("SELECT name FROM user_groups WHERE id = ?", (group_id,))
        for user_id in members[group_id] & set(only_group):
            result.setdefault(user_id, (group_id, name))
    return result


# -- queueing ----------------------------------------------------------------------------------


def message_payload(realm: Realm, message: NewMessage, user_id: int, group: tuple[int, str] | None) -> dict[str, Any]:
    """Return the "message" payload of a new message for one receiver."""
    payload = base_payload(realm, user_id)
    payload.update(
        type="message", message_id=message.id, time=message.time, content=message.content,
        sender_id=message.sender.id, sender_full_name=message.sender.full_name,
        sender_avatar_url=absolute_avatar_url(message.sender, realm),
    )  # fmt: skip
    if group is not None:
        payload.update(mentioned_user_group_id=group[0], mentioned_user_group_name=group[1])
    if message.channel_id is not None:
        payload.update(
            recipient_type="channel", channel_id=message.channel_id, channel_name=message.channel_name,
            topic=message.topic,
        )  # fmt: skip
    else:
        participants = sorted(message.participants)
        payload.update(recipient_type="direct", recipient_user_ids=participants)
        if len(participants) > 2:
            payload["pm_users"] = ",".join(str(u) for u in participants)
    return payload


def notify_new_message(
    tx: Tx, message_id: int, sender: User, destination: Destination, rendered: Rendered, bits: dict[int, int]
) -> list[int]:
    """Queue the notifications of a message just stored with these receivers' flag bits; return the
    users notified. Cheap when no receiver has a push device: one indexed query."""
    devices = push_devices(tx, (user_id for user_id in bits if user_id != sender.id))
    if not devices:
        return []
    message = new_message(message_id, sender, destination, tx.timestamp, rendered)
    user_ids = users_to_notify(tx, message, bits, {d.user_id for d in devices})
    if not user_ids:
        return []
    group_of = mentioned_groups(tx, rendered, user_ids, bits)
    realm = get_realm(tx)
    notified = set(user_ids)
    for device in devices:
        if device.user_id in notified:
            payload = message_payload(realm, message, device.user_id, group_of.get(device.user_id))
            body = encrypted_body(realm, device, payload)
            push_outbox.enqueue(tx, device.id, "notify", body, user_id=device.user_id, message_id=message_id)
    tx.executemany(
        f"UPDATE user_messages SET flags = flags | {ACTIVE} WHERE user_id = ? AND message_id = ?",
        [(user_id, message_id) for user_id in user_ids],
    )
    return user_ids


def new_message(message_id: int, sender: User, destination: Destination, time: int, rendered: Rendered) -> NewMessage:
    """Return what notifications say about a message."""
    content, _ = notification_text(rendered.html)
    channel = destination.channel
    if channel is None:
        return NewMessage(message_id, sender, time, content, None, "", "", destination.receivers)
    return NewMessage(message_id, sender, time, content, channel.id, channel.name, destination.topic, [])


# -- withdrawal --------------------------------------------------------------------------------


def _withdraw(tx: Tx, user_id: int, message_ids: list[int]) -> None:
    """Withdraw the user's notifications of these messages (all with the ACTIVE bit set)."""
    waiting = tx.all(WITHDRAW_WAITING, (json.dumps(message_ids), user_id))
    unsent = {(row["device_id"], row["message_id"]) for row in waiting}
    realm = get_realm(tx)
    for device in push_devices(tx, [user_id]):
        sent = sorted(m for m in message_ids if (device.id, m) not in unsent)[-MAX_REMOVE_IDS:]
        if sent:
            _enqueue_removal(tx, realm, device, sent)
    tx.executemany(
        f"UPDATE user_messages SET flags = flags & ~{ACTIVE} WHERE user_id = ? AND message_id = ?",
        [(user_id, message_id) for message_id in message_ids],
    )


def _enqueue_removal(tx: Tx, realm: Realm, device: Device, message_ids: list[int]) -> None:
    payload = {**base_payload(realm, device.user_id), "type": "remove", "message_ids": message_ids}
    push_outbox.enqueue(tx, device.id, "notify", encrypted_body(realm, device, payload), user_id=device.user_id)


def withdrawn_in_flight(tx: Tx, row: OutboxRow, error_code: str | None) -> None:
    """The service accepted a notification whose row was withdrawn while it was on its way (the
    message was read or deleted meanwhile): send its removal, unless the device itself is gone."""
    if error_code is not None or row.message_id is None:
        return
    device = next((d for d in push_devices(tx, [row.user_id]) if d.id == row.device_id), None)
    if device is not None:
        _enqueue_removal(tx, get_realm(tx), device, [row.message_id])


def withdraw_for_user(tx: Tx, user_id: int, message_ids: list[int]) -> None:
    """Withdraw the user's notifications of these messages (just read), where one was queued."""
    if not message_ids:
        return
    active = tx.column(
        f"SELECT message_id FROM user_messages WHERE user_id = ? AND message_id IN (SELECT value FROM json_each(?))"
        f" AND (flags & {ACTIVE}) != 0",
        (user_id, json.dumps(message_ids)),
    )
    if active:
        _withdraw(tx, user_id, active)


def withdraw_unread(tx: Tx, user_id: int) -> None:
    """Withdraw the notifications of every unread message of the user (before marking all read)."""
    active = tx.column(
        "SELECT message_id FROM user_messages INDEXED BY user_messages_unread"
        f" WHERE user_id = ? AND (flags & 1) = 0 AND (flags & {ACTIVE}) != 0",
        (user_id,),
    )
    if active:
        _withdraw(tx, user_id, active)


def withdraw_message(tx: Tx, message_id: int) -> None:
    """Withdraw every notification of a message being deleted (before its user_messages rows go)."""
    users = tx.column(
        f"SELECT user_id FROM user_messages WHERE message_id = ? AND (flags & {ACTIVE}) != 0", (message_id,)
    )
    for user_id in users:
        _withdraw(tx, user_id, [message_id])
