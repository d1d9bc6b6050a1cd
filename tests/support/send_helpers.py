"""Helpers shared by the POST /messages tests: sending, and reading back what was stored and published."""

from __future__ import annotations

from typing import Any

from storage.model import flags
from tests.support.channel_helpers import make_channel
from tests.support.helpers import assert_success

NO_PERMISSION = "You do not have permission to post in this channel."
NO_NEW_TOPICS = "You do not have permission to create new topics in this channel."
NO_GENERAL_CHAT = "Sending messages to the general chat is not allowed in this channel."
ONLY_GENERAL_CHAT = "Only the general chat topic is allowed in this channel."


def send(sender, to: Any, content: str = "hello", topic: str | None = "greetings", type: str = "stream", **params):
    """POST /messages; `to` is sent verbatim when a string, JSON-encoded otherwise (as the zulip client does)."""
    body = {"type": type, "to": to, "content": content, **params}
    if topic is not None:
        body["topic"] = topic
    return sender.post("/messages", body)


def send_ok(sender, to: Any, content: str = "hello", topic: str | None = "greetings", **params) -> int:
    """Send and return the new message's id, asserting the response is exactly {"id": ...}."""
    body = assert_success(send(sender, to, content, topic, **params))
    assert set(body) == {"result", "msg", "id"}, body
    return body["id"]


def send_direct(sender, to: Any, content: str = "hello", **params):
    return send(sender, to, content, None, type="direct", **params)


def send_direct_ok(sender, to: Any, content: str = "hello", **params) -> int:
    return send_ok(sender, to, content, None, type="direct", **params)


def stored(live, message_id: int) -> dict[str, Any]:
    """The messages row of a message, as a dict."""
    row = live.read(lambda tx: tx.one("SELECT * FROM messages WHERE id = ?", (message_id,)))
    assert row is not None
    return dict(row)


def stored_flags(live, message_id: int) -> dict[int, list[str]]:
    """Each receiver's flags as the API lists them."""
    rows = live.read(lambda tx: tx.all("SELECT user_id, flags FROM user_messages WHERE message_id = ?", (message_id,)))
    return {row["user_id"]: flags.flag_names(row["flags"]) for row in rows}


def stored_bits(live, message_id: int) -> dict[int, int]:
    rows = live.read(lambda tx: tx.all("SELECT user_id, flags FROM user_messages WHERE message_id = ?", (message_id,)))
    return {row["user_id"]: row["flags"] for row in rows}


def message_events(live, message_id: int) -> list[tuple[dict[str, Any], list[int]]]:
    """The message events published for one message: (event, audience)."""
    return [(e, ids) for e, ids in live.events() if e["type"] == "message" and e["message"]["id"] == message_id]


def count_rows(live, table: str) -> int:
    return live.read(lambda tx: tx.value(f"SELECT count(*) FROM {table}"))


def set_topics_policy(live, policy: str, channel_id: int | None = None) -> None:
    """Set a channel's topics_policy, or the realm's when no channel is given."""
    if channel_id is None:
        live.write(lambda tx: tx.execute("UPDATE realm SET topics_policy = ?", (policy,)))
    else:
        live.write(lambda tx: tx.execute("UPDATE channels SET topics_policy = ? WHERE id = ?", (policy, channel_id)))


def make_team(live):
    """Alice and Bob subscribed with the owner to #general; Carol is not subscribed."""
    alice = live.make_user(email="alice@example.com", full_name="Alice")
    bob = live.make_user(email="bob@example.com", full_name="Bob")
    carol = live.make_user(email="carol@example.com", full_name="Carol")
    channel = make_channel(live, "general", [live.owner.id, alice.id, bob.id])
    return alice, bob, carol, channel


def insert_messages(live, user_id: int, channel_id: int, count: int, flag_bits: int = 0) -> list[int]:
    """Insert `count` channel messages from one user, and that user's rows, straight into storage (fast).

    Topic "bulk", no reactions; the channel must already have its recipient (send one message first).
    Returns the new ids.
    """

    def insert(tx):
        recipient_id = tx.value("SELECT id FROM recipients WHERE type = 2 AND type_id = ?", (channel_id,))
        first = tx.value("SELECT coalesce(max(id), 0) + 1 FROM messages")
        tx.executemany(
            "INSERT INTO messages (id, sender_id, recipient_id, channel_id, topic, topic_key, content,"
            " rendered_content, date_sent, client) VALUES (?, ?, ?, ?, 'bulk', 'bulk', 'x', '<p>x</p>', 0, 'test')",
            [(first + i, user_id, recipient_id, channel_id) for i in range(count)],
        )
        tx.executemany(
            "INSERT INTO user_messages (user_id, message_id, flags) VALUES (?, ?, ?)",
            [(user_id, first + i, flag_bits) for i in range(count)],
        )
        return list(range(first, first + count))

    return live.write(insert)
