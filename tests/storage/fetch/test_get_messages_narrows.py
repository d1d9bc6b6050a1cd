"""GET /messages narrows: every operator positive and negated, as objects and as legacy pairs
(api-notes 4.3). One organization (tests.support.get_messages_helpers.build_world) read by every test."""

from __future__ import annotations

import pytest

from storage.model import flags
from tests.support.get_messages_helpers import (
    add_reaction_row,
    build_world,
    narrow_ids,
    set_flag,
    set_topic_policy,
)

MUTED, FOLLOWED = 1, 3


@pytest.fixture(scope="module")
def narrows_world(tmp_path_factory):
    w = build_world(str(tmp_path_factory.mktemp("narrows")))
    owner_id = w.owner.id
    set_flag(w.live, owner_id, w.m["hello"], flags.STARRED)
    set_flag(w.live, owner_id, w.m["link"], flags.HAS_ALERT_WORD)
    set_topic_policy(w.live, owner_id, w.channels["general"], "greetings", FOLLOWED)
    set_topic_policy(w.live, owner_id, w.channels["random"], "LUNCH", MUTED)
    add_reaction_row(w.live, w.m["alice_greets"], w.bob.id, "octopus", "1f419")
    yield w
    w.live.stop()


GENERAL = ["hello", "alice_greets", "general_chat", "resolved", "mention"]
RANDOM = ["link", "image", "attachment"]
DMS = ["dm_to_alice", "dm_from_alice", "group", "self"]
GREETINGS = ["hello", "alice_greets", "mention"]

# name: (operator, operand (a function of the world when it needs ids), the owner's matches)
CASES = {
    "channel by name": ("channel", "general", GENERAL),
    "channel by name, any case": ("channel", "GENERAL", GENERAL),
    "channel by id": ("channel", lambda w: w.channels["general"], GENERAL),
    "stream by name": ("stream", "random", RANDOM),
    "stream by id": ("stream", lambda w: w.channels["random"], RANDOM),
    "private channel": ("channel", "secret", ["secret"]),
    "channels:public": ("channels", "public", GENERAL + RANDOM + ["announcement"]),
    "streams:public": ("streams", "public", GENERAL + RANDOM + ["announcement"]),
    "channels:web-public": ("channels", "web-public", ["announcement"]),
    "topic": ("topic", "greetings", GREETINGS),
    "topic, any case": ("topic", "GREETINGS", GREETINGS),
    "topic: general chat": ("topic", "general chat", ["general_chat"]),
    "topic: empty": ("topic", "", ["general_chat"]),
    "topic: resolved": ("topic", "✔ done", ["resolved"]),
    "sender by email": ("sender", "alice@example.com", ["alice_greets", "link", "dm_from_alice", "image"]),
    "sender by id": ("sender", lambda w: w.alice.id, ["alice_greets", "link", "dm_from_alice", "image"]),
    "sender: self": ("sender", lambda w: w.owner.id, ["hello", "secret", "dm_to_alice", "group", "self",
                                                      "resolved", "attachment", "announcement"]),
    "dm by id": ("dm", lambda w: [w.alice.id], ["dm_to_alice", "dm_from_alice"]),
    "dm by email": ("dm", "alice@example.com", ["dm_to_alice", "dm_from_alice"]),
    "dm including oneself": ("dm", lambda w: [w.alice.id, w.owner.id], ["dm_to_alice", "dm_from_alice"]),
    "dm: group by ids": ("dm", lambda w: [w.bob.id, w.alice.id], ["group"]),
    "dm: group by emails": ("dm", "alice@example.com, bob@example.com", ["group"]),
    "dm: self by id": ("dm", lambda w: [w.owner.id], ["self"]),
    "dm: self by email": ("dm", "owner@example.com", ["self"]),
    "dm: a conversation that never was": ("dm", lambda w: [w.bob.id], []),
    "dm: a group that never was": ("dm", lambda w: [w.bob.id, w.carol.id], []),
    "dm: empty list": ("dm", [], []),
    "pm-with": ("pm-with", "alice@example.com", ["dm_to_alice", "dm_from_alice"]),
    "pm-with by ids": ("pm-with", lambda w: [w.alice.id], ["dm_to_alice", "dm_from_alice"]),
    "pm_with": ("pm_with", "alice@example.com,bob@example.com", ["group"]),
    "dm-including by id": ("dm-including", lambda w: w.alice.id, ["dm_to_alice", "dm_from_alice", "group"]),
    "dm-including by email": ("dm-including", "bob@example.com", ["group"]),
    "dm-including: self": ("dm-including", "owner@example.com", DMS),
    "dm-including: nobody shared": ("dm-including", "carol@example.com", []),
    "group-pm-with": ("group-pm-with", lambda w: w.alice.id, ["group"]),
    "group-pm-with by email": ("group-pm-with", "bob@example.com", ["group"]),
    "group_pm_with": ("group_pm_with", "alice@example.com", ["group"]),
    "is:dm": ("is", "dm", DMS),
    "is:private": ("is", "private", DMS),
    "is:starred": ("is", "starred", ["hello"]),
    "is:mentioned": ("is", "mentioned", ["mention"]),
    "is:unread": ("is", "unread", ["alice_greets", "general_chat", "link", "dm_from_alice", "mention", "image"]),
    "is:alerted": ("is", "alerted", ["link"]),
    "is:resolved": ("is", "resolved", ["resolved"]),
    "is:followed": ("is", "followed", GREETINGS),
    "is:muted": ("is", "muted", ["link"]),
    "has:link": ("has", "link", ["link", "image", "attachment"]),
    "has:image": ("has", "image", ["image"]),
    "has:attachment": ("has", "attachment", ["attachment"]),
    "has:reaction": ("has", "reaction", ["alice_greets"]),
    "in:home": ("in", "home", None),  # everything but the muted topic, below
    "id": ("id", lambda w: w.m["secret"], ["secret"]),
    "id as a string": ("id", lambda w: str(w.m["group"]), ["group"]),
    "id of another's conversation": ("id", lambda w: w.m["alice_to_bob"], []),
    "mentions by id": ("mentions", lambda w: w.owner.id, ["mention"]),
    "mentions by email": ("mentions", "owner@example.com", ["mention"]),
    "mentions: silent mentions do not count": ("mentions", lambda w: w.alice.id, []),
}  # fmt: skip


