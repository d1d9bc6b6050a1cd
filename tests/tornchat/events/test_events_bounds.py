"""Event queues stay bounded (issue 10): bytes per queue, shared bodies, a small saved file, register's narrow."""

from __future__ import annotations

import gc
import json
import os

import msgspec
import pytest

from storage.fetch.narrow_terms import MAX_NARROW_TERMS, MAX_NARROW_USERS, MAX_OPERAND_LENGTH
from tests.support.channel_helpers import make_channel
from tests.support.events_helpers import events_now, poll, register, send_stream
from tests.support.helpers import FakeClock, LiveServer, assert_error, assert_success, data_dir_for
from tornchat.cli import build_parser
from tornchat.events.body import EVENT_OVERHEAD, event_size
from tornchat.events.registry import EventQueues
from tornchat.handlers.events import MAX_EVENT_TYPE_LENGTH, MAX_EVENT_TYPES
from tornchat.settings import DEFAULT_MAX_QUEUE_BYTES, load_settings

BUDGET = 16 * 1024


@pytest.fixture
def small_queues(tmp_path):
    """A live server whose queues may hold BUDGET bytes of events."""
    server = LiveServer(data_dir_for(tmp_path), max_queue_bytes=BUDGET)
    make_channel(server, "general", [server.owner.id])
    yield server
    server.stop()


def charged(event: dict) -> int:
    """What a queue is charged for an event a poll returned: its JSON without the id, plus the overhead."""
    return len(msgspec.json.encode({k: v for k, v in event.items() if k != "id"})) + EVENT_OVERHEAD


def assert_bad_queue(response, queue_id):
    body = assert_error(response, f"Bad event queue id: {queue_id}", "BAD_EVENT_QUEUE_ID", 400)
    assert body["queue_id"] == queue_id


def publish(queues: EventQueues, event: dict, user_ids: list[int]) -> None:
    queues.publish(event, user_ids)


def message(message_id: int, content: str = "hello") -> dict:
    body = {"id": message_id, "type": "stream", "display_recipient": "general", "stream_id": 1, "subject": "t"}
    return {"type": "message", "message": {**body, "content": content, "sender_id": 9, "sender_email": "s@x"}}


# -- the byte budget ----------------------------------------------------------------------------


def test_an_idle_queue_holds_its_budget_then_must_register_again(small_queues):
    channel_member = small_queues.owner
    queue_id = register(channel_member, event_types=["message"])["queue_id"]
    queue = small_queues.call(lambda: small_queues.server.queues.queues[queue_id])
    held: list[dict] = []
    for n in range(100):
        send_stream(channel_member, "general", f"message {n} " + "x" * 500)
        response = poll(channel_member, queue_id, dont_block=True)
        if response.status_code != 200:
            break
        held = assert_success(response)["events"]
    else:
        pytest.fail("the queue never overflowed")
    assert_bad_queue(response, queue_id)
    sizes = [charged(e) for e in held]
    assert sum(sizes) <= BUDGET < sum(sizes) + max(sizes), "it held what fits, and no more"
    state = small_queues.call(lambda: (queue.size, len(queue.entries), queue_id in small_queues.server.queues.queues))
    assert state == (0, 0, False), "the events are freed and the queue is gone"
    fresh = register(channel_member, event_types=["message"])["queue_id"]
    sent = send_stream(channel_member, "general", "after")
    assert [e["message"]["id"] for e in events_now(channel_member, fresh)] == [sent]


def test_a_client_that_keeps_up_never_overflows(small_queues):
    queue_id = register(small_queues.owner, event_types=["message"])["queue_id"]
    last, total = -1, 0
    for n in range(40):
        send_stream(small_queues.owner, "general", f"message {n} " + "x" * 500)
        events = events_now(small_queues.owner, queue_id, last)
        total += sum(charged(e) for e in events if e["id"] > last)
        last = events[-1]["id"]
    assert total > 2 * BUDGET, "far more than the budget went through the queue"
    assert small_queues.call(lambda: small_queues.server.queues.queues[queue_id].size) == charged(events[-1])


