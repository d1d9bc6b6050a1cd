"""Delivery of scheduled messages: deliver_due at the due time, failures, and the Scheduler's timer.

The clock is the live server's fake clock; the Scheduler gets a fake call_later that records
(delay, callback) instead of touching the IOLoop, and tests fire the callbacks by hand.
"""

from __future__ import annotations

import re

import pytest

from scheduler import Scheduler
from storage.messages import scheduled_messages
from tests.support.channel_helpers import archive, make_channel, set_channel_group
from tests.support.helpers import assert_error, assert_success
from tests.support.scheduled_helpers import (
    deliver,
    listed,
    listed_one,
    message_ids_seen_by,
    notification_bot_messages,
    schedule_direct_ok,
    schedule_ok,
    scheduled_events,
    stored_row,
)
from tests.support.send_helpers import NO_PERMISSION, message_events

LATE = "Message could not be sent at the scheduled time."


def later(live, seconds: int) -> int:
    return int(live.clock.now) + seconds


def move(live, scheduled_id: int, timestamp: int) -> None:
    """Edit the owner's scheduled message to a new delivery time."""
    path = f"/scheduled_messages/{scheduled_id}"
    assert_success(live.owner.patch(path, {"scheduled_delivery_timestamp": timestamp}))


# -- delivery at the due time -----------------------------------------------------------------------


def test_channel_message_is_delivered_at_its_time(live, general):
    member = live.make_user()
    assert_success(member.post("/users/me/subscriptions", {"subscriptions": [{"name": "general"}]}))
    scheduled_id = schedule_ok(live, live.owner, general, at=later(live, 60), content="**hi**", topic="news")
    live.clock.advance(59)
    assert deliver(live) == []
    live.clock.advance(1)
    before = len(live.events())
    [message_id] = deliver(live)
    assert message_id in message_ids_seen_by(member) and message_id in message_ids_seen_by(live.owner)
    row = live.read(lambda tx: dict(tx.one("SELECT * FROM messages WHERE id = ?", (message_id,))))
    stored = (row["sender_id"], row["channel_id"], row["topic"], row["content"])
    assert stored == (live.owner.id, general, "news", "**hi**")
    assert (row["rendered_content"], row["date_sent"]) == ("<p><strong>hi</strong></p>", int(live.clock.now))
    assert listed(live.owner) == []
    assert stored_row(live, scheduled_id)["delivered_message_id"] == message_id
    assert scheduled_events(live, before) == [
        ({"type": "scheduled_messages", "op": "remove", "scheduled_message_id": scheduled_id}, [live.owner.id])
    ]
    audience = sorted(uid for _, ids in message_events(live, message_id) for uid in ids)
    assert audience == sorted([live.owner.id, member.id])


def test_direct_message_is_delivered(live):
    alice, bob = live.make_user(), live.make_user()
    schedule_direct_ok(live, live.owner, [alice.id, bob.id], at=later(live, 10), content="psst")
    live.clock.advance(10)
    [message_id] = deliver(live)
    for user in (alice, bob, live.owner):
        assert message_id in message_ids_seen_by(user)
    assert message_id not in message_ids_seen_by(live.make_user())


def test_direct_message_to_oneself_is_delivered(live):
    schedule_direct_ok(live, live.owner, [live.owner.id], at=later(live, 10))
    live.clock.advance(10)
    [message_id] = deliver(live)
    assert message_id in message_ids_seen_by(live.owner)


def test_due_messages_go_oldest_first_up_to_the_limit(live, general):
    ids = [schedule_ok(live, live.owner, general, at=later(live, 30 - i), content=f"m{i}") for i in range(5)]
    live.clock.advance(30)
    first = deliver(live, limit=2)
    assert len(first) == 2
    contents = live.read(lambda tx: tx.column("SELECT content FROM messages ORDER BY id"))
    assert contents == ["m4", "m3"]
    assert len(deliver(live)) == 3
    assert all(stored_row(live, i)["delivered_message_id"] for i in ids)


