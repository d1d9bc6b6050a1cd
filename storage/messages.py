"""Sending messages: destinations, content rules, per-user rows with flags, and the message event."""

from __future__ import annotations

from typing import Any

import msgspec

from storage import flags, groups, recipients
from storage.channels import (
    Channel,
    channel_does_not_exist,
    get_channel_by_id,
    get_channel_by_name,
    has_content_access,
    has_metadata_access,
    subscriber_ids,
)
from storage.db import Tx
from storage.errors import ApiError
from storage.message_objects import event_message_object
from storage.message_render import Rendered, render_message
from storage.realm import MAX_MESSAGE_LENGTH, get_realm
from storage.topics import check_topic_allowed, normalize_topic, topic_exists
from storage.users import User, get_user_by_api_email, get_user_by_id

MESSAGE_TYPES = {"stream": "stream", "channel": "stream", "private": "private", "direct": "private"}
TRUNCATED = "\n[message truncated]"
# Clients whose messages start read for their sender: the sender is looking at them.
READ_BY_SENDER_CLIENTS = {
    "zulipandroid", "zulipios", "zulipdesktop", "zulipmobile", "zulipelectron", "zulipterminal", "snipe",
    "website", "ios", "android",
}  # fmt: skip


class SendRequest(msgspec.Struct, kw_only=True):
    """A message to send, with `to` already decoded (int, name, list of ids or emails, or None)."""

    type: str
    to: Any
    content: str
    topic: str | None = None
    read_by_sender: bool | None = None
    client: str = "Unspecified"


class Destination(msgspec.Struct):
    """Where a validated message goes."""

    recipient_id: int
    channel: Channel | None
    topic: str
    receivers: list[int]  # every user who gets a user_messages row, the sender included


def message_type(value: str) -> str:
    """Return "stream" or "private" for any accepted type name; "Invalid type" otherwise."""
    if value not in MESSAGE_TYPES:
        raise ApiError("Invalid type")
    return MESSAGE_TYPES[value]


def check_content(content: str) -> str:
    """Return the content to store (long content truncated), or raise for empty or null bytes."""
    if not content.strip():
        raise ApiError("Message must not be empty")
    if "\x00" in content:
        raise ApiError("Message must not contain null bytes")
    if len(content) > MAX_MESSAGE_LENGTH:
        content = content[: MAX_MESSAGE_LENGTH - len(TRUNCATED)] + TRUNCATED
    return content


def _one_channel(to: Any) -> int | str:
    if isinstance(to, list):
        if len(to) != 1:
            raise ApiError("Cannot send to multiple channels")
        to = to[0]
    if to is None or to == "":
        raise ApiError("Missing channel")
    if isinstance(to, bool) or not isinstance(to, (int, str)):
        raise ApiError("Invalid data type for channel")
    return to


def access_channel_for_sending(tx: Tx, sender: User, to: Any) -> Channel:
    """Return the channel `to` names if the sender may post there; the API's errors otherwise."""
    target = _one_channel(to)
    channel = get_channel_by_id(tx, target) if isinstance(target, int) else get_channel_by_name(tx, target)
    if channel is None or not has_metadata_access(tx, sender, channel):
        if isinstance(target, int):
            raise ApiError(
                f"Channel with ID '{target}' does not exist", "STREAM_DOES_NOT_EXIST", data={"stream_id": target}
            )
        raise channel_does_not_exist(target)
    if channel.is_archived or not has_content_access(tx, sender, channel):
        raise ApiError(f"Not authorized to send to channel '{channel.name}'")
    if not groups.is_member(tx, sender.id, channel.can_send_message_group):
        raise ApiError("You do not have permission to post in this channel.")
    return channel


def channel_destination(tx: Tx, sender: User, to: Any, topic: str | None) -> Destination:
    channel = access_channel_for_sending(tx, sender, to)
    if topic is None:
        raise ApiError("Missing topic")
    topic = normalize_topic(topic)
    check_topic_allowed(tx, channel, topic)
    recipient_id = recipients.get_or_create_recipient(tx, recipients.CHANNEL, channel.id)
    if not topic_exists(tx, recipient_id, topic) and not groups.is_member(
        tx, sender.id, channel.can_create_topic_group
    ):
        raise ApiError("You do not have permission to create new topics in this channel.")
    receivers = sorted(set(subscriber_ids(tx, channel.id)) | {sender.id})
    return Destination(recipient_id, channel, topic, receivers)


def resolve_direct_recipients(tx: Tx, to: Any) -> list[User]:
    """Return the users a direct message's `to` names (ids or emails, not both)."""
    items = to if isinstance(to, list) else [to] if isinstance(to, int) else str(to).split(",")
    items = [i.strip() if isinstance(i, str) else i for i in items if not (isinstance(i, str) and not i.strip())]
    if any(isinstance(i, str) for i in items) and any(isinstance(i, int) for i in items):
        raise ApiError("Recipient lists may contain emails or user IDs, but not both.")
    realm = get_realm(tx)
    found: dict[int, User] = {}
    for item in items:
        if isinstance(item, bool) or not isinstance(item, (int, str)):
            raise ApiError("Invalid data type for recipients")
        user = get_user_by_id(tx, item) if isinstance(item, int) else get_user_by_api_email(tx, item, realm)
        if user is None:
            raise ApiError(f"Invalid user ID {item}" if isinstance(item, int) else f"Invalid email '{item}'")
        if not user.is_active:
            raise ApiError(f"'{user.delivery_email}' is no longer using Zulip.")
        found[user.id] = user
    if not found:
        raise ApiError("Message must have recipients")
    return list(found.values())


