"""Channels: the model, who may see them (`access_*`), their API objects, and creation."""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Callable
from typing import Any

import msgspec

from storage.db.tx import Tx
from storage.model.channel import UNREADABLE_CHANNELS_SQL, Channel, get_channel_by_id, get_channel_by_name
from storage.model.errors import ApiError, insufficient_permission, must_be_owner
from storage.model.realm import MAX_STREAM_DESCRIPTION_LENGTH, MAX_STREAM_NAME_LENGTH
from storage.model.roles import ROLE_ADMINISTRATOR, ROLE_OWNER
from storage.model.user import User
from storage.org import groups
from storage.org.groups import GroupSettingValue, SettingRule, is_member, system_group_id
from storage.org.realm import realm_group
from storage.text import markdown

TOPICS_POLICIES = ("inherit", "allow_empty_topic", "disable_empty_topic", "empty_topic_only")
RECENTLY_ACTIVE_SECONDS = 180 * 86400
WEEK = 7 * 86400
# stream_weekly_traffic averages over at most this window; channels younger than a week get null.
TRAFFIC_WINDOW_SECONDS = 4 * WEEK

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
# stream_post_policy (deprecated) derived from can_send_message_group's system group.
POST_POLICY_BY_GROUP = {"role:administrators": 2, "role:fullmembers": 3, "role:moderators": 4}


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


# -- API objects -----------------------------------------------------------------------------


def stream_post_policy(tx: Tx, channel: Channel) -> int:
    name = tx.value("SELECT name FROM user_groups WHERE id = ? AND is_system_group", (channel.can_send_message_group,))
    return POST_POLICY_BY_GROUP.get(name, 1)


def channel_object(tx: Tx, channel: Channel, now: float) -> dict[str, Any]:
    """Return the API channel object (GET /streams, stream events)."""
    return build_channel_object(
        channel,
        stream_post_policy(tx, channel),
        message_statistics(tx, channel, now),
        len(subscriber_ids(tx, channel.id)),
        lambda value: groups.setting_value(tx, value),
    )


def build_channel_object(
    channel: Channel,
    post_policy: int,
    statistics: dict[str, Any],
    subscriber_count: int,
    setting_value: Callable[[Any], Any],
) -> dict[str, Any]:
    """Return the API channel object from the row and what it shows beyond it (register reads those in bulk)."""
    result: dict[str, Any] = {
        "stream_id": channel.id,
        "name": channel.name,
        "description": channel.description,
        "rendered_description": channel.rendered_description,
        "date_created": channel.date_created,
        "creator_id": channel.creator_id,
        "invite_only": channel.invite_only,
        "is_web_public": channel.is_web_public,
        "is_announcement_only": post_policy == 2,
        "stream_post_policy": post_policy,
        "history_public_to_subscribers": channel.history_public_to_subscribers,
        **statistics,
        "folder_id": channel.folder_id,
        "topics_policy": channel.topics_policy,
        "message_retention_days": channel.message_retention_days,
        "is_archived": channel.is_archived,
        "subscriber_count": subscriber_count,
    }
    for setting in CHANNEL_SETTINGS:
        result[setting] = setting_value(getattr(channel, setting))
    return result


def message_statistics(tx: Tx, channel: Channel, now: float) -> dict[str, Any]:
    """first_message_id, stream_weekly_traffic and is_recently_active, from the channel's messages.

    Each is an index lookup: the channel's first message on messages_by_recipient, and the count of
    its messages since a moment, from the first message id sent then (messages_by_date) onwards.
    """
    recipient = tx.value("SELECT id FROM recipients WHERE type = 2 AND type_id = ?", (channel.id,))
    first = None if recipient is None else tx.value(
        "SELECT id FROM messages WHERE recipient_id = ? ORDER BY id LIMIT 1", (recipient,)
    )  # fmt: skip
    age = now - channel.date_created
    traffic = None
    if age >= WEEK:
        window = min(age, TRAFFIC_WINDOW_SECONDS)
        recent = _messages_since(tx, recipient, now - window)
        traffic = round(recent * WEEK / window)
    recently_active = age < RECENTLY_ACTIVE_SECONDS or _count_since(tx, recipient, now - RECENTLY_ACTIVE_SECONDS, 1) > 0
    return {"first_message_id": first, "stream_weekly_traffic": traffic, "is_recently_active": recently_active}


