"""Group commit of POST /messages: sends that arrive together share one transaction.

The batcher is held (its flushes captured) while the sends reach the server over HTTP, then
released: they run as one batch with one COMMIT; each is answered after it. A failing send gets
its own error and leaves nothing (refused before writing: left out; after writing: the others run
again without it); the others are stored.
"""

from __future__ import annotations

import concurrent.futures
import sqlite3
from typing import Any

from storage.db.write_batch import WriteBatcher
from tests.support.channel_helpers import make_channel, set_channel_group
from tests.support.helpers import Client, assert_error, assert_success, wait_for
from tests.support.send_helpers import NO_NEW_TOPICS, NO_PERMISSION, count_rows, message_events, send, stored


class Held:
    """Holds the live server's write batches: sends queue up until release() runs them."""

    def __init__(self, live) -> None:
        self.live = live
        self.batcher: WriteBatcher = live.server.writes.batcher
        self.flushes: list[Any] = []
        self.original = (self.batcher.schedule, self.batcher.schedule_later)
        self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=8)

        def hold() -> None:
            self.batcher.schedule = self.flushes.append
            self.batcher.schedule_later = lambda delay, fn: self.flushes.append(fn)

        live.call(hold)

    def send(self, client: Client, *args: Any, **params: Any) -> concurrent.futures.Future[Any]:
        """Send in the background (a client of its own: one connection per send); wait until it is queued."""
        queued = self.pending()
        own = Client(client.base_url, client.email, client.api_key, client.id)
        future = self.pool.submit(send, own, *args, **params)
        wait_for(lambda: self.pending() == queued + 1, "the send reached the batcher")
        return future

    def pending(self) -> int:
        return self.live.call(lambda: len(self.batcher.pending))

    def release(self) -> int:
        """Run the captured flushes (and those they schedule); return how many batches ran."""

        def run() -> int:
            before = self.batcher.batches
            while self.flushes:
                self.flushes.pop(0)()
            self.batcher.schedule, self.batcher.schedule_later = self.original
            return self.batcher.batches - before

        batches = self.live.call(run)
        self.pool.shutdown()
        return batches


def test_a_failing_send_rolls_back_only_itself(live, general):
    member = live.make_user()
    # A channel no message was sent to yet: the failing send creates its recipient row before
    # the topic permission check refuses it; that row must not be kept.
    fresh = make_channel(live, "fresh", [live.owner.id, member.id])
    set_channel_group(live, fresh, "can_create_topic_group", "role:administrators")
    held = Held(live)
    first = held.send(live.owner, general, "first")
    refused = held.send(member, fresh, "refused", topic="brand new")
    last = held.send(live.owner, general, "last")
    assert held.release() == 1
    assert_error(refused.result(10), NO_NEW_TOPICS)
    ids = [assert_success(f.result(10))["id"] for f in (first, last)]
    assert ids[1] > ids[0]
    assert [stored(live, i)["content"] for i in ids] == ["first", "last"]
    assert count_rows(live, "messages") == 2
    channels_with_recipient = live.read(lambda tx: tx.column("SELECT type_id FROM recipients WHERE type = 2"))
    assert channels_with_recipient == [general]  # fresh's, written by the refused send, was rolled back
    # The good sends ran twice (the refused one had written: the batch ran again without it), but
    # only the run that committed published: one event each, none for the refused send.
    published = [e["message"]["content"] for e, _ in live.events() if e["type"] == "message"]
    assert published == ["<p>first</p>", "<p>last</p>"]
    assert count_rows(live, "user_messages") == 2


def test_no_permission_in_a_batch(live, general):
    member = live.make_user()
    set_channel_group(live, general, "can_send_message_group", "role:administrators")
    held = Held(live)
    refused = held.send(member, general, "no")
    accepted = held.send(live.owner, general, "yes")
    assert held.release() == 1
    assert_error(refused.result(10), NO_PERMISSION)
    message_id = assert_success(accepted.result(10))["id"]
    assert stored(live, message_id)["content"] == "yes"
    assert count_rows(live, "messages") == 1


def test_bad_input_in_a_batch_gets_its_own_error(live, general):
    held = Held(live)
    good = held.send(live.owner, general, "fine")
    empty = held.send(live.owner, general, "   ")
    missing = held.send(live.owner, "nowhere", "lost")
    assert held.release() == 1
    assert_error(empty.result(10), "Message must not be empty")
    assert_error(missing.result(10), "Channel 'nowhere' does not exist", "STREAM_DOES_NOT_EXIST")
    assert stored(live, assert_success(good.result(10))["id"])["content"] == "fine"
    assert count_rows(live, "messages") == 1


def test_ids_follow_the_order_of_arrival_and_answers_wait_for_the_commit(live):
    alice = live.make_user()
    general = make_channel(live, "general", [live.owner.id, alice.id])
    held = Held(live)
    sends = [held.send(live.owner if n % 2 else alice, general, f"m{n}") for n in range(6)]
    assert not any(f.done() for f in sends)  # nothing is answered before its batch committed
    assert held.release() == 1
    ids = [assert_success(f.result(10))["id"] for f in sends]
    assert ids == sorted(ids) and len(set(ids)) == 6
    assert [stored(live, i)["content"] for i in ids] == [f"m{n}" for n in range(6)]


def test_events_are_published_once_after_the_commit(live):
    alice = live.make_user()
    general = make_channel(live, "general", [live.owner.id, alice.id])
    path = live.server.settings.database_path
    seen: list[tuple[int, bool, bool]] = []

    def watch(event: dict[str, Any], user_ids: list[int]) -> None:
        if event["type"] != "message":
            return
        other = sqlite3.connect(path)  # another connection sees only committed rows
        try:
            committed = other.execute("SELECT 1 FROM messages WHERE id = ?", (event["message"]["id"],)).fetchone()
        finally:
            other.close()
        seen.append((event["message"]["id"], live.server.db.conn.in_transaction, committed is not None))

    live.call(lambda: live.server.events.subscribe(watch))
    held = Held(live)
    sends = [held.send(live.owner, general, f"m{n}") for n in range(3)]
    failing = held.send(live.owner, general, "")
    assert held.release() == 1
    ids = [assert_success(f.result(10))["id"] for f in sends]
    assert_error(failing.result(10), "Message must not be empty")
    # One event per distinct flag set, their audiences together the channel's subscribers, nothing twice.
    published = {i: message_events(live, i) for i in ids}
    for events in published.values():
        audiences = [user_id for _, user_ids in events for user_id in user_ids]
        assert sorted(audiences) == sorted({live.owner.id, alice.id})
        assert len({tuple(e["flags"]) for e, _ in events}) == len(events)
    assert [message_id for message_id, _, _ in seen] == [i for i in ids for _ in published[i]]
    assert all(not in_tx and committed for _, in_tx, committed in seen)


def test_single_sends_still_go_alone(live, general):
    batcher = live.server.writes.batcher
    before = live.call(lambda: batcher.batches)
    for n in range(3):
        assert_success(send(live.owner, general, f"alone {n}"))
    assert live.call(lambda: batcher.batches) - before == 3


def test_sends_queued_at_shutdown_are_stored(live, general):
    held = Held(live)
    queued = [held.send(live.owner, general, f"late {n}") for n in range(2)]
    live.call(live.server.writes.batcher.drain)  # what Server.close does before closing the database
    ids = [assert_success(f.result(10))["id"] for f in queued]
    assert [stored(live, i)["content"] for i in ids] == ["late 0", "late 1"]
    assert held.release() == 0  # the captured flushes find nothing left
