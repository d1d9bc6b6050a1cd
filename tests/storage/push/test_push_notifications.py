"""Push notifications: who is notified, the encrypted payload, and withdrawal on read and deletion.

These tests read the queued notifications back from push_outbox (no push bouncer is configured,
so nothing sends them) and open each with its device's key. test_push_delivery.py sends them
through the stand-in push bouncer.
"""

from __future__ import annotations

import nacl.exceptions
import pytest

from storage.model import flags
from storage.push.push_notifications import CHANNEL_SETTINGS, PUSH_DEVICES, WITHDRAW_WAITING
from tests.support.helpers import assert_success, make_bot
from tests.support.push_notify_helpers import (
    active_bit,
    add_device,
    mark_sent,
    notified_message_ids,
    open_data,
    outbox,
    payloads,
    rotate_key,
    sealed,
)
from tests.support.scheduled_helpers import IN_AN_HOUR, deliver, schedule_direct_ok
from tests.support.send_helpers import make_team, send_direct_ok, send_ok, stored_bits

REALM = {"realm_url": "http://127.0.0.1:9991", "realm_name": "Tornchat"}


def test_direct_message_payload_is_encrypted_with_the_device_key(live):
    alice, bob, _, _ = make_team(live)
    phone = add_device(live, bob.id)
    message_id = send_direct_ok(alice, [bob.id], "Lunch at **noon**?")
    [payload] = payloads(live, phone)
    assert payload == {
        **REALM, "user_id": bob.id, "type": "message", "message_id": message_id, "time": int(live.clock.now),
        "content": "Lunch at noon?", "sender_id": alice.id, "sender_full_name": "Alice",
        "sender_avatar_url": f"http://127.0.0.1:9991/user_avatars/default/{alice.id}.png?v=1",
        "recipient_type": "direct", "recipient_user_ids": sorted([alice.id, bob.id]),
    }  # fmt: skip
    [row] = outbox(live)
    assert (row["message_id"], row["attempts"], row["next_attempt_at"]) == (message_id, 0, live.clock.now)
    with pytest.raises(nacl.exceptions.CryptoError):
        open_data(sealed(row), bytes(32))


def test_group_direct_message_lists_the_conversation(live):
    alice, bob, carol, _ = make_team(live)
    phone = add_device(live, bob.id)
    send_direct_ok(alice, [bob.id, carol.id])
    [payload] = payloads(live, phone)
    assert payload["recipient_type"] == "direct"
    assert payload["recipient_user_ids"] == sorted([alice.id, bob.id, carol.id])
    assert payload["pm_users"] == ",".join(str(u) for u in sorted([alice.id, bob.id, carol.id]))


def test_one_row_per_device_each_under_its_own_key(live):
    alice, bob, _, _ = make_team(live)
    first, second = add_device(live, bob.id, key_id=1), add_device(live, bob.id, key_id=2)
    message_id = send_direct_ok(alice, [bob.id])
    assert notified_message_ids(live, first) == notified_message_ids(live, second) == [message_id]
    with pytest.raises(nacl.exceptions.CryptoError):
        open_data(sealed(outbox(live, first)[0]), second.key)


def test_the_bit_is_set_but_never_shown(live):
    alice, bob, _, _ = make_team(live)
    add_device(live, bob.id)
    message_id = send_direct_ok(alice, [bob.id])
    assert active_bit(live, bob.id, message_id) and not active_bit(live, alice.id, message_id)
    message = assert_success(bob.get(f"/messages/{message_id}"))["message"]
    assert message["flags"] == [] and stored_bits(live, message_id)[bob.id] & flags.IS_PRIVATE


def test_channel_mention_payload(live):
    alice, bob, _, channel = make_team(live)
    phone = add_device(live, bob.id)
    message_id = send_ok(alice, channel, "hi @**Bob** " + "x" * 300, "plans")
    [payload] = payloads(live, phone)
    assert payload["recipient_type"] == "channel"
    assert (payload["channel_id"], payload["channel_name"], payload["topic"]) == (channel, "general", "plans")
    assert payload["message_id"] == message_id and "pm_users" not in payload and "recipient_user_ids" not in payload
    assert payload["content"] == ("hi @Bob " + "x" * 300)[:200] + "…"
    assert "mentioned_user_group_id" not in payload


def test_unmentioned_channel_message_notifies_nobody(live):
    alice, bob, _, channel = make_team(live)
    add_device(live, bob.id)
    send_ok(alice, channel, "hello all of you, no mention")
    assert outbox(live) == []


