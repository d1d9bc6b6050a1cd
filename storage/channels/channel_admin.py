"""Channel administration: listing channels (GET /streams), changing them (PATCH), archiving (DELETE).

Every change is one transaction. Its events go to the users who may see the channel; when a
change moves who may see it (privacy, or a setting that grants metadata access), the audience
is computed before and after: those who keep it get `stream/update`, those who gain it get
`stream/create` (and the subscriber list), those who lose it get `stream/delete`.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec

from storage.channels.channel_creation import (
    check_channel_name,
    check_description,
    check_folder,
    check_web_public_allowed,
    default_channel_ids,
    parse_retention,
)
from storage.channels.channel_objects import channel_object, stream_post_policy
from storage.channels.channels import (
    CHANNEL_RULES,
    CHANNEL_SETTINGS,
    TOPICS_POLICIES,
    access_channel_by_id,
    can_administer,
    has_content_access,
    has_metadata_access,
    subscriber_ids,
    users_with_metadata_access,
)
from storage.db.tx import Tx
from storage.model.channel import CHANNEL_COLUMNS, Channel, get_channel_by_id, get_channel_by_name
from storage.model.errors import ApiError, insufficient_permission, must_be_owner
from storage.model.roles import ROLE_GUEST
from storage.model.user import User
from storage.org import groups
from storage.org.groups import AnonymousGroup, GroupSettingValue, is_member, system_group_id
from storage.org.realm import realm_group
from storage.text import markdown

PRIVACY_COLUMNS = ("invite_only", "history_public_to_subscribers", "is_web_public")
# The settings only a user with content access may change (as in Zulip): they grant it to others.
SETTINGS_REQUIRING_CONTENT_ACCESS = ("can_add_subscribers_group", "can_subscribe_group")
DELETE_SETTINGS = ("can_delete_any_message_group", "can_delete_own_message_group")


# -- reading -----------------------------------------------------------------------------------


class ChannelFilter(msgspec.Struct, kw_only=True):
    """Which channels GET /streams returns (each source adds channels; all are limited by access)."""

    include_public: bool = True
    include_web_public: bool = False
    include_subscribed: bool = True
    exclude_archived: bool = True
    include_all: bool = False
    include_default: bool = False
    include_owner_subscribed: bool = False
    include_can_access_content: bool = False


def list_channels(tx: Tx, user: User, query: ChannelFilter) -> list[dict[str, Any]]:
    """Return the API objects of the channels the query selects, sorted by name."""
    sql = f"SELECT {CHANNEL_COLUMNS} FROM channels" + (" WHERE NOT is_archived" if query.exclude_archived else "")
    channels = [msgspec.convert(dict(row), Channel, strict=False) for row in tx.all(sql + " ORDER BY id")]
    subscribed = _subscribed_channel_ids(tx, user.id)
    owner_subscribed: set[int] = set()
    if query.include_owner_subscribed and user.is_bot and user.bot_owner_id is not None:
        owner_subscribed = _subscribed_channel_ids(tx, user.bot_owner_id)
    defaults = set(default_channel_ids(tx))
    objects = []
    for channel in channels:
        if _selected(tx, user, channel, query, channel.id in subscribed, channel.id in owner_subscribed):
            obj = channel_object(tx, channel, tx.now)
            if query.include_default:
                obj["is_default"] = channel.id in defaults
            objects.append(obj)
    return sorted(objects, key=lambda obj: obj["name"])


def _subscribed_channel_ids(tx: Tx, user_id: int) -> set[int]:
    return set(tx.column("SELECT channel_id FROM subscriptions WHERE user_id = ? AND active", (user_id,)))


def _selected(
    tx: Tx, user: User, channel: Channel, query: ChannelFilter, subscribed: bool, owner_subscribed: bool
) -> bool:
    # include_all (Zulip feature level 356) is every channel the user may see: all of them for
    # administrators, never a private channel a member may not see.
    if query.include_all:
        return has_metadata_access(tx, user, channel, subscribed)
    # A bot may post wherever its owner is subscribed, so it may list those channels.
    if owner_subscribed:
        return True
    if query.include_can_access_content:
        return has_content_access(tx, user, channel, subscribed)
    return (
        (query.include_subscribed and subscribed)
        or (query.include_public and not user.is_guest and not channel.invite_only)
        or (
            query.include_web_public
            and channel.is_web_public
            and not channel.invite_only
            and channel.history_public_to_subscribers
            and not channel.is_archived
        )
    )


def get_channel_object(tx: Tx, user: User, channel_id: int) -> dict[str, Any]:
    """Return the API object of a channel the user may see; "Invalid channel ID" otherwise."""
    return channel_object(tx, access_channel_by_id(tx, user, channel_id), tx.now)


def list_channel_subscribers(tx: Tx, user: User, channel_id: int) -> list[int]:
    """Return the subscribers of a channel the user may see, sorted; "Invalid channel ID" otherwise."""
    return subscriber_ids(tx, access_channel_by_id(tx, user, channel_id).id)


def get_channel_id(tx: Tx, user: User, name: str) -> int:
    """Return the id of an active channel whose content the user may read, by name (any case).

    Unknown, archived and inaccessible channels get the same answer, as in Zulip.
    """
    channel = get_channel_by_name(tx, name)
    if channel is None or channel.is_archived or not has_content_access(tx, user, channel):
        raise ApiError(f"Invalid channel name '{name}'")
    return channel.id


def access_channel_for_admin(tx: Tx, actor: User, channel_id: int) -> Channel:
    """Return a channel the actor may administer (archived or not).

    "Invalid channel ID" when the actor may not even see it; otherwise a permission error, which
    reveals nothing the actor does not already know.
    """
    channel = get_channel_by_id(tx, channel_id)
    if channel is None:
        raise ApiError("Invalid channel ID")
    if can_administer(tx, actor, channel):
        return channel
    if has_metadata_access(tx, actor, channel):
        raise ApiError("You do not have permission to administer this channel.")
    raise ApiError("Invalid channel ID")


# -- updating ----------------------------------------------------------------------------------


class GroupSettingChange(msgspec.Struct, forbid_unknown_fields=True):
    """A `{new, old}` group-setting update; `old`, when given, must match the current value."""

    new: GroupSettingValue
    old: GroupSettingValue | None = None


class ChannelUpdate(msgspec.Struct, kw_only=True):
    """What PATCH /streams/{id} changes. None leaves a property alone (UNSET for folder_id, where
    null takes the channel out of its folder)."""

    new_name: str | None = None
    description: str | None = None
    is_private: bool | None = None
    is_web_public: bool | None = None
    history_public_to_subscribers: bool | None = None
    is_default_stream: bool | None = None
    message_retention_days: str | int | None = None
    folder_id: int | None | msgspec.UnsetType = msgspec.UNSET
    topics_policy: str | None = None
    settings: dict[str, GroupSettingChange] = {}


def check_topics_policy_value(raw: str) -> str:
    """Return a topics policy sent plain (as Zulip's PATCH takes it) or JSON-quoted (as creation takes it)."""
    value: Any = raw
    if raw.startswith('"'):
        try:
            value = json.loads(raw)
        except ValueError:
            pass
    if value not in TOPICS_POLICIES:
        raise ApiError("Invalid topics_policy")
    return str(value)


def update_channel(tx: Tx, actor: User, channel_id: int, update: ChannelUpdate, web_public_enabled: bool) -> None:
    """PATCH /streams/{id}: check everything in Zulip's order, apply it at once, send the events.

    Values equal to the current ones change nothing and send nothing; so does an empty request.
    """
    channel = access_channel_for_admin(tx, actor, channel_id)
    before = set(users_with_metadata_access(tx, channel))
    changes = _privacy_changes(tx, actor, channel, update, web_public_enabled)
    make_default = _default_change(tx, actor, channel, update)
    changes |= _property_changes(tx, actor, channel, update)
    changes |= _setting_changes(tx, actor, channel, update.settings)
    changes = {column: value for column, value in changes.items() if getattr(channel, column) != value}
    new = msgspec.structs.replace(channel, **changes)
    _check_final_settings(tx, new, changes)
    if changes:
        # The column names are Channel fields chosen above, never request text.
        assignments = ", ".join(f"{column} = ?" for column in changes)
        tx.execute(f"UPDATE channels SET {assignments} WHERE id = ?", (*changes.values(), channel.id))
    if make_default:
        tx.execute("INSERT INTO default_channels (channel_id) VALUES (?)", (channel.id,))
    elif make_default is not None:
        tx.execute("DELETE FROM default_channels WHERE channel_id = ?", (channel.id,))
    if make_default is not None:
        publish_default_channels(tx)
    if changes:
        _publish_update(tx, channel, new, changes, before)


def _given(value: bool | None, current: bool) -> bool:
    return current if value is None else value


def _privacy_changes(
    tx: Tx, actor: User, channel: Channel, update: ChannelUpdate, web_public_enabled: bool
) -> dict[str, Any]:
    private = _given(update.is_private, channel.invite_only)
    web_public = _given(update.is_web_public, channel.is_web_public)
    history = update.history_public_to_subscribers
    if history is None:
        # Changing privacy alone gives a private channel protected history, a public one shared.
        history = not private if update.is_private is not None else channel.history_public_to_subscribers
    # Web-public channels are public with shared history; public channels always share history.
    if (web_public and private) or (not history and (web_public or not private)):
        raise ApiError("Invalid parameters")
    if private and _given(update.is_default_stream, channel.id in default_channel_ids(tx)):
        raise ApiError("A default channel cannot be private.")
    # Reports go to the moderation request channel (storage/messages/message_reports.py): it stays private.
    if not private and tx.value("SELECT moderation_request_channel_id FROM realm") == channel.id:
        raise ApiError("Moderation request channel must be private.")
    if update.is_private is not None:
        if not has_content_access(tx, actor, channel):
            raise ApiError("Channel content access is required.")
        setting = "can_create_private_channel_group" if private else "can_create_public_channel_group"
        if not is_member(tx, actor.id, realm_group(tx, setting)):
            raise insufficient_permission()
    if update.is_web_public:
        check_web_public_allowed(tx, actor, web_public_enabled)
    return {"invite_only": private, "history_public_to_subscribers": history, "is_web_public": web_public}


def _default_change(tx: Tx, actor: User, channel: Channel, update: ChannelUpdate) -> bool | None:
    """Return the new default-channel flag when it changes, None otherwise."""
    if update.is_default_stream is None:
        return None
    if not actor.is_admin:
        raise ApiError("You do not have permission to change default channels.")
    if update.is_default_stream == (channel.id in default_channel_ids(tx)):
        return None
    return update.is_default_stream


def _property_changes(tx: Tx, actor: User, channel: Channel, update: ChannelUpdate) -> dict[str, Any]:
    changes: dict[str, Any] = {}
    if update.message_retention_days is not None:
        if not actor.is_owner:
            raise must_be_owner()
        changes["message_retention_days"] = parse_retention(update.message_retention_days)
    if update.topics_policy is not None:
        if not is_member(tx, actor.id, realm_group(tx, "can_set_topics_policy_group")):
            raise insufficient_permission()
        changes["topics_policy"] = check_topics_policy_value(update.topics_policy)
    if update.description is not None:
        description = check_description(update.description)
        changes["description"] = description
        changes["rendered_description"] = markdown.render(description) if description else ""
    if update.new_name is not None:
        changes["name"] = _check_new_name(tx, channel, update.new_name)
    if update.folder_id is not msgspec.UNSET:
        check_folder(tx, update.folder_id)
        changes["folder_id"] = update.folder_id
    return changes


def _check_new_name(tx: Tx, channel: Channel, new_name: str) -> str:
    name = new_name.strip()
    if name == channel.name:
        raise ApiError("Channel already has that name.")
    name = check_channel_name(name)
    # Changing only the case of the name is allowed: the channel found is then the same one.
    existing = get_channel_by_name(tx, name)
    if existing is not None and existing.id != channel.id:
        raise ApiError(f"Channel '{name}' already exists", "CHANNEL_ALREADY_EXISTS", 409, data={"channel_name": name})
    return name


def _setting_changes(tx: Tx, actor: User, channel: Channel, settings: dict[str, GroupSettingChange]) -> dict[str, int]:
    changes: dict[str, int] = {}
    nobody = system_group_id(tx, "role:nobody")
    for setting, rule in CHANNEL_RULES.items():
        change = settings.get(setting)
        if change is None:
            continue
        current = _comparable(groups.setting_value(tx, getattr(channel, setting)), nobody)
        if change.old is not None and _comparable(change.old, nobody) != current:
            raise ApiError(
                "'old' value does not match the expected value.", "EXPECTATION_MISMATCH", data={"field_name": setting}
            )
        if _comparable(change.new, nobody) == current:
            continue
        if setting in SETTINGS_REQUIRING_CONTENT_ACCESS and not has_content_access(tx, actor, channel):
            raise ApiError("Channel content access is required.")
        if setting in DELETE_SETTINGS and not is_member(
            tx, actor.id, realm_group(tx, "can_set_delete_message_policy_group")
        ):
            raise insufficient_permission()
        changes[setting] = groups.resolve_setting(tx, setting, change.new, rule, actor.id)
    return changes


def _comparable(value: GroupSettingValue | dict[str, list[int]], nobody: int) -> object:
    """A group-setting value in a form where equal settings compare equal (as Zulip compares them)."""
    if isinstance(value, int):
        return value
    if isinstance(value, AnonymousGroup):
        members, subgroups = value.direct_members, value.direct_subgroups
    else:
        members, subgroups = value["direct_members"], value["direct_subgroups"]
    if not members and len(subgroups) == 1:
        return subgroups[0]
    if not members and not subgroups:
        return nobody
    return (frozenset(members), frozenset(subgroups))


def _check_final_settings(tx: Tx, new: Channel, changes: dict[str, Any]) -> None:
    everyone = system_group_id(tx, "role:everyone")
    relevant = {"can_create_topic_group", *PRIVACY_COLUMNS}
    if (
        new.invite_only
        and not new.history_public_to_subscribers
        and new.can_create_topic_group != everyone
        and relevant & changes.keys()
    ):
        raise ApiError("'can_create_topic_group' must be 'role:everyone' for private channels with protected history.")


def _publish_update(tx: Tx, old: Channel, new: Channel, changes: dict[str, Any], before: set[int]) -> None:
    after = set(users_with_metadata_access(tx, new))
    kept, gained, lost = before & after, after - before, before - after
    for event in _update_events(tx, old, new, changes):
        _publish(tx, event, kept)
    _publish(tx, {"type": "stream", "op": "create", "streams": [channel_object(tx, new, tx.now)]}, gained)
    subscribers = subscriber_ids(tx, new.id)
    if subscribers:
        peer_add = {"type": "subscription", "op": "peer_add", "stream_ids": [new.id], "user_ids": subscribers}
        _publish(tx, peer_add, gained)
    # Those who lose sight of the channel hear only that it is gone, described as they knew it.
    _publish(tx, stream_deletion_event([old.id], False), lost)


def stream_deletion_event(channel_ids: list[int], for_archiving: bool) -> dict[str, Any]:
    """Zulip's stream/delete event: `stream_ids` since feature level 343, and the deprecated `streams`
    kept for older clients with nothing but each `stream_id`."""
    return {
        "type": "stream",
        "op": "delete",
        "streams": [{"stream_id": channel_id} for channel_id in channel_ids],
        "stream_ids": channel_ids,
        "for_archiving": for_archiving,
    }


def _publish(tx: Tx, event: dict[str, Any], user_ids: set[int]) -> None:
    if user_ids:
        tx.publish(event, user_ids)


def _update_events(tx: Tx, old: Channel, new: Channel, changes: dict[str, Any]) -> list[dict[str, Any]]:
    """The stream/update events, in Zulip's order; those before the rename carry the old name."""
    events = []
    if changes.keys() & set(PRIVACY_COLUMNS):
        extra = {"history_public_to_subscribers": new.history_public_to_subscribers, "is_web_public": new.is_web_public}
        events.append(_stream_update(old.id, old.name, "invite_only", new.invite_only, **extra))
    for prop in ("message_retention_days", "topics_policy"):
        if prop in changes:
            events.append(_stream_update(old.id, old.name, prop, changes[prop]))
    if "description" in changes:
        rendered = new.rendered_description
        events.append(_stream_update(old.id, old.name, "description", new.description, rendered_description=rendered))
    if "name" in changes:
        events.append(_stream_update(old.id, old.name, "name", new.name))
    if "folder_id" in changes:
        events.append(_stream_update(new.id, new.name, "folder_id", new.folder_id))
    for setting in CHANNEL_SETTINGS:
        if setting in changes:
            events.append(_stream_update(new.id, new.name, setting, groups.setting_value(tx, changes[setting])))
    old_policy, new_policy = stream_post_policy(tx, old), stream_post_policy(tx, new)
    if old_policy != new_policy:
        # The deprecated views of can_send_message_group, for older clients.
        events.append(_stream_update(new.id, new.name, "stream_post_policy", new_policy))
        events.append(_stream_update(new.id, new.name, "is_announcement_only", new_policy == 2))
    return events


# -- archiving ---------------------------------------------------------------------------------


def archive_channel(tx: Tx, actor: User, channel_id: int) -> None:
    """DELETE /streams/{id}: archive the channel (it stays, with its subscribers, flagged archived)."""
    channel = access_channel_for_admin(tx, actor, channel_id)
    if channel.is_archived:
        raise ApiError("Channel is already deactivated")
    audience = users_with_metadata_access(tx, channel)
    tx.execute("UPDATE channels SET is_archived = 1 WHERE id = ?", (channel.id,))
    if tx.execute("DELETE FROM default_channels WHERE channel_id = ?", (channel.id,)).rowcount:
        publish_default_channels(tx)
    update = _stream_update(channel.id, channel.name, "is_archived", True)
    tx.publish(update, audience)
    tx.publish(stream_deletion_event([channel.id], True), audience)


def publish_default_channels(tx: Tx) -> None:
    """Send the full list of default channels to every active non-guest (Zulip's default_streams)."""
    objects = []
    for channel_id in default_channel_ids(tx):
        channel = get_channel_by_id(tx, channel_id)
        assert channel is not None
        objects.append(channel_object(tx, channel, tx.now))
    audience = tx.column("SELECT id FROM users WHERE is_active AND role != ?", (ROLE_GUEST,))
    tx.publish({"type": "default_streams", "default_streams": objects}, audience)


def _stream_update(channel_id: int, name: str, prop: str, value: Any, **extra: Any) -> dict[str, Any]:
    event = {"type": "stream", "op": "update", "stream_id": channel_id, "name": name, "property": prop, "value": value}
    return event | extra
