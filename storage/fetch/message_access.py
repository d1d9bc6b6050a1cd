"""Which messages a user may act on (`access_message`) and who is told when one changes."""

from __future__ import annotations

from typing import Any

from storage.channels.channels import has_content_access, subscriber_ids
from storage.db.tx import Tx
from storage.model.channel import Channel, get_channel_by_id
from storage.model.errors import ApiError
from storage.model.user import User


def invalid_messages() -> ApiError:
    return ApiError("Invalid message(s)")


def access_message(tx: Tx, user: User, message_id: int, allow_archived: bool = False) -> tuple[Any, int | None]:
    """Return (message row, the user's flag bits or None) for a message the user may read.

    Readable: the user has a user_messages row for it (and still may read its channel), or it is in a
    channel whose history the user may read. Anything else, and unknown ids, answer "Invalid message(s)".
    """
    row = tx.one("SELECT * FROM messages WHERE id = ?", (message_id,)) if 0 < message_id < 2**63 else None
    if row is None:
        raise invalid_messages()
    bits = tx.value("SELECT flags FROM user_messages WHERE user_id = ? AND message_id = ?", (user.id, message_id))
    if row["channel_id"] is None:
        if bits is None:
            raise invalid_messages()
        return row, int(bits)
    channel = get_channel_by_id(tx, row["channel_id"])
    assert channel is not None
    if channel.is_archived and not allow_archived:
        raise invalid_messages()
    if not has_content_access(tx, user, channel):
        raise invalid_messages()
    if bits is None and not channel.history_public_to_subscribers:
        raise invalid_messages()
    return row, None if bits is None else int(bits)


# -- who sees a message ----------------------------------------------------------------------


def message_channel(tx: Tx, row: Any) -> Channel | None:
    """Return the channel of a message row, or None for a direct message."""
    return None if row["channel_id"] is None else get_channel_by_id(tx, row["channel_id"])


def message_viewers(tx: Tx, row: Any, channel: Channel | None) -> dict[int, int | None]:
    """Return who is told about changes to a message: flag bits of users with a row, None for others.

    Zulip's audience for actions on messages: users with a user_messages row, plus the channel's
    subscribers when its history is shared with them (they may be looking at it without a row).
    """
    rows = tx.all("SELECT user_id, flags FROM user_messages WHERE message_id = ?", (row["id"],))
    viewers: dict[int, int | None] = {user_id: bits for user_id, bits in rows}
    if channel is not None and channel.history_public_to_subscribers:
        for user_id in subscriber_ids(tx, channel.id):
            viewers.setdefault(user_id, None)
    return viewers