def _messages_since(tx: Tx, recipient_id: int | None, moment: float) -> int:
    return _count_since(tx, recipient_id, moment, None)


def _count_since(tx: Tx, recipient_id: int | None, moment: float, limit: int | None) -> int:
    """Count (up to `limit`) the channel's messages sent at or after `moment`.

    Message ids grow with their send time, so "sent since" is "id at least the first id sent then".
    """
    if recipient_id is None:
        return 0
    since = tx.value("SELECT id FROM messages WHERE date_sent >= ? ORDER BY date_sent, id LIMIT 1", (int(moment),))
    if since is None:
        return 0
    query = "SELECT count(*) FROM (SELECT 1 FROM messages WHERE recipient_id = ? AND id >= ? LIMIT ?)"
    return int(tx.value(query, (recipient_id, since, -1 if limit is None else limit)))


# -- creation --------------------------------------------------------------------------------


class ChannelOptions(msgspec.Struct, kw_only=True):
    """What a new channel is created with (POST /channels/create, POST /users/me/subscriptions)."""

    description: str = ""
    invite_only: bool = False
    is_web_public: bool = False
    is_default_stream: bool = False
    history_public_to_subscribers: bool | None = None
    message_retention_days: str | int | None = None
    folder_id: int | None = None
    topics_policy: str = "inherit"
    settings: dict[str, GroupSettingValue | None] = {}


def check_channel_name(name: str) -> str:
    """Return the stripped channel name, or raise the API's error for it."""
    name = name.strip()
    if not name:
        raise ApiError("Channel name can't be empty.")
    if len(name) > MAX_STREAM_NAME_LENGTH:
        raise ApiError(f"Channel name too long (limit: {MAX_STREAM_NAME_LENGTH} characters).")
    position = first_unprintable(name)
    if position is not None:
        raise ApiError(f"Invalid character in channel name, at position {position}.")
    return name


def first_unprintable(text: str) -> int | None:
    """Return the 1-based position of the first control, surrogate or non-character, or None."""
    for position, char in enumerate(text, start=1):
        code = ord(char)
        if unicodedata.category(char) in ("Cc", "Cs") or 0xFDD0 <= code <= 0xFDEF or (code & 0xFFFE) == 0xFFFE:
            return position
    return None


def check_description(description: str) -> str:
    # Descriptions are one line: newlines become spaces.
    description = description.replace("\r\n", " ").replace("\n", " ")
    if len(description) > MAX_STREAM_DESCRIPTION_LENGTH:
        raise ApiError(f"description is too long (limit: {MAX_STREAM_DESCRIPTION_LENGTH} characters)")
    return description


def parse_retention(value: str | int | None) -> int | None:
    """Return the stored retention (None: realm default, -1: unlimited) or raise for a bad value."""
    if value is None or value == "realm_default":
        return None
    if value == "unlimited":
        return -1
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    raise ApiError(
        f"Bad value for 'message_retention_days': {value}",
        "REQUEST_VARIABLE_INVALID",
        data={"var_name": "message_retention_days", "bad_value": value},
    )


def check_folder(tx: Tx, folder_id: int | None) -> None:
    if (
        folder_id is not None
        and tx.one("SELECT 1 FROM channel_folders WHERE id = ? AND NOT is_archived", (folder_id,)) is None
    ):
        raise ApiError("Invalid channel folder ID")


def check_topics_policy(tx: Tx, actor: User, policy: str) -> str:
    if policy not in TOPICS_POLICIES:
        raise ApiError("Invalid topics_policy")
    if policy != "inherit" and not is_member(tx, actor.id, realm_group(tx, "can_set_topics_policy_group")):
        raise insufficient_permission()
    return policy


def check_can_create(tx: Tx, actor: User, options: ChannelOptions, web_public_enabled: bool) -> None:
    """Raise unless the actor may create a channel with these privacy options."""
    setting = "can_create_private_channel_group" if options.invite_only else "can_create_public_channel_group"
    if actor.is_guest or not is_member(tx, actor.id, realm_group(tx, setting)):
        raise insufficient_permission()
    if options.is_default_stream:
        if not actor.is_admin:
            raise insufficient_permission()
        if options.invite_only:
            raise ApiError("A default channel cannot be private.")
    if options.is_web_public:
        check_web_public_allowed(tx, actor, web_public_enabled)


