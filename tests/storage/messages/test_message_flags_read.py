"""mark_all_as_read, mark_stream_as_read, mark_topic_as_read, and the first_unread anchor they move."""

from __future__ import annotations

import pytest

from tests.support.channel_helpers import make_channel
from tests.support.helpers import assert_error, assert_success
from tests.support.message_flags_helpers import flag_events, set_flag, unread_ids
from tests.support.send_helpers import send_direct_ok, send_ok


@pytest.fixture(autouse=True)
def other_in_world(live, world):
    """Every test here takes `world` with a second channel, "other" (the owner and Alice), as world.other."""
    world.other = make_channel(live, "other", [live.owner.id, world.alice.id])


def read_event(message_ids, all_messages=False):
    return {"type": "update_message_flags", "op": "add", "operation": "add", "flag": "read", "messages": message_ids,
            "all": all_messages}  # fmt: skip


def first_unread(client, narrow=()):
    params = {"anchor": "first_unread", "num_before": 0, "num_after": 0, "narrow": list(narrow)}
    return assert_success(client.get("/messages", params))["anchor"]


# -- mark_all_as_read ----------------------------------------------------------------------------


def test_mark_all_as_read(live, world):
    ids = [send_ok(world.owner, "general"), send_ok(world.owner, "other"), send_direct_ok(world.bob, [world.alice.id])]
    bobs_unread = unread_ids(world.bob)
    before = len(live.events())
    body = assert_success(world.alice.post("/mark_all_as_read"))
    assert body == {"result": "success", "msg": "", "complete": True}
    assert unread_ids(world.alice) == []
    assert unread_ids(world.bob) == bobs_unread
    # Zulip's form for "everything": all=true and no ids.
    assert flag_events(live, before) == [(read_event([], all_messages=True), [world.alice.id])]
    before = len(live.events())
    assert_success(world.alice.post("/mark_all_as_read"))
    assert flag_events(live, before) == []
    assert ids


def test_mark_all_as_read_reports_parameters(world):
    body = assert_success(world.alice.post("/mark_all_as_read", {"stream_id": 1}))
    assert body["ignored_parameters_unsupported"] == ["stream_id"]
    assert body["complete"] is True


def test_zulip_client_mark_all_as_read(world, zulip_client):
    send_ok(world.alice, "general")
    assert zulip_client.mark_all_as_read()["result"] == "success"
    assert unread_ids(world.owner) == []


# -- mark_stream_as_read -------------------------------------------------------------------------


def test_mark_stream_as_read(live, world):
    in_general = [send_ok(world.owner, "general", topic="a"), send_ok(world.owner, "general", topic="b")]
    in_other, dm = send_ok(world.owner, "other"), send_direct_ok(world.bob, [world.alice.id])
    assert_success(set_flag(world.alice, [in_general[0]], "add", "read"))
    before = len(live.events())
    assert assert_success(world.alice.post("/mark_stream_as_read", {"stream_id": world.general})) == {
        "result": "success", "msg": ""}  # fmt: skip
    assert unread_ids(world.alice) == [in_other, dm]
    assert flag_events(live, before) == [(read_event([in_general[1]]), [world.alice.id])]
    before = len(live.events())
    assert_success(world.alice.post("/mark_stream_as_read", {"stream_id": world.general}))
    assert flag_events(live, before) == []


def test_mark_stream_as_read_without_messages(live, world):
    empty = make_channel(live, "empty", [world.alice.id])
    before = len(live.events())
    assert_success(world.alice.post("/mark_stream_as_read", {"stream_id": empty}))
    assert flag_events(live, before) == []


def test_zulip_client_mark_stream_as_read(world, zulip_client):
    send_ok(world.alice, "general")
    assert zulip_client.mark_stream_as_read(world.general)["result"] == "success"
    assert unread_ids(world.owner) == []


@pytest.mark.parametrize("endpoint", ["/mark_stream_as_read", "/mark_topic_as_read"])
def test_invalid_channel(live, world, endpoint):
    private = make_channel(live, "secret", [world.owner.id], invite_only=True)
    guest = live.make_user(role="guest")
    for client, stream_id in ((world.alice, 10**6), (world.alice, 0), (world.alice, private), (guest, world.general)):
        assert_error(client.post(endpoint, {"stream_id": stream_id, "topic_name": ""}), "Invalid channel ID")
    # Administrators see the private channel's settings but not its messages.
    admin = live.make_user(role="admin")
    assert_error(admin.post(endpoint, {"stream_id": private, "topic_name": ""}), "Invalid channel ID")


@pytest.mark.parametrize("endpoint", ["/mark_stream_as_read", "/mark_topic_as_read"])
@pytest.mark.parametrize(
    ("value", "msg"),
    [("abc", "stream_id is not valid JSON"), ('"1"', "stream_id is not an integer"),
     ("1.5", "stream_id is not an integer"), (str(2**64), "stream_id is too large")],
)  # fmt: skip
def test_bad_stream_id(world, endpoint, value, msg):
    assert_error(world.alice.post(endpoint, {"stream_id": value, "topic_name": "x"}), msg)


@pytest.mark.parametrize("endpoint", ["/mark_stream_as_read", "/mark_topic_as_read"])
def test_missing_stream_id(world, endpoint):
    body = assert_error(world.alice.post(endpoint, {"topic_name": "x"}), "Missing 'stream_id' argument",
                        "REQUEST_VARIABLE_MISSING")  # fmt: skip
    assert body["var_name"] == "stream_id"


