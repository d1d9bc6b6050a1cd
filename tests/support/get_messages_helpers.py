"""Helpers shared by the GET /messages tests (test_get_messages_*.py): fetching, flags, muting, and a
small organization with one message of each kind, built once per module where tests only read."""

from __future__ import annotations

import os
from typing import Any

import msgspec

from storage.model import flags as flag_bits
from tests.support.channel_helpers import make_channel
from tests.support.helpers import LiveServer, assert_success
from tests.support.send_helpers import send_direct_ok, send_ok

NEWEST = 10000000000000000


def fetch(client, **params: Any) -> dict[str, Any]:
    """GET /messages; returns the successful body."""
    return assert_success(client.get("/messages", params))


def ids_of(body: dict[str, Any]) -> list[int]:
    return [message["id"] for message in body["messages"]]


def narrow_ids(client, narrow: Any, **params: Any) -> list[int]:
    """The ids of every message (up to 1000) matching a narrow, oldest first."""
    params = {"anchor": "newest", "num_before": 1000, "num_after": 0, **params}
    return ids_of(fetch(client, narrow=narrow, **params))


def message_by_id(client, message_id: int, **params: Any) -> dict[str, Any]:
    [message] = fetch(client, message_ids=[message_id], **params)["messages"]
    return message


def post(live, client, channel: str, topic: str = "greetings", content: str = "hello") -> int:
    """Send a channel message, read by its sender (as interactive clients send them)."""
    return send_ok(client, channel, content, topic, read_by_sender="true")


def post_direct(live, client, to: list[int], content: str = "hello") -> int:
    return send_direct_ok(client, to, content, read_by_sender="true")


def set_flag(live, user_id: int, message_id: int, bit: int, on: bool = True) -> None:
    sql = "flags | ?" if on else "flags & ~?"
    live.write(
        lambda tx: tx.execute(
            f"UPDATE user_messages SET flags = {sql} WHERE user_id = ? AND message_id = ?", (bit, user_id, message_id)
        )
    )


def mark_unread(live, user_id: int, message_id: int) -> None:
    set_flag(live, user_id, message_id, flag_bits.READ, on=False)


def set_topic_policy(live, user_id: int, channel_id: int, topic: str, policy: int) -> None:
    """A user_topics row: 1 muted, 2 unmuted, 3 followed."""
    live.write(
        lambda tx: tx.execute(
            "INSERT OR REPLACE INTO user_topics (user_id, channel_id, topic, topic_key, visibility_policy,"
            " last_updated) VALUES (?, ?, ?, ?, ?, ?)",
            (user_id, channel_id, topic, topic.casefold(), policy, tx.timestamp),
        )
    )


def mute_channel(live, user_id: int, channel_id: int, muted: bool = True) -> None:
    live.write(
        lambda tx: tx.execute(
            "UPDATE subscriptions SET is_muted = ? WHERE user_id = ? AND channel_id = ?", (muted, user_id, channel_id)
        )
    )


def add_reaction_row(live, message_id: int, user_id: int, name: str, code: str, kind: str = "unicode_emoji") -> None:
    live.write(
        lambda tx: tx.execute(
            "INSERT INTO reactions (message_id, user_id, emoji_name, emoji_code, reaction_type) VALUES (?, ?, ?, ?, ?)",
            (message_id, user_id, name, code, kind),
        )
    )


def leave(live, user_id: int, channel_id: int) -> None:
    """Deactivate a subscription directly (the unsubscribe endpoint's effect on storage)."""
    live.write(
        lambda tx: tx.execute(
            "UPDATE subscriptions SET active = 0 WHERE user_id = ? AND channel_id = ?", (user_id, channel_id)
        )
    )


class World(msgspec.Struct):
    """The organization of test_get_messages_world: users, channels and one message of each kind."""

    live: Any
    owner: Any
    alice: Any
    bob: Any
    carol: Any
    channels: dict[str, int]
    m: dict[str, int]

    @property
    def owner_visible(self) -> list[int]:
        """Every message the owner may see in the default narrow, oldest first."""
        return sorted(v for k, v in self.m.items() if k != "alice_to_bob")


def build_world(data_dir: str) -> World:
    """Owner, Alice and Bob in "general"; Owner and Alice in "random" and the private "secret";
    "announce" is web-public. Carol is subscribed to nothing. Messages are read by their senders."""
    live = LiveServer(os.path.join(data_dir, "data"))
    owner = live.owner
    alice = live.make_user(email="alice@example.com", full_name="Alice")
    bob = live.make_user(email="bob@example.com", full_name="Bob")
    carol = live.make_user(email="carol@example.com", full_name="Carol")
    channels = {
        "general": make_channel(live, "general", [owner.id, alice.id, bob.id]),
        "random": make_channel(live, "random", [owner.id, alice.id]),
        "secret": make_channel(live, "secret", [owner.id, alice.id], invite_only=True),
        "announce": make_channel(live, "announce", [owner.id]),
    }
    live.write(lambda tx: tx.execute("UPDATE channels SET is_web_public = 1 WHERE id = ?", (channels["announce"],)))
    m = {
        "hello": post(live, owner, "general", "greetings", "hello world"),
        "alice_greets": post(live, alice, "general", "Greetings", "good morning everyone"),
        "general_chat": post(live, bob, "general", "", "chatting in general chat"),
        "link": post(live, alice, "random", "lunch", "see https://example.com/menu for lunch"),
        "secret": post(live, owner, "secret", "plans", "the secret plans"),
        "dm_to_alice": post_direct(live, owner, [alice.id], "hi alice"),
        "dm_from_alice": post_direct(live, alice, [owner.id], "hi owner"),
        "group": post_direct(live, owner, [alice.id, bob.id], "hi all three"),
        "self": post_direct(live, owner, [owner.id], "note to self"),
        "alice_to_bob": post_direct(live, alice, [bob.id], "just between us"),
        "resolved": post(live, owner, "general", "✔ done", "this is finished"),
        "mention": post(live, bob, "general", "greetings", "hi @**Owner** and @_**Alice**"),
        "image": post(live, alice, "random", "pictures", "look https://example.com/cat.png"),
        "attachment": post(live, owner, "random", "files", "[notes](/user_uploads/1/ab/notes.txt)"),
        "announcement": post(live, owner, "announce", "news", "big news"),
    }
    return World(live, owner, alice, bob, carol, channels, m)
