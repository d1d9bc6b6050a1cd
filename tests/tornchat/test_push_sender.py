"""The push outbox sender: retries with backoff, permanent refusals, a hanging or unreachable
bouncer, bounded concurrency, expiry, and a restart that loses nothing."""

from __future__ import annotations

import base64
import json

import nacl.secret

from storage.model.realm import get_realm
from storage.push import push_outbox
from tests.support.helpers import NextServer, assert_success, data_dir_for, wait_for
from tests.support.push_helpers import (
    delivered,
    device_row,
    new_device,
    outbox,
    push_server,
    register_device,
    send_due,
    stop_server,
)
from tornchat.push_sender import CONCURRENCY


def notify_body(live, push_client, message_id=1):
    """A notify request for the client's token carrying a payload that names message_id."""
    payload = json.dumps({"type": "message", "message_id": message_id}).encode()
    sealed = base64.b64encode(bytes(nacl.secret.SecretBox(push_client.key).encrypt(payload))).decode()
    request = {
        "token_id": push_client.token_id,
        "fcm_priority": "high",
        "payload": {"push_key_id": push_client.push_key_id, "encrypted_data": sealed},
    }
    return {"realm_uuid": live.read(get_realm).uuid, "push_requests": [request]}


def enqueue_notify(live, device_id, push_client, message_id=1):
    body = notify_body(live, push_client, message_id)
    return live.write(push_outbox.enqueue, device_id, "notify", body, user_id=1, message_id=message_id)


def notified(bouncer, push_client):
    return [p["message_id"] for p in delivered(bouncer, push_client)]


def test_a_request_is_committed_before_any_attempt_and_retried_with_backoff(push_live, bouncer):
    live = push_live
    bouncer.stop_listening()
    device_id, push_client = register_device(live, live.owner)  # waits for the (failed) attempt
    [row] = outbox(live)
    start = live.clock()
    assert (row["kind"], row["device_id"], row["attempts"], row["next_attempt_at"]) == (
        "register",
        device_id,
        1,
        start + 2,
    )
    assert row["body"]["token_id"] == push_client.token_id
    send_due(live)
    assert outbox(live)[0]["attempts"] == 1, "not due yet: nothing was tried"
    delays = []
    for _ in range(4):
        live.clock.advance(outbox(live)[0]["next_attempt_at"] - live.clock())
        send_due(live)
        delays.append(outbox(live)[0]["next_attempt_at"] - live.clock())
    assert delays == [4, 8, 16, 32]
    bouncer.start_listening()
    live.clock.advance(32)
    send_due(live)
    assert outbox(live) == []
    assert device_row(live, device_id)["push_token_id"] == push_client.token_id
    assert bouncer.registered_token_ids() == [push_client.token_id]


def test_backoff_stops_growing_at_ten_minutes(push_live, bouncer):
    live = push_live
    bouncer.set_mode("unavailable")
    register_device(live, live.owner)
    live.write(lambda tx: tx.execute("UPDATE push_outbox SET attempts = 40, next_attempt_at = ?", (live.clock(),)))
    send_due(live)
    [row] = outbox(live)
    assert (row["attempts"], row["next_attempt_at"]) == (41, live.clock() + 600)


def test_bouncer_errors_5xx_are_retried_and_4xx_dropped(push_live, bouncer):
    live = push_live
    device_id, push_client = register_device(live, live.owner)
    bouncer.set_mode("unavailable")
    enqueue_notify(live, device_id, push_client)
    send_due(live)
    assert [(r["kind"], r["attempts"]) for r in outbox(live)] == [("notify", 1)]
    bouncer.set_mode("ok")
    live.clock.advance(2)
    send_due(live)
    assert outbox(live) == []
    assert notified(bouncer, push_client) == [1]
    # A request the bouncer refuses as malformed is refused for good: dropped, not retried.
    body = notify_body(live, push_client, 2)
    del body["push_requests"][0]["payload"]["push_key_id"]
    live.write(push_outbox.enqueue, device_id, "notify", body, user_id=1)
    send_due(live)
    assert outbox(live) == []
    assert notified(bouncer, push_client) == [1]


