"""PATCH /users/me/subscriptions/{id} and POST /users/me/subscriptions/properties; the zulip client."""

from __future__ import annotations

import json

import pytest

from tests.support.channel_helpers import archive, events_after, make_channel, my_subscriptions, subscriber_ids
from tests.support.helpers import assert_error, assert_success

NOTIFICATIONS = (
    "desktop_notifications",
    "audible_notifications",
    "push_notifications",
    "email_notifications",
    "wildcard_mentions_notify",
)


def patch(client, channel_id, property, value):
    return client.patch(f"/users/me/subscriptions/{channel_id}", {"property": property, "value": value})


def bulk(client, data):
    return client.post("/users/me/subscriptions/properties", {"subscription_data": data})


def own_subscription(client):
    [sub] = my_subscriptions(client)
    return sub


@pytest.mark.parametrize("property", ("pin_to_top", "is_muted", *NOTIFICATIONS))
def test_boolean_properties(live, property):
    channel_id = make_channel(live, "general", [live.owner.id])
    assert assert_success(patch(live.owner, channel_id, property, "true")) == {"result": "success", "msg": ""}
    assert own_subscription(live.owner)[property] is True
    assert_success(patch(live.owner, channel_id, property, "false"))
    assert own_subscription(live.owner)[property] is False


@pytest.mark.parametrize("property", NOTIFICATIONS)
def test_notification_settings_go_back_to_inherit_with_null(live, property):
    channel_id = make_channel(live, "general", [live.owner.id])
    assert_success(patch(live.owner, channel_id, property, "true"))
    assert_success(patch(live.owner, channel_id, property, "null"))
    assert own_subscription(live.owner)[property] is None


@pytest.mark.parametrize("color", ["#abc", "#A1B2C3", "#abcd"])
def test_color(live, color):
    channel_id = make_channel(live, "general", [live.owner.id])
    assert_success(patch(live.owner, channel_id, "color", color))
    assert own_subscription(live.owner)["color"] == color


@pytest.mark.parametrize("color", ["red", "abc", "#ab", "#abcdefa", "#ggg", "true", "#abc\n"])
def test_bad_color(live, color):
    channel_id = make_channel(live, "general", [live.owner.id])
    assert_error(patch(live.owner, channel_id, "color", color), "color is not a valid hex color code")


def test_in_home_view_is_the_inverse_of_is_muted_with_two_events(live):
    channel_id = make_channel(live, "general", [live.owner.id])
    for property, value, muted in (("in_home_view", "false", True), ("is_muted", "false", False)):
        before = len(live.events())
        assert_success(patch(live.owner, channel_id, property, value))
        assert events_after(live, before) == [
            (
                {
                    "type": "subscription",
                    "op": "update",
                    "property": "in_home_view",
                    "value": not muted,
                    "stream_id": channel_id,
                },
                [live.owner.id],
            ),
            (
                {
                    "type": "subscription",
                    "op": "update",
                    "property": "is_muted",
                    "value": muted,
                    "stream_id": channel_id,
                },
                [live.owner.id],
            ),
        ]
        sub = own_subscription(live.owner)
        assert (sub["is_muted"], sub["in_home_view"]) == (muted, not muted)


def test_one_event_for_other_properties(live):
    channel_id = make_channel(live, "general", [live.owner.id])
    before = len(live.events())
    assert_success(patch(live.owner, channel_id, "color", "#123"))
    assert events_after(live, before) == [
        (
            {"type": "subscription", "op": "update", "property": "color", "value": "#123", "stream_id": channel_id},
            [live.owner.id],
        )
    ]


@pytest.mark.parametrize(
    ("property", "value", "msg"),
    [
        ("colour", "#abc", "Unknown subscription property: colour"),
        ("name", "x", "Unknown subscription property: name"),
        ("pin_to_top", "yes", "pin_to_top is not a boolean"),
        ("pin_to_top", "1", "pin_to_top is not a boolean"),
        ("is_muted", "null", "is_muted is not a boolean"),
        ("in_home_view", "True", "in_home_view is not a boolean"),
    ],
)
def test_property_errors(live, property, value, msg):
    channel_id = make_channel(live, "general", [live.owner.id])
    assert_error(patch(live.owner, channel_id, property, value), msg)


def test_missing_arguments(live):
    channel_id = make_channel(live, "general", [live.owner.id])
    path = f"/users/me/subscriptions/{channel_id}"
    assert_error(live.owner.patch(path, {"value": "true"}), "Missing 'property' argument", "REQUEST_VARIABLE_MISSING")
    assert_error(
        live.owner.patch(path, {"property": "is_muted"}), "Missing 'value' argument", "REQUEST_VARIABLE_MISSING"
    )


def test_channel_errors(live):
    public = make_channel(live, "public")
    secret = make_channel(live, "secret", [live.owner.id], invite_only=True)
    member = live.make_user()
    assert_error(patch(member, 999999, "pin_to_top", "true"), "Invalid channel ID")
    assert_error(patch(member, secret, "pin_to_top", "true"), "Invalid channel ID")  # as if it did not exist
    assert_error(patch(member, public, "pin_to_top", "true"), f"Not subscribed to channel ID {public}")
    archive(live, secret)
    assert_error(patch(live.owner, secret, "pin_to_top", "true"), "Invalid channel ID")
    response = live.owner.patch("/users/me/subscriptions/abc", {"property": "is_muted", "value": "true"})
    assert response.status_code == 404


