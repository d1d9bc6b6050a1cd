"""Read receipts: GET /messages/{message_id}/read_receipts, who has read a message.

Zulip's rules (zerver/views/read_receipts.py): the requester must be able to read the message and
the realm must have enable_read_receipts on. The answer is the active users with the `read` flag
on the message, except
  - the sender (they read it by writing it);
  - users whose send_read_receipts setting is off (the privacy setting this enforces);
  - users who muted the requester (muting users read every message of the muted user at once,
    which would tell the requester they were muted) and users the requester muted.
Bots are included and the historical flag is not looked at; marking a message unread takes the
user out again.
"""

from __future__ import annotations

from storage.db.tx import Tx
from storage.fetch.message_access import access_message
from storage.model.errors import ApiError
from storage.model.user import User

# Readers of one message, by user_messages_by_message (message_id, user_id); the exclusions probe
# the users row, user_settings and muted_users by their primary keys.
READERS_SQL = (
    "SELECT um.user_id FROM user_messages AS um INDEXED BY user_messages_by_message"
    " JOIN users AS u ON u.id = um.user_id"
    " WHERE um.message_id = ? AND (um.flags & 1) != 0 AND u.is_active AND um.user_id != ?"
    " AND NOT EXISTS (SELECT 1 FROM user_settings AS s WHERE s.user_id = um.user_id"
    " AND s.name = 'send_read_receipts' AND s.value = 'false')"
    " AND NOT EXISTS (SELECT 1 FROM muted_users AS m WHERE m.user_id = um.user_id AND m.muted_user_id = ?)"
    " AND NOT EXISTS (SELECT 1 FROM muted_users AS m WHERE m.user_id = ? AND m.muted_user_id = um.user_id)"
    " ORDER BY um.user_id"
)


def read_receipts(tx: Tx, user: User, message_id: int) -> list[int]:
    """Return the ids of the users who have read the message, as the module's docstring says.

    Raises "Invalid message(s)" for a message the user may not read, then "Read receipts are
    disabled in this organization." (Zulip's order).
    """
    row, _ = access_message(tx, user, message_id)
    if not tx.value("SELECT enable_read_receipts FROM realm"):
        raise ApiError("Read receipts are disabled in this organization.")
    return tx.column(READERS_SQL, (row["id"], row["sender_id"], user.id, user.id))