def check_web_public_allowed(tx: Tx, actor: User, web_public_enabled: bool) -> None:
    """Raise unless the server, the realm and the actor's groups all allow web-public channels."""
    if not web_public_enabled:
        raise ApiError("Web-public channels are not enabled on this server.")
    if not tx.value("SELECT enable_spectator_access FROM realm"):
        raise ApiError("Web-public channels are not enabled.")
    if not is_member(tx, actor.id, realm_group(tx, "can_create_web_public_channel_group")):
        raise insufficient_permission()


def resolve_channel_settings(tx: Tx, actor: User, options: ChannelOptions, history_public: bool) -> dict[str, int]:
    """Validate the channel's group settings; return setting → group id (creating anonymous groups)."""
    resolved = {
        setting: groups.resolve_setting(tx, setting, options.settings.get(setting), rule, actor.id)
        for setting, rule in CHANNEL_RULES.items()
    }
    everyone = system_group_id(tx, "role:everyone")
    if options.invite_only and not history_public and resolved["can_create_topic_group"] != everyone:
        raise ApiError("'can_create_topic_group' must be 'role:everyone' for private channels with protected history.")
    nobody = system_group_id(tx, "role:nobody")
    delete_settings = ("can_delete_any_message_group", "can_delete_own_message_group")
    if any(resolved[s] != nobody for s in delete_settings) and not is_member(
        tx, actor.id, realm_group(tx, "can_set_delete_message_policy_group")
    ):
        raise insufficient_permission()
    return resolved


def create_channel(tx: Tx, actor: User, name: str, options: ChannelOptions, web_public_enabled: bool) -> Channel:
    """Create a channel (without subscribers); return it; raise ApiError in the API's check order."""
    if actor.is_guest:
        raise ApiError("Not allowed for guest users")
    name = check_channel_name(name)
    if get_channel_by_name(tx, name) is not None:
        raise ApiError(f"Channel '{name}' already exists", "CHANNEL_ALREADY_EXISTS", 409, data={"channel_name": name})
    description = check_description(options.description)
    check_folder(tx, options.folder_id)
    retention = parse_retention(options.message_retention_days)
    policy = check_topics_policy(tx, actor, options.topics_policy)
    check_can_create(tx, actor, options, web_public_enabled)
    if retention is not None and not actor.is_owner:
        raise must_be_owner()
    history_public = not options.invite_only or bool(options.history_public_to_subscribers)
    resolved = resolve_channel_settings(tx, actor, options, history_public)
    cursor = tx.execute(
        "INSERT INTO channels (name, description, rendered_description, date_created, creator_id, invite_only,"
        " is_web_public, history_public_to_subscribers, message_retention_days, folder_id, topics_policy, "
        + ", ".join(CHANNEL_SETTINGS)
        + ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?"
        + ", ?" * len(CHANNEL_SETTINGS)
        + ")",
        (
            name,
            description,
            markdown.render(description) if description else "",
            tx.timestamp,
            actor.id,
            options.invite_only,
            options.is_web_public,
            history_public,
            retention,
            options.folder_id,
            policy,
            *(resolved[s] for s in CHANNEL_SETTINGS),
        ),
    )
    channel = get_channel_by_id(tx, int(cursor.lastrowid or 0))
    assert channel is not None
    if options.is_default_stream:
        tx.execute("INSERT INTO default_channels (channel_id) VALUES (?)", (channel.id,))
    tx.publish(
        {"type": "stream", "op": "create", "streams": [channel_object(tx, channel, tx.now)]},
        users_with_metadata_access(tx, channel),
    )
    return channel


def default_channel_ids(tx: Tx) -> list[int]:
    return tx.column("SELECT channel_id FROM default_channels ORDER BY channel_id")


def check_subscriber_ids(tx: Tx, user_ids: list[int]) -> list[int]:
    """Return the distinct ids if all are active users; "No such user" / "User is deactivated" otherwise."""
    for user_id in user_ids:
        row = tx.one("SELECT is_active FROM users WHERE id = ?", (user_id,)) if 0 < user_id < 2**63 else None
        if row is None:
            raise ApiError("No such user")
        if not row["is_active"]:
            raise ApiError("User is deactivated")
    return sorted(set(user_ids))
