"""POST /messages/flags/narrow: the same selection as GET /messages, counts, clamping, errors."""

from __future__ import annotations

import pytest

from tests.support.channel_helpers import make_channel, unsubscribe
from tests.support.helpers import assert_error, assert_success
from tests.support.message_flags_helpers import flag_events, flags_of, unread_ids
from tests.support.send_helpers import insert_messages, send_direct_ok, send_ok

CHANNEL_NARROW = [{"operator": "channel", "operand": "general"}]


def narrow_flags(client, anchor="oldest", num_before=0, num_after=100, narrow=(), op="add", flag="read", **extra):
    params = {"anchor": anchor, "num_before": num_before, "num_after": num_after, "narrow": list(narrow), "op": op,
              "flag": flag, **extra}  # fmt: skip
    return client.post("/messages/flags/narrow", params)


def fetched_ids(client, anchor, num_before, num_after, narrow=(), **extra):
    params = {"anchor": anchor, "num_before": num_before, "num_after": num_after, "narrow": list(narrow), **extra}
    body = assert_success(client.get("/messages", params))
    return [m["id"] for m in body["messages"]], body


def summary(body):
    keys = ("processed_count", "updated_count", "first_processed_id", "last_processed_id", "found_oldest",
            "found_newest", "ignored_because_not_subscribed_channels")  # fmt: skip
    return tuple(body[key] for key in keys)


def test_marks_a_range_read(live, world):
    ids = [send_ok(world.owner, "general", f"m{i}") for i in range(5)]
    before = len(live.events())
    body = assert_success(narrow_flags(world.alice, "oldest", 0, 3))
    assert summary(body) == (3, 3, ids[0], ids[2], True, False, [])
    assert unread_ids(world.alice) == ids[3:]
    assert [(e["flag"], e["messages"], e["all"]) for e, _ in flag_events(live, before)] == [("read", ids[:3], False)]
    # The same range again: processed, but nothing changes and no event is sent.
    before = len(live.events())
    body = assert_success(narrow_flags(world.alice, "oldest", 0, 10))
    assert summary(body) == (5, 2, ids[0], ids[4], True, True, [])
    assert [e["messages"] for e, _ in flag_events(live, before)] == [ids[3:]]


@pytest.mark.parametrize(
    ("anchor", "num_before", "num_after", "extra"),
    [("newest", 2, 0, {}), ("oldest", 0, 2, {}), ("middle", 1, 1, {}), ("middle", 0, 2, {"include_anchor": False}),
     ("middle", 2, 0, {"include_anchor": False}), ("middle", 0, 0, {}), ("first_unread", 1, 2, {}),
     ("-5", 0, 2, {}), ("99999999999999999999", 3, 0, {})],
)  # fmt: skip
def test_selects_what_get_messages_returns(world, anchor, num_before, num_after, extra):
    ids = [send_ok(world.owner, "general", f"m{i}", topic="a" if i % 2 else "b") for i in range(6)]
    send_direct_ok(world.owner, [world.alice.id])  # outside the channel narrow
    assert_success(world.alice.post("/messages/flags", {"messages": ids[:2], "op": "add", "flag": "read"}))
    anchor = str(ids[3]) if anchor == "middle" else anchor
    expected, fetched = fetched_ids(world.alice, anchor, num_before, num_after, CHANNEL_NARROW, **extra)
    body = assert_success(
        narrow_flags(world.alice, anchor, num_before, num_after, CHANNEL_NARROW, flag="starred", **extra)
    )
    assert body["processed_count"] == len(expected) == body["updated_count"]
    assert (body["first_processed_id"], body["last_processed_id"]) == (expected[0], expected[-1])
    assert (body["found_oldest"], body["found_newest"]) == (fetched["found_oldest"], fetched["found_newest"])
    starred = flags_of(world.alice, ids)
    assert sorted(i for i in ids if "starred" in starred[i]) == expected


