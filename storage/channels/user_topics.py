"""Topic visibility policies (Zulip's UserTopic): a user mutes, unmutes or follows a topic of a channel.

One user_topics row per (user, channel, topic_key); "inherit" (0) is the absence of a row. The
row's topic keeps the spelling last chosen. Each change is told to the user's clients twice: the
legacy `muted_topics` event (the whole muted list) and the `user_topic` event, as Zulip does.
Setting the policy a topic already has, or removing one that is not set, succeeds and tells no one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from storage.channels.channels import has_content_access
from storage.channels.topics import display_topic, stored_topic
from storage.db.tx import Tx, topic_key
from storage.model.channel import Channel, get_channel_by_id, get_channel_by_name
from storage.model.errors import ApiError, missing_argument
from storage.model.user import User

INHERIT, MUTED, UNMUTED, FOLLOWED = 0, 1, 2, 3

# The user's policies in channels that are not archived (Zulip leaves deactivated streams out).
USER_TOPICS_SQL = (
    "SELECT ut.channel_id, c.name, ut.topic, ut.visibility_policy, ut.last_updated FROM user_topics AS ut"
    " JOIN channels AS c ON c.id = ut.channel_id WHERE ut.user_id = ? AND NOT c.is_archived"
    " ORDER BY ut.channel_id, ut.topic_key"
)


def user_topic_event(channel_id: int, topic: str, policy: int, now: int) -> dict[str, Any]:
    """The `user_topic` event: a topic's visibility policy for the user is now `policy`."""
    return {"type": "user_topic", "stream_id": channel_id, "topic_name": topic, "last_updated": now,
            "visibility_policy": policy}  # fmt: skip


def list_user_topics(tx: Tx, user: User, empty_topic_name: bool = False) -> list[dict[str, Any]]:
    """POST /register's `user_topics`: every policy the user set, in channels not archived."""
    return [
        {
            "stream_id": row["channel_id"],
            "topic_name": display_topic(row["topic"], empty_topic_name),
            "last_updated": row["last_updated"],
            "visibility_policy": row["visibility_policy"],
        }
        for row in tx.all(USER_TOPICS_SQL, (user.id,))
    ]


def muted_topics(tx: Tx, user: User, empty_topic_name: bool = False) -> list[list[Any]]:
    """The legacy `muted_topics`: [channel name, topic, when muted] for each muted topic."""
    return [
        [row["name"], display_topic(row["topic"], empty_topic_name), row["last_updated"]]
        for row in tx.all(USER_TOPICS_SQL, (user.id,))
        if row["visibility_policy"] == MUTED
    ]


def get_visibility_policy(tx: Tx, user_id: int, channel_id: int, topic: str) -> int:
    """Return the user's policy for a topic (case-insensitively), INHERIT when none is set."""
    policy = tx.value(
        "SELECT visibility_policy FROM user_topics WHERE user_id = ? AND channel_id = ? AND topic_key = ?",
        (user_id, channel_id, topic_key(topic)),
    )
    return INHERIT if policy is None else int(policy)


def set_visibility_policy(tx: Tx, user: User, channel: Channel, topic: str, policy: int) -> None:
    """Store (or with INHERIT remove) the user's policy for a topic and tell their clients; no-op if unchanged."""
    current = get_visibility_policy(tx, user.id, channel.id, topic)
    if current == policy:
        return
    now = tx.timestamp
    if policy == INHERIT:
        tx.execute(
            "DELETE FROM user_topics WHERE user_id = ? AND channel_id = ? AND topic_key = ?",
            (user.id, channel.id, topic_key(topic)),
        )
    else:
        tx.execute(
            "INSERT OR REPLACE INTO user_topics (user_id, channel_id, topic, topic_key, visibility_policy,"
            " last_updated) VALUES (?, ?, ?, ?, ?, ?)",
            (user.id, channel.id, topic, topic_key(topic), policy, now),
        )
    tx.publish({"type": "muted_topics", "muted_topics": muted_topics(tx, user)}, [user.id])
    tx.publish(user_topic_event(channel.id, topic, policy, now), [user.id])


def _readable(tx: Tx, user: User, channel: Channel | None, error: ApiError) -> Channel:
    # Setting a policy needs a channel the user may read and that is not archived (Zulip's
    # access_stream_by_id with require_active).
    if channel is None or channel.is_archived or not has_content_access(tx, user, channel):
        raise error
    return channel


def update_user_topic(tx: Tx, user: User, channel_id: int, topic: str, policy: int) -> None:
    """POST /user_topics: set the user's visibility policy for a topic.

    Removing a policy (INHERIT) only needs the channel to exist: one may clear a setting in a channel
    one can no longer read (Zulip's access_stream_to_remove_visibility_policy_by_id).
    """
    topic = stored_topic(topic)
    if policy == INHERIT:
        channel = get_channel_by_id(tx, channel_id)
        if channel is None:
            raise ApiError("Invalid channel ID")
    else:
        channel = _readable(tx, user, get_channel_by_id(tx, channel_id), ApiError("Invalid channel ID"))
    set_visibility_policy(tx, user, channel, topic, policy)


def update_muted_topic(tx: Tx, user: User, channel_id: int | None, name: str | None, topic: str, op: str) -> None:
    """PATCH /users/me/subscriptions/muted_topics (legacy): op "add" mutes a topic, "remove" unmutes it."""
    if op not in ("add", "remove"):
        raise ApiError("Invalid op")
    if channel_id is None and name is None:
        raise missing_argument("stream_id")
    if channel_id is not None and name is not None:
        raise ApiError("Unsupported parameter combination: stream_id, stream", data={"parameters": "stream_id, stream"})
    topic = stored_topic(topic)
    if op == "add":
        if name is not None:
            error = ApiError(f"Invalid channel name '{name}'")
            channel = _readable(tx, user, get_channel_by_name(tx, name), error)
        else:
            channel = _readable(tx, user, get_channel_by_id(tx, channel_id or 0), ApiError("Invalid channel ID"))
        set_visibility_policy(tx, user, channel, topic, MUTED)
        return
    found = get_channel_by_name(tx, name) if name is not None else get_channel_by_id(tx, channel_id or 0)
    if found is None:
        raise ApiError("Topic is not muted")
    set_visibility_policy(tx, user, found, topic, INHERIT)


def muted_checker(tx: Tx, user_id: int) -> Callable[[int, str], bool]:
    """Return is_muted(channel_id, topic) for the user, loaded in two queries (Zulip's is_row_muted).

    Muted: a topic the user muted, or any topic of a channel they muted unless they unmuted or
    follow that topic.
    """
    muted_channels = set(
        tx.column("SELECT channel_id FROM subscriptions WHERE user_id = ? AND active AND is_muted", (user_id,))
    )
    rows = tx.all("SELECT channel_id, topic_key, visibility_policy FROM user_topics WHERE user_id = ?", (user_id,))
    policies = {(channel_id, key): policy for channel_id, key, policy in rows}

    def is_muted(channel_id: int, topic: str) -> bool:
        policy = policies.get((channel_id, topic_key(topic)), INHERIT)
        if channel_id in muted_channels:
            return policy not in (UNMUTED, FOLLOWED)
        return policy == MUTED

    return is_muted
