"""POST /messages/flags: parameters, errors, flags seen by GET /messages, historical rows, events."""

from __future__ import annotations

import pytest

from storage.messages import message_flags
from tests.support.channel_helpers import make_channel, unsubscribe
from tests.support.helpers import assert_error, assert_success
from tests.support.message_flags_helpers import flag_events, flags_of, set_flag, unread_ids, user_message_row
from tests.support.send_helpers import send_direct_ok, send_ok

NOT_EDITABLE = [
    "mentioned", "stream_wildcard_mentioned", "topic_wildcard_mentioned", "group_mentioned",
    "has_alert_word", "historical", "force_expand", "force_collapse",
]  # fmt: skip


# -- adding and removing flags -------------------------------------------------------------------


def test_read_and_unread_show_in_get_messages_and_events(live, world):
    first, second = send_ok(world.owner, "general"), send_ok(world.owner, "general")
    assert flags_of(world.alice, [first, second]) == {first: [], second: []}
    before = len(live.events())
    body = assert_success(set_flag(world.alice, [first], "add", "read"))
    assert body == {"result": "success", "msg": "", "messages": [first], "ignored_because_not_subscribed_channels": []}
    assert flags_of(world.alice, [first, second]) == {first: ["read"], second: []}
    assert flags_of(world.bob, [first]) == {first: []}  # flags are personal
    # Already-read messages are not in the event: only what actually changed.
    assert_success(set_flag(world.alice, [first, second], "add", "read"))
    events = flag_events(live, before)
    assert [e["messages"] for e, _ in events] == [[first], [second]]
    assert events[0] == (
        {"type": "update_message_flags", "op": "add", "operation": "add", "flag": "read", "messages": [first],
         "all": False},
        [world.alice.id],
    )  # fmt: skip
    before = len(live.events())
    assert_success(set_flag(world.alice, [second, first], "remove", "read"))
    assert flags_of(world.alice, [first, second]) == {first: [], second: []}
    [(event, ids)] = flag_events(live, before)
    assert (event["op"], event["operation"], event["messages"], ids) == (
        "remove",
        "remove",
        [first, second],
        [world.alice.id],
    )


def test_star_and_collapse(live, world):
    message_id = send_ok(world.owner, "general")
    before = len(live.events())
    assert_success(set_flag(world.alice, [message_id], "add", "starred"))
    assert_success(set_flag(world.alice, [message_id], "add", "collapsed"))
    assert flags_of(world.alice, [message_id]) == {message_id: ["starred", "collapsed"]}
    assert_success(set_flag(world.alice, [message_id], "remove", "starred"))
    assert flags_of(world.alice, [message_id]) == {message_id: ["collapsed"]}
    assert [(e["op"], e["flag"], e["messages"]) for e, _ in flag_events(live, before)] == [
        ("add", "starred", [message_id]), ("add", "collapsed", [message_id]), ("remove", "starred", [message_id]),
    ]  # fmt: skip
    starred = assert_success(
        world.alice.get("/messages", {"anchor": "newest", "num_before": 10, "num_after": 0,
                                      "narrow": [{"operator": "is", "operand": "starred"}]})
    )  # fmt: skip
    assert starred["messages"] == []


def test_no_change_sends_no_event(live, world):
    message_id = send_ok(world.owner, "general")
    before = len(live.events())
    assert_success(set_flag(world.alice, [message_id], "remove", "starred"))
    assert_success(set_flag(world.alice, [], "add", "read"))
    assert flag_events(live, before) == []


def test_duplicate_ids_are_echoed_and_changed_once(live, world):
    message_id = send_ok(world.owner, "general")
    before = len(live.events())
    body = assert_success(set_flag(world.alice, [message_id, message_id], "add", "starred"))
    assert body["messages"] == [message_id, message_id]
    assert [e["messages"] for e, _ in flag_events(live, before)] == [[message_id]]


def test_direct_messages(live, world):
    message_id = send_direct_ok(world.bob, [world.alice.id])
    assert_success(set_flag(world.alice, [message_id], "add", "read"))
    assert flags_of(world.alice, [message_id]) == {message_id: ["read"]}
    assert flags_of(world.bob, [message_id]) == {message_id: []}


def test_unknown_parameters_are_reported(world):
    message_id = send_ok(world.owner, "general")
    body = assert_success(set_flag(world.alice, [message_id], "add", "read", extra="1"))
    assert body["ignored_parameters_unsupported"] == ["extra"]


# -- errors --------------------------------------------------------------------------------------


@pytest.mark.parametrize("flag", ["foo", "is_private", "wildcard_mentioned", "Read", ""])
def test_invalid_flag(world, flag):
    message_id = send_ok(world.owner, "general")
    assert_error(set_flag(world.alice, [message_id], "add", flag), f"Invalid flag: '{flag}'")