def test_one_event_larger_than_the_budget_reaches_an_empty_queue(small_queues):
    queue_id = register(small_queues.owner, event_types=["test"])["queue_id"]
    big = {"type": "test", "blob": "y" * (2 * BUDGET)}
    small_queues.call(lambda: small_queues.server.events.publish(big, [small_queues.owner.id]))
    assert [len(e["blob"]) for e in events_now(small_queues.owner, queue_id)] == [2 * BUDGET], (
        "its client is not behind"
    )
    small_queues.call(lambda: small_queues.server.events.publish({"type": "test", "blob": ""}, [small_queues.owner.id]))
    assert_bad_queue(poll(small_queues.owner, queue_id, dont_block=True), queue_id)


def test_the_size_follows_pushes_acknowledgements_and_merges():
    queues = EventQueues(FakeClock(), max_queue_bytes=10_000)
    queue = queues.create(1)
    first = {"type": "test", "n": 1}
    publish(queues, first, [1])
    flags = {"type": "update_message_flags", "operation": "add", "flag": "read", "all": False}
    publish(queues, {**flags, "messages": [1, 2]}, [1])
    publish(queues, {**flags, "messages": [2, 3]}, [1])
    assert [e["id"] for e in queue.events] == [0, 2], "the two flag events merged"
    merged = {**flags, "messages": [1, 2, 3]}
    assert queue.size == event_size(first) + event_size(merged)
    queue.acknowledge(0)
    assert queue.size == event_size(merged)
    queue.acknowledge(2)
    assert queue.size == 0 and queue.events == []


def test_a_merge_that_grows_past_the_budget_overflows():
    queues = EventQueues(FakeClock(), max_queue_bytes=2_000)
    queue = queues.create(1)
    flags = {"type": "update_message_flags", "operation": "add", "flag": "starred", "all": False}
    for start in range(0, 1_000, 100):
        publish(queues, {**flags, "messages": list(range(start, start + 100))}, [1])
    assert queue.overflowed and queue.size == 0
    assert queues.collect_garbage() == 1 and queues.queues == {}


def test_the_default_budget_and_the_event_count_limit():
    assert EventQueues(FakeClock()).create(1).max_bytes == DEFAULT_MAX_QUEUE_BYTES == 1024 * 1024
    queues = EventQueues(FakeClock(), max_queue_bytes=10**9)
    queue = queues.create(1)
    from tornchat.events import queue as event_queue

    for n in range(event_queue.MAX_EVENTS):
        publish(queues, {"type": "test", "n": n}, [1])
    assert len(queue.entries) == event_queue.MAX_EVENTS and not queue.overflowed
    publish(queues, {"type": "test"}, [1])
    assert queue.overflowed, "a huge byte budget still stops at MAX_EVENTS events"


# -- shared bodies ------------------------------------------------------------------------------


def test_queues_wanting_the_same_form_share_one_body():
    queues = EventQueues(FakeClock())
    plain = [queues.create(user_id) for user_id in (1, 2, 3)]
    html = queues.create(4, apply_markdown=True)
    event = {**message(100), "_raw_content": "**hello**"}
    publish(queues, event, [1, 2, 3, 4])
    bodies = [q.entries[0][1] for q in plain]
    assert bodies[0] is bodies[1] is bodies[2], "one copy for three queues"
    assert html.entries[0][1] is not bodies[0] and html.entries[0][1]["message"]["content"] == "hello"
    assert bodies[0]["message"]["content"] == "**hello**"
    publish(queues, {"type": "test", "data": [1, 2]}, [1, 2])
    assert plain[0].entries[1][1] is plain[1].entries[1][1]


def test_a_public_onlooker_gets_its_own_flags_without_touching_the_shared_body():
    queues = EventQueues(FakeClock())
    watcher, bystander = queues.create(1, all_public_streams=True), queues.create(2, all_public_streams=True)
    event = {**message(100), "_public_channel": True}
    publish(queues, {**event, "flags": []}, [3])
    assert watcher.entries[0][1] is bystander.entries[0][1]
    publish(queues, {**event, "flags": ["mentioned"]}, [1])
    assert [e["flags"] for e in watcher.events] == [["mentioned"]]
    assert [e["flags"] for e in bystander.events] == [[]], "the other onlooker keeps its copy"


