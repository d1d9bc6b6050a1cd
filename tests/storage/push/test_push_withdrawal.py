"""Withdrawing push notifications: a read or deleted message's waiting notification is dropped;
one already sent is followed by a "remove" notification. Read back from push_outbox, as in
test_push_notifications.py."""

from __future__ import annotations

import pytest

from storage.messages.messages import SendRequest, send_message
from tests.support.helpers import assert_success
from tests.support.push_notify_helpers import active_bit, add_device, mark_sent, outbox, payloads
from tests.support.send_helpers import make_team, send_direct_ok, send_ok

REALM = {"realm_url": "http://127.0.0.1:9991", "realm_name": "Tornchat"}


def mark_read(client, message_ids):
    assert_success(client.post("/messages/flags", {"messages": message_ids, "op": "add", "flag": "read"}))


def removals(live, phone):
    return [p for p in payloads(live, phone) if p["type"] == "remove"]


def test_read_before_sending_drops_the_waiting_notification(live):
    alice, bob, _, _ = make_team(live)
    add_device(live, bob.id)
    message_id = send_direct_ok(alice, [bob.id])
    assert len(outbox(live)) == 1
    mark_read(bob, [message_id])
    assert outbox(live) == [] and not active_bit(live, bob.id, message_id)


def test_read_after_sending_sends_a_remove_notification(live):
    alice, bob, _, _ = make_team(live)
    phone = add_device(live, bob.id)
    first, second = send_direct_ok(alice, [bob.id]), send_direct_ok(alice, [bob.id])
    mark_sent(live)
    mark_read(bob, [second, first])
    [payload] = payloads(live, phone)
    assert payload == {**REALM, "user_id": bob.id, "type": "remove", "message_ids": [first, second]}
    assert [row["message_id"] for row in outbox(live)] == [None]  # a removal is never withdrawn itself
    assert not active_bit(live, bob.id, first) and not active_bit(live, bob.id, second)
    mark_sent(live)
    assert_success(bob.post("/messages/flags", {"messages": [first], "op": "remove", "flag": "read"}))
    mark_read(bob, [first])
    assert outbox(live) == []  # withdrawn once


def test_per_device_a_waiting_row_is_dropped_and_a_sent_one_removed(live):
    alice, bob, _, _ = make_team(live)
    sent, waiting = add_device(live, bob.id, key_id=1), add_device(live, bob.id, key_id=2)
    message_id = send_direct_ok(alice, [bob.id])
    live.write(lambda tx: tx.execute("DELETE FROM push_outbox WHERE device_id = ?", (sent.id,)))
    mark_read(bob, [message_id])
    assert [p["message_ids"] for p in removals(live, sent)] == [[message_id]]
    assert outbox(live, waiting) == []


def test_starring_or_marking_unread_withdraws_nothing(live):
    alice, bob, _, _ = make_team(live)
    phone = add_device(live, bob.id)
    message_id = send_direct_ok(alice, [bob.id])
    assert_success(bob.post("/messages/flags", {"messages": [message_id], "op": "add", "flag": "starred"}))
    assert_success(bob.post("/messages/flags", {"messages": [message_id], "op": "remove", "flag": "read"}))
    assert [p["type"] for p in payloads(live, phone)] == ["message"] and active_bit(live, bob.id, message_id)


def test_reading_someone_elses_copy_does_not_withdraw_mine(live):
    alice, bob, carol, _ = make_team(live)
    phone = add_device(live, bob.id)
    message_id = send_direct_ok(alice, [bob.id, carol.id])
    mark_read(carol, [message_id])
    assert [p["type"] for p in payloads(live, phone)] == ["message"]


@pytest.mark.parametrize("how", ["narrow", "channel", "topic", "all"])
def test_every_mark_as_read_path_withdraws(live, how):
    alice, bob, _, channel = make_team(live)
    phone = add_device(live, bob.id)
    sent = send_ok(alice, channel, "@**Bob** first", "plans")
    mark_sent(live)
    waiting = send_ok(alice, channel, "@**Bob** second", "plans")
    if how == "narrow":
        narrow = [{"operator": "channel", "operand": channel}]
        body = {"anchor": "oldest", "num_before": 0, "num_after": 10, "narrow": narrow, "op": "add", "flag": "read"}
        assert_success(bob.post("/messages/flags/narrow", body))
    elif how == "channel":
        assert_success(bob.post("/mark_stream_as_read", {"stream_id": channel}))
    elif how == "topic":
        assert_success(bob.post("/mark_topic_as_read", {"stream_id": channel, "topic_name": "plans"}))
    else:
        assert_success(bob.post("/mark_all_as_read"))
    assert [p["message_ids"] for p in removals(live, phone)] == [[sent]]
    assert [p["type"] for p in payloads(live, phone)] == ["remove"]
    assert not active_bit(live, bob.id, sent) and not active_bit(live, bob.id, waiting)


def test_delete_before_sending_drops_the_notification(live):
    alice, bob, _, _ = make_team(live)
    add_device(live, bob.id)
    message_id = send_direct_ok(alice, [bob.id])
    assert_success(alice.delete(f"/messages/{message_id}"))
    assert outbox(live) == []


def test_delete_after_sending_sends_a_remove_to_each_notified_user(live):
    alice, bob, carol, channel = make_team(live)
    bob_phone, owner_phone = add_device(live, bob.id), add_device(live, live.owner.id)
    message_id = send_ok(alice, channel, "@**all** meeting now")
    mark_sent(live)
    assert_success(alice.delete(f"/messages/{message_id}"))
    assert [p["message_ids"] for p in removals(live, bob_phone)] == [[message_id]]
    assert [p["message_ids"] for p in removals(live, owner_phone)] == [[message_id]]
    assert len(outbox(live)) == 2


def test_a_removal_names_the_newest_200_messages(live):
    alice, bob, _, _ = make_team(live)
    phone = add_device(live, bob.id)
    sender = live.user(alice.id)

    def send_many(tx):
        request = SendRequest(type="direct", to=[bob.id], content="hi")
        return [send_message(tx, sender, request) for _ in range(205)]

    message_ids = live.write(send_many)
    mark_sent(live)
    assert_success(bob.post("/mark_all_as_read"))
    [payload] = removals(live, phone)
    assert payload["message_ids"] == message_ids[-200:]
