"""GET /messages: anchor=first_unread and muting (in:home, is:muted). Muted topics, and channels the
user muted (but for topics unmuted or followed there), are skipped when looking for the first unread
message; channel muting does not apply inside a channel narrow (api-notes 4.2, Zulip's rules)."""

from __future__ import annotations

import pytest

from tests.support.channel_helpers import make_channel
from tests.support.get_messages_helpers import (
    NEWEST,
    fetch,
    leave,
    mark_unread,
    mute_channel,
    narrow_ids,
    post,
    post_direct,
    set_topic_policy,
)

MUTED, UNMUTED, FOLLOWED = 1, 2, 3


@pytest.fixture
def alice_unread(live):
    """Alice is in "general" and "random"; messages from the owner are unread for her."""
    live.alice = live.make_user(full_name="Alice")
    live.general = make_channel(live, "general", [live.owner.id, live.alice.id])
    live.random = make_channel(live, "random", [live.owner.id, live.alice.id])
    return live


def first_unread(live, narrow=(), client=None, **params):
    params = {"anchor": "first_unread", "num_before": 0, "num_after": 0, **params}
    return fetch(client or live.alice, narrow=list(narrow), **params)["anchor"]


def read_all(live, user_id):
    live.write(lambda tx: tx.execute("UPDATE user_messages SET flags = flags | 1 WHERE user_id = ?", (user_id,)))


def test_first_unread_is_the_oldest_unread_message(alice_unread):
    live = alice_unread
    g1, g2, g3 = (post(live, live.owner, "general", "t", f"m{n}") for n in range(3))
    read_all(live, live.alice.id)
    mark_unread(live, live.alice.id, g2)
    mark_unread(live, live.alice.id, g3)
    body = fetch(live.alice, anchor="first_unread", num_before=1, num_after=1)
    assert body["anchor"] == g2 and [m["id"] for m in body["messages"]] == [g1, g2, g3]
    assert (body["found_anchor"], body["found_oldest"], body["found_newest"]) == (True, False, False)
    legacy = fetch(live.alice, use_first_unread_anchor=True, num_before=1, num_after=1)
    assert legacy["anchor"] == g2 and legacy["messages"] == body["messages"]


def test_no_unread_message_anchors_at_the_newest(alice_unread):
    live = alice_unread
    g1, g2 = (post(live, live.owner, "general", "t", f"m{n}") for n in range(2))
    read_all(live, live.alice.id)
    body = fetch(live.alice, anchor="first_unread", num_before=5, num_after=5)
    assert body["anchor"] == NEWEST and [m["id"] for m in body["messages"]] == [g1, g2]
    assert (body["found_anchor"], body["found_oldest"], body["found_newest"]) == (False, True, True)


def test_first_unread_within_a_narrow(alice_unread):
    live = alice_unread
    g1 = post(live, live.owner, "general", "a", "first")
    r1 = post(live, live.owner, "random", "b", "second")
    g2 = post(live, live.owner, "general", "b", "third")
    dm = post_direct(live, live.owner, [live.alice.id], "fourth")
    assert first_unread(live) == g1
    assert first_unread(live, [["channel", "random"]]) == r1
    assert first_unread(live, [["topic", "b"]]) == r1
    assert first_unread(live, [["channel", "general"], ["topic", "b"]]) == g2
    assert first_unread(live, [["is", "dm"]]) == dm
    assert first_unread(live, [["sender", live.alice.email]]) == NEWEST
    assert first_unread(live, [{"operator": "id", "operand": g2}]) == g2


def test_muted_topics_are_skipped(alice_unread):
    live = alice_unread
    noise = post(live, live.owner, "general", "noise", "muted")
    news = post(live, live.owner, "general", "news", "not muted")
    set_topic_policy(live, live.alice.id, live.general, "NOISE", MUTED)
    assert first_unread(live) == news
    assert first_unread(live, [["channel", "general"]]) == news
    # Even inside the muted topic (Zulip's rule): nothing there counts, so the anchor is the newest.
    assert first_unread(live, [["channel", "general"], ["topic", "noise"]]) == NEWEST
    # Another user's mute is not hers.
    set_topic_policy(live, live.owner.id, live.general, "news", MUTED)
    assert first_unread(live) == news
    assert narrow_ids(live.alice, []) == [noise, news]