def group_id_of(live, client, name, members):
    body = {"name": name, "members": list(members), "description": "d"}
    return assert_success(client.post("/user_groups/create", body))["group_id"]


def test_group_mention_names_the_smallest_group(live):
    alice, bob, carol, channel = make_team(live)
    phone = add_device(live, bob.id)
    group_id_of(live, live.owner, "everybody", [alice.id, bob.id, carol.id])
    small = group_id_of(live, live.owner, "backend", [bob.id])
    send_ok(alice, channel, "ping @*everybody* and @*backend*")
    [payload] = payloads(live, phone)
    assert (payload["mentioned_user_group_id"], payload["mentioned_user_group_name"]) == (small, "backend")


def test_personal_mention_wins_over_group_mention(live):
    alice, bob, _, channel = make_team(live)
    phone = add_device(live, bob.id)
    group_id_of(live, live.owner, "backend", [bob.id])
    send_ok(alice, channel, "@**Bob** and @*backend*")
    [payload] = payloads(live, phone)
    assert "mentioned_user_group_id" not in payload and "mentioned_user_group_name" not in payload


# -- channel settings: wildcards, muting, followed topics --------------------------------------


def set_subscription(client, channel_id, prop, value):
    assert_success(client.patch(f"/users/me/subscriptions/{channel_id}", {"property": prop, "value": value}))


def set_topic_policy(live, user_id, channel_id, topic, policy):
    sql = (
        "INSERT INTO user_topics (user_id, channel_id, topic, topic_key, visibility_policy, last_updated)"
        " VALUES (?, ?, ?, ?, ?, 0)"
    )
    live.write(lambda tx: tx.execute(sql, (user_id, channel_id, topic, topic.casefold(), policy)))


def test_wildcard_mention_follows_wildcard_mentions_notify(live):
    alice, bob, carol, channel = make_team(live)
    bob_phone = add_device(live, bob.id)
    owner_phone = add_device(live, live.owner.id)
    set_subscription(live.owner, channel, "wildcard_mentions_notify", False)
    message_id = send_ok(alice, channel, "@**all** meeting now")
    assert notified_message_ids(live, bob_phone) == [message_id]  # unset: the default (on)
    assert notified_message_ids(live, owner_phone) == []


def test_muted_channel_or_topic_silences_mentions_too(live):
    alice, bob, _, channel = make_team(live)
    phone = add_device(live, bob.id)
    group_id_of(live, live.owner, "support", [bob.id])
    set_subscription(bob, channel, "is_muted", True)
    send_ok(alice, channel, "@**all** meeting now")
    send_ok(alice, channel, "plain message")
    send_ok(alice, channel, "@**Bob** you in particular")
    send_ok(alice, channel, "@*support* all of you")
    assert notified_message_ids(live, phone) == []
    set_subscription(bob, channel, "is_muted", False)
    set_topic_policy(live, bob.id, channel, "quiet", 1)
    send_ok(alice, channel, "@**Bob** muted topic", "quiet")
    mentioned = send_ok(alice, channel, "@**Bob** elsewhere", "loud")
    assert notified_message_ids(live, phone) == [mentioned]


def test_explicit_wildcard_setting_overrides_a_channel_mute(live):
    alice, bob, _, channel = make_team(live)
    phone = add_device(live, bob.id)
    set_subscription(bob, channel, "is_muted", True)
    set_subscription(bob, channel, "wildcard_mentions_notify", True)
    message_id = send_ok(alice, channel, "@**all** meeting now")
    assert notified_message_ids(live, phone) == [message_id]


def test_muted_topic_silences_wildcards_even_when_explicitly_on(live):
    alice, bob, _, channel = make_team(live)
    phone = add_device(live, bob.id)
    set_subscription(bob, channel, "wildcard_mentions_notify", True)
    set_topic_policy(live, bob.id, channel, "Plans", 1)  # muted; topics compare case-insensitively
    send_ok(alice, channel, "@**all** meeting now", "plans")
    assert notified_message_ids(live, phone) == []


def test_unmuted_topic_of_a_muted_channel_gets_wildcards(live):
    alice, bob, _, channel = make_team(live)
    phone = add_device(live, bob.id)
    set_subscription(bob, channel, "is_muted", True)
    set_topic_policy(live, bob.id, channel, "plans", 2)
    message_id = send_ok(alice, channel, "@**all** meeting now", "plans")
    send_ok(alice, channel, "@**all** elsewhere", "other")
    assert notified_message_ids(live, phone) == [message_id]