def test_each_message_is_delivered_once(live, general):
    schedule_ok(live, live.owner, general, at=later(live, 10))
    live.clock.advance(10)
    assert len(deliver(live)) == 1
    assert deliver(live) == []
    assert live.read(lambda tx: tx.value("SELECT count(*) FROM messages")) == 1


def test_delivery_uses_the_permissions_of_delivery_time(live, general):
    """A mention renders against the users that exist when the message is sent."""
    schedule_ok(live, live.owner, general, at=later(live, 10), content="@**Late Comer**")
    newcomer = live.make_user(full_name="Late Comer")
    assert_success(newcomer.post("/users/me/subscriptions", {"subscriptions": [{"name": "general"}]}))
    live.clock.advance(10)
    [message_id] = deliver(live)
    flags = live.read(lambda tx: tx.value("SELECT flags FROM user_messages WHERE message_id = ? AND user_id = ?",
                                          (message_id, newcomer.id)))  # fmt: skip
    assert flags & 8  # mentioned


# -- edits and deletions against delivery ---------------------------------------------------------------


def test_edit_moving_the_time_later_prevents_delivery_now(live, general):
    scheduled_id = schedule_ok(live, live.owner, general, at=later(live, 10))
    move(live, scheduled_id, later(live, 100))
    live.clock.advance(10)
    assert deliver(live) == []
    assert listed_one(live.owner, scheduled_id)["failed"] is False
    live.clock.advance(90)
    assert len(deliver(live)) == 1


def test_edit_moving_the_time_earlier(live, general):
    scheduled_id = schedule_ok(live, live.owner, general, at=later(live, 100))
    move(live, scheduled_id, later(live, 5))
    live.clock.advance(5)
    assert len(deliver(live)) == 1


def test_edited_content_is_what_is_delivered(live, general):
    scheduled_id = schedule_ok(live, live.owner, general, at=later(live, 10), content="draft")
    assert_success(live.owner.patch(f"/scheduled_messages/{scheduled_id}", {"content": "final"}))
    live.clock.advance(10)
    [message_id] = deliver(live)
    assert live.read(lambda tx: tx.value("SELECT content FROM messages WHERE id = ?", (message_id,))) == "final"


def test_deleted_message_is_not_delivered(live, general):
    scheduled_id = schedule_ok(live, live.owner, general, at=later(live, 10))
    assert_success(live.owner.delete(f"/scheduled_messages/{scheduled_id}"))
    live.clock.advance(10)
    assert deliver(live) == []


def test_deliver_one_skips_a_row_no_longer_waiting(live, general):
    """A row deleted, delivered or failed between the due query and its transaction is left alone."""
    scheduled_id = schedule_ok(live, live.owner, general, at=later(live, 10))
    live.clock.advance(10)
    [message_id] = deliver(live)
    assert live.write(scheduled_messages.deliver_one, scheduled_id) is None
    assert live.write(scheduled_messages.deliver_one, 9999) is None
    assert stored_row(live, scheduled_id)["delivered_message_id"] == message_id


# -- failures -------------------------------------------------------------------------------------------


def assert_failed(live, scheduled_id: int, reason: str, before: int, notified: bool = True) -> None:
    """The row failed with `reason`, stays listed with failed=true, and the sender heard of it."""
    row = stored_row(live, scheduled_id)
    assert (row["failed"], row["failure_message"], row["delivered_message_id"]) == (1, reason, None)
    obj = listed_one(live.owner, scheduled_id)
    assert obj["failed"] is True
    updates = [(e, ids) for e, ids in scheduled_events(live, before) if e["op"] != "remove"]
    assert updates == [({"type": "scheduled_messages", "op": "update", "scheduled_message": obj}, [live.owner.id])]
    notices = notification_bot_messages(live, live.owner.id)
    if not notified:
        assert notices == []
        return
    [notice] = notices
    assert f"> {reason}" in notice["content"]
    assert notice["content"].startswith("The message you scheduled for <time:")
    assert notice["id"] in message_ids_seen_by(live.owner)