def test_property_errors_come_before_channel_errors(live):
    assert_error(patch(live.owner, 999999, "bogus", "true"), "Unknown subscription property: bogus")


# -- the bulk form -----------------------------------------------------------------------------


def test_bulk_update(live):
    one = make_channel(live, "one", [live.owner.id])
    two = make_channel(live, "two", [live.owner.id])
    data = [
        {"stream_id": one, "property": "pin_to_top", "value": True},
        {"stream_id": two, "property": "color", "value": "#00ff00"},
        {"stream_id": two, "property": "desktop_notifications", "value": None},
        {"stream_id": two, "property": "in_home_view", "value": False},
    ]
    before = len(live.events())
    assert assert_success(bulk(live.owner, data)) == {"result": "success", "msg": ""}
    subs = {s["name"]: s for s in my_subscriptions(live.owner)}
    assert subs["one"]["pin_to_top"] is True
    assert (subs["two"]["color"], subs["two"]["is_muted"]) == ("#00ff00", True)
    assert [e["property"] for e, _ in events_after(live, before)] == [
        "pin_to_top",
        "color",
        "desktop_notifications",
        "in_home_view",
        "is_muted",
    ]


@pytest.mark.parametrize(
    ("entry", "msg"),
    [
        (
            {"stream_id": 0, "property": "color", "value": "blue"},
            "Invalid subscription_data[1]: Value error, color is not a valid hex color code",
        ),
        ({"stream_id": 0, "property": "size", "value": True}, "Unknown subscription property: size"),
        ({"stream_id": 0, "property": "pin_to_top", "value": "yes"}, "pin_to_top is not a boolean"),
        ({"stream_id": 0, "property": "pin_to_top", "value": 1}, 'subscription_data[1]["value"] is not a boolean'),
        ({"stream_id": 0, "property": "pin_to_top"}, 'subscription_data[1]["value"] field is missing: Field required'),
        (
            {"stream_id": "x", "property": "pin_to_top", "value": True},
            'subscription_data[1]["stream_id"] is not an integer',
        ),
        ({"stream_id": 999999, "property": "pin_to_top", "value": True}, "Invalid channel ID"),
        ({"stream_id": "unsubscribed", "property": "pin_to_top", "value": True}, "Not subscribed to channel ID {id}"),
    ],
)
def test_bulk_is_all_or_nothing(live, entry, msg):
    mine = make_channel(live, "mine", [live.owner.id])
    other = make_channel(live, "other")
    entry = dict(entry)
    if entry.get("stream_id") == 0:
        entry["stream_id"] = mine
    if entry.get("stream_id") == "unsubscribed":
        entry["stream_id"] = other
    before = len(live.events())
    first = {"stream_id": mine, "property": "pin_to_top", "value": True}
    assert_error(bulk(live.owner, [first, entry]), msg.format(id=other))
    assert own_subscription(live.owner)["pin_to_top"] is False
    assert events_after(live, before) == []


def test_bulk_parameter_errors(live):
    path = "/users/me/subscriptions/properties"
    assert_error(live.owner.post(path), "Missing 'subscription_data' argument", "REQUEST_VARIABLE_MISSING")
    assert_error(live.owner.post(path, {"subscription_data": "{}"}), "subscription_data is not a list")


# -- the zulip client --------------------------------------------------------------------------


def test_zulip_client_round_trip(zulip_client, live):
    member = live.make_user()
    added = zulip_client.add_subscriptions(
        [{"name": "zulip-made", "description": "Via the zulip_client"}], principals=[member.id, live.owner.id]
    )
    assert added["result"] == "success", added
    assert added["subscribed"] == {str(live.owner.id): ["zulip-made"], str(member.id): ["zulip-made"]}
    listed = zulip_client.get_subscriptions({"include_subscribers": "true"})
    [sub] = listed["subscriptions"]
    assert (sub["name"], sub["description"], sub["subscribers"]) == (
        "zulip-made",
        "Via the zulip_client",
        sorted([live.owner.id, member.id]),
    )
    updated = zulip_client.update_subscription_settings(
        [
            {"stream_id": sub["stream_id"], "property": "pin_to_top", "value": True},
            {"stream_id": sub["stream_id"], "property": "color", "value": "#f00"},
        ]
    )
    assert updated == {"result": "success", "msg": ""}
    [sub] = zulip_client.get_subscriptions()["subscriptions"]
    assert (sub["pin_to_top"], sub["color"]) == (True, "#f00")
    removed = zulip_client.remove_subscriptions(["zulip-made"], principals=[member.email])
    assert (removed["removed"], removed["not_removed"]) == (["zulip-made"], [])
    assert subscriber_ids(live, sub["stream_id"]) == [live.owner.id]
    assert zulip_client.remove_subscriptions(["zulip-made"])["removed"] == ["zulip-made"]
    assert zulip_client.get_subscriptions()["subscriptions"] == []


def test_zulip_client_errors(zulip_client):
    result = zulip_client.remove_subscriptions(["no such channel"])
    assert result == {
        "result": "error",
        "msg": "Channel 'no such channel' does not exist",
        "code": "STREAM_DOES_NOT_EXIST",
        "stream": "no such channel",
    }
    result = zulip_client.call_endpoint(
        "users/me/subscriptions/999", method="PATCH", request={"property": "is_muted", "value": json.dumps(True)}
    )
    assert result == {"result": "error", "msg": "Invalid channel ID", "code": "BAD_REQUEST"}
