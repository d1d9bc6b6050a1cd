"""GET /events and DELETE /events: errors, acknowledgement, long-polls, heartbeats, expiry, overflow."""

from __future__ import annotations

import base64
import logging
import socket

import pytest

from tests.support.events_helpers import (
    Poll,
    events_now,
    low_heartbeat,
    poll,
    queue_of,
    register,
    send_direct,
    wait_until_parked,
    wait_until_unparked,
)
from tests.support.helpers import assert_error, assert_success
from tornchat.events import queue as event_queue

BAD_QUEUE = "BAD_EVENT_QUEUE_ID"


def publish(live, user_ids, **event):
    """Publish an event through the server's one publish call, as a committed action does."""
    live.call(lambda: live.server.events.publish({"type": "test", **event}, list(user_ids)))


def assert_bad_queue(response, queue_id):
    body = assert_error(response, f"Bad event queue id: {queue_id}", BAD_QUEUE)
    assert body["queue_id"] == queue_id


# -- errors -------------------------------------------------------------------------------------


# Zulip's fetch_events raises both as plain errors (BAD_REQUEST, no var_name): each parameter is
# optional on its own, since a queue-less non-blocking poll needs neither. The zulip.yaml marks
# last_event_id optional, but a poll of an existing queue without it is refused.
def test_missing_queue_id(live):
    body = assert_error(live.owner.get("/events", {"last_event_id": -1}), "Missing 'queue_id' argument")
    assert "var_name" not in body


def test_missing_last_event_id_acknowledges_nothing(live):
    queue_id = register(live.owner)["queue_id"]
    publish(live, [live.owner.id], n=1)
    for params in ({"queue_id": queue_id}, {"queue_id": queue_id, "dont_block": "true"}):
        body = assert_error(live.owner.get("/events", params), "Missing 'last_event_id' argument")
        assert "var_name" not in body
    assert [e["n"] for e in events_now(live.owner, queue_id)] == [1], "the queue is as it was"


def test_bad_parameter_types(live):
    queue_id = register(live.owner)["queue_id"]
    response = live.owner.get("/events", {"queue_id": queue_id, "last_event_id": "x"})
    assert_error(response, "last_event_id is not valid JSON")
    response = live.owner.get("/events", {"queue_id": queue_id, "last_event_id": -1, "dont_block": 1})
    assert_error(response, "dont_block is not a boolean")


def test_unknown_queue(live):
    assert_bad_queue(poll(live.owner, "1:nope"), "1:nope")


def test_another_users_queue_is_unknown_to_them(live):
    other = live.make_user()
    queue_id = register(live.owner)["queue_id"]
    assert_bad_queue(poll(other, queue_id, dont_block=True), queue_id)
    assert events_now(live.owner, queue_id) == [], "the owner's queue is untouched"


def test_queue_expires_after_default_lifespan(live):
    queue_id = register(live.owner)["queue_id"]
    live.clock.advance(600)
    assert events_now(live.owner, queue_id) == []  # exactly 600 s idle: still alive; polling renews it
    live.clock.advance(601)
    assert_bad_queue(poll(live.owner, queue_id, dont_block=True), queue_id)
    assert live.call(lambda: queue_of(live, queue_id)) is None, "the expired queue is freed"


def test_polling_renews_the_lifespan(live):
    queue_id = register(live.owner)["queue_id"]
    for _ in range(5):
        live.clock.advance(500)
        assert events_now(live.owner, queue_id) == []


def test_custom_lifespan(live):
    short = register(live.owner, queue_lifespan_secs=60)["queue_id"]
    long = register(live.owner, queue_lifespan_secs=86400)["queue_id"]
    live.clock.advance(61)
    assert_bad_queue(poll(live.owner, short, dont_block=True), short)
    live.clock.advance(86400 - 62)
    assert events_now(live.owner, long) == []


def test_lifespan_is_capped_at_seven_days(live):
    queue_id = register(live.owner, queue_lifespan_secs=30 * 86400)["queue_id"]
    live.clock.advance(7 * 86400 + 1)
    assert_bad_queue(poll(live.owner, queue_id, dont_block=True), queue_id)


def test_idle_queue_timeout_mobile_keeps_the_queue_twelve_hours(live):
    """The Zulip mobile app registers with idle_queue_timeout="mobile" (JSON, as it sends it)."""
    body = register(live.owner, idle_queue_timeout='"mobile"', queue_lifespan_secs=60)
    assert body["idle_queue_timeout_secs"] == 12 * 3600 and "ignored_parameters_unsupported" not in body
    live.clock.advance(12 * 3600)
    assert events_now(live.owner, body["queue_id"]) == []
    live.clock.advance(12 * 3600 + 1)
    assert_bad_queue(poll(live.owner, body["queue_id"], dont_block=True), body["queue_id"])


