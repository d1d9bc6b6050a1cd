"""GET /users/me/subscriptions: the subscription object, order, include_subscribers, isolation."""

from __future__ import annotations

import itertools

import pytest

from storage.membership import subscriptions
from storage.messages import system_bots
from storage.org import passwords
from tests.support.channel_helpers import archive, events_after, make_channel, my_subscriptions, subscribe, unsubscribe
from tests.support.helpers import assert_error, assert_success, make_bot

# api-notes 4.21: every field of the subscription object.
SUBSCRIPTION_FIELDS = {
    "audible_notifications",
    "can_add_subscribers_group",
    "can_administer_channel_group",
    "can_create_topic_group",
    "can_delete_any_message_group",
    "can_delete_own_message_group",
    "can_move_messages_out_of_channel_group",
    "can_move_messages_within_channel_group",
    "can_send_message_group",
    "can_remove_subscribers_group",
    "can_resolve_topics_group",
    "can_subscribe_group",
    "color",
    "creator_id",
    "date_created",
    "description",
    "desktop_notifications",
    "email_notifications",
    "first_message_id",
    "folder_id",
    "is_recently_active",
    "history_public_to_subscribers",
    "in_home_view",
    "invite_only",
    "is_announcement_only",
    "is_archived",
    "is_muted",
    "is_web_public",
    "message_retention_days",
    "name",
    "pin_to_top",
    "push_notifications",
    "rendered_description",
    "stream_id",
    "stream_post_policy",
    "stream_weekly_traffic",
    "subscriber_count",
    "topics_policy",
    "wildcard_mentions_notify",
}
FOURTEEN_DAYS = 14 * 86400
_crowd = itertools.count()


def test_every_field_with_its_defaults(live):
    channel_id = make_channel(live, "general", [live.owner.id], description="**Hi**")
    [sub] = my_subscriptions(live.owner)
    assert set(sub) == SUBSCRIPTION_FIELDS
    assert sub["stream_id"] == channel_id
    expected = {
        "name": "general",
        "description": "**Hi**",
        "rendered_description": "<p><strong>Hi</strong></p>",
        "color": "#76ce90",
        "is_muted": False,
        "in_home_view": True,
        "pin_to_top": False,
        "desktop_notifications": None,
        "audible_notifications": None,
        "push_notifications": None,
        "email_notifications": None,
        "wildcard_mentions_notify": None,
        "invite_only": False,
        "is_archived": False,
        "subscriber_count": 1,
        "topics_policy": "inherit",
        "creator_id": live.owner.id,
        "date_created": int(live.clock.now),
    }
    assert {k: sub[k] for k in expected} == expected


def test_sorted_by_name_case_sensitively_and_only_active(live):
    for name in ("beta", "Zulu", "alpha", "gone"):
        make_channel(live, name, [live.owner.id])
    assert_success(unsubscribe(live.owner, ["gone"]))
    assert [s["name"] for s in my_subscriptions(live.owner)] == ["Zulu", "alpha", "beta"]


def test_archived_channels_are_listed_and_flagged(live):
    channel_id = make_channel(live, "old", [live.owner.id])
    archive(live, channel_id)
    [sub] = my_subscriptions(live.owner)
    assert sub["is_archived"] is True


@pytest.mark.parametrize("value", ["false", None])
def test_no_subscribers_by_default(live, value):
    make_channel(live, "general", [live.owner.id])
    params = {} if value is None else {"include_subscribers": value}
    [sub] = my_subscriptions(live.owner, **params)
    assert "subscribers" not in sub and "partial_subscribers" not in sub


@pytest.mark.parametrize("value", ["true", "partial"])
def test_subscribers_of_small_channels(live, value):
    member = live.make_user()
    make_channel(live, "general", [live.owner.id, member.id])
    [sub] = my_subscriptions(live.owner, include_subscribers=value)
    assert sub["subscribers"] == sorted([live.owner.id, member.id])
    assert "partial_subscribers" not in sub


