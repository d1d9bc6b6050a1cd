"""Subscriptions: who is in which channel, their personal channel settings, and their events."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Annotated, Any

import msgspec

from storage.channels.channel_creation import ChannelOptions, check_channel_name, check_subscriber_ids, create_channel
from storage.channels.channel_objects import channel_object
from storage.channels.channels import (
    access_channel_by_name,
    can_administer,
    has_content_access,
    has_metadata_access,
    is_subscribed,
    subscriber_ids,
    users_with_metadata_access,
)
from storage.db.tx import Tx
from storage.messages import system_bots
from storage.model.channel import CHANNEL_COLUMNS, Channel, get_channel_by_name
from storage.model.errors import ApiError, insufficient_permission
from storage.model.realm import MAX_STREAM_DESCRIPTION_LENGTH, Realm
from storage.model.user import User
from storage.org.groups import is_member
from storage.org.realm import realm_group
from storage.org.users import access_user_by_email, get_user_by_id

# Personal colours handed out to new subscriptions in turn.
COLOR = re.compile(r"#[0-9a-fA-F]{3,6}")
PALETTE = (
    "#76ce90",
    "#fae589",
    "#a6c7e5",
    "#e79ab5",
    "#bfd56f",
    "#f4ae55",
    "#b0a5fd",
    "#addfe5",
    "#f5ce6e",
    "#c2726a",
    "#94c849",
    "#bd86e5",
    "#ee7e4a",
    "#a6dcbf",
    "#95a5fd",
    "#53a063",
    "#9987e1",
    "#e4523d",
    "#c2c2c2",
    "#4f8de4",
    "#c6a8ad",
    "#e7cc4d",
    "#c8bebf",
    "#a47462",
)
NOTIFICATION_SETTINGS = (
    "desktop_notifications",
    "audible_notifications",
    "push_notifications",
    "email_notifications",
    "wildcard_mentions_notify",
)

INCLUDE_SUBSCRIBERS = ("true", "false", "partial")
# include_subscribers=partial: channels this big get `partial_subscribers` (bots and the users
# active in the last 14 days) instead of the full list.
PARTIAL_SUBSCRIBERS_THRESHOLD = 250
RECENTLY_ACTIVE_SUBSCRIBER_SECONDS = 14 * 86400
# Subscribing more users than this at once sends them no notification-bot messages: Zulip's limit,
# which also bounds the work of one request (1,000 such messages held the event loop 1.3 s).
MAX_BULK_NEW_SUBSCRIPTION_MESSAGES = 100


def next_color(tx: Tx, user_id: int) -> str:
    """Return the first palette colour the user's subscriptions do not use yet (cycling when all do)."""
    used = set(tx.column("SELECT color FROM subscriptions WHERE user_id = ?", (user_id,)))
    for color in PALETTE:
        if color not in used:
            return color
    return PALETTE[len(used) % len(PALETTE)]