@pytest.mark.parametrize("flag", NOT_EDITABLE)
def test_flag_not_editable(world, flag):
    message_id = send_ok(world.owner, "general")
    assert_error(set_flag(world.alice, [message_id], "add", flag), f"Flag not editable: '{flag}'")


@pytest.mark.parametrize("op", ["set", "ADD", ""])
def test_invalid_operation(world, op):
    message_id = send_ok(world.owner, "general")
    assert_error(set_flag(world.alice, [message_id], op, "read"), f"Invalid message flag operation: '{op}'")


def test_flag_is_checked_before_the_operation(world):
    assert_error(set_flag(world.alice, [1], "set", "foo"), "Invalid flag: 'foo'")


@pytest.mark.parametrize(
    ("params", "name"),
    [({"op": "add", "flag": "read"}, "messages"), ({"messages": [1], "flag": "read"}, "op"),
     ({"messages": [1], "op": "add"}, "flag"), ({}, "messages")],
)  # fmt: skip
def test_missing_arguments(world, params, name):
    body = assert_error(world.alice.post("/messages/flags", params), f"Missing '{name}' argument",
                        "REQUEST_VARIABLE_MISSING")  # fmt: skip
    assert body["var_name"] == name


@pytest.mark.parametrize(
    ("messages", "msg"),
    [("[1, ", "messages is not valid JSON"), ("5", "messages is not a list"),
     ('["a"]', "messages[0] is not an integer"), ("[1, true]", "messages[1] is not an integer")],
)  # fmt: skip
def test_bad_messages_parameter(world, messages, msg):
    assert_error(world.alice.post("/messages/flags", {"messages": messages, "op": "add", "flag": "read"}), msg)


def test_invalid_messages(live, world):
    private = make_channel(live, "secret", [world.owner.id], invite_only=True)
    in_private = send_ok(world.owner, "secret")
    others_dm = send_direct_ok(world.owner, [world.bob.id])
    readable = send_ok(world.owner, "general")
    before = len(live.events())
    for bad in (10**6, 0, -1, in_private, others_dm):
        # One bad id fails the whole request: nothing is changed.
        assert_error(set_flag(world.alice, [readable, bad], "add", "starred"), "Invalid message(s)")
        assert_error(set_flag(world.alice, [bad], "remove", "read"), "Invalid message(s)")
    assert flags_of(world.alice, [readable]) == {readable: []}
    assert flag_events(live, before) == []
    assert private


# -- messages without a user_messages row --------------------------------------------------------


def test_starring_channel_history_creates_a_historical_row(live, world):
    old = send_ok(world.owner, "general")
    carol = live.make_user(full_name="Carol")  # not subscribed: general's history is readable to her
    assert flags_of(carol, [old]) == {old: ["read", "historical"]}
    before = len(live.events())
    assert_success(set_flag(carol, [old], "add", "starred"))
    assert flags_of(carol, [old]) == {old: ["read", "starred", "historical"]}
    assert [(e["flag"], e["messages"], ids) for e, ids in flag_events(live, before)] == [("starred", [old], [carol.id])]
    assert_success(set_flag(carol, [old], "remove", "starred"))
    assert flags_of(carol, [old]) == {old: ["read", "historical"]}


def test_reading_or_unstarring_history_needs_no_row(live, world):
    old = send_ok(world.owner, "general")
    carol = live.make_user()
    before = len(live.events())
    assert_success(set_flag(carol, [old], "add", "read"))
    assert_success(set_flag(carol, [old], "remove", "starred"))
    assert_success(set_flag(carol, [old], "remove", "collapsed"))
    assert user_message_row(live, carol.id, old) is None  # read + historical is what a missing row means
    assert flag_events(live, before) == []


def test_marking_history_unread_in_a_subscribed_channel(live, world):
    old = send_ok(world.owner, "general")
    carol = live.make_user()
    assert_success(carol.post("/users/me/subscriptions", {"subscriptions": [{"name": "general"}]}))
    body = assert_success(set_flag(carol, [old], "remove", "read"))
    assert body["ignored_because_not_subscribed_channels"] == []
    assert flags_of(carol, [old]) == {old: ["historical"]}
    assert unread_ids(carol) == [old]


# -- marking unread outside subscribed channels --------------------------------------------------