@pytest.mark.parametrize("value", ["True", "1", "yes", '"true"', ""])
def test_invalid_include_subscribers(live, value):
    assert_error(
        live.owner.get("/users/me/subscriptions", {"include_subscribers": value}), "Invalid include_subscribers"
    )


def fill_channel(live, channel_id, count, last_active):
    """Insert `count` members (last active at the given time) subscribed to the channel; return their ids."""

    def insert(tx):
        ids = []
        for n in itertools.islice(_crowd, count):
            cursor = tx.execute(
                "INSERT INTO users (delivery_email, full_name, api_key, role, date_joined, last_active)"
                " VALUES (?, ?, ?, 400, ?, ?)",
                (f"crowd{n}@example.com", f"Crowd {n}", passwords.generate_api_key(), tx.timestamp, last_active),
            )
            ids.append(cursor.lastrowid)
        tx.executemany(
            "INSERT INTO subscriptions (user_id, channel_id, color) VALUES (?, ?, '#c2c2c2')",
            [(user_id, channel_id) for user_id in ids],
        )
        return ids

    return live.write(insert)


def test_partial_subscribers_of_big_channels(live):
    now = int(live.clock.now)
    big = make_channel(live, "big", [live.owner.id])
    bot_id = make_bot(live, live.owner.id)
    assert_success(subscribe(live.owner, ["big"], principals=[bot_id]))
    recent = fill_channel(live, big, 100, now - FOURTEEN_DAYS)  # exactly 14 days ago still counts
    fill_channel(live, big, 148, now - FOURTEEN_DAYS - 1)
    small = make_channel(live, "small", [live.owner.id])
    fill_channel(live, small, 248, None)  # 249 subscribers: the full list
    subs = {s["name"]: s for s in my_subscriptions(live.owner, include_subscribers="partial")}
    assert "subscribers" not in subs["big"]
    # The owner made this very request, so they are active too.
    assert subs["big"]["partial_subscribers"] == sorted([live.owner.id, bot_id, *recent])
    assert subs["big"]["subscriber_count"] == 250
    assert len(subs["small"]["subscribers"]) == 249 and "partial_subscribers" not in subs["small"]
    full = {s["name"]: s for s in my_subscriptions(live.owner, include_subscribers="true")}
    assert len(full["big"]["subscribers"]) == 250


def test_unknown_parameters_are_reported(live):
    body = assert_success(live.owner.get("/users/me/subscriptions", {"include_subscribers": "false", "foo": "1"}))
    assert body["ignored_parameters_unsupported"] == ["foo"]


def test_private_channels_stay_hidden_from_outsiders(live):
    member, outsider = live.make_user(), live.make_user()
    live.write(system_bots.notification_bot)  # created beforehand: its realm_user event goes to everyone
    before = len(live.events())
    make_channel(live, "secret", [member.id], invite_only=True)
    assert_success(subscribe(member, ["secret"], principals=[live.owner.id]))
    assert [s["name"] for s in my_subscriptions(member)] == ["secret"]
    assert my_subscriptions(outsider) == []
    assert all(outsider.id not in ids for _, ids in events_after(live, before))


def test_guests_list_their_own_subscriptions(live):
    guest = live.make_user(role="guest")
    make_channel(live, "general", [guest.id])
    [sub] = my_subscriptions(guest, include_subscribers="true")
    assert sub["subscribers"] == [guest.id]


@pytest.mark.parametrize(
    ("sql", "index"),
    [
        (subscriptions.LIST_SUBSCRIPTIONS_SQL, "subscriptions USING PRIMARY KEY (user_id=?)"),
        (subscriptions.RECENT_SUBSCRIBERS_SQL, "s USING INDEX subscriptions_by_channel (channel_id=?)"),
    ],
)
def test_queries_use_their_index(live, sql, index):
    plan = " | ".join(
        row[3] for row in live.read(lambda tx: tx.all("EXPLAIN QUERY PLAN " + sql, (1, 0)[: sql.count("?")]))
    )
    assert index in plan, plan
    assert "SCAN" not in plan, plan
