"""How the sender meets the push bouncer's answers: credentials it does not know (retried until the
administrator registers), a realm it forgot (uploaded again), tokens FCM/APNs dropped (cleared on
the device), and the APNs request shape an iPhone's notifications and removals take."""

from __future__ import annotations

from tests.support.helpers import assert_success, data_dir_for
from tests.support.push_helpers import (
    PushClient,
    delivered,
    device_row,
    outbox,
    push_server,
    register_device,
    register_server,
    send_due,
    stop_server,
)
from tests.support.send_helpers import make_team, send_direct_ok


def test_an_unregistered_server_is_retried_until_its_administrator_registers(tmp_path, bouncer):
    live = push_server(data_dir_for(tmp_path), bouncer, register=False)
    try:
        device_id, client = register_device(live, live.owner)
        [row] = outbox(live)
        assert (row["kind"], row["attempts"]) == ("register", 1), "kept for a later attempt, not refused"
        device = device_row(live, device_id)
        assert (device["pending_push_token_id"], device["push_registration_error_code"]) == (client.token_id, None)
        assert bouncer.registrations == []
        register_server(live)
        live.clock.advance(2)
        send_due(live)
        assert outbox(live) == [] and device_row(live, device_id)["push_token_id"] == client.token_id
    finally:
        stop_server(live, bouncer)


def test_a_realm_the_bouncer_forgot_is_uploaded_again(push_live, bouncer):
    live = push_live
    bouncer.forget_realms()
    uploads = bouncer.endpoints().count("server/analytics")
    device_id, client = register_device(live, live.owner)
    assert [r["attempts"] for r in outbox(live)] == [1]
    assert bouncer.endpoints()[-2:] == ["push/e2ee/register", "server/analytics"]
    assert bouncer.endpoints().count("server/analytics") == uploads + 1
    live.clock.advance(2)
    send_due(live)
    assert outbox(live) == [] and device_row(live, device_id)["push_token_id"] == client.token_id


def test_a_token_the_bouncer_no_longer_knows_is_cleared(push_live, bouncer):
    live = push_live
    alice, bob, _, _ = make_team(live)
    device_id, client = register_device(live, bob)
    bouncer.forget_token(client.token_id)  # FCM said the token expired
    count = len(live.events())
    send_direct_ok(alice, [bob.id], "anyone there?")
    send_due(live)
    assert delivered(bouncer, client) == [] and outbox(live) == []
    update = {"type": "device", "op": "update", "device_id": device_id, "push_token_id": None}
    assert [(e, ids) for e, ids in live.events()[count:] if e["type"] == "device"] == [(update, [bob.id])]
    assert device_row(live, device_id)["push_token_id"] is None
    send_direct_ok(alice, [bob.id], "nothing is queued for a device without a token")
    assert outbox(live) == []


def test_an_iphone_gets_an_alert_and_a_silent_removal(push_live, bouncer):
    live = push_live
    alice, bob, carol, _ = make_team(live)
    _, phone = register_device(live, bob, PushClient(bouncer.public_key, "apns"))
    message_id = send_direct_ok(alice, [bob.id, carol.id], "group lunch?")
    send_due(live)
    assert_success(bob.post("/messages/flags", {"messages": [message_id], "op": "add", "flag": "read"}))
    send_due(live)
    alert, removal = bouncer.delivered
    assert (alert["token"], alert["topic"], alert["priority"], alert["push_type"]) == (
        phone.token,
        "org.zulip.Zulip",
        10,
        "alert",
    )
    assert alert["data"]["aps"] == {"mutable-content": 1, "alert": {"title": "New notification"}, "sound": "default"}
    assert (removal["priority"], removal["push_type"], removal["data"]["aps"]) == (
        5,
        "background",
        {"content-available": 1},
    )
    # The app reads an APNs payload's push_key_id as a number (EncryptedApnsPayload).
    [notification, removed] = delivered(bouncer, phone)
    assert notification["recipient_user_ids"] == sorted([alice.id, bob.id, carol.id])
    assert notification["pm_users"] == ",".join(str(u) for u in sorted([alice.id, bob.id, carol.id]))
    assert (removed["type"], removed["message_ids"]) == ("remove", [message_id])
