"""POST /register's unread_msgs with muting: muted topics and channels stay listed but are not counted,
and only direct mentions of them are in `mentions` (Zulip's aggregate_unread_data)."""

from __future__ import annotations

from tests.support.channel_helpers import make_channel
from tests.support.events_helpers import register
from tests.support.get_messages_helpers import mute_channel
from tests.support.helpers import assert_success
from tests.support.send_helpers import send_direct_ok, send_ok

MUTED, UNMUTED, FOLLOWED = 1, 2, 3


def unread(client):
    return register(client, fetch_event_types=["message"])["unread_msgs"]


def set_policy(client, stream_id, topic, policy):
    params = {"stream_id": stream_id, "topic": topic, "visibility_policy": policy}
    assert_success(client.post("/user_topics", params))


def listed(state):
    return sorted(
        i for entry in state["streams"] + state["pms"] + state["huddles"] for i in entry["unread_message_ids"]
    )


def test_muted_topic_is_listed_but_not_counted(live):
    alice = live.make_user(full_name="Alice")
    general = make_channel(live, "general", [live.owner.id, alice.id])
    loud = send_ok(live.owner, "general", "hi", "news")
    quiet = [send_ok(live.owner, "general", "hi", "lunch") for _ in range(2)]
    dm = send_direct_ok(live.owner, [alice.id], "hello")
    assert unread(alice)["count"] == 4
    set_policy(alice, general, "LUNCH", MUTED)
    state = unread(alice)
    assert state["count"] == 2
    assert listed(state) == sorted([loud, *quiet, dm])
    assert {e["topic"]: e["unread_message_ids"] for e in state["streams"]} == {"lunch": quiet, "news": [loud]}
    set_policy(alice, general, "lunch", 0)
    assert unread(alice)["count"] == 4


def test_muted_channel_counts_only_unmuted_and_followed_topics(live):
    alice = live.make_user()
    random = make_channel(live, "random", [live.owner.id, alice.id])
    plain = send_ok(live.owner, "random", "x", "plain")
    unmuted = send_ok(live.owner, "random", "x", "unmuted")
    followed = send_ok(live.owner, "random", "x", "followed")
    set_policy(alice, random, "unmuted", UNMUTED)
    set_policy(alice, random, "followed", FOLLOWED)
    assert unread(alice)["count"] == 3
    mute_channel(live, alice.id, random)
    state = unread(alice)
    assert state["count"] == 2
    assert listed(state) == [plain, unmuted, followed]


def test_mentions_in_muted_topics(live):
    alice = live.make_user(full_name="Alice")
    general = make_channel(live, "general", [live.owner.id, alice.id])
    direct = send_ok(live.owner, "general", "@**Alice** look", "lunch")
    wildcard = send_ok(live.owner, "general", "@**all** look", "lunch")
    loud_wildcard = send_ok(live.owner, "general", "@**all** news", "news")
    assert unread(alice)["mentions"] == [direct, wildcard, loud_wildcard]
    set_policy(alice, general, "lunch", MUTED)
    state = unread(alice)
    # A wildcard mention in a muted topic is not a mention; a mention by name still is.
    assert state["mentions"] == [direct, loud_wildcard]
    assert state["count"] == 1


def test_other_users_are_not_affected(live):
    alice = live.make_user()
    general = make_channel(live, "general", [live.owner.id, alice.id])
    send_ok(alice, "general", "x", "lunch")
    set_policy(alice, general, "lunch", MUTED)
    assert unread(live.owner)["count"] == 1
