"""Channels: their settings and who may see them (`access_*`, the audiences of their events).

The row is storage/model/channel.py; the API objects are channel_objects.py; creation is channel_creation.py.
"""

from __future__ import annotations

import json

from storage.db.tx import Tx
from storage.model.channel import UNREADABLE_CHANNELS_SQL, Channel, get_channel_by_id, get_channel_by_name
from storage.model.errors import ApiError
from storage.model.roles import ROLE_ADMINISTRATOR, ROLE_OWNER
from storage.model.user import User
from storage.org import groups
from storage.org.groups import SettingRule, is_member

TOPICS_POLICIES = ("inherit", "allow_empty_topic", "disable_empty_topic", "empty_topic_only")

# The eleven channel group settings, their defaults and whether role:everyone is allowed.
CHANNEL_RULES = {
    "can_add_subscribers_group": SettingRule("role:nobody", allow_everyone=False),
    "can_administer_channel_group": SettingRule("creator", allow_everyone=False),
    "can_create_topic_group": SettingRule("role:everyone"),
    "can_delete_any_message_group": SettingRule("role:nobody"),
    "can_delete_own_message_group": SettingRule("role:nobody"),
    "can_move_messages_out_of_channel_group": SettingRule("role:nobody"),
    "can_move_messages_within_channel_group": SettingRule("role:nobody"),
    "can_remove_subscribers_group": SettingRule("role:administrators"),
    "can_resolve_topics_group": SettingRule("role:nobody"),
    "can_send_message_group": SettingRule("role:everyone"),
    "can_subscribe_group": SettingRule("role:nobody", allow_everyone=False),
}
CHANNEL_SETTINGS = tuple(CHANNEL_RULES)


def is_subscribed(tx: Tx, user_id: int, channel_id: int) -> bool:
    row = tx.one("SELECT active FROM subscriptions WHERE user_id = ? AND channel_id = ?", (user_id, channel_id))
    return row is not None and bool(row["active"])


# -- who may see what ------------------------------------------------------------------------
#
# Metadata access (the channel exists, its name and settings): anyone with content access, plus
# organization administrators and the channel's administrators. Content access (its messages and
# the right to join): public channels for non-guests, web-public channels for everyone, and a
# private channel for its subscribers and the members of its can_add_subscribers_group or
# can_subscribe_group. Whatever a user may not see answers as if it did not exist.


def has_content_access(tx: Tx, user: User, channel: Channel, subscribed: bool | None = None) -> bool:
    """Return whether the user may read the channel's messages (and subscribe themselves)."""
    if channel.is_web_public or not (channel.invite_only or user.is_guest):
        return True  # public to every member, subscribed or not
    if subscribed if subscribed is not None else is_subscribed(tx, user.id, channel.id):
        return True
    if channel.invite_only:
        return is_member(tx, user.id, channel.can_add_subscribers_group) or is_member(
            tx, user.id, channel.can_subscribe_group
        )
    return not user.is_guest


def has_metadata_access(tx: Tx, user: User, channel: Channel, subscribed: bool | None = None) -> bool:
    """Return whether the user may know the channel exists and see its settings and subscribers."""
    if has_content_access(tx, user, channel, subscribed):
        return True
    if user.is_guest:
        return False
    return user.is_admin or is_member(tx, user.id, channel.can_administer_channel_group)


def can_administer(tx: Tx, user: User, channel: Channel) -> bool:
    """Return whether the user may change the channel's settings."""
    return user.is_admin or (not user.is_guest and is_member(tx, user.id, channel.can_administer_channel_group))


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


def unreadable_channel_ids(tx: Tx, user: User) -> list[int]:
    """Channels whose messages the user may have received but may not read now, sorted."""
    return tx.column(UNREADABLE_CHANNELS_SQL, {"user": user.id, "guest": user.is_guest})


def access_channel_by_id(tx: Tx, user: User, channel_id: int, require_content: bool = False) -> Channel:
    """Return a channel the user may see; "Invalid channel ID" for unknown and hidden ones alike."""
    channel = get_channel_by_id(tx, channel_id)
    access = has_content_access if require_content else has_metadata_access
    if channel is None or not access(tx, user, channel):
        raise ApiError("Invalid channel ID")
    return channel


def access_channel_by_name(tx: Tx, user: User, name: str) -> Channel:
    """Return a channel the user may see by name; STREAM_DOES_NOT_EXIST otherwise."""
    channel = get_channel_by_name(tx, name)
    if channel is None or not has_metadata_access(tx, user, channel):
        raise channel_does_not_exist(name)
    return channel


def channel_does_not_exist(name: str) -> ApiError:
    return ApiError(f"Channel '{name.strip()}' does not exist", "STREAM_DOES_NOT_EXIST", data={"stream": name.strip()})


def users_with_metadata_access(tx: Tx, channel: Channel) -> list[int]:
    """Return the active users who may see the channel (the audience of its events), sorted.

    The same rules as has_metadata_access, computed for everyone at once.
    """
    ids = content_access_ids(tx, channel, set(groups.active_user_ids(tx)))
    if channel.is_web_public:
        return sorted(ids)
    guests = set(tx.column("SELECT id FROM users WHERE is_active AND role = ?", (groups.ROLE_GUEST,)))
    ids.update(tx.column("SELECT id FROM users WHERE is_active AND role IN (?, ?)", (ROLE_OWNER, ROLE_ADMINISTRATOR)))
    ids.update(set(groups.recursive_member_ids(tx, channel.can_administer_channel_group)) - guests)
    return sorted(ids)


def subscriber_ids(tx: Tx, channel_id: int) -> list[int]:
    """Return the active users subscribed to the channel, sorted."""
    return tx.column(
        "SELECT s.user_id FROM subscriptions AS s JOIN users AS u ON u.id = s.user_id"
        " WHERE s.channel_id = ? AND s.active AND u.is_active ORDER BY s.user_id",
        (channel_id,),
    )
