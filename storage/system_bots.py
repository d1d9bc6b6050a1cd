"""The notification bot: the system account that tells users about things the server did."""

from __future__ import annotations

from storage import groups, users
from storage.db import Tx
from storage.messages import SendRequest, store_message, validate_send
from storage.realm import get_realm

NOTIFICATION_BOT_NAME = "Notification Bot"


def notification_bot(tx: Tx) -> users.User:
    """Return the realm's notification bot, creating it (without password or login) on first use."""
    email = f"notification-bot@{get_realm(tx).email_host}"
    bot = users.get_user_by_delivery_email(tx, email)
    if bot is None:
        bot = users.create_user(tx, email, NOTIFICATION_BOT_NAME, None, groups.ROLE_MEMBER)
        tx.execute("UPDATE users SET is_bot = 1, bot_type = 1 WHERE id = ?", (bot.id,))
        bot = users.get_user_by_id(tx, bot.id)
        assert bot is not None
    return bot


def notify(tx: Tx, user: users.User, content: str) -> int:
    """Send a direct message from the notification bot to a user; return its id."""
    bot = notification_bot(tx)
    destination, content = validate_send(tx, bot, SendRequest(type="private", to=[user.id], content=content))
    return store_message(tx, bot, destination, content, "Internal", False)
