"""Topic visibility: POST /user_topics, the legacy PATCH /users/me/subscriptions/muted_topics, their
events, POST /register's user_topics and muted_topics, and the is:muted / is:followed narrows."""

from __future__ import annotations

import pytest

from tests.support.channel_helpers import archive, make_channel
from tests.support.events_helpers import events_now, of_type, register
from tests.support.get_messages_helpers import mute_channel, narrow_ids, post
from tests.support.helpers import assert_error, assert_success

MUTED, UNMUTED, FOLLOWED = 1, 2, 3
LEGACY = "/users/me/subscriptions/muted_topics"
TOO_LONG = "topic is too long (limit: 60 characters)"


def set_policy(client, stream_id, topic, policy):
    return client.post("/user_topics", {"stream_id": stream_id, "topic": topic, "visibility_policy": policy})


def topic_events(live, count):
    return [(e, ids) for e, ids in live.events()[count:] if e["type"] in ("user_topic", "muted_topics")]


def user_topics_state(client, **params):
    return register(client, fetch_event_types=["user_topic", "muted_topics"], **params)


def test_mute_sends_both_events_and_shows_in_register(live):
    general = make_channel(live, "general", [live.owner.id])
    count = len(live.events())
    assert_success(set_policy(live.owner, general, "Lunch", MUTED))
    now = int(live.clock.now)
    assert topic_events(live, count) == [
        ({"type": "muted_topics", "muted_topics": [["general", "Lunch", now]]}, [live.owner.id]),
        (
            {"type": "user_topic", "stream_id": general, "topic_name": "Lunch", "last_updated": now,
             "visibility_policy": MUTED},
            [live.owner.id],
        ),
    ]  # fmt: skip
    state = user_topics_state(live.owner)
    assert state["user_topics"] == [
        {"stream_id": general, "topic_name": "Lunch", "last_updated": now, "visibility_policy": MUTED}
    ]
    assert state["muted_topics"] == [["general", "Lunch", now]]


def test_same_policy_in_another_case_changes_nothing(live):
    general = make_channel(live, "general", [live.owner.id])
    assert_success(set_policy(live.owner, general, "Lunch", MUTED))
    count = len(live.events())
    live.clock.advance(60)
    assert_success(set_policy(live.owner, general, "LUNCH", MUTED))
    assert topic_events(live, count) == []
    [row] = user_topics_state(live.owner)["user_topics"]
    assert (row["topic_name"], row["last_updated"]) == ("Lunch", int(live.clock.now) - 60)


def test_follow_unmute_and_inherit(live):
    general = make_channel(live, "general", [live.owner.id])
    assert_success(set_policy(live.owner, general, "lunch", MUTED))
    live.clock.advance(5)
    count = len(live.events())
    assert_success(set_policy(live.owner, general, "Lunch", FOLLOWED))
    events = topic_events(live, count)
    assert events[0][0] == {"type": "muted_topics", "muted_topics": []}  # no longer muted
    assert events[1][0]["visibility_policy"] == FOLLOWED and events[1][0]["topic_name"] == "Lunch"
    state = user_topics_state(live.owner)
    assert [(t["topic_name"], t["visibility_policy"]) for t in state["user_topics"]] == [("Lunch", FOLLOWED)]
    assert state["muted_topics"] == []
    count = len(live.events())
    assert_success(set_policy(live.owner, general, "LUNCH", 0))
    assert [e["visibility_policy"] for e, _ in topic_events(live, count) if e["type"] == "user_topic"] == [0]
    assert user_topics_state(live.owner)["user_topics"] == []
    # Removing a policy that is not set succeeds and tells no one.
    count = len(live.events())
    assert_success(set_policy(live.owner, general, "lunch", 0))
    assert topic_events(live, count) == []


def test_policies_are_per_user(live):
    alice = live.make_user()
    general = make_channel(live, "general", [live.owner.id, alice.id])
    assert_success(set_policy(live.owner, general, "lunch", MUTED))
    assert_success(set_policy(alice, general, "lunch", UNMUTED))
    assert [t["visibility_policy"] for t in user_topics_state(live.owner)["user_topics"]] == [MUTED]
    assert [t["visibility_policy"] for t in user_topics_state(alice)["user_topics"]] == [UNMUTED]