def expected(narrows_world, keys):
    if keys is None:
        keys = [k for k in narrows_world.m if k not in ("alice_to_bob", "link")]
    return sorted(narrows_world.m[k] for k in keys)


def operand_of(narrows_world, operand):
    return operand(narrows_world) if callable(operand) else operand


@pytest.mark.parametrize("name", list(CASES))
def test_operator_as_an_object(narrows_world, name):
    operator, operand, keys = CASES[name]
    narrow = [{"operator": operator, "operand": operand_of(narrows_world, operand)}]
    assert narrow_ids(narrows_world.owner, narrow) == expected(narrows_world, keys)


@pytest.mark.parametrize("name", list(CASES))
def test_operator_negated_selects_the_rest(narrows_world, name):
    operator, operand, keys = CASES[name]
    narrow = [{"operator": operator, "operand": operand_of(narrows_world, operand), "negated": True}]
    rest = sorted(set(narrows_world.owner_visible) - set(expected(narrows_world, keys)))
    assert narrow_ids(narrows_world.owner, narrow) == rest


@pytest.mark.parametrize("name", [n for n, case in CASES.items() if isinstance(case[1], str)])
def test_operator_as_a_legacy_pair(narrows_world, name):
    operator, operand, keys = CASES[name]
    assert narrow_ids(narrows_world.owner, [[operator, operand]]) == expected(narrows_world, keys)


def test_legacy_pairs_take_digit_strings_as_ids(narrows_world):
    assert narrow_ids(narrows_world.owner, [["stream", str(narrows_world.channels["secret"])]]) == [
        narrows_world.m["secret"]
    ]
    assert narrow_ids(narrows_world.owner, [["sender", str(narrows_world.bob.id)]]) == [
        narrows_world.m["general_chat"],
        narrows_world.m["mention"],
    ]
    assert narrow_ids(narrows_world.owner, [["id", str(narrows_world.m["self"])]]) == [narrows_world.m["self"]]


def test_no_narrow_null_and_empty_list_are_the_user_history(narrows_world):
    everything = narrows_world.owner_visible
    assert narrow_ids(narrows_world.owner, []) == everything
    assert narrow_ids(narrows_world.owner, None) == everything
    assert narrow_ids(narrows_world.owner, "null") == everything
    assert narrows_world.m["alice_to_bob"] not in everything


@pytest.mark.parametrize("negated", [False, True])
def test_in_all_selects_everything(narrows_world, negated):
    narrow = [{"operator": "in", "operand": "all", "negated": negated}]
    assert narrow_ids(narrows_world.owner, narrow) == narrows_world.owner_visible


@pytest.mark.parametrize("negated", [False, True])
def test_near_filters_nothing(narrows_world, negated):
    narrow = [{"operator": "near", "operand": str(narrows_world.m["secret"]), "negated": negated}]
    assert narrow_ids(narrows_world.owner, narrow) == narrows_world.owner_visible
    assert narrow_ids(narrows_world.owner, [["near", "3"]]) == narrows_world.owner_visible


