"""Creating a channel: its name, description and settings checked, the row and its recipient, the event."""

from __future__ import annotations

import unicodedata

import msgspec

from storage.channels.channel_objects import channel_object
from storage.channels.channels import CHANNEL_RULES, CHANNEL_SETTINGS, TOPICS_POLICIES, users_with_metadata_access
from storage.db.tx import Tx
from storage.model.channel import Channel, get_channel_by_id, get_channel_by_name
from storage.model.errors import ApiError, insufficient_permission, must_be_owner
from storage.model.realm import MAX_STREAM_DESCRIPTION_LENGTH, MAX_STREAM_NAME_LENGTH
from storage.model.user import User
from storage.org import groups
from storage.org.groups import GroupSettingValue, is_member, system_group_id
from storage.org.realm import realm_group
from storage.text import markdown


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