def test_unread_is_skipped_in_unsubscribed_channels(live, world):
    other = make_channel(live, "other", [world.owner.id, world.alice.id])
    in_general, in_other = send_ok(world.owner, "general"), send_ok(world.owner, "other")
    dm = send_direct_ok(world.bob, [world.alice.id])
    assert_success(set_flag(world.alice, [in_general, in_other, dm], "add", "read"))
    assert_success(unsubscribe(world.alice, ["general", "other"]))
    before = len(live.events())
    body = assert_success(set_flag(world.alice, [in_other, in_general, dm], "remove", "read"))
    assert body == {
        "result": "success", "msg": "", "messages": [in_other, in_general, dm],
        "ignored_because_not_subscribed_channels": sorted([world.general, other]),
    }  # fmt: skip
    assert flags_of(world.alice, [in_general, dm]) == {in_general: ["read"], dm: []}
    assert [e["messages"] for e, _ in flag_events(live, before)] == [[dm]]
    # Other flags are not restricted to subscribed channels.
    assert_success(set_flag(world.alice, [in_general], "add", "starred"))
    assert flags_of(world.alice, [in_general]) == {in_general: ["read", "starred"]}


# -- message_details of remove-read events -------------------------------------------------------


def mute_topic(live, user_id, channel_id, topic):
    live.write(lambda tx: tx.execute(
        "INSERT INTO user_topics (user_id, channel_id, topic, topic_key, visibility_policy, last_updated)"
        " VALUES (?, ?, ?, ?, 1, 0)",
        (user_id, channel_id, topic, topic.casefold()),
    ))  # fmt: skip


def test_unread_events_carry_message_details(live, world):
    carol = live.make_user()
    mentioned = send_ok(world.owner, "general", "hi @**Alice**", topic="Plans")
    wildcard = send_ok(world.owner, "general", "hi @**all**", topic="")
    muted_wildcard = send_ok(world.owner, "general", "hi @**all**", topic="muted")
    one_to_one = send_direct_ok(world.bob, [world.alice.id], "psst @**Alice**")
    group = send_direct_ok(world.bob, [world.alice.id, carol.id])
    to_self = send_direct_ok(world.alice, [world.alice.id])
    ids = [mentioned, wildcard, muted_wildcard, one_to_one, group, to_self]
    mute_topic(live, world.alice.id, world.general, "muted")
    assert_success(set_flag(world.alice, ids, "add", "read"))
    before = len(live.events())
    assert_success(set_flag(world.alice, ids, "remove", "read"))
    [(event, user_ids)] = flag_events(live, before)
    assert user_ids == [world.alice.id] and event["messages"] == ids
    stream = {"type": "stream", "stream_id": world.general}
    assert event["message_details"] == {
        str(mentioned): {**stream, "topic": "Plans", "unmuted_stream_msg": True, "mentioned": True},
        str(wildcard): {**stream, "topic": "", "unmuted_stream_msg": True, "mentioned": True},
        str(muted_wildcard): {**stream, "topic": "muted", "unmuted_stream_msg": False},
        str(one_to_one): {"type": "private", "user_ids": [world.bob.id], "mentioned": True},
        str(group): {"type": "private", "user_ids": sorted([world.bob.id, carol.id])},
        str(to_self): {"type": "private", "user_ids": []},
    }


def test_add_events_have_no_message_details(live, world):
    message_id = send_ok(world.owner, "general")
    before = len(live.events())
    assert_success(set_flag(world.alice, [message_id], "add", "read"))
    assert_success(set_flag(world.alice, [message_id], "add", "starred"))
    assert_success(set_flag(world.alice, [message_id], "remove", "starred"))
    assert all("message_details" not in e for e, _ in flag_events(live, before))


# -- the official client -------------------------------------------------------------------------


def test_zulip_client_update_message_flags(live, world, zulip_client):
    message_id = send_ok(world.alice, "general")
    result = zulip_client.update_message_flags({"messages": [message_id], "op": "add", "flag": "starred"})
    assert result["result"] == "success" and result["messages"] == [message_id]
    assert flags_of(world.owner, [message_id]) == {message_id: ["starred"]}
    result = zulip_client.update_message_flags({"messages": [message_id], "op": "add", "flag": "mentioned"})
    assert (result["result"], result["msg"], result["code"]) == (
        "error",
        "Flag not editable: 'mentioned'",
        "BAD_REQUEST",
    )


# -- query plans ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sql", "params"),
    [(message_flags.CHANNEL_UNREAD, [1, 1]), (message_flags.TOPIC_UNREAD, [1, 1, "x"]),
     (message_flags.MARK_ALL_READ, [1])],
    ids=["channel", "topic", "all"],
)  # fmt: skip
def test_unread_queries_use_the_unread_index(live, sql, params):
    details = query_plan(live, sql, params)
    assert "user_messages_unread (user_id=?)" in details[0], details
    assert "TEMP B-TREE" not in "\n".join(details), details


def test_topic_check_uses_the_topic_index(live):
    details = query_plan(live, message_flags.USER_HAS_TOPIC, [1, 1, "x"])
    assert details[0].startswith("SEARCH m USING") and "messages_by_topic" in details[0], details
    assert "PRIMARY KEY" in details[1], details


def query_plan(live, sql, params):
    return live.read(lambda tx: [row["detail"] for row in tx.all("EXPLAIN QUERY PLAN " + sql, params)])