def test_followed_topic_notifies_every_message(live):
    alice, bob, _, channel = make_team(live)
    phone = add_device(live, bob.id)
    set_topic_policy(live, bob.id, channel, "plans", 3)
    followed = send_ok(alice, channel, "no mention at all", "plans")
    send_ok(alice, channel, "no mention at all", "other")
    assert notified_message_ids(live, phone) == [followed]


def test_channel_push_notifications_setting(live):
    alice, bob, _, channel = make_team(live)
    phone = add_device(live, bob.id)
    set_subscription(bob, channel, "push_notifications", True)
    first = send_ok(alice, channel, "no mention at all")
    set_subscription(bob, channel, "is_muted", True)
    send_ok(alice, channel, "muted now")
    assert notified_message_ids(live, phone) == [first]


# -- who is never notified ----------------------------------------------------------------------


def test_the_sender_is_not_notified(live):
    alice, bob, _, channel = make_team(live)
    phone = add_device(live, alice.id)
    send_direct_ok(alice, [bob.id])
    send_direct_ok(alice, [alice.id], "note to self")
    send_ok(alice, channel, "@**Alice** talking to myself")
    assert outbox(live, phone) == []


def test_devices_without_key_or_confirmed_token_get_nothing(live):
    alice, bob, carol, _ = make_team(live)
    add_device(live, bob.id, token_id=None)  # registration still pending
    live.write(lambda tx: tx.execute("INSERT INTO devices (user_id, date_created) VALUES (?, 0)", (carol.id,)))
    send_direct_ok(alice, [bob.id, carol.id])
    assert outbox(live) == []


def test_a_removed_device_gets_nothing_more(live):
    alice, bob, _, _ = make_team(live)
    phone = add_device(live, bob.id)
    send_direct_ok(alice, [bob.id])
    live.write(lambda tx: tx.execute("DELETE FROM devices WHERE id = ?", (phone.id,)))
    send_direct_ok(alice, [bob.id])
    assert outbox(live) == []


def test_bots_are_not_notified(live):
    alice, _, _, _ = make_team(live)
    bot_id = make_bot(live, alice.id)
    add_device(live, bot_id)
    send_direct_ok(alice, [bot_id])
    assert outbox(live) == []


def test_deactivated_subscribers_are_not_notified(live):
    alice, bob, _, channel = make_team(live)
    add_device(live, bob.id)
    live.write(lambda tx: tx.execute("UPDATE users SET is_active = 0 WHERE id = ?", (bob.id,)))
    send_ok(alice, channel, "@**all** meeting now")
    assert outbox(live) == []


def test_key_rotation_applies_to_the_next_notification(live):
    alice, bob, _, _ = make_team(live)
    phone = add_device(live, bob.id, key_id=1)
    first = send_direct_ok(alice, [bob.id])
    assert notified_message_ids(live, phone) == [first]
    mark_sent(live)
    rotated = rotate_key(live, phone, key_id=2)
    second = send_direct_ok(alice, [bob.id])
    assert notified_message_ids(live, rotated) == [second]  # opened with the new key, push_key_id 2
    with pytest.raises(nacl.exceptions.CryptoError):
        open_data(sealed(outbox(live)[0]), phone.key)


def test_a_scheduled_message_notifies_when_it_is_delivered(live):
    alice, bob, _, _ = make_team(live)
    phone = add_device(live, bob.id)
    schedule_direct_ok(live, alice, [bob.id], content="later")
    assert outbox(live) == []
    live.clock.advance(IN_AN_HOUR)
    [message_id] = deliver(live)
    [payload] = payloads(live, phone)
    assert (payload["message_id"], payload["content"], payload["time"]) == (message_id, "later", int(live.clock.now))


def test_push_queries_use_their_indexes(live):
    def plan(sql, params):
        return live.read(lambda tx: " | ".join(row[3] for row in tx.all("EXPLAIN QUERY PLAN " + sql, params)))

    assert "SEARCH d USING INDEX devices_by_user (user_id=?)" in plan(PUSH_DEVICES, ("[1]",))
    assert "INDEX push_outbox_by_message (message_id=? AND user_id=?)" in plan(WITHDRAW_WAITING, ("[1]", 1))
    settings = plan(CHANNEL_SETTINGS, (1, 1, "t", "[1]"))
    assert "SEARCH s USING PRIMARY KEY (user_id=? AND channel_id=?)" in settings
    assert "SEARCH ut USING PRIMARY KEY (user_id=? AND channel_id=? AND topic_key=?)" in settings