def test_first_unread_anchor(world):
    ids = [send_ok(world.owner, "general") for _ in range(4)]
    assert_success(world.alice.post("/messages/flags", {"messages": ids[:2], "op": "add", "flag": "read"}))
    body = assert_success(narrow_flags(world.alice, "first_unread", 0, 1, op="add", flag="starred"))
    assert summary(body) == (2, 2, ids[2], ids[3], False, False, [])


def test_nothing_selected(world):
    body = assert_success(narrow_flags(world.alice, "newest", 0, 5))
    assert summary(body) == (0, 0, None, None, False, True, [])
    body = assert_success(narrow_flags(world.alice, "oldest", 5, 5, [{"operator": "is", "operand": "starred"}]))
    assert summary(body) == (0, 0, None, None, True, True, [])


def test_null_narrow_means_everything(world):
    channel_message, dm = send_ok(world.owner, "general"), send_direct_ok(world.bob, [world.alice.id])
    params = {"anchor": "newest", "num_before": 10, "num_after": 0, "narrow": "null", "op": "add", "flag": "read"}
    body = assert_success(world.alice.post("/messages/flags/narrow", params))
    assert summary(body) == (2, 2, channel_message, dm, True, True, [])


def test_narrow_terms_filter(world):
    in_a = send_ok(world.owner, "general", topic="a")
    send_ok(world.owner, "general", topic="b")
    dm = send_direct_ok(world.bob, [world.alice.id])
    narrow = [*CHANNEL_NARROW, {"operator": "topic", "operand": "A"}]
    assert summary(assert_success(narrow_flags(world.alice, narrow=narrow)))[:4] == (1, 1, in_a, in_a)
    with_dm = [{"operator": "dm", "operand": [world.bob.id]}]
    assert summary(assert_success(narrow_flags(world.alice, narrow=with_dm)))[:4] == (1, 1, dm, dm)


def test_only_the_users_own_rows_are_processed(live, world):
    history = [send_ok(world.owner, "general") for _ in range(3)]
    carol = live.make_user()
    assert_success(carol.post("/users/me/subscriptions", {"subscriptions": [{"name": "general"}]}))
    received = [send_ok(world.owner, "general") for _ in range(2)]
    # GET /messages shows the channel's history too; flags change only on the messages carol received.
    assert fetched_ids(carol, "oldest", 0, 10, CHANNEL_NARROW)[0] == history + received
    body = assert_success(narrow_flags(carol, "oldest", 0, 10, CHANNEL_NARROW, flag="starred"))
    assert summary(body) == (2, 2, received[0], received[1], True, True, [])
    assert all(flags == ["read", "historical"] for flags in flags_of(carol, history).values())


def test_unread_skipped_in_unsubscribed_channels(live, world):
    other = make_channel(live, "other", [world.owner.id, world.alice.id])
    in_other, dm = send_ok(world.owner, "other"), send_direct_ok(world.bob, [world.alice.id])
    assert_success(narrow_flags(world.alice, "oldest", 0, 10))
    assert_success(unsubscribe(world.alice, ["other"]))
    before = len(live.events())
    body = assert_success(narrow_flags(world.alice, "oldest", 0, 10, op="remove"))
    assert summary(body) == (2, 1, in_other, dm, True, True, [other])
    assert flags_of(world.alice, [in_other, dm]) == {in_other: ["read"], dm: []}
    [(event, _)] = flag_events(live, before)
    assert event["messages"] == [dm] and list(event["message_details"]) == [str(dm)]


