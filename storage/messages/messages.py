"""Sending messages: destinations, content rules, per-user rows with flags, and the message event.

POST /messages, scheduled delivery and anything else that sends goes through validate_send and
store_message, so every message is checked by the same rules and stored in one transaction.
"""

from __future__ import annotations

from typing import Any

import msgspec

from storage.channels.channels import (
    channel_does_not_exist,
    has_content_access,
    has_metadata_access,
    is_subscribed,
    subscriber_ids,
)
from storage.channels.topics import check_topic_allowed, normalize_topic, topic_exists
from storage.db.tx import Tx, topic_key
from storage.fetch.message_objects import event_message_object
from storage.messages import muted_users
from storage.messages.attachments import claim_attachments
from storage.messages.message_render import render_message
from storage.messages.submessages import create_widget_submessage
from storage.messages.widgets import check_widget_content
from storage.model import avatars, flags, recipients
from storage.model.channel import Channel, get_channel_by_id, get_channel_by_name
from storage.model.errors import ApiError
from storage.model.message import Destination, Rendered
from storage.model.realm import MAX_MESSAGE_LENGTH, get_realm
from storage.model.user import User
from storage.org import alert_words, groups
from storage.org.users import api_email, get_user_by_api_email, get_user_by_id
from storage.push import push_notifications

MESSAGE_TYPES = {"stream": "stream", "channel": "stream", "private": "private", "direct": "private"}
TRUNCATED = "\n[message truncated]"
# Clients whose messages start read for their sender: a person is looking at them (Zulip's list).
READ_BY_SENDER_CLIENTS = {
    "zulipandroid", "zulipios", "zulipdesktop", "zulipmobile", "zulipelectron", "zulipterminal", "snipe",
    "website", "ios", "android",
}  # fmt: skip
MIXED_RECIPIENTS = "Recipient lists may contain emails or user IDs, but not both."
# Private keys of the message event, read by the event queues (tornchat/events/) to format it per queue and
# stripped before it reaches a client: the Markdown source (apply_markdown=false), what decides
# the sender's avatar_url (client_gravatar), the sending queue (local_message_id), public channels
# (all_public_streams queues).
RAW_CONTENT, SENDER_INFO, LOCAL, PUBLIC_CHANNEL = "_raw_content", "_sender", "_local", "_public_channel"


class SendRequest(msgspec.Struct, kw_only=True):
    """A message to send, with `to` already decoded (int, name, list of ids or emails, or None)."""

    type: str
    to: Any
    content: str
    topic: str | None = None
    read_by_sender: bool | None = None
    client: str = "Unspecified"
    # The sending client's event queue and its id for the message (local echo), when it gave both.
    queue_id: str | None = None
    local_id: str | None = None
    # A widget given with the message (JSON text; Zulip's bots send zform buttons): widgets.check_widget_content.
    widget_content: str | None = None


def message_type(value: str) -> str:
    """Return "stream" or "private" for any accepted type name; "Invalid type" otherwise."""
    if value not in MESSAGE_TYPES:
        raise ApiError("Invalid type")
    return MESSAGE_TYPES[value]


def check_content(content: str) -> str:
    """Return the content to store (trailing whitespace and leading blank lines dropped, long content
    truncated), or raise for empty content or null bytes."""
    # Leading spaces stay: they can start an indented code block.
    content = content.rstrip().lstrip("\n")
    if not content:
        raise ApiError("Message must not be empty")
    if "\x00" in content:
        raise ApiError("Message must not contain null bytes")
    if len(content) > MAX_MESSAGE_LENGTH:
        content = content[: MAX_MESSAGE_LENGTH - len(TRUNCATED)] + TRUNCATED
    return content


# -- channel messages ---------------------------------------------------------------------------


def channel_target(to: Any) -> int | str:
    """Return the channel id or name a channel message's `to` holds (a list of one is accepted)."""
    if isinstance(to, list):
        if len(to) > 1:
            raise ApiError("Cannot send to multiple channels")
        if not to:
            raise ApiError("Expected exactly one channel")
        to = to[0]
    if to is None or to == "":
        raise ApiError("Missing channel")
    if isinstance(to, bool) or not isinstance(to, (int, str)):
        raise ApiError("Invalid data type for channel")
    return to


