"""The API message object (spec 2.6, api-notes 4.5), built for a page of messages at once."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from storage import flags, linkify, recipients
from storage.db import Tx
from storage.realm import Realm, get_realm
from storage.topics import display_topic
from storage.users import EVERYONE, User, api_email, avatar_url, dummy_email, get_user_by_id, list_users

HISTORICAL_FLAGS = ["read", "historical"]
MESSAGE_COLUMNS = (
    "m.id, m.sender_id, m.recipient_id, m.channel_id, m.topic, m.content, m.rendered_content, m.date_sent,"
    " m.client, m.is_me_message, m.last_edit_timestamp, m.last_moved_timestamp, m.edit_history"
)


class Page:
    """What building message objects for one viewer needs, fetched once per page (never per message)."""

    def __init__(self, tx: Tx, viewer: User | None, rows: Sequence[Any]) -> None:
        self.tx = tx
        self.viewer = viewer
        self.realm: Realm = get_realm(tx)
        self.linkifiers = linkify.current(tx)  # topic_links come from its per-version cache
        # With the realm's allow_edit_history off, nobody sees earlier versions (Zulip drops the field).
        self.allow_edit_history = bool(tx.value("SELECT allow_edit_history FROM realm"))
        ids = [row["id"] for row in rows]
        self.reactions = _reactions(tx, self.realm, ids)
        channel_ids = sorted({row["channel_id"] for row in rows if row["channel_id"]})
        self.channel_names: dict[int, str] = {
            row["id"]: row["name"]
            for row in tx.all("SELECT id, name FROM channels WHERE id IN (SELECT value FROM json_each(?))",
                              (json.dumps(channel_ids),))
        }  # fmt: skip
        self.participants = _participants(tx, sorted({row["recipient_id"] for row in rows if not row["channel_id"]}))
        self.users: dict[int, User] = {}
        self.load_users({row["sender_id"] for row in rows}.union(*self.participants.values()))

    def user(self, user_id: int) -> User:
        if user_id not in self.users:
            found = get_user_by_id(self.tx, user_id)
            assert found is not None
            self.users[user_id] = found
        return self.users[user_id]

    def load_users(self, user_ids: set[int]) -> None:
        missing = sorted(user_ids - set(self.users))
        if missing:
            self.users.update((u.id, u) for u in list_users(self.tx, missing))


def _participants(tx: Tx, recipient_ids: list[int]) -> dict[int, list[int]]:
    """Return the members, sorted, of each direct-message conversation among the recipients."""
    rows = tx.all(
        "SELECT r.id, m.user_id FROM recipients AS r JOIN direct_message_group_members AS m ON m.group_id = r.type_id"
        " WHERE r.id IN (SELECT value FROM json_each(?)) AND r.type = ? ORDER BY r.id, m.user_id",
        (json.dumps(recipient_ids), recipients.DIRECT_MESSAGE_GROUP),
    )
    result: dict[int, list[int]] = {}
    for recipient_id, user_id in rows:
        result.setdefault(recipient_id, []).append(user_id)
    return result


def _reactions(tx: Tx, realm: Realm, message_ids: list[int]) -> dict[int, list[dict[str, Any]]]:
    """Return each message's reactions, oldest first."""
    rows = tx.all(
        "SELECT r.message_id, r.emoji_name, r.emoji_code, r.reaction_type, r.user_id, u.delivery_email,"
        " u.full_name, u.email_address_visibility, u.is_bot FROM reactions AS r JOIN users AS u ON u.id = r.user_id"
        " WHERE r.message_id IN (SELECT value FROM json_each(?)) ORDER BY r.message_id, r.id",
        (json.dumps(message_ids),),
    )
    result: dict[int, list[dict[str, Any]]] = {}
    for row in rows:
        email = row["delivery_email"]
        if not row["is_bot"] and row["email_address_visibility"] != EVERYONE:
            email = dummy_email(row["user_id"], realm)
        # `user` is the deprecated copy of the reactor that older clients read.
        result.setdefault(row["message_id"], []).append(
            {
                "emoji_name": row["emoji_name"],
                "emoji_code": row["emoji_code"],
                "reaction_type": row["reaction_type"],
                "user_id": row["user_id"],
                "user": {"user_id": row["user_id"], "email": email, "full_name": row["full_name"]},
            }
        )
    return result