def test_idle_queue_timeout_in_seconds(live):
    assert register(live.owner)["idle_queue_timeout_secs"] == 600
    assert register(live.owner, queue_lifespan_secs=60)["idle_queue_timeout_secs"] == 60
    assert register(live.owner, idle_queue_timeout=30 * 86400)["idle_queue_timeout_secs"] == 7 * 86400
    body = register(live.owner, idle_queue_timeout=120)
    assert body["idle_queue_timeout_secs"] == 120
    live.clock.advance(121)
    assert_bad_queue(poll(live.owner, body["queue_id"], dont_block=True), body["queue_id"])


@pytest.mark.parametrize(
    ("value", "msg"),
    [
        (0, "idle_queue_timeout is too small"),
        ('"desktop"', "Invalid idle_queue_timeout"),
        ("mobile", "idle_queue_timeout is not valid JSON"),
        ("true", "idle_queue_timeout is not an integer"),
    ],
)
def test_bad_idle_queue_timeout(live, value, msg):
    assert_error(live.owner.post("/register", {"idle_queue_timeout": value}), msg)
    assert live.call(lambda: dict(live.server.queues.queues)) == {}, "no queue made"


def test_garbage_collection_frees_expired_queues(live):
    kept, dropped = register(live.owner)["queue_id"], register(live.owner, queue_lifespan_secs=10)["queue_id"]
    live.clock.advance(11)
    assert live.call(live.server.queues.collect_garbage) == 1
    assert live.call(lambda: sorted(live.server.queues.queues)) == [kept]
    assert_bad_queue(poll(live.owner, dropped, dont_block=True), dropped)


def test_a_parked_poll_keeps_its_queue_alive(live):
    queue_id = register(live.owner, queue_lifespan_secs=10)["queue_id"]
    waiting = Poll(live.owner, queue_id)
    wait_until_parked(live, queue_id)
    live.clock.advance(3600)
    assert live.call(live.server.queues.collect_garbage) == 0
    publish(live, [live.owner.id], n=1)
    assert [e["n"] for e in assert_success(waiting.result())["events"]] == [1]


# -- acknowledgement ----------------------------------------------------------------------------


def test_event_ids_start_at_zero_and_increase(live):
    queue_id = register(live.owner)["queue_id"]
    for n in range(3):
        publish(live, [live.owner.id], n=n)
    assert events_now(live.owner, queue_id) == [{"type": "test", "n": n, "id": n} for n in range(3)]


def test_last_event_id_prunes_acknowledged_events(live):
    queue_id = register(live.owner)["queue_id"]
    for n in range(4):
        publish(live, [live.owner.id], n=n)
    assert [e["id"] for e in events_now(live.owner, queue_id, 1)] == [2, 3]
    assert [e["id"] for e in events_now(live.owner, queue_id, 1)] == [2, 3], "a retried poll is harmless"
    assert live.call(lambda: len(queue_of(live, queue_id).events)) == 2
    assert_error(poll(live.owner, queue_id, 0, dont_block=True), "An event newer than 0 has already been pruned!")
    assert_error(poll(live.owner, queue_id, 9, dont_block=True), "Event 9 was not in this queue")
    assert [e["id"] for e in events_now(live.owner, queue_id, 3)] == []


def test_last_event_id_beyond_a_fresh_queue(live):
    queue_id = register(live.owner)["queue_id"]
    assert_error(poll(live.owner, queue_id, 0, dont_block=True), "Event 0 was not in this queue")
    assert events_now(live.owner, queue_id) == [], "the error changed nothing"


def test_flag_events_are_coalesced_while_queued(live):
    queue_id = register(live.owner)["queue_id"]
    base = {"type": "update_message_flags", "op": "add", "flag": "read", "all": False}
    for messages in ([1, 2], [3], [2, 4]):
        live.call(
            lambda m=messages: live.server.events.publish({**base, "operation": "add", "messages": m}, [live.owner.id])
        )
    starred = {**base, "flag": "starred", "operation": "add", "messages": [9]}
    live.call(lambda: live.server.events.publish(starred, [live.owner.id]))
    unread = {**base, "op": "remove", "operation": "remove", "messages": [1], "message_details": {}}
    for _ in range(2):
        live.call(lambda: live.server.events.publish(dict(unread), [live.owner.id]))
    events = events_now(live.owner, queue_id)
    assert [(e["flag"], e["operation"], e["messages"], e["id"]) for e in events] == [
        ("read", "add", [1, 2, 3, 4], 2),
        ("starred", "add", [9], 3),
        ("read", "remove", [1], 4),
        ("read", "remove", [1], 5),
    ]


