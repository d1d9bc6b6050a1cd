"""GET /messages: who sees which history (api-notes 4.4). Only channel narrows reach messages the
user did not receive, and only in channels whose history they may read; a private channel one left
is gone; protected history shows only what one received."""

from __future__ import annotations

import pytest

from tests.support.channel_helpers import make_channel, set_channel_group, subscribe, unsubscribe
from tests.support.get_messages_helpers import fetch, ids_of, narrow_ids, post, post_direct
from tests.support.helpers import assert_error, assert_success

HISTORICAL = ["read", "historical"]


def flags_by_id(client, narrow, **params):
    body = fetch(client, anchor="newest", num_before=100, num_after=0, narrow=narrow, **params)
    return {message["id"]: message["flags"] for message in body["messages"]}


def add(live, channel, *clients):
    # No notification-bot message: these tests count the channel messages each user sees.
    assert_success(
        subscribe(live.owner, [channel], principals=[c.id for c in clients], send_new_subscription_messages=False)
    )


def remove(live, channel, *clients):
    assert_success(unsubscribe(live.owner, [channel], principals=[c.id for c in clients]))


@pytest.fixture
def public(live):
    """The public channel "general", the owner alone subscribed, two messages; Carol, a member outside it."""
    channel_id = make_channel(live, "general", [live.owner.id])
    live.carol = live.make_user(full_name="Carol")
    live.channel_id = channel_id
    live.m1 = post(live, live.owner, "general", "greetings", "first hello")
    live.m2 = post(live, live.owner, "general", "other", "second hello")
    return live


def test_unsubscribed_public_channel_history_only_through_a_channel_narrow(public):
    live, carol = public, public.carol
    both = [live.m1, live.m2]
    assert narrow_ids(carol, []) == []
    assert flags_by_id(carol, [["channel", "general"]]) == {live.m1: HISTORICAL, live.m2: HISTORICAL}
    assert narrow_ids(carol, [{"operator": "channel", "operand": live.channel_id}]) == both
    assert narrow_ids(carol, [["stream", "general"]]) == both
    assert narrow_ids(carol, [["channels", "public"]]) == both
    assert narrow_ids(carol, [["streams", "public"], ["topic", "other"]]) == [live.m2]
    assert narrow_ids(carol, [["channel", "general"], ["topic", "greetings"]]) == [live.m1]
    assert narrow_ids(carol, [["channel", "general"], ["sender", live.owner.email]]) == both
    assert narrow_ids(carol, [["channel", "general"], ["search", "second"]]) == [live.m2]
    assert narrow_ids(carol, [["channel", "general"], ["id", str(live.m1)]]) == [live.m1]
    assert narrow_ids(carol, [{"operator": "with", "operand": live.m1}]) == [live.m1]
    # Negated channel terms do not open history.
    make_channel(live, "random", [live.owner.id])
    assert narrow_ids(carol, [{"operator": "channel", "operand": "random", "negated": True}]) == []


@pytest.mark.parametrize("operand", ["starred", "unread", "mentioned", "alerted", "followed", "muted", "dm"])
def test_is_terms_close_history(public, operand):
    live = public
    for negated in (False, True) if operand != "dm" else (True,):
        narrow = [["channel", "general"], {"operator": "is", "operand": operand, "negated": negated}]
        assert narrow_ids(live.carol, narrow) == []


def test_is_resolved_keeps_history(public):
    live = public
    resolved = post(live, live.owner, "general", "✔ fixed", "done")
    assert narrow_ids(live.carol, [["channel", "general"], ["is", "resolved"]]) == [resolved]
    narrow = [["channel", "general"], {"operator": "is", "operand": "resolved", "negated": True}]
    assert narrow_ids(live.carol, narrow) == [live.m1, live.m2]


