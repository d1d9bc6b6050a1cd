"""Muted users (Zulip's MutedUser): a user hides another's messages from their unread counts.

Muting someone (bots and deactivated users too; never oneself) marks every unread message of
theirs read for the muting user, withdrawing those messages' push notifications, and every later
message of theirs arrives already read (storage/messages/messages.py: user_flags), so it neither
counts as unread nor notifies. Read receipts leave out the users either side muted
(storage/messages/read_receipts.py). Clients hide the muted user's messages and typing; the server
still sends them, as Zulip does. Each change sends the user's whole list in a `muted_users` event.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from storage.db.tx import Tx
from storage.messages.message_flags import UNREAD_ROWS, mark_read
from storage.model.errors import ApiError
from storage.model.user import User
from storage.org.users import access_user_by_id

# The muting user's unread messages from the muted user, by the user_messages_unread index.
UNREAD_FROM_SENDER = UNREAD_ROWS + " AND m.sender_id = ? ORDER BY um.message_id"
# Sending: who muted the sender, by muted_users_by_muted (usually nobody: one index probe).
MUTERS_SQL = "SELECT user_id FROM muted_users WHERE muted_user_id = ?"


def list_muted_users(tx: Tx, user: User) -> list[dict[str, Any]]:
    """POST /register's `muted_users` (and the event's): each muted user's id and when, oldest first."""
    rows = tx.all(
        "SELECT muted_user_id, date_muted FROM muted_users WHERE user_id = ? ORDER BY date_muted, muted_user_id",
        (user.id,),
    )
    return [{"id": row["muted_user_id"], "timestamp": row["date_muted"]} for row in rows]


def muters_of(tx: Tx, sender_id: int, receiver_ids: Iterable[int]) -> set[int]:
    """Return the receivers who muted the sender."""
    muters = tx.column(MUTERS_SQL, (sender_id,))
    return set(muters).intersection(receiver_ids) if muters else set()


def muted_user_ids(tx: Tx, user_id: int) -> list[int]:
    """Return the ids of the users this user muted."""
    return tx.column("SELECT muted_user_id FROM muted_users WHERE user_id = ?", (user_id,))


def _changed(tx: Tx, user: User) -> None:
    tx.publish({"type": "muted_users", "muted_users": list_muted_users(tx, user)}, [user.id])


def mute_user(tx: Tx, user: User, muted_user_id: int) -> None:
    """POST /users/me/muted_users/{id}: raise "Cannot mute self", "No such user", "User already muted"."""
    if muted_user_id == user.id:
        raise ApiError("Cannot mute self")
    muted = access_user_by_id(tx, user, muted_user_id, for_admin=False)
    cursor = tx.execute(
        "INSERT OR IGNORE INTO muted_users (user_id, muted_user_id, date_muted) VALUES (?, ?, ?)",
        (user.id, muted.id, tx.timestamp),
    )
    if cursor.rowcount == 0:
        raise ApiError("User already muted")
    # As Zulip: what the muted user sent and the muting user has not read yet is read now.
    mark_read(tx, user, UNREAD_FROM_SENDER, [muted.id])
    _changed(tx, user)


def unmute_user(tx: Tx, user: User, muted_user_id: int) -> None:
    """DELETE /users/me/muted_users/{id}: raise "No such user" or "User is not muted"."""
    muted = access_user_by_id(tx, user, muted_user_id, for_admin=False)
    cursor = tx.execute("DELETE FROM muted_users WHERE user_id = ? AND muted_user_id = ?", (user.id, muted.id))
    if cursor.rowcount == 0:
        raise ApiError("User is not muted")
    _changed(tx, user)