# -- long-polls and heartbeats ------------------------------------------------------------------


def test_dont_block_answers_at_once(live):
    queue_id = register(live.owner)["queue_id"]
    body = assert_success(poll(live.owner, queue_id, dont_block=True))
    assert body["events"] == [] and body["queue_id"] == queue_id


def test_a_long_poll_waits_for_the_next_event(live):
    queue_id = register(live.owner)["queue_id"]
    waiting = Poll(live.owner, queue_id)
    wait_until_parked(live, queue_id)
    assert not waiting.done()
    message_id = send_direct(live.owner, [live.owner.id], "to myself")
    events = assert_success(waiting.result())["events"]
    assert [(e["type"], e["message"]["id"], e["id"]) for e in events] == [("message", message_id, 0)]


def test_queued_events_are_answered_without_waiting(live):
    queue_id = register(live.owner)["queue_id"]
    publish(live, [live.owner.id], n=1)
    assert [e["n"] for e in assert_success(poll(live.owner, queue_id))["events"]] == [1]


def test_heartbeat_after_a_quiet_wait(live):
    low_heartbeat(live)
    queue_id = register(live.owner, event_types=["message"])["queue_id"]
    first = assert_success(Poll(live.owner, queue_id).result())
    assert first["events"] == [{"type": "heartbeat", "id": 0}], "heartbeats ignore event_types"
    second = assert_success(Poll(live.owner, queue_id, 0).result())
    assert second["events"] == [{"type": "heartbeat", "id": 1}]


def test_a_newer_poll_replaces_a_parked_one(live):
    queue_id = register(live.owner)["queue_id"]
    old = Poll(live.owner, queue_id)
    wait_until_parked(live, queue_id)
    other = type(live.owner)(live.base_url, live.owner.email, live.owner.api_key, live.owner.id)
    new = Poll(other, queue_id)
    assert assert_success(old.result())["events"] == [], "the replaced poll answers at once"
    wait_until_parked(live, queue_id)
    publish(live, [live.owner.id], n=1)
    assert [e["n"] for e in assert_success(new.result())["events"]] == [1]


def raw_poll(live, queue_id: str) -> socket.socket:
    """Start a GET /events on a bare socket, so that the test can hang up mid-poll."""
    credentials = base64.b64encode(f"{live.owner.email}:{live.owner.api_key}".encode()).decode()
    request = (
        f"GET /api/v1/events?queue_id={queue_id}&last_event_id=-1 HTTP/1.1\r\n"
        f"Host: 127.0.0.1\r\nAuthorization: Basic {credentials}\r\n\r\n"
    )
    sock = socket.create_connection(("127.0.0.1", live.port), timeout=10)
    sock.sendall(request.encode())
    return sock


def test_a_closed_connection_frees_its_poll_at_once(live, caplog):
    caplog.set_level(logging.DEBUG)
    queue_id = register(live.owner)["queue_id"]
    sock = raw_poll(live, queue_id)
    wait_until_parked(live, queue_id)
    sock.close()
    wait_until_unparked(live, queue_id)  # long before the 50 s heartbeat
    publish(live, [live.owner.id], n=1)
    assert [e["n"] for e in events_now(live.owner, queue_id)] == [1], "nothing was lost or answered to nobody"
    waiting = Poll(live.owner, queue_id, 0)
    wait_until_parked(live, queue_id)
    publish(live, [live.owner.id], n=2)
    assert [e["n"] for e in assert_success(waiting.result())["events"]] == [2]
    problems = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert problems == [], [r.getMessage() for r in problems]


# -- DELETE /events -----------------------------------------------------------------------------


def test_delete_queue(live):
    queue_id = register(live.owner)["queue_id"]
    body = assert_success(live.owner.delete("/events", {"queue_id": queue_id}))
    assert set(body) == {"result", "msg"}
    assert_bad_queue(poll(live.owner, queue_id, dont_block=True), queue_id)
    assert_bad_queue(live.owner.delete("/events", {"queue_id": queue_id}), queue_id)
    publish(live, [live.owner.id], n=1)  # nothing left to deliver to


