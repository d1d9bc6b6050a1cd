"""POST /register's state about the requesting user: own account, bots, conversations, stars, settings."""

from __future__ import annotations

from typing import Any

from storage.cache.directory import directory
from storage.db.tx import Tx
from storage.model import flags
from storage.model.realm import Realm
from storage.model.user import User
from storage.org import groups, users
from storage.org.realm import realm_group

# Zulip's RECENT_CONVERSATIONS_LIMIT: the newest direct messages recent_private_conversations looks at.
RECENT_CONVERSATIONS_LIMIT = 1000


def _in_group(tx: Tx, user: User, setting: str) -> bool:
    return groups.is_member(tx, user.id, realm_group(tx, setting))


def own_user_state(tx: Tx, user: User, realm: Realm) -> dict[str, Any]:
    """The realm_user block about the requester: identity, role, avatar and what the realm lets them do."""
    # The own avatar is always given (Zulip forces client_gravatar off).
    public = _in_group(tx, user, "can_create_public_channel_group")
    private = _in_group(tx, user, "can_create_private_channel_group")
    return {
        "user_id": user.id,
        "email": users.api_email(user, realm),
        "delivery_email": user.delivery_email,
        "full_name": user.full_name,
        "is_admin": user.is_admin,
        "is_owner": user.is_owner,
        "is_moderator": user.is_moderator,
        "is_guest": user.is_guest,
        "avatar_source": user.avatar_source,
        "avatar_url": users.avatar_url(user, realm),
        "avatar_url_medium": users.avatar_url(user, realm, medium=True),
        "can_create_public_streams": public,
        "can_create_private_streams": private,
        "can_create_web_public_streams": _in_group(tx, user, "can_create_web_public_channel_group"),
        "can_create_streams": public or private,
        "can_subscribe_other_users": _in_group(tx, user, "can_add_subscribers_group"),
        "can_invite_others_to_realm": False,  # accounts are made by administrators: there are no invitations
    }


def cross_realm_bots(tx: Tx, realm: Realm) -> list[dict[str, Any]]:
    """The system bots (the notification bot, once it exists) as Zulip lists them: user objects marked is_system_bot."""
    bot = users.get_user_by_delivery_email(tx, f"notification-bot@{realm.email_host}")
    if bot is None or not bot.is_bot:
        return []
    return [{**users.user_object(None, bot, realm, False, None), "is_system_bot": True}]


def realm_bots(tx: Tx, user: User, realm: Realm) -> list[dict[str, Any]]:
    """Bots the user owns (administrators: every bot with an owner), in Zulip's realm_bots shape."""
    rows = tx.column(
        "SELECT id FROM users WHERE is_bot AND bot_owner_id IS NOT NULL AND (? OR bot_owner_id = ?) ORDER BY id",
        (user.is_admin, user.id),
    )
    result = []
    for bot in users.list_users(tx, rows):
        result.append({
            "user_id": bot.id, "email": bot.delivery_email, "full_name": bot.full_name, "bot_type": bot.bot_type,
            "is_active": bot.is_active, "api_key": bot.api_key, "avatar_url": users.avatar_url(bot, realm),
            "owner_id": bot.bot_owner_id, "default_sending_stream": None, "default_events_register_stream": None,
            "default_all_public_streams": False, "services": [],
        })  # fmt: skip
    return result


def recent_private_conversations(tx: Tx, user: User) -> list[dict[str, Any]]:
    """Direct-message conversations among the user's newest 1,000 direct messages, newest first.

    Each: max_message_id and the other participants' ids (empty for the conversation with oneself).
    """
    rows = tx.all(
        "SELECT m.recipient_id, max(um.message_id) AS max_id FROM (SELECT message_id FROM user_messages"
        " WHERE user_id = ? AND (flags & ?) != 0 ORDER BY message_id DESC LIMIT ?) AS um"
        " JOIN messages AS m ON m.id = um.message_id GROUP BY m.recipient_id ORDER BY max_id DESC",
        (user.id, flags.IS_PRIVATE, RECENT_CONVERSATIONS_LIMIT),
    )
    members = conversation_members(tx, {row["recipient_id"] for row in rows})
    return [
        {"max_message_id": row["max_id"], "user_ids": [i for i in members[row["recipient_id"]] if i != user.id]}
        for row in rows
    ]


def conversation_members(tx: Tx, recipient_ids: set[int]) -> dict[int, list[int]]:
    """Return each direct-message recipient's member ids, ascending (from the directory: one query for
    those it does not hold). The lists are shared: do not change them."""
    return directory(tx).members_of(list(recipient_ids))


def starred_message_ids(tx: Tx, user: User) -> list[int]:
    """Ids of the messages the user starred, oldest first."""
    return tx.column(
        "SELECT message_id FROM user_messages WHERE user_id = ? AND (flags & ?) != 0 ORDER BY message_id",
        (user.id, flags.STARRED),
    )
