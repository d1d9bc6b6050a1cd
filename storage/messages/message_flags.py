"""Read state and personal flags: POST /messages/flags (and its narrow form), mark_*_as_read.

A message the user may read but has no user_messages row for (channel history from before they
joined) counts as read + historical. A flag change that would alter that creates a "historical"
row; one that would not (reading it, unstarring it) creates nothing, as in Zulip.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec

from storage.channels.channels import access_channel_by_id
from storage.channels.topics import stored_topic
from storage.db.tx import Tx, topic_key
from storage.fetch.message_access import access_message
from storage.fetch.message_fetch import Anchor, GetMessages, anchor_value, parse_anchor, rewrite_with, select_range
from storage.fetch.narrow import MUTED_SQL, Query, build_query
from storage.fetch.narrow_select import find_flag_rows
from storage.fetch.narrow_terms import parse_narrow
from storage.model import flags, recipients
from storage.model.errors import ApiError
from storage.model.user import User
from storage.push import push_notifications

# Every flag the API knows (is_private is internal); only flags.EDITABLE may be changed.
VALID_FLAGS = (
    "read", "starred", "collapsed", "mentioned", "stream_wildcard_mentioned", "topic_wildcard_mentioned",
    "group_mentioned", "force_expand", "force_collapse", "has_alert_word", "historical",
)  # fmt: skip
OPERATIONS = ("add", "remove")
# The flags a readable message without a user_messages row is shown with.
HISTORICAL_FLAGS = flags.READ | flags.HISTORICAL
MAX_MESSAGES_PER_UPDATE = 5000

# The user's unread rows. `(um.flags & 1) = 0` is exactly the WHERE of the partial index
# user_messages_unread; INDEXED BY because without statistics SQLite prefers the primary key.
UNREAD_ROWS = (
    "SELECT um.message_id FROM user_messages AS um INDEXED BY user_messages_unread"
    " CROSS JOIN messages AS m ON m.id = um.message_id WHERE um.user_id = ? AND (um.flags & 1) = 0"
)
CHANNEL_UNREAD = UNREAD_ROWS + " AND m.recipient_id = ? ORDER BY um.message_id"
TOPIC_UNREAD = UNREAD_ROWS + " AND m.recipient_id = ? AND m.topic_key = ? ORDER BY um.message_id"
# Mark everything read: an UPDATE served by the same partial index.
MARK_ALL_READ = (
    "UPDATE user_messages INDEXED BY user_messages_unread SET flags = flags | 1 WHERE user_id = ? AND (flags & 1) = 0"
)
# Whether the user received any message in a topic (case-insensitive), by messages_by_topic.
USER_HAS_TOPIC = (
    "SELECT 1 FROM messages AS m CROSS JOIN user_messages AS um ON um.user_id = ? AND um.message_id = m.id"
    " WHERE m.recipient_id = ? AND m.topic_key = ? LIMIT 1"
)


class Target(msgspec.Struct):
    """A message whose flag may change: its channel (None for DMs) and the user's bits (None: no row)."""

    message_id: int
    channel_id: int | None
    bits: int | None


def check_flag(flag: str, op: str) -> int:
    """Return the bit of an editable flag; raise the API's errors for bad flags and operations."""
    if flag not in VALID_FLAGS:
        raise ApiError(f"Invalid flag: '{flag}'")
    if flag not in flags.EDITABLE:
        raise ApiError(f"Flag not editable: '{flag}'")
    if op not in OPERATIONS:
        raise ApiError(f"Invalid message flag operation: '{op}'")
    return flags.NAMES[flag]


def update_message_flags(tx: Tx, user: User, message_ids: list[int], op: str, flag: str) -> dict[str, Any]:
    """POST /messages/flags: return its response; raise for bad flags and unreadable messages."""
    bit = check_flag(flag, op)
    targets = []
    for message_id in dict.fromkeys(message_ids):
        # Archived channels stay readable in GET /messages, so their messages keep their flags editable.
        row, bits = access_message(tx, user, message_id, allow_archived=True)
        targets.append(Target(message_id, row["channel_id"], bits))
    _, ignored = apply_flag(tx, user, targets, op, flag, bit)
    return {"messages": message_ids, "ignored_because_not_subscribed_channels": ignored}


