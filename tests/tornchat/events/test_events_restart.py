"""A graceful restart: Server.shutdown answers parked polls and saves the queues; the next Server resumes them."""

from __future__ import annotations

import os

from tests.support.events_helpers import Poll, events_now, poll, register, send_direct, wait_until_parked
from tests.support.helpers import assert_error, assert_success


def test_queues_and_unacknowledged_events_survive_a_restart(live, restart):
    queue_id = register(live.owner, event_types=["message"])["queue_id"]
    first = send_direct(live.owner, [live.owner.id], "before")
    after = restart()
    assert not os.path.exists(after.server.queues_path), "the saved file is consumed"
    events = events_now(after.owner, queue_id)
    assert [(e["id"], e["message"]["id"]) for e in events] == [(0, first)]
    waiting = Poll(after.owner, queue_id, 0)
    wait_until_parked(after, queue_id)
    second = send_direct(after.owner, [after.owner.id], "after")
    events = assert_success(waiting.result())["events"]
    assert [(e["id"], e["message"]["id"]) for e in events] == [(1, second)], "ids go on where they stopped"


def test_shutdown_answers_parked_polls(live, restart):
    queue_id = register(live.owner)["queue_id"]
    waiting = Poll(live.owner, queue_id)
    wait_until_parked(live, queue_id)
    after = restart()
    assert assert_success(waiting.result())["events"] == [], "answered at shutdown, long before a heartbeat"
    assert events_now(after.owner, queue_id) == []


def test_options_survive_a_restart(live, restart):
    make = {"name": "general", "subscribers": [live.owner.id]}
    assert_success(live.owner.post("/channels/create", make))
    params = {"narrow": [["stream", "general"]], "client_capabilities": {"empty_topic_name": True}}
    queue_id = register(live.owner, event_types=["message"], **params)["queue_id"]
    after = restart()
    send_direct(after.owner, [after.owner.id], "not in the narrow")
    body = {"type": "stream", "to": "general", "topic": "", "content": "in the narrow"}
    message_id = assert_success(after.owner.post("/messages", body))["id"]
    events = events_now(after.owner, queue_id)
    assert [(e["message"]["id"], e["message"]["subject"]) for e in events] == [(message_id, "")]


def test_a_queue_that_expired_while_stopped_is_gone(live, restart):
    queue_id = register(live.owner, queue_lifespan_secs=60)["queue_id"]
    live.clock.advance(61)
    after = restart()
    response = poll(after.owner, queue_id, dont_block=True)
    assert_error(response, f"Bad event queue id: {queue_id}", "BAD_EVENT_QUEUE_ID")


def test_deleted_queues_are_not_restored(live, restart):
    queue_id = register(live.owner)["queue_id"]
    assert_success(live.owner.delete("/events", {"queue_id": queue_id}))
    after = restart()
    assert after.call(lambda: list(after.server.queues.queues)) == []


def test_start_schedules_garbage_collection_and_shutdown_stops_it(live):
    live.call(live.server.start)
    timers = live.call(lambda: list(live.server._timers))
    assert [(t.callback, t.is_running()) for t in timers] == [(live.server._collect_queues, True)]
    live.call(live.server.shutdown)
    assert [t.is_running() for t in timers] == [False]
    os.remove(live.server.queues_path)