def _may_post(tx: Tx, user: User, channel: Channel) -> bool:
    subscribed = is_subscribed(tx, user.id, channel.id)
    if not has_content_access(tx, user, channel, subscribed):
        return False
    # Zulip: content access through a group (not a subscription) lets one post to a private channel
    # only where its history is public to subscribers.
    return subscribed or channel.is_web_public or not channel.invite_only or channel.history_public_to_subscribers


def _owner_subscribed(tx: Tx, sender: User, channel: Channel) -> bool:
    """Bots may post wherever their owner is subscribed (as in Zulip)."""
    return sender.is_bot and sender.bot_owner_id is not None and is_subscribed(tx, sender.bot_owner_id, channel.id)


def _has_permission(tx: Tx, user: User, group_id: int) -> bool:
    """Group-setting check for sending: a bot may use its owner's permission (as in Zulip)."""
    if groups.is_member(tx, user.id, group_id):
        return True
    return user.is_bot and user.bot_owner_id is not None and groups.is_member(tx, user.bot_owner_id, group_id)


def access_channel_for_sending(tx: Tx, sender: User, target: int | str) -> Channel:
    """Return the channel (by id or name) if the sender may post there; the API's errors otherwise.

    A channel the sender may not even know of gets the same answer as one that does not exist.
    """
    channel = get_channel_by_id(tx, target) if isinstance(target, int) else get_channel_by_name(tx, target)
    bot_of_subscriber = channel is not None and _owner_subscribed(tx, sender, channel)
    if channel is None or not (bot_of_subscriber or has_metadata_access(tx, sender, channel)):
        if isinstance(target, int):
            raise ApiError(
                f"Channel with ID '{target}' does not exist", "STREAM_DOES_NOT_EXIST", data={"stream_id": target}
            )
        raise channel_does_not_exist(target)
    # Zulip's order: the posting permission first, then archived, then access to the content.
    if not _has_permission(tx, sender, channel.can_send_message_group):
        raise ApiError("You do not have permission to post in this channel.")
    if channel.is_archived or not (bot_of_subscriber or _may_post(tx, sender, channel)):
        raise ApiError(f"Not authorized to send to channel '{channel.name}'")
    return channel


def channel_destination(tx: Tx, sender: User, target: int | str, topic: str) -> Destination:
    """Return where a channel message goes; `topic` is already normalized."""
    channel = access_channel_for_sending(tx, sender, target)
    recipient_id = recipients.get_or_create_recipient(tx, recipients.CHANNEL, channel.id)
    # Only a new topic needs the permission; existing topics compare case-insensitively.
    if not _has_permission(tx, sender, channel.can_create_topic_group) and not topic_exists(tx, recipient_id, topic):
        raise ApiError("You do not have permission to create new topics in this channel.")
    check_topic_allowed(tx, channel, topic)
    receivers = sorted(set(subscriber_ids(tx, channel.id)) | {sender.id})
    return Destination(recipient_id, channel, topic, receivers)


# -- direct messages ----------------------------------------------------------------------------


def direct_recipient_items(to: Any) -> list[int] | list[str]:
    """Return the user ids or emails a direct message's `to` holds, without duplicates.

    Accepted: a JSON list of ids or of emails, or emails separated by commas. The first item decides
    which kind the list is; any item of the other kind is an error.
    """
    if to is None:
        return []
    if isinstance(to, str):
        to = to.split(",")
    if not isinstance(to, list):
        raise ApiError("Invalid data type for recipients")
    if not to:
        return []
    if isinstance(to[0], str):
        if not all(isinstance(item, str) for item in to):
            raise ApiError(MIXED_RECIPIENTS)
        return list(dict.fromkeys(email.strip() for email in to if email.strip()))
    if isinstance(to[0], bool) or not isinstance(to[0], int):
        raise ApiError("Invalid data type for recipients")
    if not all(isinstance(item, int) and not isinstance(item, bool) for item in to):
        raise ApiError(MIXED_RECIPIENTS)
    return list(dict.fromkeys(to))


