"""Subscriptions: who is in which channel, their personal channel settings, and their events."""

from __future__ import annotations

from typing import Any

from storage.channels import Channel, channel_object, subscriber_ids, users_with_metadata_access
from storage.db import Tx

# Personal colours handed out to new subscriptions in turn.
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
BOOLEAN_PROPERTIES = ("is_muted", "in_home_view", "pin_to_top") + NOTIFICATION_SETTINGS
PROPERTIES = ("color",) + BOOLEAN_PROPERTIES


def next_color(tx: Tx, user_id: int) -> str:
    """Return the first palette colour the user's subscriptions do not use yet (cycling when all do)."""
    used = set(tx.column("SELECT color FROM subscriptions WHERE user_id = ?", (user_id,)))
    for color in PALETTE:
        if color not in used:
            return color
    return PALETTE[len(used) % len(PALETTE)]


def subscription_object(tx: Tx, channel: Channel, row: Any, subscribers: dict[str, list[int]] | None) -> dict[str, Any]:
    """Return the API subscription object: the channel object plus the user's own settings."""
    result = channel_object(tx, channel, tx.now)
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


def subscribe(
    tx: Tx, channels: list[Channel], user_ids: list[int], colors: dict[int, str] | None = None
) -> tuple[dict[int, list[Channel]], dict[int, list[Channel]]]:
    """Subscribe every user to every channel; return ({user: newly subscribed}, {user: already}).

    Sends subscription/add to each new subscriber and peer_add to the others who can see the channel.
    """
    colors = colors or {}
    added: dict[int, list[Channel]] = {}
    already: dict[int, list[Channel]] = {}
    for user_id in user_ids:
        for channel in channels:
            row = tx.one("SELECT active FROM subscriptions WHERE user_id = ? AND channel_id = ?", (user_id, channel.id))
            if row is not None and row["active"]:
                already.setdefault(user_id, []).append(channel)
                continue
            if row is None:
                color = colors.get(channel.id) or next_color(tx, user_id)
                tx.execute(
                    "INSERT INTO subscriptions (user_id, channel_id, color) VALUES (?, ?, ?)",
                    (user_id, channel.id, color),
                )
            else:
                tx.execute(
                    "UPDATE subscriptions SET active = 1 WHERE user_id = ? AND channel_id = ?", (user_id, channel.id)
                )
            added.setdefault(user_id, []).append(channel)
    _publish_added(tx, added)
    return added, already


def _publish_added(tx: Tx, added: dict[int, list[Channel]]) -> None:
    by_channel: dict[int, list[int]] = {}
    channels: dict[int, Channel] = {}
    for user_id, user_channels in added.items():
        objects = []
        for channel in user_channels:
            by_channel.setdefault(channel.id, []).append(user_id)
            channels[channel.id] = channel
            row = tx.one("SELECT * FROM subscriptions WHERE user_id = ? AND channel_id = ?", (user_id, channel.id))
            objects.append(subscription_object(tx, channel, row, {"subscribers": subscriber_ids(tx, channel.id)}))
        tx.publish({"type": "subscription", "op": "add", "subscriptions": objects}, [user_id])
    for channel_id, new_ids in by_channel.items():
        peers = set(users_with_metadata_access(tx, channels[channel_id])) - set(new_ids)
        if peers:
            event = {"type": "subscription", "op": "peer_add", "stream_ids": [channel_id], "user_ids": sorted(new_ids)}
            tx.publish(event, peers)