def _display_recipient(page: Page, row: Any) -> str | list[dict[str, Any]]:
    """The channel's name, or every participant of the conversation (the viewer included)."""
    if row["channel_id"] is not None:
        return str(page.channel_names.get(row["channel_id"], ""))
    return [
        {
            "id": user_id,
            "email": api_email(page.users[user_id], page.realm),
            "full_name": page.users[user_id].full_name,
            "is_mirror_dummy": False,
        }
        for user_id in page.participants.get(row["recipient_id"], [])
    ]


def _edit_history(row: Any, allow_empty_topic_name: bool) -> list[dict[str, Any]]:
    history = json.loads(row["edit_history"])
    for entry in history:
        for key in ("prev_topic", "topic"):
            if key in entry:
                entry[key] = display_topic(entry[key], allow_empty_topic_name)
    return list(history)


def message_object(
    page: Page, row: Any, *, apply_markdown: bool, client_gravatar: bool, allow_empty_topic_name: bool
) -> dict[str, Any]:
    """Return the API object of one message row (without flags) as the page's viewer sees it."""
    sender = page.user(row["sender_id"])
    # A null avatar_url asks the client to compute the gravatar from sender_email, which is the real
    # address only when everyone may see it (Zulip forces client_gravatar off otherwise).
    gravatar_null = client_gravatar and sender.email_address_visibility == EVERYONE and sender.avatar_source == "G"
    result: dict[str, Any] = {
        "id": row["id"],
        "sender_id": sender.id,
        "content": row["rendered_content"] if apply_markdown else row["content"],
        "content_type": "text/html" if apply_markdown else "text/x-markdown",
        "recipient_id": row["recipient_id"],
        "timestamp": row["date_sent"],
        "client": row["client"],
        "subject": display_topic(row["topic"], allow_empty_topic_name) if row["channel_id"] is not None else "",
        "topic_links": linkify.topic_links(page.linkifiers, row["topic"]) if row["channel_id"] is not None else [],
        "is_me_message": bool(row["is_me_message"]),
        "reactions": page.reactions.get(row["id"], []),
        "submessages": [],  # widgets (polls, todo lists) are not supported
        "sender_full_name": sender.full_name,
        "sender_email": api_email(sender, page.realm),
        "sender_realm_str": "",
        "display_recipient": _display_recipient(page, row),
        "type": "stream" if row["channel_id"] is not None else "private",
        "avatar_url": None if gravatar_null else avatar_url(sender),
    }
    if row["channel_id"] is not None:
        result["stream_id"] = row["channel_id"]
    for key in ("last_edit_timestamp", "last_moved_timestamp"):
        if row[key] is not None:
            result[key] = row[key]
    if row["edit_history"] is not None and page.allow_edit_history:
        result["edit_history"] = _edit_history(row, allow_empty_topic_name)
    return result


def message_objects(
    tx: Tx,
    viewer: User,
    rows: Sequence[Any],
    *,
    apply_markdown: bool = True,
    client_gravatar: bool = True,
    allow_empty_topic_name: bool = False,
) -> list[dict[str, Any]]:
    """Return API objects with the viewer's flags for rows of MESSAGE_COLUMNS plus `flags` (NULL: historical)."""
    page = Page(tx, viewer, rows)
    result = []
    for row in rows:
        obj = message_object(
            page, row, apply_markdown=apply_markdown, client_gravatar=client_gravatar,
            allow_empty_topic_name=allow_empty_topic_name,
        )  # fmt: skip
        obj["flags"] = HISTORICAL_FLAGS if row["flags"] is None else flags.flag_names(row["flags"])
        result.append(obj)
    return result


def event_message_object(tx: Tx, message_id: int) -> dict[str, Any]:
    """Return the message object carried by message events (HTML content, avatar URLs, no flags)."""
    row = tx.one(f"SELECT {MESSAGE_COLUMNS} FROM messages AS m WHERE m.id = ?", (message_id,))
    page = Page(tx, None, [row])
    return message_object(page, row, apply_markdown=True, client_gravatar=False, allow_empty_topic_name=True)
