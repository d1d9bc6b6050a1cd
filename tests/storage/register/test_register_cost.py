"""POST /register's channel objects built in bulk (issue 12 point 5) equal channels.channel_object's."""

from __future__ import annotations

import sqlite3

import msgspec
import pytest

from storage.channels.channel_objects import channel_object
from storage.channels.channels import has_content_access, has_metadata_access
from storage.membership import subscriptions
from storage.model.channel import get_channel_by_id
from storage.org import groups
from storage.org.users import get_user_by_id
from storage.register.register_channels import SUBSCRIBER_COUNTS_SQL, ChannelObjects, subscriber_counts
from tests.support.channel_helpers import archive, make_channel
from tests.support.events_helpers import register, send_stream
from tests.support.helpers import assert_success

DAY = 86400


def group_id(live, name):
    return live.read(groups.system_group_id, name)


@pytest.fixture
def realm(live):
    """Channels of every kind, with traffic of several ages, and a deactivated subscriber."""
    live.write(lambda tx: tx.execute("UPDATE realm SET enable_spectator_access = 1"))
    member, guest, leaving = live.make_user(), live.make_user(role="guest"), live.make_user()
    everyone = [live.owner.id, member.id, guest.id, leaving.id]
    moderators = group_id(live, "role:moderators")
    make_channel(live, "old quiet", everyone)
    live.clock.advance(200 * DAY)  # "old quiet" has no message in 180 days
    make_channel(live, "general", everyone)
    make_channel(live, "secret", [live.owner.id, member.id], invite_only=True)
    make_channel(live, "web", [member.id], is_web_public=True)
    make_channel(live, "news", everyone, can_send_message_group=group_id(live, "role:administrators"))
    make_channel(
        live,
        "mixed",
        [member.id, leaving.id],
        can_send_message_group=moderators,
        can_administer_channel_group={"direct_members": [member.id, leaving.id], "direct_subgroups": [moderators]},
    )
    gone = make_channel(live, "gone", [member.id])
    for n in range(3):
        send_stream(live.owner, "general", f"early {n}")
    live.clock.advance(10 * DAY)  # traffic counts from a window at least a week old
    send_stream(live.owner, "general", "late")
    send_stream(live.owner, "secret", "late")
    send_stream(live.owner, "mixed", "late")
    archive(live, gone)
    assert_success(live.owner.delete(f"/users/{leaving.id}"))
    return {"member": member, "guest": guest}


def test_every_channel_object_equals_channel_object(live, realm):
    def both(tx):
        objects = ChannelObjects(tx)
        pairs = []
        for channel_id in sorted(objects.channels):
            single = channel_object(tx, get_channel_by_id(tx, channel_id), tx.now)
            pairs.append((msgspec.json.encode(objects.object(channel_id)), msgspec.json.encode(single)))
        return pairs

    pairs = live.read(both)
    assert len(pairs) == 7
    for bulk, single in pairs:
        assert bulk == single, "same keys, same order, same values"
    shown = [msgspec.json.decode(bulk) for bulk, _ in pairs]
    mixed = next(c for c in shown if c["name"] == "mixed")
    assert mixed["can_administer_channel_group"]["direct_members"] == [realm["member"].id], "deactivated left out"
    assert mixed["subscriber_count"] == 1
    assert {c["name"]: c["is_recently_active"] for c in shown}["old quiet"] is False
    assert next(c for c in shown if c["name"] == "general")["stream_weekly_traffic"] is not None


@pytest.mark.parametrize("who", ["owner", "member", "guest"])
@pytest.mark.parametrize("include_subscribers", ["false", "true", "partial"])
def test_register_sections_equal_the_per_channel_path(live, realm, who, include_subscribers):
    """streams, subscriptions, unsubscribed and never_subscribed as the per-channel code builds them."""
    client = live.owner if who == "owner" else realm[who]
    state = register(client, include_subscribers=include_subscribers)
    streams, subscribed, left, never = live.read(per_channel_state, client.id, include_subscribers)
    assert state["streams"] == streams
    assert state["subscriptions"] == subscribed
    assert (state["unsubscribed"], state["never_subscribed"]) == (left, never)
    names = {c["name"] for c in state["streams"]}
    assert ("secret" in names) is (who != "guest")