def test_more_than_ten_minutes_late_fails(live, general):
    scheduled_id = schedule_ok(live, live.owner, general, at=later(live, 10))
    live.clock.advance(10 + 601)
    before = len(live.events())
    assert deliver(live) == [None]
    assert_failed(live, scheduled_id, LATE, before)
    assert live.read(lambda tx: tx.value("SELECT count(*) FROM messages WHERE channel_id = ?", (general,))) == 0


def test_exactly_ten_minutes_late_is_delivered(live, general):
    schedule_ok(live, live.owner, general, at=later(live, 10))
    live.clock.advance(10 + 600)
    [message_id] = deliver(live)
    assert message_id is not None


def test_channel_archived(live, general):
    scheduled_id = schedule_ok(live, live.owner, general, at=later(live, 10))
    archive(live, general)
    live.clock.advance(10)
    before = len(live.events())
    assert deliver(live) == [None]
    assert_failed(live, scheduled_id, "Not authorized to send to channel 'general'", before)


def test_permission_lost(live, general):
    member = live.make_user()
    scheduled_id = schedule_ok(live, member, general, at=later(live, 10))
    set_channel_group(live, general, "can_send_message_group", "role:administrators")
    live.clock.advance(10)
    before = len(live.events())
    assert deliver(live) == [None]
    [(event, user_ids)] = scheduled_events(live, before)
    assert (event["op"], event["scheduled_message"]["failed"], user_ids) == ("update", True, [member.id])
    assert stored_row(live, scheduled_id)["failure_message"] == NO_PERMISSION
    [notice] = notification_bot_messages(live, member.id)
    assert f"> {NO_PERMISSION}" in notice["content"]
    assert notice["id"] in message_ids_seen_by(member)


def test_recipient_deactivated(live):
    gone = live.make_user(email="gone@example.com")
    scheduled_id = schedule_direct_ok(live, live.owner, [gone.id], at=later(live, 10))
    assert_success(live.owner.delete(f"/users/{gone.id}"))
    live.clock.advance(10)
    before = len(live.events())
    assert deliver(live) == [None]
    assert_failed(live, scheduled_id, "'gone@example.com' is no longer using Zulip.", before)


def test_sender_deactivated(live, general):
    """Marked failed with Zulip's reason; the notification bot stays quiet, as nobody would read it."""
    member = live.make_user()
    scheduled_id = schedule_ok(live, member, general, at=later(live, 10))
    assert_success(live.owner.delete(f"/users/{member.id}"))
    live.clock.advance(10)
    before = len(live.events())
    assert deliver(live) == [None]
    row = stored_row(live, scheduled_id)
    assert (row["failed"], row["failure_message"]) == (1, "Account is deactivated")
    [(event, user_ids)] = scheduled_events(live, before)
    assert (event["op"], event["scheduled_message"]["failed"], user_ids) == ("update", True, [member.id])
    assert notification_bot_messages(live, member.id) == []


def test_unexpected_error_fails_the_message_instead_of_retrying_it(live, general, monkeypatch):
    first = schedule_ok(live, live.owner, general, at=later(live, 10))
    second = schedule_ok(live, live.owner, general, at=later(live, 10))
    real_store = scheduled_messages.store_message

    def store(tx, sender, destination, content, *args):
        if content == "boom":
            raise RuntimeError("a bug")
        return real_store(tx, sender, destination, content, *args)

    monkeypatch.setattr(scheduled_messages, "store_message", store)
    assert_success(live.owner.patch(f"/scheduled_messages/{first}", {"content": "boom"}))
    live.clock.advance(10)
    before = len(live.events())
    [failed, delivered] = deliver(live)
    assert failed is None and delivered is not None
    assert stored_row(live, second)["delivered_message_id"] == delivered
    assert_failed(live, first, "Internal server error", before)
    assert deliver(live) == []


