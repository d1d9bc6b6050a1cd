"""Group commit at shutdown: sends still queued when the server closes are stored and their events saved."""

from __future__ import annotations

import gc

import msgspec

from tests.storage.db.test_group_commit import Held
from tests.support.events_helpers import register
from tests.support.helpers import assert_success
from tornchat.events.gc_hold import hold_garbage_collection


def test_events_of_sends_drained_at_close_are_saved_with_the_queues(live, general):
    queue_id = register(live.owner, event_types=["message"])["queue_id"]
    live.call(live.server.shutdown)  # answers parked polls, saves the queues
    held = Held(live)
    queued = held.send(live.owner, general, "queued at shutdown")
    db_close = live.server.db.close
    live.server.db.close = lambda: None  # the fixture's teardown closes it
    try:
        live.call(live.server.close)  # stores the queued send, saves the queues again
    finally:
        live.server.db.close = db_close
    assert_success(queued.result(10))
    with open(live.server.queues_path, "rb") as handle:
        saved = msgspec.json.decode(handle.read())
    (queue,) = [q for q in saved["queues"] if q["id"] == queue_id]
    bodies = [saved["bodies"][index] for index in queue["event_bodies"]]
    assert any("queued at shutdown" in msgspec.json.encode(body).decode() for body in bodies), bodies


def test_close_ends_a_garbage_collection_hold(live):
    # An event for many queues holds the collector off until a timer of the loop ends the hold: a
    # server closed (its loop ending) before that timer must not leave the process without collection.
    assert gc.isenabled()
    live.call(hold_garbage_collection)
    try:
        assert not gc.isenabled()
        db_close = live.server.db.close
        live.server.db.close = lambda: None  # the fixture's teardown closes it
        try:
            live.call(live.server.close)
        finally:
            live.server.db.close = db_close
        assert gc.isenabled()
    finally:
        gc.enable()
