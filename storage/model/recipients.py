"""Recipients: what a message goes to, a channel or a direct-message conversation (group of users)."""

from __future__ import annotations

from storage.db.tx import Tx

CHANNEL, DIRECT_MESSAGE_GROUP = 2, 3


def get_or_create_recipient(tx: Tx, kind: int, type_id: int) -> int:
    """Return the id of the recipient row for (kind, type_id), creating it on first use."""
    found = tx.value("SELECT id FROM recipients WHERE type = ? AND type_id = ?", (kind, type_id))
    if found is not None:
        return int(found)
    return int(tx.execute("INSERT INTO recipients (type, type_id) VALUES (?, ?)", (kind, type_id)).lastrowid or 0)


def get_recipient(tx: Tx, kind: int, type_id: int) -> int | None:
    """Return the recipient id for (kind, type_id), or None when nothing was ever sent to it."""
    found = tx.value("SELECT id FROM recipients WHERE type = ? AND type_id = ?", (kind, type_id))
    return None if found is None else int(found)


def member_key(user_ids: list[int]) -> str:
    return ",".join(str(u) for u in sorted(set(user_ids)))


def get_or_create_direct_message_group(tx: Tx, user_ids: list[int]) -> int:
    """Return the recipient id of the conversation of exactly these users (one: with oneself)."""
    key = member_key(user_ids)
    group_id = tx.value("SELECT id FROM direct_message_groups WHERE member_key = ?", (key,))
    if group_id is None:
        group_id = tx.execute("INSERT INTO direct_message_groups (member_key) VALUES (?)", (key,)).lastrowid
        tx.executemany(
            "INSERT INTO direct_message_group_members (group_id, user_id) VALUES (?, ?)",
            [(group_id, u) for u in sorted(set(user_ids))],
        )
    return get_or_create_recipient(tx, DIRECT_MESSAGE_GROUP, int(group_id))


def get_direct_message_group_recipient(tx: Tx, user_ids: list[int]) -> int | None:
    """Return the recipient id of an existing direct-message group of exactly these users, or None."""
    group_id = tx.value("SELECT id FROM direct_message_groups WHERE member_key = ?", (member_key(user_ids),))
    return None if group_id is None else get_recipient(tx, DIRECT_MESSAGE_GROUP, int(group_id))


def direct_message_group_members(tx: Tx, recipient_id: int) -> list[int]:
    """Return the member ids of the direct-message group behind a recipient."""
    return tx.column(
        "SELECT m.user_id FROM recipients AS r JOIN direct_message_group_members AS m ON m.group_id = r.type_id"
        " WHERE r.id = ? AND r.type = ? ORDER BY m.user_id",
        (recipient_id, DIRECT_MESSAGE_GROUP),
    )