def test_failed_message_is_not_retried(live, general):
    scheduled_id = schedule_ok(live, live.owner, general, at=later(live, 10))
    live.clock.advance(700)
    assert deliver(live) == [None]
    assert deliver(live) == []
    assert len(notification_bot_messages(live, live.owner.id)) == 1
    assert listed_one(live.owner, scheduled_id)["failed"] is True


def test_edit_after_failure_needs_a_time_then_delivers(live, general):
    scheduled_id = schedule_ok(live, live.owner, general, at=later(live, 10))
    archive(live, general)
    live.clock.advance(10)
    deliver(live)
    path = f"/scheduled_messages/{scheduled_id}"
    assert_error(live.owner.patch(path, {"content": "again"}), "Scheduled delivery time must be in the future.")
    other = make_channel(live, "other", [live.owner.id])
    assert_success(live.owner.patch(path, {"to": other, "scheduled_delivery_timestamp": later(live, 30)}))
    assert listed_one(live.owner, scheduled_id)["failed"] is False
    live.clock.advance(30)
    [message_id] = deliver(live)
    assert message_id is not None and listed(live.owner) == []


def test_notification_bot_is_created_once_as_a_bot(live, general):
    for offset in (10, 20):
        schedule_ok(live, live.owner, general, at=later(live, offset))
    archive(live, general)
    live.clock.advance(20)
    deliver(live)
    bots = live.read(lambda tx: tx.all("SELECT * FROM users WHERE delivery_email LIKE 'notification-bot@%'"))
    assert len(bots) == 1 and bots[0]["is_bot"] == 1 and bots[0]["full_name"] == "Notification Bot"
    assert bots[0]["password_hash"] is None
    adds = [e for e, _ in live.events() if e["type"] == "realm_user" and e["op"] == "add"]
    assert [e["person"]["is_bot"] for e in adds if e["person"]["user_id"] == bots[0]["id"]] == [True]
    assert len(notification_bot_messages(live, live.owner.id)) == 2


# -- the Scheduler's timer ----------------------------------------------------------------------------


class FakeTimer:
    def __init__(self, delay, callback):
        self.delay, self.callback, self.cancelled = delay, callback, False

    def cancel(self):
        self.cancelled = True


class FakeLoop:
    """Records call_later(delay, callback); `pending` are the timers not cancelled nor fired."""

    def __init__(self):
        self.timers: list[FakeTimer] = []

    def call_later(self, delay, callback):
        timer = FakeTimer(delay, callback)
        self.timers.append(timer)
        return timer

    @property
    def pending(self) -> list[FakeTimer]:
        return [t for t in self.timers if not t.cancelled and t.callback is not None]

    def fire(self, live, timer: FakeTimer) -> None:
        callback, timer.callback = timer.callback, None
        live.call(callback)


def make_scheduler(live, batch_size=20, subscribe=True, monotonic=None, turn_budget=0.01) -> tuple[Scheduler, FakeLoop]:
    """A Scheduler on the live database and clock; re-armed through the Server's event subscription.
    Its turn-budget timer stands still unless a test gives one: batches are cut by count only."""
    loop = FakeLoop()

    def install():
        scheduler = Scheduler(live.server.db, live.clock, loop.call_later, batch_size, turn_budget,
                              monotonic=monotonic or (lambda: 0.0))  # fmt: skip
        live.server.scheduler = scheduler
        if subscribe:
            live.server.events.subscribe(live.server._rearm_scheduler)
        return scheduler

    return live.call(install), loop


def delays(loop: FakeLoop) -> list[float]:
    return [t.delay for t in loop.pending]


def test_no_timer_when_nothing_waits(live):
    scheduler, loop = make_scheduler(live)
    live.call(scheduler.arm)
    live.call(scheduler.run)
    assert loop.timers == []