def test_an_onlooker_copy_given_its_flags_is_charged_its_new_size():
    queues = EventQueues(FakeClock())
    watcher = queues.create(1, all_public_streams=True)
    event = {**message(100), "_public_channel": True}
    publish(queues, {**event, "flags": []}, [3])
    publish(queues, {**event, "flags": ["mentioned", "has_alert_word"]}, [1])
    [(_, body, size)] = watcher.entries
    assert body["flags"] == ["mentioned", "has_alert_word"]
    assert size == event_size(body) and watcher.size == size


# -- the saved file -----------------------------------------------------------------------------


def test_the_saved_file_holds_each_body_once_and_loads_them_shared(tmp_path):
    clock = FakeClock()
    before = EventQueues(clock)
    for user_id in range(1, 51):
        before.create(user_id)
    for n in range(10):
        publish(before, message(100 + n, f"unique text {n}"), list(range(1, 51)))
    path = os.path.join(str(tmp_path), "queues.json")
    before.save(path)
    with open(path, "rb") as handle:
        raw = handle.read()
    assert [raw.count(f"unique text {n}".encode()) for n in range(10)] == [1] * 10, "50 queues, one copy each"
    after = EventQueues(clock)
    assert after.load(path) == 50
    restored = list(after.queues.values())
    assert all(q.events == before.queues[q.id].events for q in restored)
    assert all(q.size == before.queues[q.id].size for q in restored)
    assert restored[0].entries[3][1] is restored[49].entries[3][1], "shared again after loading"
    assert gc.isenabled(), "the collector is back on"


def test_a_file_of_the_first_format_still_loads(tmp_path):
    path = os.path.join(str(tmp_path), "queues.json")
    saved = [
        {
            "id": "1:ab", "user_id": 1, "event_types": ["test"], "narrow": [], "apply_markdown": False,
            "client_gravatar": True, "all_public_streams": False, "empty_topic_name": False,
            "linkifier_url_template": False, "lifespan": 600, "role": 400, "next_id": 2, "newest_pruned_id": 0,
            "last_access": FakeClock().now, "events": [{"type": "test", "n": 1, "id": 1}],
        }
    ]  # fmt: skip
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(saved, handle)
    queues = EventQueues(FakeClock())
    assert queues.load(path) == 1
    queue = queues.queues["1:ab"]
    assert queue.events == [{"type": "test", "n": 1, "id": 1}]
    assert (queue.next_id, queue.newest_pruned_id, queue.event_types) == (2, 0, {"test"})
    assert queue.size == event_size({"type": "test", "n": 1})


def test_a_queue_over_a_lowered_budget_is_not_restored(tmp_path):
    clock = FakeClock()
    before = EventQueues(clock, max_queue_bytes=100_000)
    full, light = before.create(1), before.create(2)
    for n in range(20):
        publish(before, message(100 + n, "z" * 200), [1])
    publish(before, message(200), [2])
    path = os.path.join(str(tmp_path), "queues.json")
    before.save(path)
    after = EventQueues(clock, max_queue_bytes=2_000)
    assert after.load(path) == 1
    assert list(after.queues) == [light.id] and full.id not in after.queues


def test_an_unknown_format_is_ignored(tmp_path, caplog):
    path = os.path.join(str(tmp_path), "queues.json")
    with open(path, "w", encoding="utf-8") as handle:
        json.dump({"format": 99, "bodies": [], "queues": []}, handle)
    assert EventQueues(FakeClock()).load(path) == 0
    assert "unknown format 99" in caplog.text and not os.path.exists(path)


def damage_saved_queue(tmp_path, damage):
    """Save one queue holding one event, pass the file's data to damage(), write it back; return its path."""
    queues = EventQueues(FakeClock())
    queues.create(1)
    publish(queues, {"type": "test"}, [1])
    path = os.path.join(str(tmp_path), "queues.json")
    queues.save(path)
    with open(path, "rb") as handle:
        saved = json.load(handle)
    damage(saved)
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(saved, handle)
    return path


def test_a_dangling_body_index_is_ignored(tmp_path, caplog):
    path = damage_saved_queue(tmp_path, lambda saved: saved.update(bodies=[]))
    assert EventQueues(FakeClock()).load(path) == 0
    assert "Ignoring unreadable saved event queues" in caplog.text


