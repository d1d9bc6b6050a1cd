"""GET /users/me/{stream_id}/topics: a channel's topics, newest first, with their latest message id.

Only what the user may read counts: a channel whose history is shared with its subscribers shows
all its topics; a channel with protected history only the messages the user received (Zulip's
get_topic_history_for_stream). Topics are grouped case-insensitively (topic_key) and named as the
newest message the user may see spells them.
"""

from __future__ import annotations

from typing import Any

from storage.channels.channels import has_content_access
from storage.channels.topics import display_topic
from storage.db.tx import Tx
from storage.model import recipients
from storage.model.channel import get_channel_by_id
from storage.model.errors import ApiError
from storage.model.user import User

# Shared history: an index-only walk of messages_by_topic (recipient_id, topic_key, id) for the
# latest id per topic, then one lookup per topic for its spelling.
PUBLIC_TOPICS_SQL = (
    "SELECT m.topic, t.max_id FROM (SELECT max(id) AS max_id FROM messages INDEXED BY messages_by_topic"
    " WHERE recipient_id = ? GROUP BY topic_key) AS t JOIN messages AS m ON m.id = t.max_id ORDER BY t.max_id DESC"
)
# Protected history: the same walk, keeping the messages the user has a row for (user_messages' key).
RECEIVED_TOPICS_SQL = (
    "SELECT m.topic, t.max_id FROM (SELECT max(m.id) AS max_id FROM messages AS m INDEXED BY messages_by_topic"
    " WHERE m.recipient_id = ? AND EXISTS (SELECT 1 FROM user_messages AS um WHERE um.user_id = ?"
    " AND um.message_id = m.id) GROUP BY m.topic_key) AS t JOIN messages AS m ON m.id = t.max_id"
    " ORDER BY t.max_id DESC"
)


def list_channel_topics(tx: Tx, user: User, channel_id: int, allow_empty_topic_name: bool) -> list[dict[str, Any]]:
    """Return [{name, max_id}] newest first; "Invalid channel ID" for channels the user may not read."""
    channel = get_channel_by_id(tx, channel_id)
    if channel is None or channel.is_archived or not has_content_access(tx, user, channel):
        raise ApiError("Invalid channel ID")
    recipient_id = recipients.get_recipient(tx, recipients.CHANNEL, channel.id)
    if recipient_id is None:
        return []
    if channel.history_public_to_subscribers:
        rows = tx.all(PUBLIC_TOPICS_SQL, (recipient_id,))
    else:
        rows = tx.all(RECEIVED_TOPICS_SQL, (recipient_id, user.id))
    return [{"name": display_topic(topic, allow_empty_topic_name), "max_id": max_id} for topic, max_id in rows]