def test_unsubscribed_public_channel_can_be_marked(live, world):
    in_general = send_ok(world.owner, "general")
    carol = live.make_user()  # no rows: nothing to mark, but the channel is readable
    assert_success(carol.post("/mark_stream_as_read", {"stream_id": world.general}))
    assert_success(carol.post("/mark_topic_as_read", {"stream_id": world.general, "topic_name": ""}))
    assert in_general


# -- mark_topic_as_read --------------------------------------------------------------------------


def test_mark_topic_as_read(live, world):
    plans = [send_ok(world.owner, "general", topic="Plans"), send_ok(world.owner, "general", topic="plans")]
    other_topic, other_channel = (
        send_ok(world.owner, "general", topic="lunch"),
        send_ok(world.owner, "other", topic="Plans"),
    )
    before = len(live.events())
    # Topics compare case-insensitively.
    response = world.alice.post("/mark_topic_as_read", {"stream_id": world.general, "topic_name": "PLANS"})
    assert assert_success(response) == {"result": "success", "msg": ""}
    assert unread_ids(world.alice) == [other_topic, other_channel]
    assert flag_events(live, before) == [(read_event(plans), [world.alice.id])]
    before = len(live.events())
    assert_success(world.alice.post("/mark_topic_as_read", {"stream_id": world.general, "topic_name": "Plans"}))
    assert flag_events(live, before) == []


def test_general_chat_is_the_empty_topic(live, world):
    empty_topic, named = send_ok(world.owner, "general", topic=""), send_ok(world.owner, "general", topic="named")
    before = len(live.events())
    assert_success(world.alice.post("/mark_topic_as_read", {"stream_id": world.general, "topic_name": "general chat"}))
    assert unread_ids(world.alice) == [named]
    assert [e["messages"] for e, _ in flag_events(live, before)] == [[empty_topic]]


def test_empty_topic_name_marks_the_whole_channel(live, world):
    in_general = [send_ok(world.owner, "general", topic="a"), send_ok(world.owner, "general", topic="")]
    in_other = send_ok(world.owner, "other")
    before = len(live.events())
    assert_success(world.alice.post("/mark_topic_as_read", {"stream_id": world.general, "topic_name": ""}))
    assert unread_ids(world.alice) == [in_other]
    assert flag_events(live, before) == [(read_event(in_general), [world.alice.id])]


def test_no_such_topic(live, world):
    send_ok(world.owner, "general", topic="history")
    carol = live.make_user()
    assert_success(carol.post("/users/me/subscriptions", {"subscriptions": [{"name": "general"}]}))
    cases = [(world.alice, "nothing here"), (world.alice, "general chat"), (carol, "history")]
    for client, topic in cases:
        # The topic must hold a message the user received; the channel's history does not count.
        response = client.post("/mark_topic_as_read", {"stream_id": world.general, "topic_name": topic})
        assert_error(response, f"No such topic '{topic}'")
    empty = make_channel(live, "empty", [world.alice.id])
    assert_error(world.alice.post("/mark_topic_as_read", {"stream_id": empty, "topic_name": "x"}), "No such topic 'x'")


def test_read_topic_is_still_a_topic(world):
    message_id = send_ok(world.owner, "general", topic="done")
    assert_success(set_flag(world.alice, [message_id], "add", "read"))
    assert_success(world.alice.post("/mark_topic_as_read", {"stream_id": world.general, "topic_name": "done"}))


def test_missing_topic_name(world):
    body = assert_error(world.alice.post("/mark_topic_as_read", {"stream_id": world.general}),
                        "Missing 'topic_name' argument", "REQUEST_VARIABLE_MISSING")  # fmt: skip
    assert body["var_name"] == "topic_name"


def test_zulip_client_mark_topic_as_read(world, zulip_client):
    lunch = send_ok(world.alice, "general", topic="lunch")
    send_ok(world.alice, "general", topic="coffee")
    assert zulip_client.mark_topic_as_read(world.general, "lunch")["result"] == "success"
    assert lunch not in unread_ids(world.owner) and len(unread_ids(world.owner)) == 1
    result = zulip_client.mark_topic_as_read(world.general, "tea")
    assert (result["result"], result["msg"], result["code"]) == ("error", "No such topic 'tea'", "BAD_REQUEST")


# -- the first_unread anchor of GET /messages ----------------------------------------------------


def test_first_unread_anchor_moves_as_messages_are_read(world):
    ids = [send_ok(world.owner, "general", topic="a" if i < 2 else "b") for i in range(4)]
    dm = send_direct_ok(world.bob, [world.alice.id])
    assert first_unread(world.alice) == ids[0]
    assert_success(set_flag(world.alice, [ids[0]], "add", "read"))
    assert first_unread(world.alice) == ids[1]
    assert_success(world.alice.post("/mark_topic_as_read", {"stream_id": world.general, "topic_name": "a"}))
    assert first_unread(world.alice) == ids[2]
    assert_success(world.alice.post("/mark_stream_as_read", {"stream_id": world.general}))
    assert first_unread(world.alice) == dm
    assert first_unread(world.alice, [{"operator": "channel", "operand": "general"}]) == 10000000000000000
    assert_success(set_flag(world.alice, [ids[3]], "remove", "read"))
    assert first_unread(world.alice) == ids[3]
    assert_success(world.alice.post("/mark_all_as_read"))
    assert first_unread(world.alice) == 10000000000000000
