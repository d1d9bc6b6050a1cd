"""DELETE /users/me/subscriptions: unsubscribing oneself and others, permissions, events."""

from __future__ import annotations

import pytest

from tests.support.channel_helpers import (
    INSUFFICIENT,
    ROLES,
    events_after,
    make_channel,
    my_subscriptions,
    set_channel_group,
    subscribe,
    subscriber_ids,
    unsubscribe,
    user_for,
)
from tests.support.helpers import assert_error, assert_success, make_bot


def does_not_exist(response, name):
    body = assert_error(response, f"Channel '{name}' does not exist", "STREAM_DOES_NOT_EXIST")
    assert body["stream"] == name


def test_unsubscribe_self(live):
    channel_id = make_channel(live, "general", [live.owner.id])
    body = assert_success(unsubscribe(live.owner, [" general "]))
    assert body == {"result": "success", "msg": "", "removed": ["general"], "not_removed": []}
    assert subscriber_ids(live, channel_id) == []
    assert assert_success(unsubscribe(live.owner, ["general"]))["not_removed"] == ["general"]


def test_resubscribing_brings_back_personal_settings(live):
    channel_id = make_channel(live, "general", [live.owner.id])
    assert_success(live.owner.patch(f"/users/me/subscriptions/{channel_id}", {"property": "color", "value": "#010203"}))
    assert_success(live.owner.patch(f"/users/me/subscriptions/{channel_id}", {"property": "is_muted", "value": "true"}))
    assert_success(unsubscribe(live.owner, ["general"]))
    assert my_subscriptions(live.owner) == []
    assert_success(subscribe(live.owner, [{"name": "general", "color": "#ffffff"}]))
    [sub] = my_subscriptions(live.owner)
    assert (sub["color"], sub["is_muted"]) == ("#010203", True)


def test_unknown_channel(live):
    make_channel(live, "general", [live.owner.id])
    does_not_exist(unsubscribe(live.owner, ["general", "nope"]), "nope")
    assert subscriber_ids(live, live.read(lambda tx: tx.value("SELECT id FROM channels"))) == [live.owner.id]


def test_private_channel_answers_as_if_it_did_not_exist(live):
    make_channel(live, "secret", [live.owner.id], invite_only=True)
    outsider = live.make_user()
    does_not_exist(unsubscribe(outsider, ["secret"]), "secret")
    does_not_exist(unsubscribe(outsider, ["secret"], principals=[live.owner.id]), "secret")


@pytest.mark.parametrize(
    ("subscriptions", "msg"),
    [
        ("general", "subscriptions is not valid JSON"),
        ("[1]", "subscriptions[0] is not a string"),
        ('["  "]', "Channel name can't be empty."),
    ],
)
def test_parameter_errors(live, subscriptions, msg):
    assert_error(live.owner.delete("/users/me/subscriptions", {"subscriptions": subscriptions}), msg)


def test_missing_subscriptions(live):
    assert_error(
        live.owner.delete("/users/me/subscriptions"), "Missing 'subscriptions' argument", "REQUEST_VARIABLE_MISSING"
    )


def test_bad_principals(live):
    make_channel(live, "general", [live.owner.id])
    gone = live.make_user()
    assert_success(live.owner.delete(f"/users/{gone.id}"))
    assert_error(unsubscribe(live.owner, ["general"], principals=[999999]), "No such user")
    assert_error(unsubscribe(live.owner, ["general"], principals=["ghost@example.com"]), "No such user")
    assert_error(unsubscribe(live.owner, ["general"], principals=[gone.id]), "User is deactivated")


def test_several_principals_repeat_names(live):
    a, b = live.make_user(), live.make_user()
    make_channel(live, "one", [a.id, b.id])
    make_channel(live, "two", [a.id])
    body = assert_success(unsubscribe(live.owner, ["one", "two"], principals=[a.email, b.email]))
    assert (body["removed"], body["not_removed"]) == (["one", "two", "one"], ["two"])


# -- who may unsubscribe others ----------------------------------------------------------------


@pytest.mark.parametrize("role", ROLES)
def test_matrix_unsubscribe_others(live, role):
    client, target = user_for(live, role), live.make_user()
    channel_id = make_channel(live, "general", [client.id, target.id])
    response = unsubscribe(client, ["general"], principals=[target.id])
    if role in ("owner", "admin"):
        assert_success(response)
        assert target.id not in subscriber_ids(live, channel_id)
    else:  # can_remove_subscribers_group defaults to role:administrators
        assert_error(response, INSUFFICIENT)
        assert target.id in subscriber_ids(live, channel_id)