def test_history_in_message_ids_and_first_unread(public):
    live, carol = public, public.carol
    [message] = fetch(carol, message_ids=[live.m2])["messages"]
    assert message["flags"] == HISTORICAL
    assert ids_of(fetch(carol, message_ids=[live.m1, live.m2], narrow=[["is", "starred"]])) == []
    assert ids_of(fetch(carol, message_ids=[live.m1], narrow=[["topic", "greetings"]])) == [live.m1]
    # Historical messages are read: first_unread finds none and anchors at the newest.
    body = fetch(carol, anchor="first_unread", num_before=1, num_after=1, narrow=[["channel", "general"]])
    assert body["anchor"] == 10000000000000000 and ids_of(body) == [live.m2]


def test_subscribing_later_to_a_public_channel(public):
    live, carol = public, public.carol
    add(live, "general", carol)
    m3 = post(live, live.owner, "general", "greetings", "third")
    assert flags_by_id(carol, []) == {m3: []}
    assert flags_by_id(carol, [["channel", "general"]]) == {live.m1: HISTORICAL, live.m2: HISTORICAL, m3: []}


def test_leaving_a_public_channel_keeps_received_messages(public):
    live, carol = public, public.carol
    add(live, "general", carol)
    m3 = post(live, live.owner, "general", "greetings", "third")
    remove(live, "general", carol)
    m4 = post(live, live.owner, "general", "greetings", "fourth")
    assert narrow_ids(carol, []) == [m3]
    assert flags_by_id(carol, [["channel", "general"]]) == {
        live.m1: HISTORICAL, live.m2: HISTORICAL, m3: [], m4: HISTORICAL,
    }  # fmt: skip


def private_channel(live, shared):
    live.carol = live.make_user(full_name="Carol")
    live.bob = live.make_user(full_name="Bob")
    make_channel(live, "hideout", [live.owner.id], invite_only=True, history_public_to_subscribers=shared)
    live.m1 = post(live, live.owner, "hideout", "plans", "before carol")
    add(live, "hideout", live.carol)
    live.m2 = post(live, live.owner, "hideout", "plans", "after carol")
    return live


def test_private_channel_with_shared_history_joined_later(live):
    live = private_channel(live, shared=True)
    carol, bob = live.carol, live.bob
    assert flags_by_id(carol, [["channel", "hideout"]]) == {live.m1: HISTORICAL, live.m2: []}
    assert narrow_ids(carol, []) == [live.m2]
    assert ids_of(fetch(carol, message_ids=[live.m1, live.m2])) == [live.m1, live.m2]
    assert narrow_ids(carol, [{"operator": "with", "operand": live.m1}]) == [live.m1, live.m2]
    # Outsiders see nothing of it, by any road.
    assert narrow_ids(bob, [["channel", "hideout"]]) == []
    assert narrow_ids(bob, [["channels", "public"]]) == []
    assert ids_of(fetch(bob, message_ids=[live.m1, live.m2])) == []
    assert narrow_ids(bob, [["search", "carol"]]) == []


def test_private_channel_with_protected_history_joined_later(live):
    live = private_channel(live, shared=False)
    carol = live.carol
    assert flags_by_id(carol, [["channel", "hideout"]]) == {live.m2: []}
    assert narrow_ids(carol, [["channel", "hideout"], ["topic", "plans"]]) == [live.m2]
    assert narrow_ids(carol, [["channel", "hideout"], ["search", "carol"]]) == [live.m2]
    assert ids_of(fetch(carol, message_ids=[live.m1, live.m2])) == [live.m2]
    body = fetch(carol, anchor=str(live.m1), num_before=5, num_after=5, narrow=[["channel", "hideout"]])
    assert ids_of(body) == [live.m2] and body["found_anchor"] is False
    response = carol.get("/messages", {"anchor": "newest", "num_before": 5, "num_after": 0,
                                       "narrow": [{"operator": "with", "operand": live.m1}]})  # fmt: skip
    assert_error(response, "Invalid narrow operator: Invalid 'with' operator", "BAD_NARROW")
    # The owner, there from the start, sees both.
    assert narrow_ids(live.owner, [["channel", "hideout"]]) == [live.m1, live.m2]


