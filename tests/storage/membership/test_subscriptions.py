"""POST /users/me/subscriptions: subscribing self and others, creating channels on the fly.

The helpers at the top are shared by the other test_subscriptions_* modules.
"""

from __future__ import annotations

import pytest

from storage.channels import channels
from storage.messages import system_bots
from tests.support.channel_helpers import (
    INSUFFICIENT,
    ROLES,
    archive,
    events_after,
    make_channel,
    my_subscriptions,
    set_channel_group,
    set_realm_group,
    subscribe,
    subscribed_names,
    subscriber_ids,
    user_for,
)
from tests.support.helpers import assert_error, assert_success, make_bot

# -- subscribing oneself -----------------------------------------------------------------------


def test_subscribe_self_then_already_subscribed(live):
    make_channel(live, "general")
    member = live.make_user()
    body = assert_success(subscribe(member, ["general"]))
    assert body == {
        "result": "success",
        "msg": "",
        "subscribed": {str(member.id): ["general"]},
        "already_subscribed": {},
        "new_subscription_messages_sent": False,
    }
    body = assert_success(subscribe(member, ["general"], send_new_subscription_messages=False))
    assert body["subscribed"] == {} and body["already_subscribed"] == {str(member.id): ["general"]}
    assert "new_subscription_messages_sent" not in body
    assert subscribed_names(member) == ["general"]


def test_creates_missing_channels_with_the_request_options(live):
    make_channel(live, "existing")
    body = assert_success(
        subscribe(
            live.owner,
            [{"name": "  fresh  ", "color": "#abc", "description": "First\nline"}, {"name": "existing"}],
            invite_only=True,
            history_public_to_subscribers=True,
            message_retention_days=30,
        )
    )
    assert body["subscribed"] == {str(live.owner.id): ["fresh", "existing"]}
    [fresh] = [s for s in my_subscriptions(live.owner) if s["name"] == "fresh"]
    assert (fresh["invite_only"], fresh["history_public_to_subscribers"]) == (True, True)
    assert (fresh["description"], fresh["message_retention_days"]) == ("First line", 30)
    assert (fresh["color"], fresh["creator_id"]) == ("#abc", live.owner.id)
    # The creator administers the new channel (an anonymous group of one).
    assert fresh["can_administer_channel_group"] == {"direct_members": [live.owner.id], "direct_subgroups": []}


def test_top_level_description_is_the_default_for_new_channels(live):
    assert_success(subscribe(live.owner, ["a", {"name": "b", "description": "own"}], description="shared"))
    described = {s["name"]: s["description"] for s in my_subscriptions(live.owner)}
    assert described == {"a": "shared", "b": "own"}


def test_names_are_deduplicated_case_insensitively(live):
    make_channel(live, "Dup")
    body = assert_success(subscribe(live.owner, ["dup", " DUP ", "Dup"]))
    assert body["subscribed"] == {str(live.owner.id): ["Dup"]}


def test_palette_colours_are_assigned_in_turn(live):
    assert_success(subscribe(live.owner, ["one", "two", {"name": "three", "color": "#123456"}]))
    colors = {s["name"]: s["color"] for s in my_subscriptions(live.owner)}
    assert colors == {"one": "#76ce90", "two": "#fae589", "three": "#123456"}


# -- parameter and channel-name errors ---------------------------------------------------------


@pytest.mark.parametrize(
    ("subscriptions", "msg"),
    [
        ('{"name": "x"}', "subscriptions is not a list"),
        ("[{}]", 'subscriptions[0]["name"] field is missing: Field required'),
        ('[{"name": 5}]', 'subscriptions[0]["name"] is not a string'),
        (
            '[{"name": "x", "color": "red"}]',
            "Invalid subscriptions[0]: Value error, add.color is not a valid hex color code",
        ),
        (
            '[{"name": "x", "description": "' + "d" * 1025 + '"}]',
            'subscriptions[0]["description"] is too long (limit: 1024 characters)',
        ),
        ('[{"name": "  "}]', "Channel name can't be empty."),
        ('[{"name": "' + "n" * 61 + '"}]', "Channel name too long (limit: 60 characters)."),
        ('[{"name": "a\\u0000b"}]', "Invalid character in channel name, at position 2."),
    ],
)
def test_subscriptions_errors(live, subscriptions, msg):
    assert_error(live.owner.post("/users/me/subscriptions", {"subscriptions": subscriptions}), msg)


def test_missing_subscriptions(live):
    body = assert_error(
        live.owner.post("/users/me/subscriptions"), "Missing 'subscriptions' argument", "REQUEST_VARIABLE_MISSING"
    )
    assert body["var_name"] == "subscriptions"