@pytest.mark.parametrize(
    ("params", "msg"),
    [
        ({"topic": "x", "visibility_policy": 1}, "Missing 'stream_id' argument"),
        ({"stream_id": "CHANNEL", "visibility_policy": 1}, "Missing 'topic' argument"),
        ({"stream_id": "CHANNEL", "topic": "x"}, "Missing 'visibility_policy' argument"),
        ({"stream_id": "CHANNEL", "topic": "x", "visibility_policy": 4}, "Invalid visibility_policy"),
        ({"stream_id": "CHANNEL", "topic": "x", "visibility_policy": "muted"}, "visibility_policy is not valid JSON"),
        ({"stream_id": "abc", "topic": "x", "visibility_policy": 1}, "stream_id is not valid JSON"),
        ({"stream_id": "CHANNEL", "topic": "t" * 61, "visibility_policy": 1}, TOO_LONG),
        ({"stream_id": 99999, "topic": "x", "visibility_policy": 1}, "Invalid channel ID"),
        ({"stream_id": 99999, "topic": "x", "visibility_policy": 0}, "Invalid channel ID"),
    ],
)  # fmt: skip
def test_errors(live, params, msg):
    general = make_channel(live, "general", [live.owner.id])
    params = {k: general if v == "CHANNEL" else v for k, v in params.items()}
    count = len(live.events())
    code = "REQUEST_VARIABLE_MISSING" if msg.startswith("Missing") else "BAD_REQUEST"
    assert_error(live.owner.post("/user_topics", params), msg, code)
    assert topic_events(live, count) == []
    assert user_topics_state(live.owner)["user_topics"] == []


def test_channels_the_user_cannot_read(live):
    alice = live.make_user()
    secret = make_channel(live, "secret", [live.owner.id], invite_only=True)
    assert_error(set_policy(alice, secret, "x", MUTED), "Invalid channel ID")
    guest = live.make_user(role="guest")
    public = make_channel(live, "public", [live.owner.id])
    assert_error(set_policy(guest, public, "x", FOLLOWED), "Invalid channel ID")
    # A member may mute a topic of a public channel without subscribing.
    assert_success(set_policy(alice, public, "x", MUTED))
    archived = make_channel(live, "old", [live.owner.id])
    archive(live, archived)
    assert_error(set_policy(live.owner, archived, "x", MUTED), "Invalid channel ID")


def test_a_policy_can_be_removed_after_losing_access(live):
    alice = live.make_user()
    secret = make_channel(live, "secret", [live.owner.id, alice.id], invite_only=True)
    assert_success(set_policy(alice, secret, "x", FOLLOWED))
    assert_success(alice.delete("/users/me/subscriptions", {"subscriptions": ["secret"]}))
    assert_error(set_policy(alice, secret, "x", MUTED), "Invalid channel ID")
    count = len(live.events())
    assert_success(set_policy(alice, secret, "x", 0))
    assert [e["visibility_policy"] for e, _ in topic_events(live, count) if e["type"] == "user_topic"] == [0]


def test_archived_channels_are_left_out_of_register(live):
    general = make_channel(live, "general", [live.owner.id])
    old = make_channel(live, "old", [live.owner.id])
    assert_success(set_policy(live.owner, general, "a", MUTED))
    assert_success(set_policy(live.owner, old, "b", MUTED))
    archive(live, old)
    state = user_topics_state(live.owner)
    assert [t["stream_id"] for t in state["user_topics"]] == [general]
    assert [m[0] for m in state["muted_topics"]] == ["general"]


def test_empty_topic_by_display_name(live):
    general = make_channel(live, "general", [live.owner.id])
    assert_success(set_policy(live.owner, general, "general chat", MUTED))
    assert user_topics_state(live.owner)["user_topics"][0]["topic_name"] == "general chat"
    capable = user_topics_state(live.owner, client_capabilities={"empty_topic_name": True})
    assert capable["user_topics"][0]["topic_name"] == ""
    assert capable["muted_topics"][0][1] == ""
    assert_success(set_policy(live.owner, general, "", 0))
    assert user_topics_state(live.owner)["user_topics"] == []


def test_user_topic_event_names_the_empty_topic_per_queue(live):
    general = make_channel(live, "general", [live.owner.id])
    plain = register(live.owner, event_types=["user_topic"])["queue_id"]
    capable = register(live.owner, event_types=["user_topic"], client_capabilities={"empty_topic_name": True})
    assert_success(set_policy(live.owner, general, "", MUTED))
    [event] = of_type(events_now(live.owner, plain), "user_topic")
    assert event["topic_name"] == "general chat"
    [event] = of_type(events_now(live.owner, capable["queue_id"]), "user_topic")
    assert event["topic_name"] == ""


# -- the legacy endpoint ---------------------------------------------------------------------


def test_legacy_mute_and_unmute(live):
    general = make_channel(live, "general", [live.owner.id])
    count = len(live.events())
    assert_success(live.owner.patch(LEGACY, {"stream": "general", "topic": "Lunch", "op": "add"}))
    assert [e["type"] for e, _ in topic_events(live, count)] == ["muted_topics", "user_topic"]
    assert user_topics_state(live.owner)["muted_topics"] == [["general", "Lunch", int(live.clock.now)]]
    # Muting again (any case, by id) succeeds without a change, as Zulip does since it made this idempotent.
    count = len(live.events())
    assert_success(live.owner.patch(LEGACY, {"stream_id": general, "topic": "LUNCH", "op": "add"}))
    assert topic_events(live, count) == []
    assert_success(live.owner.patch(LEGACY, {"stream_id": general, "topic": "lunch", "op": "remove"}))
    assert user_topics_state(live.owner)["muted_topics"] == []
    count = len(live.events())
    assert_success(live.owner.patch(LEGACY, {"stream": "general", "topic": "lunch", "op": "remove"}))
    assert topic_events(live, count) == []


