"""A channel's API object (GET /streams, stream events, POST /register) and its message statistics."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from storage.channels.channels import CHANNEL_SETTINGS, subscriber_ids
from storage.db.tx import Tx
from storage.model.channel import Channel
from storage.org import groups

RECENTLY_ACTIVE_SECONDS = 180 * 86400
WEEK = 7 * 86400
# stream_weekly_traffic averages over at most this window; channels younger than a week get null.
TRAFFIC_WINDOW_SECONDS = 4 * WEEK
# stream_post_policy (deprecated) derived from can_send_message_group's system group.
POST_POLICY_BY_GROUP = {"role:administrators": 2, "role:fullmembers": 3, "role:moderators": 4}


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