def resolve_direct_recipients(tx: Tx, to: Any) -> list[User]:
    """Return the users a direct message's `to` names; "Invalid user ID"/"Invalid email" otherwise."""
    items = direct_recipient_items(to)
    if not items:
        raise ApiError("Message must have recipients")
    realm = get_realm(tx)
    found: dict[int, User] = {}
    for item in items:
        user = get_user_by_id(tx, item) if isinstance(item, int) else get_user_by_api_email(tx, item, realm)
        if user is None:
            raise ApiError(f"Invalid user ID {item}" if isinstance(item, int) else f"Invalid email '{item}'")
        found[user.id] = user
    return list(found.values())


def direct_destination(tx: Tx, sender: User, users: list[User]) -> Destination:
    """Return the conversation of the sender and these users (one conversation per set of people)."""
    realm = get_realm(tx)
    for user in users:
        if not user.is_active:
            raise ApiError(f"'{api_email(user, realm)}' is no longer using Zulip.")
    participants = sorted({sender.id} | {u.id for u in users})
    recipient_id = recipients.get_or_create_direct_message_group(tx, participants)
    return Destination(recipient_id, None, "", participants)


# -- validation and storage ---------------------------------------------------------------------


def validate_send(tx: Tx, sender: User, request: SendRequest) -> tuple[Destination, str]:
    """Return the destination and content of a message to send; raise the API's error otherwise.

    Checks run in Zulip's order: type, the shape of `to` (and the topic), content, then access.
    """
    if message_type(request.type) == "stream":
        target = channel_target(request.to)
        if request.topic is None:
            raise ApiError("Missing topic")
        topic = normalize_topic(request.topic)
        content = check_content(request.content)
        return channel_destination(tx, sender, target, topic), content
    users = resolve_direct_recipients(tx, request.to)
    content = check_content(request.content)
    return direct_destination(tx, sender, users), content


def default_read_by_sender(client: str, sender: User, destination: Destination) -> bool:
    """Zulip's heuristic: read when sent from an interactive client, unless it is a DM to oneself."""
    name = client.lower()
    interactive = name in READ_BY_SENDER_CLIENTS or "desktop app" in name
    to_self_only = destination.channel is None and destination.receivers == [sender.id]
    return interactive and not to_self_only


def user_flags(
    tx: Tx, sender: User, destination: Destination, rendered: Rendered, read_by_sender: bool
) -> dict[int, int]:
    """Return each receiver's initial flag bits."""
    receivers = set(destination.receivers)
    base = flags.IS_PRIVATE if destination.channel is None else 0
    if rendered.stream_wildcard:
        base |= flags.STREAM_WILDCARD_MENTIONED
    result = dict.fromkeys(destination.receivers, base)
    for user_id in rendered.mentioned_user_ids & receivers:
        result[user_id] |= flags.MENTIONED
    # Zulip sets `mentioned` for the members of a mentioned group too; group_mentioned tells them apart.
    for group_id in rendered.mentioned_group_ids:
        for user_id in set(groups.recursive_member_ids(tx, group_id)) & receivers:
            result[user_id] |= flags.MENTIONED | flags.GROUP_MENTIONED
    if rendered.topic_wildcard:
        for user_id in topic_participants(tx, sender, destination) & receivers:
            result[user_id] |= flags.TOPIC_WILDCARD_MENTIONED
    if read_by_sender:
        result[sender.id] |= flags.READ
    # Zulip's rule: a message from someone the receiver muted arrives read (no unread count, no push).
    for user_id in muted_users.muters_of(tx, sender.id, receivers - {sender.id}):
        result[user_id] |= flags.READ
    return result