def test_leaving_a_private_channel_hides_its_messages(live):
    alice = live.make_user(full_name="Alice")
    make_channel(live, "secret", [live.owner.id, alice.id], invite_only=True)
    m1 = post(live, live.owner, "secret", "plans", "secret plans")
    dm = post_direct(live, live.owner, [alice.id], "still here")
    assert narrow_ids(alice, []) == [m1, dm]
    assert_success(unsubscribe(alice, ["secret"]))
    assert narrow_ids(alice, []) == [dm]
    assert narrow_ids(alice, [["channel", "secret"]]) == []
    assert narrow_ids(alice, [["channel", "secret"], ["topic", "plans"]]) == []
    assert ids_of(fetch(alice, message_ids=[m1, dm], narrow=[["channel", "secret"]])) == []
    assert narrow_ids(alice, [["is", "unread"]]) == [dm]
    assert narrow_ids(alice, [["search", "plans"]]) == []
    assert ids_of(fetch(alice, message_ids=[m1, dm])) == [dm]
    assert fetch(alice, anchor="first_unread", num_before=0, num_after=0)["anchor"] == dm
    # Back in, or allowed to subscribe, the messages are hers again.
    add(live, "secret", alice)
    assert narrow_ids(alice, []) == [m1, dm]
    remove(live, "secret", alice)
    set_channel_group(live, live.read(lambda tx: tx.value("SELECT id FROM channels WHERE name = 'secret'")),
                      "can_subscribe_group", "role:members")  # fmt: skip
    assert narrow_ids(alice, []) == [m1, dm]
    assert narrow_ids(alice, [["channel", "secret"]]) == [m1]
    assert narrow_ids(alice, [["channel", "secret"], ["topic", "plans"]]) == [m1]


def test_guests(live):
    guest = live.make_user(role="guest", full_name="Guest")
    make_channel(live, "general", [live.owner.id])
    make_channel(live, "random", [live.owner.id, guest.id])
    make_channel(live, "announce", [live.owner.id])
    live.write(lambda tx: tx.execute("UPDATE channels SET is_web_public = 1 WHERE name = 'announce'"))
    g1 = post(live, live.owner, "general", "t", "before the guest")
    r1 = post(live, live.owner, "random", "t", "the guest gets this")
    a1 = post(live, live.owner, "announce", "t", "news for all")
    dm = post_direct(live, live.owner, [guest.id], "hello guest")
    # Public channels are closed to guests unless subscribed; web-public ones are open.
    assert narrow_ids(guest, []) == [r1, dm]
    assert narrow_ids(guest, [["channel", "general"]]) == []
    assert narrow_ids(guest, [["channels", "public"]]) == [r1]
    assert ids_of(fetch(guest, message_ids=[g1, r1, a1])) == [r1, a1]
    assert narrow_ids(guest, [["channel", "announce"]]) == [a1]
    # Subscribed, a guest reads the history; unsubscribed, a guest loses what they received.
    add(live, "general", guest)
    assert fetch(guest, message_ids=[g1])["messages"][0]["flags"] == HISTORICAL
    assert narrow_ids(guest, [["channel", "general"]]) == [g1]
    remove(live, "random", guest)
    assert narrow_ids(guest, []) == [dm]
    assert narrow_ids(guest, [["channel", "random"]]) == []
    assert ids_of(fetch(guest, message_ids=[r1])) == []


def test_direct_messages_are_only_for_their_participants(live):
    alice, bob, carol = (live.make_user(full_name=n) for n in ("Alice", "Bob", "Carol"))
    one = post_direct(live, alice, [bob.id], "one to one")
    group = post_direct(live, alice, [bob.id, carol.id], "group")
    assert narrow_ids(carol, []) == [group]
    assert narrow_ids(carol, [["dm", f"{alice.email},{bob.email}"]]) == [group]
    assert narrow_ids(carol, [["dm-including", alice.email]]) == [group]
    assert narrow_ids(carol, [["sender", alice.email]]) == [group]
    assert ids_of(fetch(carol, message_ids=[one, group])) == [group]
    assert narrow_ids(live.owner, [["sender", alice.email]]) == []
    assert narrow_ids(live.owner, [{"operator": "dm", "operand": [alice.id, bob.id]}]) == []