def test_ids_and_bodies_of_different_lengths_are_ignored(tmp_path, caplog):
    path = damage_saved_queue(tmp_path, lambda saved: saved["queues"][0]["event_ids"].append(5))
    assert EventQueues(FakeClock()).load(path) == 0
    assert "Ignoring unreadable saved event queues" in caplog.text and gc.isenabled()


# -- the setting --------------------------------------------------------------------------------


def test_the_setting_from_flag_environment_and_default():
    assert load_settings({}, {}).max_queue_bytes == DEFAULT_MAX_QUEUE_BYTES
    assert load_settings({}, {"TORNCHAT_MAX_QUEUE_BYTES": "5000"}).max_queue_bytes == 5000
    flags = vars(build_parser().parse_args(["serve", "--max-queue-bytes", "7000"]))
    assert load_settings(flags, {"TORNCHAT_MAX_QUEUE_BYTES": "5000"}).max_queue_bytes == 7000


@pytest.mark.parametrize("value", ["0", "-1", "lots"])
def test_a_bad_setting_is_refused(value):
    with pytest.raises(ValueError):
        load_settings({}, {"TORNCHAT_MAX_QUEUE_BYTES": value})


# -- the narrow of POST /register ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("narrow", "msg"),
    [
        ([["is", "unread"]] * (MAX_NARROW_TERMS + 1), f"narrow is too long (limit: {MAX_NARROW_TERMS} items)"),
        ([["topic", "t" * (MAX_OPERAND_LENGTH + 1)]], f"operand is too long (limit: {MAX_OPERAND_LENGTH} characters)"),
        ([["sender", "a\x00b"]], "operand contains NULL (0x00) characters."),
        ([["dm", ",".join(["1"] * 501)]] * 2, f"narrow names too many users (limit: {MAX_NARROW_USERS})"),
        ([["search", "x"]], "Operator search not supported."),
    ],
)
def test_register_narrow_bounds(live, narrow, msg):
    assert_error(live.owner.post("/register", {"narrow": narrow}), msg, "BAD_REQUEST", 400)
    assert_error(live.owner.get("/events", {"dont_block": True, "narrow": narrow}), msg, "BAD_REQUEST", 400)
    assert live.call(lambda: len(live.server.queues.queues)) == 0, "no queue was created"


def test_register_narrow_at_the_bounds(live):
    narrow = [["topic", "t" * MAX_OPERAND_LENGTH]] + [["is", "unread"]] * (MAX_NARROW_TERMS - 3)
    narrow += [["dm", ",".join([str(live.owner.id)] * (MAX_NARROW_USERS // 2))]] * 2
    queue_id = register(live.owner, narrow=narrow)["queue_id"]
    assert live.call(lambda: len(live.server.queues.queues[queue_id].narrow)) == MAX_NARROW_TERMS


@pytest.mark.parametrize(
    ("event_types", "msg"),
    [
        (["message"] * (MAX_EVENT_TYPES + 1), f"event_types is too long (limit: {MAX_EVENT_TYPES} items)"),
        (
            ["message", "m" * (MAX_EVENT_TYPE_LENGTH + 1)],
            f"event_types[1] is too long (limit: {MAX_EVENT_TYPE_LENGTH} characters)",
        ),
    ],
)
def test_register_event_types_bounds(live, event_types, msg):
    assert_error(live.owner.post("/register", {"event_types": event_types}), msg, "BAD_REQUEST", 400)
    assert_error(live.owner.get("/events", {"dont_block": True, "event_types": event_types}), msg, "BAD_REQUEST", 400)
    assert live.call(lambda: len(live.server.queues.queues)) == 0, "no queue was created"


def test_register_event_types_at_the_bounds(live):
    event_types = ["message"] * (MAX_EVENT_TYPES - 1) + ["t" * MAX_EVENT_TYPE_LENGTH]
    queue_id = register(live.owner, event_types=event_types, fetch_event_types=[])["queue_id"]
    assert live.call(lambda: live.server.queues.queues[queue_id].event_types) == {
        "message",
        "t" * MAX_EVENT_TYPE_LENGTH,
    }