def apply_flag(tx: Tx, user: User, targets: list[Target], op: str, flag: str, bit: int) -> tuple[list[int], list[int]]:
    """Set or clear one flag on readable messages; publish the event; return (changed ids, ignored channels)."""
    adding = op == "add"
    ignored: set[int] = set()
    if flag == "read" and not adding:
        # Unread channel messages only exist in subscribed channels (unread counts are per
        # subscription), so marking others unread is skipped and reported.
        subscribed = set(tx.column("SELECT channel_id FROM subscriptions WHERE user_id = ? AND active", (user.id,)))
        ignored = {t.channel_id for t in targets if t.channel_id is not None and t.channel_id not in subscribed}
        targets = [t for t in targets if t.channel_id is None or t.channel_id in subscribed]
    changing = [t for t in targets if bool((HISTORICAL_FLAGS if t.bits is None else t.bits) & bit) != adding]
    new_rows = [t.message_id for t in changing if t.bits is None]
    tx.executemany(
        "INSERT INTO user_messages (user_id, message_id, flags) VALUES (?, ?, ?)",
        [
            (user.id, message_id, HISTORICAL_FLAGS | bit if adding else HISTORICAL_FLAGS & ~bit)
            for message_id in new_rows
        ],
    )
    new_value = "flags | ?" if adding else "flags & ~?"
    tx.executemany(
        f"UPDATE user_messages SET flags = {new_value} WHERE user_id = ? AND message_id = ?",
        [(bit, user.id, t.message_id) for t in changing if t.bits is not None],
    )
    changed = sorted(t.message_id for t in changing)
    if changed and flag == "read" and adding:
        push_notifications.withdraw_for_user(tx, user.id, changed)
    if changed:
        publish_flags(tx, user, op, flag, changed)
    return changed, sorted(ignored)


def publish_flags(tx: Tx, user: User, op: str, flag: str, message_ids: list[int], all_messages: bool = False) -> None:
    """Send update_message_flags to the user; marking unread carries what clients need to count it."""
    event: dict[str, Any] = {
        "type": "update_message_flags", "op": op, "operation": op, "flag": flag,
        "messages": message_ids, "all": all_messages,
    }  # fmt: skip
    if flag == "read" and op == "remove":
        event["message_details"] = unread_message_details(tx, user, message_ids)
    tx.publish(event, [user.id])


def unread_message_details(tx: Tx, user: User, message_ids: list[int]) -> dict[str, dict[str, Any]]:
    """Zulip's message_details: per message id, its conversation and whether it mentions the user."""
    rows = tx.all(
        f"SELECT m.id, m.channel_id, m.topic, m.recipient_id, um.flags, {MUTED_SQL} AS muted FROM messages AS m"
        " CROSS JOIN user_messages AS um ON um.user_id = ? AND um.message_id = m.id"
        " WHERE m.id IN (SELECT value FROM json_each(?)) ORDER BY m.id",
        [user.id] * 3 + [user.id, json.dumps(message_ids)],
    )
    # Group mentions count as mentions, as Zulip sets `mentioned` for them too.
    direct = flags.MENTIONED | flags.GROUP_MENTIONED
    wildcard = flags.STREAM_WILDCARD_MENTIONED | flags.TOPIC_WILDCARD_MENTIONED
    details: dict[str, dict[str, Any]] = {}
    for row in rows:
        detail: dict[str, Any]
        if row["channel_id"] is None:
            members = recipients.direct_message_group_members(tx, row["recipient_id"])
            detail = {"type": "private", "user_ids": [u for u in members if u != user.id]}
            mentioned = bool(row["flags"] & (direct | wildcard))
        else:
            unmuted = not row["muted"]
            detail = {"type": "stream", "stream_id": row["channel_id"], "topic": row["topic"],
                      "unmuted_stream_msg": unmuted}  # fmt: skip
            mentioned = bool(row["flags"] & direct) or (unmuted and bool(row["flags"] & wildcard))
        if mentioned:
            detail["mentioned"] = True
        details[str(row["id"])] = detail
    return details


# -- POST /messages/flags/narrow ---------------------------------------------------------------


class FlagsForNarrowRequest(msgspec.Struct, kw_only=True):
    anchor: str
    include_anchor: bool = True
    num_before: int
    num_after: int
    narrow: Any = None
    op: str
    flag: str


def parse_narrow_anchor(anchor: str) -> Anchor:
    """GET /messages' anchors except `date`, which needs an anchor_date this endpoint does not take."""
    if anchor == "date":
        raise ApiError("Invalid anchor")
    return parse_anchor(GetMessages(anchor=anchor))


