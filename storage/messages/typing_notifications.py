"""Typing notifications (POST /typing, POST /messages/{id}/typing): events only, nothing is stored.

Zulip's protocol is stateless: clients send "start" every few seconds while the user types and
"stop" when they stop, and receivers expire a "start" on their own. So the server checks that the
sender may write to the conversation and tells its other participants; nobody who cannot see the
conversation ever hears of it, and the sender is not told of their own typing.
"""

from __future__ import annotations

from typing import Any

import msgspec

from storage.channels.channels import access_channel_by_id, content_access_ids, subscriber_ids
from storage.channels.topics import normalize_topic
from storage.db.tx import Tx
from storage.fetch.message_access import access_message, message_channel
from storage.messages.messages import access_channel_for_sending
from storage.model.errors import ApiError, missing_argument
from storage.model.realm import Realm
from storage.model.user import MAX_ID, User
from storage.org.user_settings_definitions import get_user_settings
from storage.org.users import api_email, list_users

OPERATIONS = ("start", "stop")
DIRECT, STREAM = "direct", "stream"
# Zulip's aliases: "private" for direct, "channel" for stream.
MESSAGE_TYPES = {"direct": DIRECT, "private": DIRECT, "stream": STREAM, "channel": STREAM}
# Channel typing notifications go only to channels this small (Zulip's
# MAX_STREAM_SIZE_FOR_TYPING_NOTIFICATIONS): past it, the events cost more than they tell.
MAX_CHANNEL_SIZE_FOR_TYPING_NOTIFICATIONS = 100
# The protocol clients follow (Zulip's settings, sent by POST /register): resend "start" every 30 s while
# typing, send "stop" 12 s after the last keystroke, and drop another's indicator 45 s after its last "start".
# The server keeps no typing state, so these are the clients' to keep.
TYPING_STARTED_WAIT_PERIOD_MILLISECONDS = 30_000
TYPING_STOPPED_WAIT_PERIOD_MILLISECONDS = 12_000
TYPING_STARTED_EXPIRY_PERIOD_MILLISECONDS = 45_000
# Which of a typing event's audience turned typing notifications off, by user_settings' primary key
# (user_id, name): typing events go out every few seconds per typing user, and scanning every
# user's settings each time would grow with the realm.
DECLINED_SQL = (
    "SELECT user_id FROM user_settings WHERE user_id IN (SELECT value FROM json_each(?))"
    " AND name = 'receives_typing_notifications' AND value = 'false'"
)


def check_operation(op: str) -> str:
    """Return op if it is start or stop; "Invalid op" otherwise."""
    if op not in OPERATIONS:
        raise ApiError("Invalid op")
    return op


def _person(user: User, realm: Realm) -> dict[str, Any]:
    return {"user_id": user.id, "email": api_email(user, realm)}


def _check_sends(tx: Tx, sender: User, setting: str, kind: str) -> None:
    if not get_user_settings(tx, sender)[setting]:
        raise ApiError(f"User has disabled typing notifications for {kind} messages")


def _receivers(tx: Tx, user_ids: set[int]) -> set[int]:
    """The users among user_ids who did not turn receives_typing_notifications off."""
    declined = tx.column(DECLINED_SQL, (msgspec.json.encode(sorted(user_ids)).decode(),))
    return user_ids - set(declined)


def send_typing(
    tx: Tx, realm: Realm, sender: User, op: str, kind: str, to: list[int] | None, stream_id: int | None,
    topic: str | None,
) -> None:  # fmt: skip
    """POST /typing: publish a typing event to the conversation's other participants."""
    check_operation(op)
    message_type = MESSAGE_TYPES.get(kind)
    if message_type is None:
        raise ApiError("Invalid type")
    if message_type == STREAM:
        send_channel_typing(tx, realm, sender, op, stream_id, topic)
    else:
        send_direct_typing(tx, realm, sender, op, to)


def send_direct_typing(tx: Tx, realm: Realm, sender: User, op: str, to: list[int] | None) -> None:
    """Typing in a direct message conversation: to its other active participants."""
    if to is None:
        raise missing_argument("to")
    if not to:
        raise ApiError("Empty 'to' list")
    _check_sends(tx, sender, "send_private_typing_notifications", "direct")
    # One query for every participant; any unknown id rejects the whole request: a partial list
    # would name another conversation.
    participants = list_users(tx, sorted({user_id for user_id in to if 0 < user_id <= MAX_ID} | {sender.id}))
    known = {user.id for user in participants}
    for user_id in to:
        if user_id not in known:
            raise ApiError(f"Invalid user ID {user_id}")
    event = {
        "type": "typing", "op": op, "message_type": DIRECT, "sender": _person(sender, realm),
        "recipients": [_person(user, realm) for user in participants],
    }  # fmt: skip
    tx.publish(event, _receivers(tx, {user.id for user in participants if user.is_active}) - {sender.id})


def send_channel_typing(tx: Tx, realm: Realm, sender: User, op: str, stream_id: int | None, topic: str | None) -> None:
    """Typing in a channel topic: to the channel's subscribers who may read it (small channels only)."""
    if stream_id is None:
        raise missing_argument("stream_id")
    if topic is None:
        raise ApiError("Missing topic")
    _check_sends(tx, sender, "send_stream_typing_notifications", "channel")
    access_channel_by_id(tx, sender, stream_id)
    channel = access_channel_for_sending(tx, sender, stream_id)
    topic = normalize_topic(topic)
    subscribers = subscriber_ids(tx, channel.id)
    if len(subscribers) > MAX_CHANNEL_SIZE_FOR_TYPING_NOTIFICATIONS:
        return
    audience = _receivers(tx, content_access_ids(tx, channel, set(subscribers))) - {sender.id}
    event = {
        "type": "typing", "op": op, "message_type": STREAM, "sender": _person(sender, realm),
        "stream_id": channel.id, "topic": topic,
    }  # fmt: skip
    tx.publish(event, audience)


def send_edit_typing(tx: Tx, sender: User, message_id: int, op: str) -> None:
    """POST /messages/{id}/typing: a typing_edit_message event while the sender edits their message.

    Only the message's sender may send it (they alone edit content); it goes to the users who can
    read the message: the direct message's participants, or the channel's subscribers who may read it.
    """
    check_operation(op)
    row, _ = access_message(tx, sender, message_id)
    if row["sender_id"] != sender.id:
        raise ApiError("You don't have permission to edit this message")
    channel = message_channel(tx, row)
    if channel is None:
        _check_sends(tx, sender, "send_private_typing_notifications", "direct")
        user_ids = tx.column("SELECT user_id FROM user_messages WHERE message_id = ? ORDER BY user_id", (message_id,))
        recipient: dict[str, Any] = {"type": "direct", "user_ids": user_ids}
        audience = {user.id for user in list_users(tx, user_ids) if user.is_active}
    else:
        _check_sends(tx, sender, "send_stream_typing_notifications", "channel")
        subscribers = subscriber_ids(tx, channel.id)
        if len(subscribers) > MAX_CHANNEL_SIZE_FOR_TYPING_NOTIFICATIONS:
            return
        recipient = {"type": "channel", "channel_id": channel.id, "topic": row["topic"]}
        audience = content_access_ids(tx, channel, set(subscribers))
    event = {"type": "typing_edit_message", "op": op, "sender_id": sender.id, "message_id": message_id,
             "recipient": recipient}  # fmt: skip
    tx.publish(event, _receivers(tx, audience) - {sender.id})