@pytest.mark.parametrize(
    ("principals", "msg"),
    [
        ([999999], "No such user"),
        (["nobody@example.com"], "No such user"),
        ([1, "owner@example.com"], 'principals["list[str]"][0] is not a string'),
        ([True], "principals[0] is not an integer"),
        ("owner@example.com", "principals is not valid JSON"),
    ],
)
def test_principal_errors(live, principals, msg):
    make_channel(live, "general")
    assert_error(subscribe(live.owner, ["general"], principals=principals), msg)


def test_deactivated_principal(live):
    make_channel(live, "general")
    gone = live.make_user()
    assert_success(live.owner.delete(f"/users/{gone.id}"))
    assert_error(subscribe(live.owner, ["general"], principals=[gone.id]), "User is deactivated")
    assert_error(subscribe(live.owner, ["general"], principals=[gone.email]), "User is deactivated")


def test_principals_by_email_and_bots(live):
    make_channel(live, "general")
    member = live.make_user()
    bot_id = make_bot(live, live.owner.id)
    body = assert_success(subscribe(live.owner, ["general"], principals=[member.email, "bot@example.com"]))
    assert body["subscribed"] == {str(member.id): ["general"], str(bot_id): ["general"]}


def test_creation_permissions(live):
    set_realm_group(live, "can_create_public_channel_group", "role:administrators")
    member = live.make_user()
    assert_error(subscribe(member, ["brand new"]), INSUFFICIENT)
    assert_error(subscribe(member, ["brand new"], is_default_stream=True), INSUFFICIENT)
    assert_error(
        subscribe(live.owner, ["x"], invite_only=True, is_default_stream=True), "A default channel cannot be private."
    )
    assert_error(
        subscribe(live.make_user(role="admin"), ["x"], message_retention_days=5),
        "Must be an organization owner",
        "UNAUTHORIZED_PRINCIPAL",
    )
    assert live.read(channels.get_channel_by_name, "brand new") is None


# -- access and permissions --------------------------------------------------------------------


def test_private_channel_without_access(live):
    make_channel(live, "secret", [live.owner.id], invite_only=True)
    make_channel(live, "open")
    member = live.make_user()
    before = len(live.events())
    assert_error(subscribe(member, ["open", "secret"]), "Unable to access channel (secret).")
    assert subscribed_names(member) == [] and events_after(live, before) == []
    body = assert_success(subscribe(member, ["open", "secret"], authorization_errors_fatal=False))
    assert body["subscribed"] == {str(member.id): ["open"]}
    assert body["unauthorized"] == ["secret"]


def test_archived_channels_cannot_be_joined(live):
    archive(live, make_channel(live, "old"))
    assert_error(subscribe(live.owner, ["old"]), "Unable to access channel (old).")


def test_one_bad_entry_changes_nothing(live):
    make_channel(live, "secret", [live.owner.id], invite_only=True)
    member = live.make_user()
    before = len(live.events())
    assert_error(subscribe(member, ["would be created", "secret"]), "Unable to access channel (secret).")
    assert live.read(channels.get_channel_by_name, "would be created") is None
    assert events_after(live, before) == []


def test_can_subscribe_group_opens_a_private_channel_to_its_members(live):
    channel_id = make_channel(live, "club", [live.owner.id], invite_only=True)
    member = live.make_user()
    set_channel_group(live, channel_id, "can_subscribe_group", "role:members")
    assert_success(subscribe(member, ["club"]))
    assert member.id in subscriber_ids(live, channel_id)


@pytest.mark.parametrize("role", ROLES)
def test_matrix_subscribe_self_to_public_channel(live, role):
    channel_id = make_channel(live, "general")
    client = user_for(live, role)
    if role == "guest":
        assert_error(subscribe(client, ["general"]), "Not allowed for guest users")
        # ... before its parameters are even read.
        assert_error(client.post("/users/me/subscriptions", {"subscriptions": "{bad"}), "Not allowed for guest users")
        assert client.id not in subscriber_ids(live, channel_id)
    else:
        assert_success(subscribe(client, ["general"]))
        assert client.id in subscriber_ids(live, channel_id)


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("realm_setting", ["role:members", "role:administrators"])
def test_matrix_subscribe_others(live, role, realm_setting):
    channel_id = make_channel(live, "general", [live.owner.id])
    set_realm_group(live, "can_add_subscribers_group", realm_setting)
    client, target = user_for(live, role), live.make_user()
    response = subscribe(client, ["general"], principals=[target.id])
    if role == "guest":
        assert_error(response, "Not allowed for guest users")
    elif role in ("owner", "admin") or realm_setting == "role:members":
        assert_success(response)
        assert target.id in subscriber_ids(live, channel_id)
        return
    else:
        assert_error(response, INSUFFICIENT)
    assert target.id not in subscriber_ids(live, channel_id)


