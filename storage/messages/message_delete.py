"""Deleting messages (DELETE /messages/{message_id}).

Deletion is Zulip's rule set: organization administrators and the realm's or the channel's
can_delete_any_message_group may delete any message; a sender (or the owner of a sending bot) may
delete their own if in the realm's can_delete_own_message_group or, for channel messages, the
channel's. Deleting is final: the message, its reactions, submessages and per-user rows are removed (the FTS
triggers drop it from search); nothing is archived for restoring.
"""

from __future__ import annotations

from typing import Any

from storage.db.tx import Tx
from storage.fetch.message_access import access_message, message_channel, message_viewers
from storage.model.channel import Channel
from storage.model.errors import ApiError
from storage.model.user import User
from storage.org import groups, realm_settings
from storage.org.realm import realm_group
from storage.org.users import get_user_by_id
from storage.push import push_notifications


def no_delete_permission() -> ApiError:
    return ApiError("You don't have permission to delete this message")


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
    own_allowed = groups.is_member(tx, actor.id, realm_group(tx, "can_delete_own_message_group")) or (
        channel is not None and groups.is_member(tx, actor.id, channel.can_delete_own_message_group)
    )
    if not own_allowed:
        raise no_delete_permission()
    realm_settings.check_delete_limit(tx, row)  # only for deleting one's own: the right to delete any has none


def delete_message(tx: Tx, actor: User, message_id: int) -> None:
    """Delete a message the actor may delete and publish delete_message; raise the API's errors."""
    row, _ = access_message(tx, actor, message_id)
    channel = message_channel(tx, row)
    check_can_delete(tx, actor, row, channel)
    audience = message_viewers(tx, row, channel)
    push_notifications.withdraw_message(tx, message_id)
    for table in ("reactions", "submessages", "user_messages"):
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
