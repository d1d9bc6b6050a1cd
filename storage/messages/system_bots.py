"""The notification bot: the system account that tells users about things the server did."""

from __future__ import annotations

from storage.db.tx import Tx
from storage.messages.messages import check_content, store_message
from storage.model import recipients
from storage.model.message import Destination
from storage.model.realm import get_realm
from storage.org import groups, passwords, users

NOTIFICATION_BOT_NAME = "Notification Bot"
DEFAULT_BOT = 1  # Zulip's bot_type of generic bots, which its system bots are


def notification_bot(tx: Tx) -> users.User:
    """Return the realm's notification bot, creating it (no password, no role group) on first use."""
    realm = get_realm(tx)
    email = f"notification-bot@{realm.email_host}"
    bot = users.get_user_by_delivery_email(tx, email)
    if bot is not None:
        return bot
    cursor = tx.execute(
        "INSERT INTO users (delivery_email, full_name, api_key, role, is_bot, bot_type, date_joined,"
        " email_address_visibility) VALUES (?, ?, ?, ?, 1, ?, ?, ?)",
        (email, NOTIFICATION_BOT_NAME, passwords.generate_api_key(), groups.ROLE_MEMBER, DEFAULT_BOT, tx.timestamp,
         users.EVERYONE),
    )  # fmt: skip
    bot = users.get_user_by_id(tx, int(cursor.lastrowid or 0))
    assert bot is not None
    # A system account, as in Zulip: in no user group, so it holds no permission of its own.
    person = users.user_object(None, bot, realm, False, None)
    tx.publish({"type": "realm_user", "op": "add", "person": person}, groups.active_user_ids(tx))
    return bot


def notify(tx: Tx, user: users.User, content: str) -> int:
    """Send a direct message from the notification bot to a user (active or not); return its id.

    The server itself speaks here, so no sending policy applies: the conversation is built directly.
    """
    bot = notification_bot(tx)
    participants = sorted({bot.id, user.id})
    recipient_id = recipients.get_or_create_direct_message_group(tx, participants)
    destination = Destination(recipient_id, None, "", participants)
    return store_message(tx, bot, destination, check_content(content), "Internal", False)