def test_channel_level_permissions_to_add_others(live):
    set_realm_group(live, "can_add_subscribers_group", "role:nobody")
    channel_id = make_channel(live, "general")
    member, target = live.make_user(), live.make_user()
    assert_error(subscribe(member, ["general"], principals=[target.id]), INSUFFICIENT)
    set_channel_group(live, channel_id, "can_add_subscribers_group", "role:members")
    assert_success(subscribe(member, ["general"], principals=[target.id]))
    # The creator administers their own channel and may fill it.
    assert_success(subscribe(member, ["mine"], principals=[member.id, target.id]))
    assert subscriber_ids(live, live.read(channels.get_channel_by_name, "mine").id) == sorted([member.id, target.id])


def test_adding_others_to_a_private_channel_needs_content_access(live):
    make_channel(live, "secret", [live.owner.id], invite_only=True)
    admin, target = live.make_user(role="admin"), live.make_user()
    assert_error(subscribe(admin, ["secret"], principals=[target.id]), "Unable to access channel (secret).")
    assert_success(subscribe(live.owner, ["secret"], principals=[target.id]))


# -- events ------------------------------------------------------------------------------------


def test_subscription_events(live):
    channel_id = make_channel(live, "general", [live.owner.id])
    member, guest = live.make_user(), live.make_user(role="guest")
    before = len(live.events())
    assert_success(subscribe(live.owner, ["general"], principals=[member.id]))
    [(added, added_to)] = events_after(live, before, "subscription")[:1]
    assert added["op"] == "add" and added_to == [member.id]
    [sub] = added["subscriptions"]
    assert (sub["stream_id"], sub["subscribers"]) == (channel_id, sorted([live.owner.id, member.id]))
    [(peer, peers)] = [(e, ids) for e, ids in events_after(live, before, "subscription") if e["op"] == "peer_add"]
    assert peer == {"type": "subscription", "op": "peer_add", "stream_ids": [channel_id], "user_ids": [member.id]}
    assert peers == [live.owner.id]  # the guest cannot see a public channel it is not in
    assert guest.id not in peers


def test_private_channel_events_reach_only_those_with_access(live):
    channel_id = make_channel(live, "secret", [live.owner.id], invite_only=True)
    member, outsider = live.make_user(), live.make_user()
    live.write(system_bots.notification_bot)  # created beforehand: its realm_user event goes to everyone
    before = len(live.events())
    assert_success(subscribe(live.owner, ["secret"], principals=[member.id]))
    events = events_after(live, before)
    assert all(outsider.id not in ids for _, ids in events)
    # The new subscriber first learns that the channel exists, then that they are in it.
    assert [(e["type"], e["op"], ids) for e, ids in events[:2]] == [
        ("stream", "create", [member.id]),
        ("subscription", "add", [member.id]),
    ]
    assert events[0][0]["streams"][0]["stream_id"] == channel_id


def test_users_subscribed_by_someone_else_get_a_notification_bot_message(live):
    make_channel(live, "design", [live.owner.id])
    make_channel(live, "ops", [live.owner.id])
    member, other = live.make_user(), live.make_user()
    body = assert_success(subscribe(live.owner, ["design"], principals=[member.id]))
    assert body["new_subscription_messages_sent"] is True
    body = assert_success(subscribe(live.owner, ["design", "ops"], principals=[other.id]))
    assert body["new_subscription_messages_sent"] is True

    def latest(client):
        params = {"anchor": "newest", "num_before": 1, "num_after": 0}
        return assert_success(client.get("/messages", params))["messages"][-1]

    one, two = latest(member), latest(other)
    assert one["sender_full_name"] == two["sender_full_name"] == "Notification Bot"
    assert one["type"] == "private" and "subscribed you to the channel" in one["content"]
    assert 'class="user-mention silent"' in one["content"] and 'class="stream"' in one["content"]
    assert "subscribed you to the following channels" in two["content"] and two["content"].count('class="stream"') == 2


def test_no_notification_for_oneself_or_when_not_asked(live):
    make_channel(live, "design", [live.owner.id])
    member = live.make_user()
    assert assert_success(subscribe(member, ["design"]))["new_subscription_messages_sent"] is False
    body = assert_success(subscribe(live.owner, ["design"], principals=[live.make_user().id],
                                    send_new_subscription_messages=False))  # fmt: skip
    assert "new_subscription_messages_sent" not in body