def test_muted_channels_are_skipped_except_inside_them(alice_unread):
    live = alice_unread
    r1 = post(live, live.owner, "random", "quiet", "in the muted channel")
    g1 = post(live, live.owner, "general", "t", "elsewhere")
    mute_channel(live, live.alice.id, live.random)
    assert first_unread(live) == g1
    assert first_unread(live, [["channel", "random"]]) == r1
    assert first_unread(live, [["stream", "random"], ["topic", "quiet"]]) == r1
    assert first_unread(live, [["channels", "public"]]) == g1
    # Only a positive channel term lifts channel muting.
    assert first_unread(live, [{"operator": "channel", "operand": "general", "negated": True}]) == NEWEST
    # Topics unmuted or followed in a muted channel are not muted.
    for policy in (UNMUTED, FOLLOWED):
        set_topic_policy(live, live.alice.id, live.random, "QUIET", policy)
        assert first_unread(live) == r1
    # A muted topic inside the muted channel stays skipped inside the channel too.
    set_topic_policy(live, live.alice.id, live.random, "quiet", MUTED)
    assert first_unread(live, [["channel", "random"]]) == NEWEST


def test_direct_messages_are_never_muted(alice_unread):
    live = alice_unread
    post(live, live.owner, "general", "noise", "muted topic")
    dm = post_direct(live, live.owner, [live.alice.id], "a dm")
    set_topic_policy(live, live.alice.id, live.general, "noise", MUTED)
    mute_channel(live, live.alice.id, live.general)
    assert first_unread(live) == dm
    assert first_unread(live, [["is", "dm"]]) == dm
    assert first_unread(live, [{"operator": "dm", "operand": [live.owner.id]}]) == dm
    assert first_unread(live, [{"operator": "dm-including", "operand": live.owner.id}]) == dm


def test_a_left_channel_mute_no_longer_applies(alice_unread):
    live = alice_unread
    r1 = post(live, live.owner, "random", "t", "kept after leaving a public channel")
    post(live, live.owner, "general", "t", "later")
    mute_channel(live, live.alice.id, live.random)
    leave(live, live.alice.id, live.random)
    assert first_unread(live) == r1


def test_in_home_and_is_muted(alice_unread):
    live = alice_unread
    quiet = post(live, live.owner, "random", "quiet", "muted channel")
    loud = post(live, live.owner, "random", "loud", "unmuted topic of the muted channel")
    followed = post(live, live.owner, "random", "followed", "followed topic of the muted channel")
    noise = post(live, live.owner, "general", "noise", "muted topic")
    news = post(live, live.owner, "general", "news", "nothing muted")
    dm = post_direct(live, live.owner, [live.alice.id], "a dm")
    mute_channel(live, live.alice.id, live.random)
    set_topic_policy(live, live.alice.id, live.random, "loud", UNMUTED)
    set_topic_policy(live, live.alice.id, live.random, "followed", FOLLOWED)
    set_topic_policy(live, live.alice.id, live.general, "noise", MUTED)
    home = [loud, followed, news, dm]
    muted = [quiet, noise]
    assert narrow_ids(live.alice, [["in", "home"]]) == home
    assert narrow_ids(live.alice, [{"operator": "in", "operand": "home", "negated": True}]) == muted
    assert narrow_ids(live.alice, [["is", "muted"]]) == muted
    assert narrow_ids(live.alice, [{"operator": "is", "operand": "muted", "negated": True}]) == home
    # in:home keeps muting channels even inside a channel narrow.
    assert narrow_ids(live.alice, [["channel", "random"], ["in", "home"]]) == [loud, followed]
    assert narrow_ids(live.alice, [["is", "followed"]]) == [followed]
    assert first_unread(live, [["in", "home"]]) == loud
    assert first_unread(live, [["is", "muted"]]) == NEWEST