def test_terms_combine(narrows_world):
    w = narrows_world

    def ids(*terms):
        return narrow_ids(w.owner, [dict(zip(("operator", "operand", "negated"), t, strict=False)) for t in terms])

    m = w.m
    assert ids(("channel", "general"), ("topic", "greetings")) == expected(w, GREETINGS)
    assert ids(("channel", "general"), ("topic", "greetings"), ("sender", w.bob.id)) == [m["mention"]]
    assert ids(("channel", "general"), ("sender", "alice@example.com")) == [m["alice_greets"]]
    assert ids(("channel", "general"), ("is", "starred")) == [m["hello"]]
    assert ids(("channel", "random"), ("has", "link"), ("has", "image", True)) == [m["link"], m["attachment"]]
    assert ids(("dm", [w.alice.id]), ("sender", w.alice.id)) == [m["dm_from_alice"]]
    assert ids(("is", "dm"), ("is", "unread")) == [m["dm_from_alice"]]
    assert ids(("channel", "general"), ("channel", "random")) == []
    assert ids(("channel", "general"), ("topic", "greetings", True), ("is", "resolved", True)) == [m["general_chat"]]
    assert ids(("sender", w.alice.id), ("is", "dm", True)) == [m["alice_greets"], m["link"], m["image"]]
    assert ids(("dm-including", w.alice.id), ("dm", [w.alice.id], True)) == [m["group"]]
    assert ids(("id", m["hello"]), ("channel", "general")) == [m["hello"]]
    assert ids(("id", m["hello"]), ("channel", "random")) == []


def test_negated_channel_terms_may_join_dm_terms(narrows_world):
    narrow = [
        {"operator": "channel", "operand": "general", "negated": True},
        {"operator": "dm", "operand": [narrows_world.alice.id]},
    ]
    assert narrow_ids(narrows_world.owner, narrow) == [narrows_world.m["dm_to_alice"], narrows_world.m["dm_from_alice"]]
    narrow = [{"operator": "is", "operand": "dm", "negated": True}, {"operator": "channel", "operand": "secret"}]
    assert narrow_ids(narrows_world.owner, narrow) == [narrows_world.m["secret"]]


def test_with_rewrites_to_the_messages_conversation(narrows_world):
    w, m = narrows_world, narrows_world.m

    def with_ids(message_key, *extra):
        return narrow_ids(w.owner, [{"operator": "with", "operand": m[message_key]}, *extra])

    assert with_ids("alice_greets") == expected(w, GREETINGS)  # channel + topic, case-insensitively
    assert with_ids("general_chat") == [m["general_chat"]]
    assert with_ids("dm_from_alice") == [m["dm_to_alice"], m["dm_from_alice"]]
    assert with_ids("group") == [m["group"]]
    assert with_ids("self") == [m["self"]]
    # Conversation terms are replaced; other terms stay.
    assert with_ids("hello", {"operator": "channel", "operand": "random"}) == expected(w, GREETINGS)
    assert with_ids("hello", {"operator": "topic", "operand": "lunch"}) == expected(w, GREETINGS)
    assert with_ids("hello", {"operator": "sender", "operand": w.alice.id}) == [m["alice_greets"]]
    assert with_ids("dm_to_alice", {"operator": "dm", "operand": [w.bob.id]}) == [m["dm_to_alice"], m["dm_from_alice"]]
    # Negation does not matter, and a legacy pair works too.
    narrow = [{"operator": "with", "operand": str(m["group"]), "negated": True}]
    assert narrow_ids(w.owner, narrow) == [m["group"]]
    assert narrow_ids(w.owner, [["with", str(m["self"])]]) == [m["self"]]


def test_with_an_inaccessible_message_falls_back_to_a_conversation(narrows_world):
    w, m = narrows_world, narrows_world.m
    hidden = m["alice_to_bob"]
    dm_terms = [{"operator": "with", "operand": hidden}, {"operator": "dm", "operand": [w.alice.id]}]
    assert narrow_ids(w.owner, dm_terms) == [m["dm_to_alice"], m["dm_from_alice"]]
    topic_terms = [
        {"operator": "with", "operand": 10**9},
        {"operator": "channel", "operand": "general"},
        {"operator": "topic", "operand": "greetings"},
    ]
    assert narrow_ids(w.owner, topic_terms) == expected(w, GREETINGS)
    # Carol reads general's history but not the secret channel: its message falls back the same way.
    secret_terms = [{"operator": "with", "operand": m["secret"]}, ["channel", "general"], ["topic", "Greetings"]]
    assert narrow_ids(w.carol, secret_terms) == expected(w, GREETINGS)


def test_with_a_readable_history_message_needs_no_subscription(narrows_world):
    w, m = narrows_world, narrows_world.m
    assert narrow_ids(w.carol, [{"operator": "with", "operand": m["alice_greets"]}]) == expected(w, GREETINGS)