def test_armed_for_the_earliest_due(live, general):
    for offset in (300, 100, 200):
        schedule_ok(live, live.owner, general, at=later(live, offset))
    scheduler, loop = make_scheduler(live, subscribe=False)
    live.call(scheduler.arm)
    assert delays(loop) == [100]
    live.call(scheduler.arm)  # nothing changed: the same timer stays
    assert len(loop.timers) == 1


def test_rearmed_on_create_edit_and_delete(live, general):
    scheduler, loop = make_scheduler(live)
    first = schedule_ok(live, live.owner, general, at=later(live, 100))
    assert delays(loop) == [100]
    second = schedule_ok(live, live.owner, general, at=later(live, 50))
    assert delays(loop) == [50] and loop.timers[0].cancelled
    schedule_ok(live, live.owner, general, at=later(live, 500))  # later than the next: timer kept
    assert delays(loop) == [50] and len(loop.timers) == 2
    path = f"/scheduled_messages/{second}"
    assert_success(live.owner.patch(path, {"scheduled_delivery_timestamp": later(live, 200)}))
    assert delays(loop) == [100]
    assert_success(live.owner.delete(f"/scheduled_messages/{first}"))
    assert delays(loop) == [200]
    for obj in listed(live.owner):
        assert_success(live.owner.delete(f"/scheduled_messages/{obj['scheduled_message_id']}"))
    assert delays(loop) == []


def test_timer_delivers_and_rearms_for_the_next(live, general):
    scheduler, loop = make_scheduler(live)
    first = schedule_ok(live, live.owner, general, at=later(live, 60))
    schedule_ok(live, live.owner, general, at=later(live, 90))
    [timer] = loop.pending
    live.clock.advance(timer.delay)
    loop.fire(live, timer)
    assert stored_row(live, first)["delivered_message_id"] is not None
    assert delays(loop) == [30]
    live.clock.advance(30)
    loop.fire(live, loop.pending[0])
    assert listed(live.owner) == [] and loop.pending == []


def test_timer_firing_early_rearms(live, general):
    """IOLoop timers run on a monotonic clock; if one fires before the wall clock's due time,
    nothing is sent and the timer is armed again for what is left."""
    scheduler, loop = make_scheduler(live)
    schedule_ok(live, live.owner, general, at=later(live, 60))
    live.clock.advance(58)
    loop.fire(live, loop.pending[0])
    assert delays(loop) == [2] and len(listed(live.owner)) == 1


def test_batches_come_back_on_the_next_loop_turn(live, general):
    scheduler, loop = make_scheduler(live, batch_size=3)
    for i in range(7):
        schedule_ok(live, live.owner, general, at=later(live, 10), content=f"m{i}")
    schedule_ok(live, live.owner, general, at=later(live, 1000))
    live.clock.advance(10)
    fired = 0
    while loop.pending and loop.pending[0].delay == 0 or fired == 0:
        assert len(loop.pending) == 1  # one timer at a time, even while deliveries publish events
        loop.fire(live, loop.pending[0])
        fired += 1
    assert fired == 3  # 3 + 3 + 1
    assert delays(loop) == [990]
    assert len(listed(live.owner)) == 1


def test_a_turn_stops_when_its_time_budget_is_spent(live, general):
    """Each delivery "takes" 8 ms on the fake timer: a 20 ms budget allows three per turn (the check
    comes before each message after the first), and the next turn comes on the next loop turn."""
    ticks = iter(range(0, 10_000, 8))
    scheduler, loop = make_scheduler(live, batch_size=100, monotonic=lambda: next(ticks) / 1000, turn_budget=0.02)
    for _ in range(7):
        schedule_ok(live, live.owner, general, at=later(live, 10))
    live.clock.advance(10)
    loop.fire(live, loop.pending[0])
    assert len(listed(live.owner)) == 4 and delays(loop) == [0]
    loop.fire(live, loop.pending[0])
    assert len(listed(live.owner)) == 1 and delays(loop) == [0]
    loop.fire(live, loop.pending[0])
    assert listed(live.owner) == [] and loop.pending == []


