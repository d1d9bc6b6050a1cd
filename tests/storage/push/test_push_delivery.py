"""Push notifications end to end: through the sender to the stand-in push bouncer, which hands each
one to the phone, where it is opened with the device's key as the Zulip app does; withdrawal, key
rotation, a hanging bouncer and a restart."""

from __future__ import annotations

import pytest

from storage.model.realm import get_realm
from tests.support.helpers import NextServer, assert_success, data_dir_for, wait_for
from tests.support.push_helpers import PushClient, delivered, outbox, push_server, register_device, send_due
from tests.support.send_helpers import make_team, send_direct_ok, send_ok


@pytest.fixture
def push_team(push_live):
    alice, bob, carol, channel = make_team(push_live)
    device_id, phone = register_device(push_live, bob)
    return alice, bob, carol, channel, device_id, phone


def test_round_trip_through_the_bouncer(push_live, bouncer, push_team):
    alice, bob, carol, channel, device_id, phone = push_team
    direct = send_direct_ok(alice, [bob.id], "Are you *there*?")
    mention = send_ok(alice, channel, "@**Bob** see the plan", "plans")
    send_ok(alice, channel, "no mention: no notification", "plans")
    send_due(push_live)
    assert outbox(push_live) == []
    realm_uuid = push_live.read(get_realm).uuid
    requests = [body for endpoint, body in bouncer.requests if endpoint == "push/e2ee/notify"]
    assert [(r["realm_uuid"], [set(p) for p in r["push_requests"]]) for r in requests] == [
        (realm_uuid, [{"token_id", "fcm_priority", "payload"}])
    ] * 2
    handed = [{k: v for k, v in d.items() if k != "data"} for d in bouncer.delivered]
    assert handed == [{"token": phone.token, "token_kind": "fcm", "token_id": phone.token_id, "priority": "high"}] * 2
    # Both may be in flight at once, so they can arrive in either order.
    [dm, channel_mention] = sorted(delivered(bouncer, phone), key=lambda p: p["message_id"])
    assert (dm["type"], dm["recipient_type"], dm["message_id"]) == ("message", "direct", direct)
    assert (dm["sender_id"], dm["sender_full_name"], dm["content"]) == (alice.id, "Alice", "Are you there?")
    assert (channel_mention["message_id"], channel_mention["recipient_type"]) == (mention, "channel")
    assert (channel_mention["channel_name"], channel_mention["topic"]) == ("general", "plans")
    assert channel_mention["content"] == "@Bob see the plan"


def test_group_mention_arrives_with_the_group(push_live, bouncer, push_team):
    alice, bob, carol, channel, device_id, phone = push_team
    body = {"name": "backend", "members": [bob.id, carol.id], "description": "d"}
    group_id = assert_success(push_live.owner.post("/user_groups/create", body))["group_id"]
    send_ok(alice, channel, "@*backend* deploy?")
    send_due(push_live)
    [payload] = delivered(bouncer, phone)
    assert (payload["mentioned_user_group_id"], payload["mentioned_user_group_name"]) == (group_id, "backend")


def test_read_while_waiting_is_never_delivered(push_live, bouncer, push_team):
    alice, bob, carol, channel, device_id, phone = push_team
    bouncer.set_mode("unavailable")
    message_id = send_direct_ok(alice, [bob.id])
    send_due(push_live)
    assert [row["attempts"] for row in outbox(push_live)] == [1]
    assert_success(bob.post("/messages/flags", {"messages": [message_id], "op": "add", "flag": "read"}))
    bouncer.set_mode("ok")
    push_live.clock.advance(3600)
    send_due(push_live)
    assert delivered(bouncer, phone) == [] and outbox(push_live) == []


def test_deleted_after_delivery_sends_a_remove(push_live, bouncer, push_team):
    alice, bob, carol, channel, device_id, phone = push_team
    message_id = send_direct_ok(alice, [bob.id])
    send_due(push_live)
    assert_success(alice.delete(f"/messages/{message_id}"))
    send_due(push_live)
    [_, removal] = delivered(bouncer, phone)
    assert removal == {
        "realm_url": "http://127.0.0.1:9991", "realm_name": "Tornchat", "user_id": bob.id, "type": "remove",
        "message_ids": [message_id],
    }  # fmt: skip


def test_read_while_in_flight_sends_a_remove_once_delivered(push_live, bouncer, push_team):
    alice, bob, carol, channel, device_id, phone = push_team
    bouncer.set_mode("hang")
    message_id = send_direct_ok(alice, [bob.id])
    wait_for(lambda: bouncer.held == 1, "the notification reaches the bouncer and hangs")
    assert_success(bob.post("/messages/flags", {"messages": [message_id], "op": "add", "flag": "read"}))
    assert outbox(push_live) == []  # withdrawn while on its way
    bouncer.set_mode("ok")
    send_due(push_live)
    [notification, removal] = sorted(delivered(bouncer, phone), key=lambda p: p["type"])
    assert (notification["type"], notification["message_id"]) == ("message", message_id)
    assert (removal["type"], removal["message_ids"]) == ("remove", [message_id])


def test_key_rotation_through_the_api(push_live, bouncer, push_team):
    alice, bob, carol, channel, device_id, phone = push_team
    rotated = PushClient(bouncer.public_key, token=phone.token)
    assert_success(bob.post("/mobile_push/register", {"device_id": device_id, **rotated.key_params()}))
    message_id = send_direct_ok(alice, [bob.id])
    send_due(push_live)
    [notification] = bouncer.delivered
    assert notification["data"]["push_key_id"] == str(rotated.push_key_id)  # FCM data holds strings only
    assert [p["message_id"] for p in delivered(bouncer, rotated)] == [message_id]


def test_the_api_answers_while_the_bouncer_hangs(push_live, bouncer, push_team):
    alice, bob, carol, channel, device_id, phone = push_team
    bouncer.set_mode("hang")
    first = send_direct_ok(alice, [bob.id], "first")
    wait_for(lambda: bouncer.held == 1, "the notification reaches the bouncer and hangs")
    second = send_direct_ok(alice, [bob.id], "second")  # the API answers meanwhile
    assert assert_success(bob.get(f"/messages/{first}"))["message"]["content"] == "<p>first</p>"
    bouncer.set_mode("ok")
    send_due(push_live)
    assert sorted(p["message_id"] for p in delivered(bouncer, phone)) == [first, second]


def test_a_restart_while_the_bouncer_is_unreachable_delivers_afterwards(tmp_path, bouncer):
    first = push_server(data_dir_for(tmp_path), bouncer)
    alice, bob, _, _ = make_team(first)
    _, phone = register_device(first, bob)
    bouncer.stop_listening()
    message_id = send_direct_ok(alice, [bob.id], "sent while the bouncer is down")
    send_due(first)
    assert [row["attempts"] for row in outbox(first)] == [1]
    first.stop()

    bouncer.start_listening()
    second = NextServer(first)
    try:
        second.clock.advance(2)
        send_due(second)
        assert outbox(second) == []
        [payload] = delivered(bouncer, phone)
        assert (payload["message_id"], payload["content"]) == (message_id, "sent while the bouncer is down")
    finally:
        second.stop()