@pytest.mark.parametrize("role", ROLES)
def test_matrix_unsubscribe_self(live, role):
    client = user_for(live, role)
    channel_id = make_channel(live, "general", [client.id])
    assert assert_success(unsubscribe(client, ["general"], principals=[client.id]))["removed"] == ["general"]
    assert subscriber_ids(live, channel_id) == []


def test_can_remove_subscribers_group_needs_access(live):
    member, target = live.make_user(), live.make_user()
    public = make_channel(live, "public", [target.id])
    secret = make_channel(live, "secret", [live.owner.id, target.id], invite_only=True)
    for channel_id in (public, secret):
        set_channel_group(live, channel_id, "can_remove_subscribers_group", "role:members")
    assert_success(unsubscribe(member, ["public"], principals=[target.id]))
    does_not_exist(unsubscribe(member, ["secret"], principals=[target.id]), "secret")
    # A guest never holds the permission, even when the group includes everyone.
    guest = live.make_user(role="guest")
    assert_success(subscribe(live.owner, ["public"], principals=[guest.id, target.id]))
    set_channel_group(live, public, "can_remove_subscribers_group", "role:everyone")
    assert_error(unsubscribe(guest, ["public"], principals=[target.id]), INSUFFICIENT)


def test_channel_administrators_may_remove_anyone(live):
    creator, target = live.make_user(), live.make_user()
    channel_id = make_channel(live, "mine", [target.id], creator=creator, invite_only=True)
    assert_success(unsubscribe(creator, ["mine"], principals=[target.id]))
    assert subscriber_ids(live, channel_id) == []


def test_admins_may_remove_from_private_channels_they_are_not_in(live):
    target = live.make_user()
    make_channel(live, "secret", [target.id], invite_only=True, creator=target)
    admin = live.make_user(role="admin")
    assert assert_success(unsubscribe(admin, ["secret"], principals=[target.id]))["removed"] == ["secret"]


def test_owners_of_bots_may_remove_them(live):
    member = live.make_user()
    bot_id = make_bot(live, member.id)
    make_channel(live, "general", [member.id, bot_id])
    make_channel(live, "secret", [bot_id], invite_only=True)
    assert_success(unsubscribe(member, ["general"], principals=[bot_id, member.id]))
    # ... but only from channels the owner can see.
    does_not_exist(unsubscribe(member, ["secret"], principals=[bot_id]), "secret")
    other_bot = make_bot(live, live.owner.id, email="other-bot@example.com")
    make_channel(live, "again", [member.id, other_bot])
    assert_error(unsubscribe(member, ["again"], principals=[other_bot]), INSUFFICIENT)


# -- events ------------------------------------------------------------------------------------


def test_unsubscribe_events(live):
    member, guest = live.make_user(), live.make_user(role="guest")
    channel_id = make_channel(live, "general", [live.owner.id, member.id])
    before = len(live.events())
    assert_success(unsubscribe(live.owner, ["general"], principals=[member.id]))
    events = events_after(live, before)
    assert events[0] == (
        {"type": "subscription", "op": "remove", "subscriptions": [{"name": "general", "stream_id": channel_id}]},
        [member.id],
    )
    peer, peers = events[1]
    assert peer == {"type": "subscription", "op": "peer_remove", "stream_ids": [channel_id], "user_ids": [member.id]}
    assert peers == [live.owner.id] and guest.id not in peers
    assert len(events) == 2


def test_private_unsubscribe_events_reach_only_those_with_access(live):
    member, outsider = live.make_user(), live.make_user()
    channel_id = make_channel(live, "secret", [live.owner.id, member.id], invite_only=True)
    before = len(live.events())
    assert_success(unsubscribe(member, ["secret"]))
    events = events_after(live, before)
    assert [ids for _, ids in events] == [[member.id], [live.owner.id]]
    assert events[1][0]["stream_ids"] == [channel_id]
    assert all(outsider.id not in ids for _, ids in events)


def test_nothing_removed_means_no_events(live):
    make_channel(live, "general")
    before = len(live.events())
    assert assert_success(unsubscribe(live.owner, ["general"]))["not_removed"] == ["general"]
    assert events_after(live, before) == []
