"""Topic rules shared by sending, scheduling and editing messages (spec's topic rule, api-notes 1.6)."""

from __future__ import annotations

from storage.channels.channel_creation import first_unprintable
from storage.db.tx import Tx, topic_key
from storage.model.channel import Channel
from storage.model.errors import ApiError
from storage.model.realm import EMPTY_TOPIC_DISPLAY_NAME, MAX_TOPIC_LENGTH

RESOLVED_PREFIX = "✔ "


def normalize_topic(topic: str) -> str:
    """Return the stored form of a topic: stripped, `(no topic)` and the display name read as ""."""
    topic = topic.strip()
    if topic in ("(no topic)", EMPTY_TOPIC_DISPLAY_NAME):
        return ""
    position = first_unprintable(topic)
    if position is not None:
        raise ApiError(f"Invalid character in topic, at position {position}!")
    if len(topic) > MAX_TOPIC_LENGTH:
        topic = topic[: MAX_TOPIC_LENGTH - 3] + "..."
    return topic


def effective_topics_policy(tx: Tx, channel: Channel) -> str:
    if channel.topics_policy != "inherit":
        return channel.topics_policy
    return str(tx.value("SELECT topics_policy FROM realm"))


def check_topic_allowed(tx: Tx, channel: Channel, topic: str) -> None:
    """Raise if the channel's topics policy forbids this (normalized) topic."""
    policy = effective_topics_policy(tx, channel)
    if policy == "disable_empty_topic" and topic == "":
        raise ApiError("Sending messages to the general chat is not allowed in this channel.")
    if policy == "empty_topic_only" and topic != "":
        raise ApiError("Only the general chat topic is allowed in this channel.")


def topic_exists(tx: Tx, recipient_id: int | None, topic: str) -> bool:
    """Return whether the channel (by recipient) has a message in this topic, case-insensitively."""
    if recipient_id is None:
        return False
    query = "SELECT 1 FROM messages WHERE recipient_id = ? AND topic_key = ? LIMIT 1"
    return tx.one(query, (recipient_id, topic_key(topic))) is not None


def display_topic(topic: str, allow_empty_topic_name: bool) -> str:
    """Return a topic as clients see it: "" becomes the realm's display name unless allowed."""
    return topic if topic or allow_empty_topic_name else EMPTY_TOPIC_DISPLAY_NAME


def stored_topic(topic: str) -> str:
    """The stored topic a client's topic names: the empty topic's display name means "" (Zulip's
    maybe_rename_general_chat_to_empty_topic)."""
    return "" if topic == EMPTY_TOPIC_DISPLAY_NAME else topic