def direct_destination(tx: Tx, sender: User, to: Any) -> Destination:
    users = resolve_direct_recipients(tx, to)
    participants = sorted({sender.id} | {u.id for u in users})
    recipient_id = recipients.get_or_create_direct_message_group(tx, participants)
    return Destination(recipient_id, None, "", participants)


def default_read_by_sender(client: str, sender: User, destination: Destination) -> bool:
    """Zulip's heuristic: read when sent from an interactive client, unless it is a DM to oneself."""
    to_self_only = destination.channel is None and destination.receivers == [sender.id]
    return client.lower() in READ_BY_SENDER_CLIENTS and not to_self_only


def validate_send(tx: Tx, sender: User, request: SendRequest) -> tuple[Destination, str]:
    """Return the destination and content of a message to send; raise the API's error otherwise."""
    kind = message_type(request.type)
    content = check_content(request.content)
    if kind == "stream":
        destination = channel_destination(tx, sender, request.to, request.topic)
    else:
        destination = direct_destination(tx, sender, request.to)
    return destination, content


def user_flags(
    tx: Tx, sender: User, destination: Destination, rendered: Rendered, read_by_sender: bool
) -> dict[int, int]:
    """Return each receiver's initial flag bits."""
    receivers = set(destination.receivers)
    base = flags.IS_PRIVATE if destination.channel is None else 0
    result = dict.fromkeys(destination.receivers, base)
    for user_id in rendered.mentioned_user_ids & receivers:
        result[user_id] |= flags.MENTIONED
    for group_id in rendered.mentioned_group_ids:
        for user_id in set(groups.recursive_member_ids(tx, group_id)) & receivers:
            result[user_id] |= flags.GROUP_MENTIONED
    if rendered.stream_wildcard:
        for user_id in receivers:
            result[user_id] |= flags.STREAM_WILDCARD_MENTIONED
    if rendered.topic_wildcard:
        for user_id in topic_participants(tx, destination) & receivers:
            result[user_id] |= flags.TOPIC_WILDCARD_MENTIONED
    if read_by_sender:
        result[sender.id] |= flags.READ
    return result


def topic_participants(tx: Tx, destination: Destination) -> set[int]:
    """Users who sent a message in the destination's topic (the audience of @**topic**)."""
    if destination.channel is None:
        return set(destination.receivers)
    return set(
        tx.column(
            "SELECT DISTINCT sender_id FROM messages WHERE recipient_id = ? AND topic = ? COLLATE NOCASE",
            (destination.recipient_id, destination.topic),
        )
    )


def send_message(tx: Tx, sender: User, request: SendRequest) -> int:
    """Store a message, one user_messages row per receiver, and publish it; return its id."""
    destination, content = validate_send(tx, sender, request)
    return store_message(tx, sender, destination, content, request.client, request.read_by_sender)


def store_message(
    tx: Tx, sender: User, destination: Destination, content: str, client: str, read_by_sender: bool | None
) -> int:
    """Insert a validated message with its per-user rows in the current transaction; return its id."""
    rendered = render_message(tx, content)
    cursor = tx.execute(
        "INSERT INTO messages (sender_id, recipient_id, channel_id, topic, content, rendered_content, date_sent,"
        " client, is_me_message, has_link, has_image, has_attachment) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            sender.id, destination.recipient_id, destination.channel.id if destination.channel else None,
            destination.topic, content, rendered.html, tx.timestamp, client, rendered.is_me_message,
            rendered.has_link, rendered.has_image, rendered.has_attachment,
        ),
    )  # fmt: skip
    message_id = int(cursor.lastrowid or 0)
    if read_by_sender is None:
        read_by_sender = default_read_by_sender(client, sender, destination)
    bits = user_flags(tx, sender, destination, rendered, read_by_sender)
    tx.executemany(
        "INSERT INTO user_messages (user_id, message_id, flags) VALUES (?, ?, ?)",
        [(user_id, message_id, value) for user_id, value in sorted(bits.items())],
    )
    publish_message(tx, message_id, bits)
    return message_id


def publish_message(tx: Tx, message_id: int, bits: dict[int, int]) -> None:
    """Publish the message event, once per distinct flag set, to the users with those flags."""
    message = event_message_object(tx, message_id)
    by_flags: dict[int, list[int]] = {}
    for user_id, value in bits.items():
        by_flags.setdefault(value, []).append(user_id)
    for value, user_ids in sorted(by_flags.items()):
        tx.publish({"type": "message", "message": message, "flags": flags.flag_names(value)}, user_ids)
