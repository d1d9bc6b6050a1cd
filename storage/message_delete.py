"""Deleting messages (DELETE /messages/{message_id}) and who sees a message, for edit and delete events.

Deletion is Zulip's rule set: organization administrators and the realm's or the channel's
can_delete_any_message_group may delete any message; a sender (or the owner of a sending bot) may
delete their own if in the realm's can_delete_own_message_group or, for channel messages, the
channel's. Deleting is final: the message, its reactions and per-user rows are removed (the FTS
triggers drop it from search); nothing is archived for restoring.
"""

from __future__ import annotations

import json
from typing import Any

from storage import groups
from storage.channels import Channel, get_channel_by_id, subscriber_ids
from storage.db import Tx
from storage.errors import ApiError
from storage.message_access import access_message
from storage.realm import realm_group
from storage.users import User, get_user_by_id


def no_delete_permission() -> ApiError:
    return ApiError("You don't have permission to delete this message")


# -- who sees a message ----------------------------------------------------------------------


def message_channel(tx: Tx, row: Any) -> Channel | None:
    """Return the channel of a message row, or None for a direct message."""
    return None if row["channel_id"] is None else get_channel_by_id(tx, row["channel_id"])


def message_viewers(tx: Tx, row: Any, channel: Channel | None) -> dict[int, int | None]:
    """Return who is told about changes to a message: flag bits of users with a row, None for others.

    Zulip's audience for actions on messages: users with a user_messages row, plus the channel's
    subscribers when its history is shared with them (they may be looking at it without a row).
    """
    rows = tx.all("SELECT user_id, flags FROM user_messages WHERE message_id = ?", (row["id"],))
    viewers: dict[int, int | None] = {user_id: bits for user_id, bits in rows}
    if channel is not None and channel.history_public_to_subscribers:
        for user_id in subscriber_ids(tx, channel.id):
            viewers.setdefault(user_id, None)
    return viewers


def content_access_ids(tx: Tx, channel: Channel, user_ids: set[int]) -> set[int]:
    """Return the users among user_ids who may read the channel (channels.has_content_access, in bulk)."""
    if channel.is_web_public:
        return set(user_ids)
    # Deactivated users keep their subscriptions, and with them their rows of moved messages.
    allowed = set(tx.column("SELECT user_id FROM subscriptions WHERE channel_id = ? AND active", (channel.id,)))
    if channel.invite_only:
        allowed.update(groups.recursive_member_ids(tx, channel.can_add_subscribers_group))
        allowed.update(groups.recursive_member_ids(tx, channel.can_subscribe_group))
    else:
        allowed.update(
            tx.column(
                "SELECT id FROM users WHERE role != ? AND id IN (SELECT value FROM json_each(?))",
                (groups.ROLE_GUEST, json.dumps(sorted(user_ids))),
            )
        )
    return allowed & user_ids


# -- deleting --------------------------------------------------------------------------------


def check_can_delete(tx: Tx, actor: User, row: Any, channel: Channel | None) -> None:
    """Raise "You don't have permission to delete this message" unless the actor may delete it."""
    if actor.is_admin or groups.is_member(tx, actor.id, realm_group(tx, "can_delete_any_message_group")):
        return
    if channel is not None and groups.is_member(tx, actor.id, channel.can_delete_any_message_group):
        return
    sender = get_user_by_id(tx, row["sender_id"])
    assert sender is not None
    if actor.id not in (sender.id, sender.bot_owner_id):
        raise no_delete_permission()
    if groups.is_member(tx, actor.id, realm_group(tx, "can_delete_own_message_group")):
        return
    if channel is not None and groups.is_member(tx, actor.id, channel.can_delete_own_message_group):
        return
    raise no_delete_permission()


def delete_message(tx: Tx, actor: User, message_id: int) -> None:
    """Delete a message the actor may delete and publish delete_message; raise the API's errors."""
    row, _ = access_message(tx, actor, message_id)
    channel = message_channel(tx, row)
    check_can_delete(tx, actor, row, channel)
    audience = message_viewers(tx, row, channel)
    for table in ("reactions", "user_messages"):
        tx.execute(f"DELETE FROM {table} WHERE message_id = ?", (message_id,))
    tx.execute("DELETE FROM messages WHERE id = ?", (message_id,))
    tx.publish(delete_event([message_id], channel, row["topic"]), audience)


def delete_event(message_ids: list[int], channel: Channel | None, topic: str) -> dict[str, Any]:
    """Return a delete_message event (with `message_id` too, for clients that predate bulk deletion)."""
    event: dict[str, Any] = {"type": "delete_message", "message_ids": sorted(message_ids)}
    event["message_id"] = event["message_ids"][0]
    if channel is None:
        event["message_type"] = "private"
    else:
        event.update(message_type="stream", stream_id=channel.id, topic=topic)
    return event