def per_channel_state(tx, user_id, include_subscribers):
    """The four sections from channels.channel_object, one channel at a time (the code before issue 12)."""
    user = get_user_by_id(tx, user_id)
    channel_ids = tx.column("SELECT id FROM channels WHERE NOT is_archived ORDER BY name")
    visible = [get_channel_by_id(tx, c) for c in channel_ids]
    visible = [c for c in visible if has_metadata_access(tx, user, c)]
    streams = [channel_object(tx, c, tx.now) for c in visible]
    subscribed = subscriptions.list_subscriptions(tx, user, include_subscribers)
    joined = {s["stream_id"] for s in subscribed}
    gone = set(tx.column("SELECT channel_id FROM subscriptions WHERE user_id = ? AND NOT active", (user_id,)))
    left, never = [], []
    for channel in visible:
        if channel.id in joined:
            continue
        obj = channel_object(tx, channel, tx.now)
        if include_subscribers != "false" and has_content_access(tx, user, channel):
            obj["subscribers"] = subscriptions.subscriber_ids(tx, channel.id)
        (left if channel.id in gone else never).append(obj)
    return streams, subscribed, left, never


def test_subscriber_counts_use_the_active_subscriptions_index(live):
    plan = live.read(lambda tx: [row[3] for row in tx.all("EXPLAIN QUERY PLAN " + SUBSCRIBER_COUNTS_SQL)])
    assert any("INDEX subscriptions_by_channel" in step for step in plan), plan


def counted(tx):
    """(the kept counts, a fresh count) read in one transaction."""
    return subscriber_counts(tx), dict(tx.execute(SUBSCRIBER_COUNTS_SQL).fetchall())


def test_subscriber_counts_are_kept_until_a_write_changes_them(live):
    member, other = live.make_user(), live.make_user()
    channel_id = make_channel(live, "kept", [live.owner.id, member.id])
    first, fresh = live.read(counted)
    assert first == fresh and first[channel_id] == 2
    again, _ = live.read(counted)
    assert again is first  # no write since: the same counts, not read again
    live.write(lambda tx: tx.execute("UPDATE users SET last_active = 1 WHERE id = ?", (member.id,)))
    assert live.read(counted)[0] is first  # a write to other columns keeps them
    assert_success(live.owner.post("/users/me/subscriptions", {"subscriptions": '[{"name": "kept"}]',
                                                               "principals": f"[{other.id}]"}))  # fmt: skip
    added, fresh = live.read(counted)
    assert added == fresh and added[channel_id] == 3
    assert_success(live.owner.delete(f"/users/{other.id}"))  # deactivated: no longer counted
    deactivated, fresh = live.read(counted)
    assert deactivated == fresh and deactivated[channel_id] == 2
    assert_success(member.delete("/users/me/subscriptions", {"subscriptions": '["kept"]'}))
    left, fresh = live.read(counted)
    assert left == fresh and left[channel_id] == 1
    state = register(live.owner, fetch_event_types=["subscription"])
    assert [s["subscriber_count"] for s in state["subscriptions"] if s["stream_id"] == channel_id] == [1]


def test_subscriber_counts_read_in_a_rolled_back_write_are_not_kept(live):
    member = live.make_user()
    channel_id = make_channel(live, "rolled", [live.owner.id])
    assert live.read(counted)[0][channel_id] == 1

    def subscribe_then_fail(tx):
        subscriptions.subscribe(tx, [get_channel_by_id(tx, channel_id)], [member.id])
        inside, fresh = counted(tx)
        assert inside == fresh and inside[channel_id] == 2  # the transaction sees its own write
        raise RuntimeError("rolled back")

    with pytest.raises(RuntimeError):
        live.write(subscribe_then_fail)
    after, fresh = live.read(counted)
    assert after == fresh and after[channel_id] == 1


def test_subscriber_counts_follow_writes_from_another_connection(live):
    member = live.make_user()
    channel_id = make_channel(live, "elsewhere", [live.owner.id])
    assert live.read(counted)[0][channel_id] == 1
    with sqlite3.connect(live.server.settings.database_path) as other:  # no triggers there: data_version tells
        other.execute("INSERT INTO subscriptions (user_id, channel_id, color) VALUES (?, ?, '#c2c2c2')",
                      (member.id, channel_id))  # fmt: skip
    other.close()
    after, fresh = live.read(counted)
    assert after == fresh and after[channel_id] == 2