def test_delete_needs_queue_id(live):
    body = assert_error(live.owner.delete("/events"), "Missing 'queue_id' argument", "REQUEST_VARIABLE_MISSING")
    assert body["var_name"] == "queue_id"


def test_delete_another_users_queue(live):
    other = live.make_user()
    queue_id = register(live.owner)["queue_id"]
    assert_bad_queue(other.delete("/events", {"queue_id": queue_id}), queue_id)
    assert events_now(live.owner, queue_id) == []


def test_delete_answers_a_parked_poll(live):
    queue_id = register(live.owner)["queue_id"]
    waiting = Poll(live.owner, queue_id)
    wait_until_parked(live, queue_id)
    assert_success(live.owner.delete("/events", {"queue_id": queue_id}))
    assert_bad_queue(waiting.result(), queue_id)


# -- GET /events without a queue ----------------------------------------------------------------


def test_dont_block_without_queue_allocates_one(live):
    body = assert_success(live.owner.get("/events", {"dont_block": True, "event_types": ["test"]}))
    assert body["events"] == []
    publish(live, [live.owner.id], n=1)
    live.call(lambda: live.server.events.publish({"type": "other"}, [live.owner.id]))
    assert [e["type"] for e in events_now(live.owner, body["queue_id"])] == ["test"]


def test_no_queue_and_blocking_is_an_error(live):
    assert_error(live.owner.get("/events"), "Missing 'queue_id' argument")


# -- memory stays bounded -----------------------------------------------------------------------


def test_overflow_drops_the_queue_and_the_client_registers_again(live, monkeypatch):
    monkeypatch.setattr(event_queue, "MAX_EVENTS", 5)
    queue_id = register(live.owner)["queue_id"]
    for n in range(5):
        publish(live, [live.owner.id], n=n)
    assert len(events_now(live.owner, queue_id)) == 5, "full but not over"
    publish(live, [live.owner.id], n=5)
    assert live.call(lambda: len(queue_of(live, queue_id).events)) == 0, "the events are freed at once"
    assert_bad_queue(poll(live.owner, queue_id, dont_block=True), queue_id)
    fresh = register(live.owner)["queue_id"]
    publish(live, [live.owner.id], n=6)
    assert [e["n"] for e in events_now(live.owner, fresh)] == [6]


def test_acknowledged_events_make_room(live, monkeypatch):
    monkeypatch.setattr(event_queue, "MAX_EVENTS", 3)
    queue_id = register(live.owner)["queue_id"]
    last = -1
    for n in range(10):
        publish(live, [live.owner.id], n=n)
        last = events_now(live.owner, queue_id, last)[-1]["id"]
    assert last == 9


def test_overflow_at_the_real_limit(live):
    queue_id = register(live.owner)["queue_id"]
    limit = event_queue.MAX_EVENTS

    def flood() -> int:
        for n in range(limit + 1):
            live.server.events.publish({"type": "test", "n": n}, [live.owner.id])
        return len(queue_of(live, queue_id).events)

    assert live.call(flood) == 0
    assert_bad_queue(poll(live.owner, queue_id, dont_block=True), queue_id)
    assert live.call(lambda: queue_of(live, queue_id)) is None


@pytest.mark.parametrize("method", ["post", "patch"])
def test_other_methods_are_not_allowed(live, method):
    response = getattr(live.owner, method)("/events")
    assert response.status_code == 405
    assert response.json()["allowed_methods"] == ["GET", "HEAD", "DELETE"]


def test_head_polls_like_get(live):
    queue_id = register(live.owner)["queue_id"]
    params = {"queue_id": queue_id, "last_event_id": -1, "dont_block": True}
    response = live.owner.request("HEAD", "/events", params, timeout=10)
    assert response.status_code == 200 and response.content == b""


def test_overflow_under_a_parked_poll(live, monkeypatch):
    monkeypatch.setattr(event_queue, "MAX_EVENTS", 2)
    queue_id = register(live.owner)["queue_id"]
    waiting = Poll(live.owner, queue_id)
    wait_until_parked(live, queue_id)

    def flood() -> None:  # one commit's events are published in one go, before the poll resumes
        for n in range(3):
            live.server.events.publish({"type": "test", "n": n}, [live.owner.id])

    live.call(flood)
    assert_bad_queue(waiting.result(), queue_id)
    assert live.call(lambda: queue_of(live, queue_id)) is None
