"""The Channel: a channels row, read by id or name, and which channels a user may no longer read."""

from __future__ import annotations

from typing import Any

import msgspec

from storage.db.tx import Tx


class Channel(msgspec.Struct, frozen=True):
    """A channels row."""

    id: int
    name: str
    description: str
    rendered_description: str
    date_created: int
    creator_id: int | None
    invite_only: bool
    is_web_public: bool
    history_public_to_subscribers: bool
    message_retention_days: int | None
    folder_id: int | None
    topics_policy: str
    is_archived: bool
    can_add_subscribers_group: int
    can_administer_channel_group: int
    can_create_topic_group: int
    can_delete_any_message_group: int
    can_delete_own_message_group: int
    can_move_messages_out_of_channel_group: int
    can_move_messages_within_channel_group: int
    can_remove_subscribers_group: int
    can_resolve_topics_group: int
    can_send_message_group: int
    can_subscribe_group: int


CHANNEL_COLUMNS = ", ".join(Channel.__struct_fields__)


def _channel(row: Any) -> Channel | None:
    return None if row is None else msgspec.convert(dict(row), Channel, strict=False)


def get_channel_by_id(tx: Tx, channel_id: int) -> Channel | None:
    """Return the channel (archived or not) with this id, or None."""
    if not 0 < channel_id < 2**63:
        return None
    return _channel(tx.one(f"SELECT {CHANNEL_COLUMNS} FROM channels WHERE id = ?", (channel_id,)))


def get_channel_by_name(tx: Tx, name: str) -> Channel | None:
    """Return the channel whose name matches case-insensitively, or None."""
    return _channel(tx.one(f"SELECT {CHANNEL_COLUMNS} FROM channels WHERE name = ?", (name.strip(),)))


# has_content_access for every channel at once, negated: the channels whose
# messages a user may have received but may no longer read (a private channel they left, a public
# one for a guest). One query rather than a check per channel on every fetch.
UNREADABLE_CHANNELS_SQL = """
WITH RECURSIVE holding(id) AS (
    SELECT group_id FROM user_group_members WHERE user_id = :user
    UNION
    SELECT s.supergroup_id FROM user_group_subgroups AS s JOIN holding AS h ON s.subgroup_id = h.id
)
SELECT c.id FROM channels AS c
WHERE NOT c.is_web_public AND (c.invite_only OR :guest)
AND NOT EXISTS (SELECT 1 FROM subscriptions AS s WHERE s.user_id = :user AND s.channel_id = c.id AND s.active)
AND NOT (c.invite_only AND (c.can_add_subscribers_group IN (SELECT id FROM holding)
                            OR c.can_subscribe_group IN (SELECT id FROM holding)))
ORDER BY c.id
"""
