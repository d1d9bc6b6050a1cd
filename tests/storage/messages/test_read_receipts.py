"""Read receipts: GET /messages/{message_id}/read_receipts, the realm's enable_read_receipts and the
users' send_read_receipts settings."""

from __future__ import annotations

from tests.support.channel_helpers import make_channel
from tests.support.events_helpers import register
from tests.support.helpers import assert_error, assert_success, events_since, make_bot
from tests.support.send_helpers import send_direct_ok, send_ok


def receipts(client, message_id):
    return assert_success(client.get(f"/messages/{message_id}/read_receipts"))["user_ids"]


def mark(client, message_id, op="add"):
    assert_success(client.post("/messages/flags", {"messages": [message_id], "op": op, "flag": "read"}))


def test_readers_without_the_sender(people):
    live, alice, bob = people, people.alice, people.bob
    carol = live.make_user()
    make_channel(live, "other", [carol.id])  # carol is not in #general
    message_id = send_ok(live.owner, "general", "hello")
    assert receipts(alice, message_id) == []
    mark(alice, message_id)
    mark(bob, message_id)
    assert receipts(live.owner, message_id) == [alice.id, bob.id]
    assert receipts(carol, message_id) == [alice.id, bob.id]  # a public channel's history is readable
    mark(bob, message_id, "remove")  # unread again: no longer a reader
    assert receipts(alice, message_id) == [alice.id]


def test_privacy_setting_deactivation_and_bots(people):
    live, alice, bob = people, people.alice, people.bob
    bot_id = make_bot(live, live.owner.id)
    bot = live.client_for(live.user(bot_id))
    message_id = send_direct_ok(live.owner, [alice.id, bob.id, bot_id], "hi all")
    for reader in (alice, bob, bot):
        mark(reader, message_id)
    assert receipts(live.owner, message_id) == [alice.id, bob.id, bot_id]  # bots are included
    assert_success(alice.patch("/settings", {"send_read_receipts": False}))
    assert receipts(live.owner, message_id) == [bob.id, bot_id]
    live.write(lambda tx: tx.execute("UPDATE users SET is_active = 0 WHERE id = ?", (bob.id,)))
    assert receipts(live.owner, message_id) == [bot_id]


def test_muting_hides_readers_both_ways(people):
    live, alice, bob = people, people.alice, people.bob
    carol = live.make_user()
    make_channel(live, "team", [live.owner.id, alice.id, bob.id, carol.id])
    message_id = send_ok(live.owner, "team", "hello")
    for reader in (alice, bob, carol):
        mark(reader, message_id)
    assert_success(alice.post(f"/users/me/muted_users/{carol.id}"))  # alice muted carol
    assert_success(bob.post(f"/users/me/muted_users/{carol.id}"))
    # Carol would learn she was muted: alice and bob are left out of what she is shown ...
    assert receipts(carol, message_id) == [carol.id]
    # ... and whom a user muted is left out of theirs.
    assert receipts(alice, message_id) == [alice.id, bob.id]
    assert receipts(live.owner, message_id) == [alice.id, bob.id, carol.id]


def test_disabled_by_the_realm(people):
    live, alice = people, people.alice
    message_id = send_ok(live.owner, "general", "hello")
    mark(alice, message_id)
    assert register(alice, fetch_event_types=["realm"])["realm_enable_read_receipts"] is True
    count = len(live.events())
    assert_success(live.owner.patch("/realm", {"enable_read_receipts": False}))
    event = {"type": "realm", "op": "update", "property": "enable_read_receipts", "value": False}
    assert events_since(live, count, "realm") == [(event, [live.owner.id, alice.id, live.bob.id])]
    assert register(alice, fetch_event_types=["realm"])["realm_enable_read_receipts"] is False
    assert_error(alice.get(f"/messages/{message_id}/read_receipts"), "Read receipts are disabled in this organization.")
    assert_success(live.owner.patch("/realm", {"enable_read_receipts": True}))
    assert receipts(live.owner, message_id) == [alice.id]


def test_only_administrators_change_the_setting(people):
    count = len(people.events())
    assert_error(people.alice.patch("/realm", {"enable_read_receipts": False}),
                 "Must be an organization administrator", "UNAUTHORIZED_PRINCIPAL")  # fmt: skip
    assert_error(people.owner.patch("/realm", {"enable_read_receipts": "no"}), "enable_read_receipts is not valid JSON")
    assert register(people.alice, fetch_event_types=["realm"])["realm_enable_read_receipts"] is True
    assert events_since(people, count, "realm") == []


def test_messages_the_requester_cannot_read(people):
    live, alice, bob = people, people.alice, people.bob
    direct = send_direct_ok(live.owner, [alice.id], "just us")
    assert_error(bob.get(f"/messages/{direct}/read_receipts"), "Invalid message(s)")
    assert_error(bob.get("/messages/999999/read_receipts"), "Invalid message(s)")
    private = make_channel(live, "secret", [live.owner.id, alice.id], invite_only=True)
    hidden = send_ok(live.owner, private, "sh")
    assert_error(bob.get(f"/messages/{hidden}/read_receipts"), "Invalid message(s)")
    # Access is checked before the realm setting (Zulip's order).
    assert_success(live.owner.patch("/realm", {"enable_read_receipts": False}))
    assert_error(bob.get(f"/messages/{direct}/read_receipts"), "Invalid message(s)")