def topic_participants(tx: Tx, sender: User, destination: Destination) -> set[int]:
    """Users who sent or reacted to a message in the destination's topic, and the sender (@**topic**)."""
    if destination.channel is None:
        return set(destination.receivers)
    in_topic = "m.recipient_id = ? AND m.topic_key = ?"
    key = topic_key(destination.topic)
    participants = tx.column(
        f"SELECT m.sender_id FROM messages AS m WHERE {in_topic}"
        f" UNION SELECT r.user_id FROM reactions AS r JOIN messages AS m ON m.id = r.message_id WHERE {in_topic}",
        (destination.recipient_id, key, destination.recipient_id, key),
    )
    return set(participants) | {sender.id}


def send_message(tx: Tx, sender: User, request: SendRequest) -> int:
    """Store a message, one user_messages row per receiver, and publish it; return its id."""
    destination, content = validate_send(tx, sender, request)
    widget = None if request.widget_content is None else check_widget_content(request.widget_content)
    local = None
    if request.queue_id is not None and request.local_id is not None:
        local = {"queue_id": request.queue_id, "local_id": request.local_id}
    return store_message(
        tx, sender, destination, content, request.client, request.read_by_sender, local=local, widget=widget
    )


def store_message(
    tx: Tx,
    sender: User,
    destination: Destination,
    content: str,
    client: str,
    read_by_sender: bool | None,
    *,
    local: dict[str, str] | None = None,
    widget: tuple[str, Any] | None = None,
) -> int:
    """Insert a validated message with its per-user rows in the current transaction; return its id.

    The caller's transaction makes the message, its rows and its events one unit: if anything
    fails, nothing of it is stored or published.
    """
    rendered = render_message(tx, content, sender=sender)
    cursor = tx.execute(
        "INSERT INTO messages (sender_id, recipient_id, channel_id, topic, topic_key, content, rendered_content,"
        " date_sent, client, is_me_message, has_link, has_image, has_attachment)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            sender.id, destination.recipient_id, destination.channel.id if destination.channel else None,
            destination.topic, topic_key(destination.topic), content, rendered.html, tx.timestamp, client,
            rendered.is_me_message, rendered.has_link, rendered.has_image, rendered.has_attachment,
        ),
    )  # fmt: skip
    message_id = int(cursor.lastrowid or 0)
    if read_by_sender is None:
        read_by_sender = default_read_by_sender(client, sender, destination)
    bits = user_flags(tx, sender, destination, rendered, read_by_sender)
    alert_words.flag_alert_words(tx, sender.id, content, bits)
    # Inserted before the COMMIT, with the rows of the other messages of a batch (Tx.insert_user_messages).
    tx.insert_user_messages([(user_id, message_id, value) for user_id, value in bits.items()])
    push_notifications.notify_new_message(tx, message_id, sender, destination, rendered, bits)
    claim_attachments(tx, sender, message_id, rendered.html)
    create_widget_submessage(tx, sender.id, message_id, content, widget)  # before the event, which shows it
    publish_message(tx, message_id, bits, local=local)
    return message_id


def publish_message(tx: Tx, message_id: int, bits: dict[int, int], *, local: dict[str, str] | None = None) -> None:
    """Publish the message event, once per distinct flag set, to the users with those flags."""
    message = event_message_object(tx, message_id)
    row = tx.one(
        "SELECT m.content, c.invite_only FROM messages AS m LEFT JOIN channels AS c ON c.id = m.channel_id"
        " WHERE m.id = ?",
        (message_id,),
    )
    sender = get_user_by_id(tx, message["sender_id"])
    assert row is not None and sender is not None
    private = {
        RAW_CONTENT: row["content"],
        SENDER_INFO: {
            "user_id": sender.id, "visibility": sender.email_address_visibility, "is_bot": sender.is_bot,
            "gravatar": avatars.uses_gravatar(sender, get_realm(tx)),
        },
        PUBLIC_CHANNEL: row["invite_only"] is not None and not row["invite_only"],
    }  # fmt: skip
    if local is not None:
        private[LOCAL] = local
    by_flags: dict[int, list[int]] = {}
    for user_id, value in bits.items():
        by_flags.setdefault(value, []).append(user_id)
    for value, user_ids in sorted(by_flags.items()):
        tx.publish({"type": "message", "message": message, "flags": flags.flag_names(value), **private}, user_ids)