def clamp(num_before: int, num_after: int) -> tuple[int, int]:
    """Zulip's clamp to MAX_MESSAGES_PER_UPDATE in all, keeping at least half for `before` if asked."""
    num_before = min(num_before, max(MAX_MESSAGES_PER_UPDATE - num_after, MAX_MESSAGES_PER_UPDATE // 2))
    return num_before, min(num_after, MAX_MESSAGES_PER_UPDATE - num_before)


def own_rows_only(query: Query) -> Query:
    """The query limited to messages the user has a row for: history rows are read and flagless already.

    Safe without the hidden-channel filter build_query adds outside history mode: a history query
    is limited by its channel term (or channels:public for a non-guest) to channels the user reads.
    """
    if not query.history:
        return query
    return msgspec.structs.replace(query, history=False, driver="um" if query.driver == "all" else query.driver)


def update_message_flags_for_narrow(tx: Tx, user: User, request: FlagsForNarrowRequest) -> dict[str, Any]:
    """POST /messages/flags/narrow: change a flag on a range of the user's messages in a narrow."""
    # Zulip's order: the narrow's shape (a parameter type), the anchor, then the narrow's meaning.
    terms = parse_narrow(request.narrow)
    anchor = parse_narrow_anchor(request.anchor)
    if request.num_before > 0 and request.num_after > 0 and not request.include_anchor:
        raise ApiError("The anchor can only be excluded at an end of the range")
    num_before, num_after = clamp(request.num_before, request.num_after)
    query = own_rows_only(build_query(tx, user, rewrite_with(tx, user, terms)))
    value = anchor_value(tx, query, anchor)
    rows, found_oldest, found_newest = select_range(
        tx, query, value, request.include_anchor, num_before, num_after, find_flag_rows
    )
    bit = check_flag(request.flag, request.op)
    ids = [row[0] for row in rows]
    in_ids = "SELECT id, channel_id FROM messages WHERE id IN (SELECT value FROM json_each(?))"
    channel_ids: dict[int, int | None] = {row[0]: row[1] for row in tx.all(in_ids, (json.dumps(ids),))}
    targets = [Target(message_id, channel_ids[message_id], bits) for message_id, bits in rows]
    changed, ignored = apply_flag(tx, user, targets, request.op, request.flag, bit)
    return {
        "processed_count": len(ids),
        "updated_count": len(changed),
        "first_processed_id": ids[0] if ids else None,
        "last_processed_id": ids[-1] if ids else None,
        "found_oldest": found_oldest,
        "found_newest": found_newest,
        "ignored_because_not_subscribed_channels": ignored,
    }


# -- marking as read ---------------------------------------------------------------------------


def mark_read(tx: Tx, user: User, sql: str, params: list[Any]) -> list[int]:
    """Mark read the user's messages that `sql` (the user's id first, then `params`) finds; withdraw their pushes."""
    message_ids = tx.column(sql, [user.id, *params])
    tx.executemany(
        "UPDATE user_messages SET flags = flags | 1 WHERE user_id = ? AND message_id = ?",
        [(user.id, message_id) for message_id in message_ids],
    )
    if message_ids:
        push_notifications.withdraw_for_user(tx, user.id, message_ids)
        publish_flags(tx, user, "add", "read", message_ids)
    return message_ids


def mark_stream_as_read(tx: Tx, user: User, stream_id: int) -> int:
    """Mark the user's unread messages in a channel read; return how many; "Invalid channel ID"."""
    channel = access_channel_by_id(tx, user, stream_id, require_content=True)
    recipient_id = recipients.get_recipient(tx, recipients.CHANNEL, channel.id)
    if recipient_id is None:
        return 0
    return len(mark_read(tx, user, CHANNEL_UNREAD, [recipient_id]))


def mark_topic_as_read(tx: Tx, user: User, stream_id: int, topic_name: str) -> int:
    """Mark a topic read ("" marks the whole channel); return how many; raise for unknown topics."""
    channel = access_channel_by_id(tx, user, stream_id, require_content=True)
    recipient_id = recipients.get_recipient(tx, recipients.CHANNEL, channel.id)
    if not topic_name:
        return 0 if recipient_id is None else len(mark_read(tx, user, CHANNEL_UNREAD, [recipient_id]))
    key = topic_key(stored_topic(topic_name))
    if recipient_id is None or tx.one(USER_HAS_TOPIC, (user.id, recipient_id, key)) is None:
        raise ApiError(f"No such topic '{topic_name}'")
    return len(mark_read(tx, user, TOPIC_UNREAD, [recipient_id, key]))


def mark_all_as_read(tx: Tx, user: User) -> int:
    """Mark every message of the user read; return how many changed."""
    push_notifications.withdraw_unread(tx, user.id)
    count = tx.execute(MARK_ALL_READ, (user.id,)).rowcount
    if count:
        # Zulip's form: all=true and no ids (clients reload their unread state).
        publish_flags(tx, user, "add", "read", [], all_messages=True)
    return count