@pytest.mark.parametrize(
    ("params", "msg"),
    [
        ({"topic": "x", "op": "add"}, "Missing 'stream_id' argument"),
        ({"stream": "general", "stream_id": "CHANNEL", "topic": "x", "op": "add"},
         "Unsupported parameter combination: stream_id, stream"),
        ({"stream": "general", "op": "add"}, "Missing 'topic' argument"),
        ({"stream": "general", "topic": "x"}, "Missing 'op' argument"),
        ({"stream": "general", "topic": "x", "op": "toggle"}, "Invalid op"),
        ({"stream": "general", "topic": "t" * 61, "op": "add"}, TOO_LONG),
        ({"stream": "nowhere", "topic": "x", "op": "add"}, "Invalid channel name 'nowhere'"),
        ({"stream": "secret", "topic": "x", "op": "add"}, "Invalid channel name 'secret'"),
        ({"stream_id": 99999, "topic": "x", "op": "add"}, "Invalid channel ID"),
        ({"stream": "nowhere", "topic": "x", "op": "remove"}, "Topic is not muted"),
        ({"stream_id": 99999, "topic": "x", "op": "remove"}, "Topic is not muted"),
    ],
)  # fmt: skip
def test_legacy_errors(live, params, msg):
    general = make_channel(live, "general", [live.owner.id])
    make_channel(live, "secret", [live.owner.id], invite_only=True)
    alice = live.make_user()
    params = {k: general if v == "CHANNEL" else v for k, v in params.items()}
    count = len(live.events())
    code = "REQUEST_VARIABLE_MISSING" if msg.startswith("Missing") else "BAD_REQUEST"
    body = assert_error(alice.patch(LEGACY, params), msg, code)
    if code == "REQUEST_VARIABLE_MISSING":
        assert body["var_name"] == msg.split("'")[1]
    assert topic_events(live, count) == []


# -- narrows follow the endpoint -------------------------------------------------------------


def test_is_muted_and_is_followed_follow_the_endpoint(live):
    alice = live.make_user()
    general = make_channel(live, "general", [live.owner.id, alice.id])
    random = make_channel(live, "random", [live.owner.id, alice.id])
    lunch = post(live, live.owner, "general", "lunch")
    news = post(live, live.owner, "general", "news")
    chat = post(live, live.owner, "random", "chat")
    assert narrow_ids(alice, [["is", "muted"]]) == []
    assert_success(set_policy(alice, general, "LUNCH", MUTED))
    assert narrow_ids(alice, [["is", "muted"]]) == [lunch]
    assert narrow_ids(alice, [["in", "home"]]) == [news, chat]
    # A muted channel mutes its topics, but for one unmuted or followed.
    mute_channel(live, alice.id, random)
    assert narrow_ids(alice, [["is", "muted"]]) == [lunch, chat]
    assert_success(set_policy(alice, random, "chat", UNMUTED))
    assert narrow_ids(alice, [["is", "muted"]]) == [lunch]
    assert_success(set_policy(alice, general, "news", FOLLOWED))
    assert narrow_ids(alice, [["is", "followed"]]) == [news]
    assert_success(alice.patch(LEGACY, {"stream_id": general, "topic": "lunch", "op": "remove"}))
    assert narrow_ids(alice, [["is", "muted"]]) == []
    assert narrow_ids(live.owner, [["is", "muted"]]) == []  # alice's settings are hers


def test_the_zulip_package(live, zulip_client):
    general = make_channel(live, "general", [live.owner.id])
    result = zulip_client.mute_topic({"op": "add", "stream": "general", "topic": "lunch"})
    assert result["result"] == "success", result
    assert user_topics_state(live.owner)["muted_topics"][0][:2] == ["general", "lunch"]
    request = {"stream_id": general, "topic": "lunch", "visibility_policy": FOLLOWED}
    result = zulip_client.call_endpoint(url="user_topics", method="POST", request=request)
    assert result["result"] == "success", result
    assert [t["visibility_policy"] for t in user_topics_state(live.owner)["user_topics"]] == [FOLLOWED]
    result = zulip_client.mute_topic({"op": "remove", "stream_id": general, "topic": "lunch"})
    assert result["result"] == "success", result
    assert user_topics_state(live.owner)["user_topics"] == []