def test_the_api_answers_while_the_bouncer_hangs(push_live, bouncer):
    live = push_live
    bouncer.set_mode("hang")
    device_id, push_client = register_device(live, live.owner, wait=False)
    wait_for(lambda: bouncer.held == 1, "the registration reaches the bouncer and hangs")
    # Meanwhile every other request is served.
    assert assert_success(live.owner.get("/users/me"))["user_id"] == live.owner.id
    other = new_device(live.owner)
    assert_success(live.owner.post("/remove_client_device", {"device_id": other}))
    assert device_row(live, device_id)["pending_push_token_id"] == push_client.token_id
    bouncer.set_mode("ok")
    send_due(live)
    assert device_row(live, device_id)["push_token_id"] == push_client.token_id
    assert outbox(live) == []


def test_concurrency_is_bounded(push_live, bouncer):
    live = push_live
    device_id, push_client = register_device(live, live.owner)
    bouncer.set_mode("hang")
    for message_id in range(CONCURRENCY + 4):
        enqueue_notify(live, device_id, push_client, message_id)
    wait_for(lambda: bouncer.held == CONCURRENCY, "a full set of requests in flight")
    assert live.call(lambda: len(live.server.push_sender.inflight)) == CONCURRENCY
    bouncer.set_mode("ok")
    send_due(live)
    assert sorted(notified(bouncer, push_client)) == list(range(CONCURRENCY + 4))
    assert outbox(live) == []


def test_a_request_undelivered_for_a_day_expires(push_live, bouncer):
    live = push_live
    bouncer.set_mode("unavailable")
    device_id, _ = register_device(live, live.owner)
    answered = len(bouncer.requests)
    live.clock.advance(24 * 3600 + 1)
    events = len(live.events())
    send_due(live)
    assert outbox(live) == []
    assert len(bouncer.requests) == answered, "dropped without asking the bouncer"
    assert device_row(live, device_id)["push_registration_error_code"] == "REQUEST_EXPIRED"
    assert [e for e, _ in live.events()[events:]] == [
        {"type": "device", "op": "update", "device_id": device_id, "push_registration_error_code": "REQUEST_EXPIRED"}
    ]


def test_removing_a_device_drops_its_waiting_requests(push_live, bouncer):
    live = push_live
    device_id, push_client = register_device(live, live.owner)
    bouncer.set_mode("unavailable")
    enqueue_notify(live, device_id, push_client)
    send_due(live)
    assert len(outbox(live)) == 1
    assert_success(live.owner.post("/remove_client_device", {"device_id": device_id}))
    assert outbox(live) == []
    bouncer.set_mode("ok")
    live.clock.advance(2)
    send_due(live)
    assert bouncer.delivered == []


def test_a_restart_while_the_bouncer_is_unreachable_loses_nothing(tmp_path, bouncer):
    first = push_server(data_dir_for(tmp_path), bouncer)
    phone, phone_client = register_device(first, first.owner)
    bouncer.stop_listening()
    enqueue_notify(first, phone, phone_client)
    tablet, tablet_client = register_device(first, first.owner)
    waiting = outbox(first)
    assert [(r["kind"], r["device_id"], r["attempts"]) for r in waiting] == [
        ("notify", phone, 1),
        ("register", tablet, 1),
    ]
    stop_server(first, bouncer)

    bouncer.start_listening()
    second = NextServer(first)
    try:
        send_due(second)
        assert outbox(second) == waiting, "not due yet after the failed attempts"
        second.clock.advance(2)
        send_due(second)
        assert outbox(second) == []
        assert bouncer.registered_token_ids() == [phone_client.token_id, tablet_client.token_id]
        assert notified(bouncer, phone_client) == [1]
        assert device_row(second, tablet)["push_token_id"] == tablet_client.token_id
        assert [e for e, _ in second.events()] == [
            {
                "type": "device",
                "op": "update",
                "device_id": tablet,
                "push_token_id": tablet_client.token_id,
                "pending_push_token_id": None,
            }
        ]
    finally:
        stop_server(second, bouncer)


def test_a_new_server_sends_what_is_already_due_at_start(tmp_path, bouncer):
    first = push_server(data_dir_for(tmp_path), bouncer)
    first.call(first.server.push_sender.stop)  # as if it died before its first attempt
    device_id, push_client = register_device(first, first.owner, wait=False)
    assert [r["attempts"] for r in outbox(first)] == [0]
    stop_server(first, bouncer)
    second = NextServer(first)
    try:
        wait_for(lambda: bouncer.registered_token_ids() == [push_client.token_id], "sent at start")
        send_due(second)
        assert device_row(second, device_id)["push_token_id"] == push_client.token_id
    finally:
        stop_server(second, bouncer)