def test_subscriber_counts_read_before_a_write_in_the_same_transaction_are_not_kept(live):
    member = live.make_user()
    channel_id = make_channel(live, "later", [live.owner.id])

    def count_then_subscribe(tx):
        assert counted(tx)[0][channel_id] == 1
        subscriptions.subscribe(tx, [get_channel_by_id(tx, channel_id)], [member.id])

    live.write(count_then_subscribe)
    after, fresh = live.read(counted)
    assert after == fresh and after[channel_id] == 2


def test_message_statistics_in_bulk_equal_channel_object(live):
    """Traffic over the whole window (counted for all channels at once) and over a young channel's age."""
    make_channel(live, "old busy", [live.owner.id])
    make_channel(live, "old silent", [live.owner.id])
    for n in range(3):
        send_stream(live.owner, "old busy", f"before the window {n}")
    live.clock.advance(40 * DAY)
    make_channel(live, "young", [live.owner.id])
    for n in range(6):
        send_stream(live.owner, "old busy", f"in the window {n}")
        send_stream(live.owner, "young", f"young {n}")
        live.clock.advance(2 * DAY)
    make_channel(live, "new", [live.owner.id])
    live.clock.advance(DAY)

    def both(tx):
        objects = ChannelObjects(tx)
        return [
            (objects.object(channel_id), channel_object(tx, get_channel_by_id(tx, channel_id), tx.now))
            for channel_id in sorted(objects.channels)
        ]

    pairs = live.read(both)
    for bulk, single in pairs:
        assert msgspec.json.encode(bulk) == msgspec.json.encode(single)
    traffic = {bulk["name"]: bulk["stream_weekly_traffic"] for bulk, _ in pairs}
    assert traffic == {"old busy": 2, "old silent": 0, "young": 3, "new": None}  # 6 * 7 / 28; 6 * 7 / 13


def test_kept_channels_and_groups_follow_every_change(live):
    """Channels, groups and their members are kept between registrations and dropped by each write."""
    member = live.make_user()
    channel_id = make_channel(live, "kept channel", [live.owner.id, member.id])

    def objects(tx):
        found = ChannelObjects(tx)
        for single_id in found.channels:  # always what channel_object builds
            single = channel_object(tx, get_channel_by_id(tx, single_id), tx.now)
            assert msgspec.json.encode(found.object(single_id)) == msgspec.json.encode(single)
        return found.channels, found.object(channel_id)

    channels, _ = live.read(objects)
    assert live.read(objects)[0] is channels  # nothing written: kept
    assert_success(live.owner.patch(f"/streams/{channel_id}", {"new_name": "renamed"}))
    channels, shown = live.read(objects)
    assert shown["name"] == "renamed"
    anonymous = msgspec.json.encode({"new": {"direct_members": [member.id], "direct_subgroups": []}}).decode()
    assert_success(live.owner.patch(f"/streams/{channel_id}", {"can_administer_channel_group": anonymous}))
    _, shown = live.read(objects)
    assert shown["can_administer_channel_group"] == {"direct_members": [member.id], "direct_subgroups": []}
    group = live.read(
        lambda tx: tx.value("SELECT can_administer_channel_group FROM channels WHERE id = ?", (channel_id,))
    )
    live.write(lambda tx: tx.execute("INSERT INTO user_group_members VALUES (?, ?)", (group, live.owner.id)))
    _, shown = live.read(objects)  # a member written in place (no other table changed)
    assert shown["can_administer_channel_group"]["direct_members"] == sorted([member.id, live.owner.id])
    assert_success(live.owner.delete(f"/users/{member.id}"))  # deactivated: out of the group and the count
    _, shown = live.read(objects)
    assert shown["can_administer_channel_group"]["direct_members"] == [live.owner.id]
    assert shown["subscriber_count"] == 1
    archive(live, channel_id)
    assert live.read(objects)[1]["is_archived"] is True
    other = make_channel(live, "another", [live.owner.id])
    assert other in live.read(objects)[0]