def test_clamped_to_5000(live, world):
    # About 10,000 rows per request: unbounded here, so that a garbage collection of the test
    # process's heap, counted in the loop thread's CPU time, cannot spend the narrow budget
    # (tests/storage/fetch/test_narrow_budget.py tests the budget).
    live.call(lambda: setattr(live.server.db, "query_budget", None))
    send_ok(world.owner, "general")  # creates the channel's recipient
    ids = insert_messages(live, world.alice.id, world.general, 5003)
    body = assert_success(narrow_flags(world.alice, "oldest", 0, 6000, CHANNEL_NARROW, flag="starred"))
    assert summary(body) == (5000, 5000, ids[0] - 1, ids[4998], True, False, [])
    body = assert_success(narrow_flags(world.alice, "newest", 7000, 0, CHANNEL_NARROW, flag="collapsed"))
    assert summary(body)[:4] == (5000, 5000, ids[3], ids[-1])
    # Both sides asked for too much: before keeps half, after gets the rest (and the anchor is extra).
    body = assert_success(narrow_flags(world.alice, str(ids[2500]), 6000, 6000, CHANNEL_NARROW))
    assert summary(body)[:4] == (5001, 5001, ids[0], ids[5000])
    assert unread_ids(world.alice) == [ids[0] - 1, ids[5001], ids[5002]]


# -- errors --------------------------------------------------------------------------------------

FULL = {"anchor": "oldest", "num_before": 0, "num_after": 1, "narrow": [], "op": "add", "flag": "read"}


@pytest.mark.parametrize("name", ["anchor", "num_before", "num_after", "narrow", "op", "flag"])
def test_missing_arguments(world, name):
    params = {key: value for key, value in FULL.items() if key != name}
    body = assert_error(world.alice.post("/messages/flags/narrow", params), f"Missing '{name}' argument",
                        "REQUEST_VARIABLE_MISSING")  # fmt: skip
    assert body["var_name"] == name


@pytest.mark.parametrize(
    ("changes", "msg"),
    [({"anchor": "date"}, "Invalid anchor"), ({"anchor": "abc"}, "Invalid anchor"), ({"anchor": ""}, "Invalid anchor"),
     ({"num_before": -1}, "num_before is too small"), ({"num_after": -1}, "num_after is too small"),
     ({"num_after": "x"}, "num_after is not valid JSON"), ({"num_before": 1.5}, "num_before is not an integer"),
     ({"include_anchor": "True"}, "include_anchor is not valid JSON"),
     ({"include_anchor": 1}, "include_anchor is not a boolean"),
     ({"narrow": "{"}, "narrow is not valid JSON"), ({"narrow": 0}, "narrow is not a list"),
     ({"anchor": "5", "num_before": 1, "include_anchor": False},
      "The anchor can only be excluded at an end of the range"),
     ({"flag": "foo"}, "Invalid flag: 'foo'"), ({"flag": "mentioned"}, "Flag not editable: 'mentioned'"),
     ({"op": "toggle"}, "Invalid message flag operation: 'toggle'")],
)  # fmt: skip
def test_invalid_parameters(world, changes, msg):
    assert_error(world.alice.post("/messages/flags/narrow", {**FULL, **changes}), msg)


def test_bad_narrows(world):
    bad = [{"operator": "foo", "operand": "x"}]
    body = assert_error(narrow_flags(world.alice, narrow=bad), "Invalid narrow operator: unknown operator foo",
                        "BAD_NARROW")  # fmt: skip
    assert body["desc"] == "unknown operator foo"
    unknown = [{"operator": "channel", "operand": "nowhere"}]
    assert_error(narrow_flags(world.alice, narrow=unknown), "Invalid narrow operator: unknown channel nowhere",
                 "BAD_NARROW")  # fmt: skip


def test_error_order(world):
    # The narrow's shape, then the anchor, then the narrow's operators, then the flag (Zulip's order).
    bad_narrow = [{"operator": "foo", "operand": "x"}]
    assert_error(narrow_flags(world.alice, "nope", narrow=[{"operator": "topic"}]),
                 "Invalid narrow[0]: Value error, operand is missing")  # fmt: skip
    assert_error(narrow_flags(world.alice, "nope", narrow=bad_narrow, flag="foo"), "Invalid anchor")
    unknown = "Invalid narrow operator: unknown operator foo"
    assert_error(narrow_flags(world.alice, narrow=bad_narrow, flag="foo"), unknown, "BAD_NARROW")


def test_unknown_parameters_are_reported(world):
    body = assert_success(narrow_flags(world.alice, extra="1"))
    assert body["ignored_parameters_unsupported"] == ["extra"]
