"""Message statistics of channel objects: first_message_id, stream_weekly_traffic, is_recently_active."""

from __future__ import annotations

from tests.support.channel_helpers import make_channel
from tests.support.helpers import assert_success
from tests.support.send_helpers import send_ok

DAY = 86400


def channel(live, channel_id):
    return assert_success(live.owner.get(f"/streams/{channel_id}"))["stream"]


def test_a_new_channel_has_no_statistics_yet(live):
    channel_id = make_channel(live, "fresh", [live.owner.id])
    stats = channel(live, channel_id)
    assert (stats["first_message_id"], stats["stream_weekly_traffic"], stats["is_recently_active"]) == (
        None,
        None,
        True,
    )


def test_first_message_id_is_the_oldest_message(live):
    channel_id = make_channel(live, "chatty", [live.owner.id])
    first = send_ok(live.owner, channel_id, topic="t")
    send_ok(live.owner, channel_id, topic="t")
    assert channel(live, channel_id)["first_message_id"] == first
    subscriptions = assert_success(live.owner.get("/users/me/subscriptions"))["subscriptions"]
    assert [s["first_message_id"] for s in subscriptions if s["stream_id"] == channel_id] == [first]


def test_weekly_traffic_averages_the_last_four_weeks(live):
    channel_id = make_channel(live, "busy", [live.owner.id])
    live.clock.advance(6 * DAY)
    for _ in range(3):
        send_ok(live.owner, channel_id, topic="t")
    assert channel(live, channel_id)["stream_weekly_traffic"] is None  # less than a week old
    live.clock.advance(1 * DAY)
    assert channel(live, channel_id)["stream_weekly_traffic"] == 3  # 3 messages in its first week
    live.clock.advance(7 * DAY)
    assert channel(live, channel_id)["stream_weekly_traffic"] == 2  # 3 in two weeks, rounded
    live.clock.advance(28 * DAY)
    assert channel(live, channel_id)["stream_weekly_traffic"] == 0  # nothing in the last four weeks


def test_recently_active_until_half_a_year_without_messages(live):
    quiet = make_channel(live, "quiet", [live.owner.id])
    active = make_channel(live, "active", [live.owner.id])
    live.clock.advance(179 * DAY)
    send_ok(live.owner, active, topic="t")
    live.clock.advance(2 * DAY)
    assert channel(live, quiet)["is_recently_active"] is False
    assert channel(live, active)["is_recently_active"] is True