def subscription_object(
    tx: Tx,
    channel: Channel,
    row: Any,
    subscribers: dict[str, list[int]] | None,
    channel_fields: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Return the API subscription object: the channel object (or a copy of channel_fields) plus the user's settings."""
    result = channel_object(tx, channel, tx.now) if channel_fields is None else dict(channel_fields)
    result.update(
        color=row["color"],
        is_muted=bool(row["is_muted"]),
        in_home_view=not row["is_muted"],
        pin_to_top=bool(row["pin_to_top"]),
        **{name: None if row[name] is None else bool(row[name]) for name in NOTIFICATION_SETTINGS},
    )
    if subscribers:
        result.update(subscribers)
    return result


# -- subscribing and unsubscribing: the one place that writes the rows and sends the events ----


def subscribe(
    tx: Tx, channels: list[Channel], user_ids: list[int], colors: dict[int, str] | None = None
) -> tuple[dict[int, list[Channel]], dict[int, list[Channel]]]:
    """Subscribe every user to every channel; return ({user: newly subscribed}, {user: already}).

    Sends stream/create to new subscribers who could not see the channel before, subscription/add
    to each new subscriber and peer_add to the others who can see the channel.
    """
    colors = colors or {}
    added: dict[int, list[Channel]] = {}
    already: dict[int, list[Channel]] = {}
    audience_before: dict[int, set[int]] = {}
    for user_id in user_ids:
        for channel in channels:
            row = tx.one("SELECT active FROM subscriptions WHERE user_id = ? AND channel_id = ?", (user_id, channel.id))
            if row is not None and row["active"]:
                already.setdefault(user_id, []).append(channel)
                continue
            if channel.id not in audience_before:
                audience_before[channel.id] = set(users_with_metadata_access(tx, channel))
            if row is None:
                color = colors.get(channel.id) or next_color(tx, user_id)
                tx.execute(
                    "INSERT INTO subscriptions (user_id, channel_id, color) VALUES (?, ?, ?)",
                    (user_id, channel.id, color),
                )
            else:
                # A returning subscriber gets their old colour and settings back.
                tx.execute(
                    "UPDATE subscriptions SET active = 1 WHERE user_id = ? AND channel_id = ?", (user_id, channel.id)
                )
            added.setdefault(user_id, []).append(channel)
    _publish_newly_visible(tx, added, audience_before)
    _publish_added(tx, added)
    return added, already


def _publish_newly_visible(tx: Tx, added: dict[int, list[Channel]], audience_before: dict[int, set[int]]) -> None:
    # A private channel appears to a new subscriber as it would have had they seen its creation.
    for user_id, user_channels in added.items():
        unseen = [c for c in user_channels if user_id not in audience_before[c.id]]
        if unseen:
            tx.publish(
                {"type": "stream", "op": "create", "streams": [channel_object(tx, c, tx.now) for c in unseen]},
                [user_id],
            )


def _publish_added(tx: Tx, added: dict[int, list[Channel]]) -> None:
    by_channel: dict[int, list[int]] = {}
    channels: dict[int, Channel] = {}
    # The channel object and subscriber list are the same for every new subscriber: built once per
    # channel, not once per user (1,000 users subscribed at once took 1.1 s of the event loop).
    shared: dict[int, tuple[dict[str, Any], dict[str, list[int]]]] = {}
    for user_id, user_channels in added.items():
        objects = []
        for channel in user_channels:
            by_channel.setdefault(channel.id, []).append(user_id)
            channels[channel.id] = channel
            if channel.id not in shared:
                shared[channel.id] = (
                    channel_object(tx, channel, tx.now),
                    {"subscribers": subscriber_ids(tx, channel.id)},
                )
            fields, subscribers = shared[channel.id]
            row = tx.one("SELECT * FROM subscriptions WHERE user_id = ? AND channel_id = ?", (user_id, channel.id))
            objects.append(subscription_object(tx, channel, row, subscribers, fields))
        tx.publish({"type": "subscription", "op": "add", "subscriptions": objects}, [user_id])
    for channel_id, new_ids in by_channel.items():
        peers = set(users_with_metadata_access(tx, channels[channel_id])) - set(new_ids)
        if peers:
            event = {"type": "subscription", "op": "peer_add", "stream_ids": [channel_id], "user_ids": sorted(new_ids)}
            tx.publish(event, peers)


def unsubscribe(
    tx: Tx, channels: list[Channel], user_ids: list[int]
) -> tuple[dict[int, list[Channel]], dict[int, list[Channel]]]:
    """Unsubscribe every user from every channel; return ({user: removed}, {user: was not subscribed}).

    The rows stay (inactive) so that colour and settings return on resubscription. Sends
    subscription/remove to each removed user and peer_remove to the others who can see the channel.
    """
    removed: dict[int, list[Channel]] = {}
    not_removed: dict[int, list[Channel]] = {}
    for user_id in user_ids:
        for channel in channels:
            if not is_subscribed(tx, user_id, channel.id):
                not_removed.setdefault(user_id, []).append(channel)
                continue
            tx.execute(
                "UPDATE subscriptions SET active = 0 WHERE user_id = ? AND channel_id = ?", (user_id, channel.id)
            )
            removed.setdefault(user_id, []).append(channel)
    by_channel: dict[int, list[int]] = {}
    channel_by_id: dict[int, Channel] = {}
    for user_id, user_channels in removed.items():
        gone = [{"name": c.name, "stream_id": c.id} for c in user_channels]
        tx.publish({"type": "subscription", "op": "remove", "subscriptions": gone}, [user_id])
        for channel in user_channels:
            by_channel.setdefault(channel.id, []).append(user_id)
            channel_by_id[channel.id] = channel
    for channel_id, gone_ids in by_channel.items():
        # Computed after the update: whoever lost access with their subscription hears nothing more.
        peers = set(users_with_metadata_access(tx, channel_by_id[channel_id])) - set(gone_ids)
        if peers:
            event = {"type": "subscription", "op": "peer_remove", "stream_ids": [channel_id], "user_ids": gone_ids}
            tx.publish(event, peers)
    return removed, not_removed


# -- POST /users/me/subscriptions --------------------------------------------------------------


class NewSubscription(msgspec.Struct):
    """An element of `subscriptions` in POST /users/me/subscriptions."""

    name: str
    color: str | None = None
    description: Annotated[str, msgspec.Meta(max_length=MAX_STREAM_DESCRIPTION_LENGTH)] | None = None

    def __post_init__(self) -> None:
        # A ValueError becomes the API's "Invalid subscriptions[i]: Value error, ..." at decoding.
        if self.color is not None and not COLOR.fullmatch(self.color):
            raise ValueError("add.color is not a valid hex color code")


def resolve_principals(tx: Tx, actor: User, principals: list[str | int] | None, realm: Realm) -> list[int]:
    """Return the distinct active users named by ids or API emails (the actor when none are given)."""
    if not principals:
        return [actor.id]
    if all(isinstance(p, int) for p in principals):
        return check_subscriber_ids(tx, [int(p) for p in principals])
    user_ids = []
    for index, principal in enumerate(principals):
        if not isinstance(principal, str):
            # The API's type is "list of strings or list of ids"; a mix fails as the first branch.
            raise ApiError(f'principals["list[str]"][{index}] is not a string')
        user = access_user_by_email(tx, actor, principal, realm)
        if not user.is_active:
            raise ApiError("User is deactivated")
        user_ids.append(user.id)
    return sorted(set(user_ids))


def can_add_subscribers(tx: Tx, actor: User, channel: Channel) -> bool:
    """Return whether the actor may subscribe others to a channel whose content they can access."""
    if actor.is_guest:
        return False
    return (
        is_member(tx, actor.id, realm_group(tx, "can_add_subscribers_group"))
        or is_member(tx, actor.id, channel.can_add_subscribers_group)
        or can_administer(tx, actor, channel)
    )


def add_subscriptions(
    tx: Tx,
    actor: User,
    requested: list[NewSubscription],
    principals: list[str | int] | None,
    options: ChannelOptions,
    realm: Realm,
    authorization_errors_fatal: bool = True,
    web_public_enabled: bool = True,
    send_new_subscription_messages: bool = False,
) -> dict[str, Any]:
    """POST /users/me/subscriptions: create what is missing, subscribe; return the API's result.

    All or nothing: any error leaves every channel and subscription as it was.
    """
    if actor.is_guest:
        raise ApiError("Not allowed for guest users")
    user_ids = resolve_principals(tx, actor, principals, realm)
    channels, created, colors = _find_or_create(tx, actor, requested, options, web_public_enabled)
    unauthorized = [
        c for c in channels if c.id not in created and (c.is_archived or not has_content_access(tx, actor, c))
    ]
    if unauthorized and authorization_errors_fatal:
        raise ApiError(f"Unable to access channel ({unauthorized[0].name}).")
    channels = [c for c in channels if c not in unauthorized]
    if any(user_id != actor.id for user_id in user_ids) and not all(
        can_add_subscribers(tx, actor, c) for c in channels
    ):
        raise insufficient_permission()
    added, already = subscribe(tx, channels, user_ids, colors)
    result: dict[str, Any] = {
        "subscribed": {str(user_id): [c.name for c in chans] for user_id, chans in added.items()},
        "already_subscribed": {str(user_id): [c.name for c in chans] for user_id, chans in already.items()},
    }
    if not authorization_errors_fatal:
        result["unauthorized"] = [c.name for c in unauthorized]
    if send_new_subscription_messages:
        result["new_subscription_messages_sent"] = notify_new_subscribers(tx, actor, added)
    return result


def notify_new_subscribers(tx: Tx, actor: User, added: dict[int, list[Channel]]) -> bool:
    """Tell each human the actor subscribed (not the actor) with a notification-bot message.

    Returns whether messages were sent: none are when nobody else was subscribed, or when more
    than MAX_BULK_NEW_SUBSCRIPTION_MESSAGES users were, as Zulip does.
    """
    others = {user_id: chans for user_id, chans in added.items() if user_id != actor.id}
    if not others or len(others) > MAX_BULK_NEW_SUBSCRIPTION_MESSAGES:
        return False
    mention = f"@_**{actor.full_name}|{actor.id}**"
    for user_id, chans in sorted(others.items()):
        user = get_user_by_id(tx, user_id)
        if user is None or user.is_bot:
            continue
        if len(chans) == 1:
            text = f"{mention} subscribed you to the channel #**{chans[0].name}**."
        else:
            links = "\n".join(f"* #**{channel.name}**" for channel in chans)
            text = f"{mention} subscribed you to the following channels:\n\n{links}"
        system_bots.notify(tx, user, text)
    return True


def _find_or_create(
    tx: Tx, actor: User, requested: list[NewSubscription], options: ChannelOptions, web_public_enabled: bool
) -> tuple[list[Channel], set[int], dict[int, str]]:
    """Return the requested channels (distinct, in order), the ids of those created, and the colours asked for."""
    wanted: dict[str, NewSubscription] = {}
    for entry in requested:
        wanted.setdefault(check_channel_name(entry.name).casefold(), entry)
    channels: list[Channel] = []
    created: set[int] = set()
    colors: dict[int, str] = {}
    for entry in wanted.values():
        channel = get_channel_by_name(tx, entry.name)
        if channel is None:
            description = entry.description if entry.description is not None else options.description
            new_options = msgspec.structs.replace(options, description=description)
            channel = create_channel(tx, actor, entry.name, new_options, web_public_enabled)
            created.add(channel.id)
        channels.append(channel)
        if entry.color is not None:
            colors[channel.id] = entry.color
    return channels, created, colors


# -- DELETE /users/me/subscriptions ------------------------------------------------------------


def can_remove_subscribers(tx: Tx, actor: User, channel: Channel) -> bool:
    """Return whether the actor may unsubscribe other users from a channel they can see."""
    if can_administer(tx, actor, channel):  # organization administrators and the channel's
        return True
    return (
        not actor.is_guest
        and has_metadata_access(tx, actor, channel)
        and is_member(tx, actor.id, channel.can_remove_subscribers_group)
    )


def remove_subscriptions(
    tx: Tx, actor: User, names: list[str], principals: list[str | int] | None, realm: Realm
) -> dict[str, list[str]]:
    """DELETE /users/me/subscriptions: return {removed, not_removed}, one name per (user, channel).

    A channel the actor may not see answers STREAM_DOES_NOT_EXIST, like an unknown one.
    """
    user_ids = resolve_principals(tx, actor, principals, realm)
    for name in names:
        check_channel_name(name)
    channels: dict[int, Channel] = {}
    for name in names:
        channel = access_channel_by_name(tx, actor, name)
        channels.setdefault(channel.id, channel)
    targets = [get_user_by_id(tx, user_id) for user_id in user_ids]
    # Unsubscribing oneself or one's own bots needs nothing more than seeing the channel.
    others = any(t is not None and t.id != actor.id and not (t.is_bot and t.bot_owner_id == actor.id) for t in targets)
    if others and not all(can_remove_subscribers(tx, actor, c) for c in channels.values()):
        raise insufficient_permission()
    removed, not_removed = unsubscribe(tx, list(channels.values()), user_ids)
    return {
        "removed": [c.name for user_id in user_ids for c in removed.get(user_id, [])],
        "not_removed": [c.name for user_id in user_ids for c in not_removed.get(user_id, [])],
    }


# -- GET /users/me/subscriptions ---------------------------------------------------------------

# The subscriptions primary key (user_id, channel_id) serves this; channels by their primary key.
LIST_SUBSCRIPTIONS_SQL = (
    f"SELECT subscriptions.*, {CHANNEL_COLUMNS} FROM subscriptions"
    " JOIN channels ON channels.id = subscriptions.channel_id"
    " WHERE subscriptions.user_id = ? AND subscriptions.active"
)
# subscriptions_by_channel serves this; users by their primary key.
RECENT_SUBSCRIBERS_SQL = (
    "SELECT s.user_id FROM subscriptions AS s JOIN users AS u ON u.id = s.user_id"
    " WHERE s.channel_id = ? AND s.active AND u.is_active AND (u.is_bot OR u.last_active >= ?)"
    " ORDER BY s.user_id"
)


def list_subscriptions(
    tx: Tx,
    user: User,
    include_subscribers: str = "false",
    channel_fields: Callable[[int], dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """Return the user's active subscription objects sorted by channel name (archived ones too).

    channel_fields(channel_id), if given, returns the channel's object (POST /register builds them in bulk).
    """
    if include_subscribers not in INCLUDE_SUBSCRIBERS:
        raise ApiError("Invalid include_subscribers")
    rows = tx.all(LIST_SUBSCRIPTIONS_SQL, (user.id,))
    result = []
    for row in sorted(rows, key=lambda r: r["name"]):
        channel = msgspec.convert(dict(row), Channel, strict=False)
        fields = None if channel_fields is None else channel_fields(channel.id)
        result.append(subscription_object(tx, channel, row, _subscribers(tx, channel, include_subscribers), fields))
    return result


def _subscribers(tx: Tx, channel: Channel, include_subscribers: str) -> dict[str, list[int]] | None:
    if include_subscribers == "false":
        return None
    ids = subscriber_ids(tx, channel.id)
    if include_subscribers == "true" or len(ids) < PARTIAL_SUBSCRIBERS_THRESHOLD:
        return {"subscribers": ids}
    recent = tx.column(RECENT_SUBSCRIBERS_SQL, (channel.id, tx.now - RECENTLY_ACTIVE_SUBSCRIBER_SECONDS))
    return {"partial_subscribers": recent}
