"""Muted users: POST/DELETE /users/me/muted_users/{id}, the muted_users event and register state,
and what muting does: messages from the muted user arrive read, unread ones are read at once, and
none of them notify a phone."""

from __future__ import annotations

import pytest

from storage.messages import muted_users
from tests.support.events_helpers import register
from tests.support.helpers import assert_error, assert_success, events_since, make_bot
from tests.support.push_notify_helpers import add_device, notified_message_ids
from tests.support.send_helpers import message_events, send_direct_ok, send_ok, stored_flags


def path(user_id):
    return f"/users/me/muted_users/{user_id}"


def muted(client):
    return register(client, fetch_event_types=["muted_users"])["muted_users"]


def unread_count(client):
    return register(client, fetch_event_types=["message"])["unread_msgs"]["count"]


def test_mute_and_unmute(live):
    alice = live.make_user()
    bob = live.make_user()
    count = len(live.events())
    assert_success(alice.post(path(bob.id)))
    now = int(live.clock.now)
    assert muted(alice) == [{"id": bob.id, "timestamp": now}]
    assert events_since(live, count, "muted_users") == [
        ({"type": "muted_users", "muted_users": [{"id": bob.id, "timestamp": now}]}, [alice.id])
    ]
    assert muted(bob) == []  # muting is one-way and private
    count = len(live.events())
    assert_success(alice.delete(path(bob.id)))
    assert muted(alice) == []
    assert events_since(live, count, "muted_users") == [({"type": "muted_users", "muted_users": []}, [alice.id])]


def test_bots_and_deactivated_users_can_be_muted(live):
    alice = live.make_user()
    bot_id = make_bot(live, live.owner.id)
    gone = live.make_user()
    live.write(lambda tx: tx.execute("UPDATE users SET is_active = 0 WHERE id = ?", (gone.id,)))
    assert_success(alice.post(path(bot_id)))
    assert_success(alice.post(path(gone.id)))
    assert [item["id"] for item in muted(alice)] == [bot_id, gone.id]


@pytest.mark.parametrize(
    ("method", "target", "msg"),
    [
        ("post", "self", "Cannot mute self"),
        ("post", "muted", "User already muted"),
        ("post", 999, "No such user"),
        ("delete", "other", "User is not muted"),
        ("delete", 999, "No such user"),
    ],
)
def test_errors_change_nothing(live, method, target, msg):
    alice = live.make_user()
    bob = live.make_user()
    carol = live.make_user()
    assert_success(alice.post(path(bob.id)))
    before = muted(alice)
    count = len(live.events())
    user_id = {"self": alice.id, "muted": bob.id, "other": carol.id}.get(target, target)
    assert_error(alice.request(method.upper(), path(user_id)), msg)
    assert muted(alice) == before
    assert live.events()[count:] == []


def test_messages_from_a_muted_user_arrive_read(people):
    live, alice, bob = people, people.alice, people.bob
    assert_success(alice.post(path(bob.id)))
    channel_message = send_ok(bob, "general", "hello all")
    direct_message = send_direct_ok(bob, [alice.id], "hello you")
    for message_id in (channel_message, direct_message):
        assert "read" in stored_flags(live, message_id)[alice.id]
        [alice_event] = [e for e, ids in message_events(live, message_id) if alice.id in ids]
        assert "read" in alice_event["flags"]
    assert "read" not in stored_flags(live, channel_message)[live.owner.id]
    assert unread_count(alice) == 0
    # Unmuting changes what comes next, not what came before.
    assert_success(alice.delete(path(bob.id)))
    later = send_ok(bob, "general", "again")
    assert "read" not in stored_flags(live, later)[alice.id]
    assert unread_count(alice) == 1


def test_muting_reads_what_the_muted_user_sent(people):
    live, alice, bob = people, people.alice, people.bob
    from_bob = [send_ok(bob, "general", "one"), send_direct_ok(bob, [alice.id], "two")]
    from_owner = send_ok(live.owner, "general", "three")
    count = len(live.events())
    assert_success(alice.post(path(bob.id)))
    flag_events = events_since(live, count, "update_message_flags")
    assert flag_events == [
        ({"type": "update_message_flags", "op": "add", "operation": "add", "flag": "read", "messages": from_bob,
          "all": False}, [alice.id])
    ]  # fmt: skip
    assert "read" not in stored_flags(live, from_owner)[alice.id]
    assert unread_count(alice) == 1


def test_no_push_notification_from_a_muted_user(people):
    live, alice, bob = people, people.alice, people.bob
    phone = add_device(live, alice.id)
    first = send_direct_ok(bob, [alice.id], "before muting")
    assert notified_message_ids(live, phone) == [first]
    assert_success(alice.post(path(bob.id)))
    assert notified_message_ids(live, phone) == []  # the waiting notification is withdrawn
    send_direct_ok(bob, [alice.id], "after muting")
    assert notified_message_ids(live, phone) == []
    from_owner = send_direct_ok(live.owner, [alice.id], "someone else")
    assert notified_message_ids(live, phone) == [from_owner]


def test_query_plans(live):
    """Every send asks who muted its sender: one probe of muted_users_by_muted; muting reads the
    muting user's unread rows through user_messages_unread."""

    def details(sql, params):
        return " | ".join(row["detail"] for row in live.read(lambda tx: tx.all("EXPLAIN QUERY PLAN " + sql, params)))

    assert "USING COVERING INDEX muted_users_by_muted (muted_user_id=?)" in details(muted_users.MUTERS_SQL, (1,))
    plan = details(muted_users.UNREAD_FROM_SENDER, (1, 2))
    assert "USING INDEX user_messages_unread (user_id=?)" in plan and "TEMP B-TREE" not in plan