def test_edit_during_a_batch_pause_keeps_one_timer(live, general):
    scheduler, loop = make_scheduler(live, batch_size=2)
    ids = [schedule_ok(live, live.owner, general, at=later(live, 10)) for _ in range(5)]
    live.clock.advance(10)
    loop.fire(live, loop.pending[0])
    assert delays(loop) == [0]
    move(live, ids[-1], later(live, 50))
    assert delays(loop) == [0]
    while loop.pending and loop.pending[0].delay == 0:
        loop.fire(live, loop.pending[0])
    assert delays(loop) == [50]
    assert [obj["scheduled_message_id"] for obj in listed(live.owner)] == [ids[-1]]


def test_failures_in_a_batch_rearm_too(live, general):
    scheduler, loop = make_scheduler(live)
    scheduled_id = schedule_ok(live, live.owner, general, at=later(live, 10))
    archive(live, general)
    live.clock.advance(10)
    loop.fire(live, loop.pending[0])
    assert listed_one(live.owner, scheduled_id)["failed"] is True
    assert loop.pending == []  # a failed message waits for an edit, not for a timer


def test_error_outside_any_message_retries_later(live, general, monkeypatch):
    scheduler, loop = make_scheduler(live)
    schedule_ok(live, live.owner, general, at=later(live, 10))
    live.clock.advance(10)

    def broken(*args):
        raise RuntimeError("database unreadable")

    import scheduler.delivery as delivery

    monkeypatch.setattr(delivery, "due_ids", broken)
    loop.fire(live, loop.pending[0])
    assert delays(loop) == [delivery.RETRY_SECONDS]
    monkeypatch.undo()
    loop.fire(live, loop.pending[0])
    assert listed(live.owner) == []


# -- restart catch-up ---------------------------------------------------------------------------------


def test_restart_delivers_what_fell_due_and_fails_what_is_too_late(live, general):
    too_late = schedule_ok(live, live.owner, general, at=later(live, 100), content="stale")
    in_time = schedule_ok(live, live.owner, general, at=later(live, 1000), content="fresh")
    future = schedule_ok(live, live.owner, general, at=later(live, 5000), content="future")
    live.clock.advance(1300)  # the server was down: `too_late` is 1200 s late, `in_time` 300 s
    scheduler, loop = make_scheduler(live)
    live.call(scheduler.run)  # what Server.start does on startup
    assert stored_row(live, too_late)["failure_message"] == LATE
    assert stored_row(live, in_time)["delivered_message_id"] is not None
    assert [(o["scheduled_message_id"], o["failed"]) for o in listed(live.owner)] == [(too_late, True), (future, False)]
    assert delays(loop) == [3700]
    assert len(notification_bot_messages(live, live.owner.id)) == 1


def test_server_start_catches_up(live, general):
    scheduled_id = schedule_ok(live, live.owner, general, at=later(live, 10))
    live.clock.advance(20)
    live.call(live.server.start)
    assert stored_row(live, scheduled_id)["delivered_message_id"] is not None
    assert live.server.scheduler is not None and live.server.scheduler.timer is None
    live.call(live.server.scheduler.cancel)


@pytest.mark.parametrize(("sql", "params", "index"), [
    (scheduled_messages.NEXT_DUE_SQL, (), "scheduled_messages_due"),
    (scheduled_messages.DUE_SQL, (0, 1), "scheduled_messages_due"),
    (scheduled_messages.LIST_SQL, (1,), "scheduled_messages_by_sender"),
])  # fmt: skip
def test_queries_use_their_index(live, sql, params, index):
    details = live.read(lambda tx: [row["detail"] for row in tx.all("EXPLAIN QUERY PLAN " + sql, params)])
    text = "\n".join(details)
    assert re.match(r"(SEARCH|SCAN) scheduled_messages USING", details[0]), text
    assert f"INDEX {index}" in details[0] and "TEMP B-TREE" not in text, text
