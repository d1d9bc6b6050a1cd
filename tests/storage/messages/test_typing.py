"""Typing notifications: POST /typing (direct and channel) and POST /messages/{id}/typing (editing)."""

from __future__ import annotations

import pytest

from storage.messages.typing_notifications import DECLINED_SQL
from tests.support.channel_helpers import make_channel, set_channel_group
from tests.support.events_helpers import events_now, of_type, register
from tests.support.helpers import assert_error, assert_success, events_since
from tests.support.send_helpers import send_direct_ok, send_ok


def typing_events(live, count, event_type="typing"):
    return events_since(live, count, event_type)


def person(client):
    return {"user_id": client.id, "email": client.email}


def database_changes(live):
    return live.call(lambda: live.server.db.conn.total_changes)


def test_direct_typing_reaches_the_other_participants(live):
    alice, bob = live.make_user(), live.make_user()
    count = len(live.events())
    assert_success(live.owner.post("/typing", {"op": "start", "to": [bob.id, alice.id]}))
    assert_success(live.owner.post("/typing", {"op": "stop", "type": "private", "to": [alice.id, bob.id]}))
    events = typing_events(live, count)
    recipients = [person(live.owner), person(alice), person(bob)]
    assert events == [
        (
            {
                "type": "typing",
                "op": op,
                "message_type": "direct",
                "sender": person(live.owner),
                "recipients": recipients,
            },
            [alice.id, bob.id],
        )  # fmt: skip
        for op in ("start", "stop")
    ]


def test_typing_writes_nothing(live):
    alice = live.make_user()
    channel_id = make_channel(live, "design", [alice.id])
    assert_success(live.owner.get("/users/me"))  # the first request of the day records activity
    before = database_changes(live)
    assert_success(live.owner.post("/typing", {"op": "start", "to": [alice.id]}))
    assert_success(live.owner.post("/typing", {"op": "start", "type": "stream", "stream_id": channel_id, "topic": "x"}))
    assert database_changes(live) == before


def test_deactivated_participants_are_listed_but_not_told(live):
    alice, bob = live.make_user(), live.make_user()
    assert_success(live.owner.delete(f"/users/{bob.id}"))
    count = len(live.events())
    assert_success(live.owner.post("/typing", {"op": "start", "to": [alice.id, bob.id]}))
    [(event, user_ids)] = typing_events(live, count)
    assert [r["user_id"] for r in event["recipients"]] == [live.owner.id, alice.id, bob.id]
    assert user_ids == [alice.id]


def test_typing_to_oneself_tells_nobody(live):
    count = len(live.events())
    assert_success(live.owner.post("/typing", {"op": "start", "to": [live.owner.id]}))
    assert [user_ids for _, user_ids in typing_events(live, count)] == [[]]


@pytest.mark.parametrize(
    ("params", "msg", "code"),
    [
        ({"to": [2]}, "Missing 'op' argument", "REQUEST_VARIABLE_MISSING"),
        ({"op": "typing", "to": [2]}, "Invalid op", "BAD_REQUEST"),
        ({"op": "start", "type": "huddle", "to": [2]}, "Invalid type", "BAD_REQUEST"),
        ({"op": "start"}, "Missing 'to' argument", "REQUEST_VARIABLE_MISSING"),
        ({"op": "start", "to": []}, "Empty 'to' list", "BAD_REQUEST"),
        ({"op": "start", "to": [2, 99999]}, "Invalid user ID 99999", "BAD_REQUEST"),
        ({"op": "start", "to": [0]}, "Invalid user ID 0", "BAD_REQUEST"),
        ({"op": "start", "to": ["a"]}, "to[0] is not an integer", "BAD_REQUEST"),
        ({"op": "start", "to": "2"}, "to is not a list", "BAD_REQUEST"),
        ({"op": "start", "type": "stream", "topic": "x"}, "Missing 'stream_id' argument", "REQUEST_VARIABLE_MISSING"),
        ({"op": "start", "type": "channel", "stream_id": 1}, "Missing topic", "BAD_REQUEST"),
        ({"op": "start", "type": "stream", "stream_id": 99999, "topic": "x"}, "Invalid channel ID", "BAD_REQUEST"),
    ],
)
def test_errors(live, params, msg, code):
    live.make_user()  # user 2
    count = len(live.events())
    assert_error(live.owner.post("/typing", params), msg, code)
    assert typing_events(live, count) == []


def test_channel_typing_reaches_subscribers_who_can_read(live):
    alice, bob, carol = live.make_user(), live.make_user(), live.make_user()
    channel_id = make_channel(live, "design", [live.owner.id, alice.id, bob.id])
    count = len(live.events())
    params = {"op": "start", "type": "channel", "stream_id": channel_id, "topic": " plans "}
    assert_success(live.owner.post("/typing", params))
    [(event, user_ids)] = typing_events(live, count)
    assert event == {"type": "typing", "op": "start", "message_type": "stream", "sender": person(live.owner),
                     "stream_id": channel_id, "topic": "plans"}  # fmt: skip
    assert user_ids == [alice.id, bob.id]  # not the sender, not carol (not subscribed)
    # carol may type there too (a public channel), without being subscribed
    assert_success(carol.post("/typing", params))
    assert typing_events(live, count)[-1][1] == [live.owner.id, alice.id, bob.id]


def test_private_channel_is_invisible_to_outsiders(live):
    alice, outsider = live.make_user(), live.make_user()
    channel_id = make_channel(live, "secret", [alice.id], invite_only=True)
    params = {"op": "start", "type": "stream", "stream_id": channel_id, "topic": "x"}
    count = len(live.events())
    assert_error(outsider.post("/typing", params), "Invalid channel ID")
    assert typing_events(live, count) == []


def test_channel_posting_permission(live):
    alice = live.make_user()
    channel_id = make_channel(live, "news", [alice.id])
    set_channel_group(live, channel_id, "can_send_message_group", "role:administrators")
    params = {"op": "start", "type": "stream", "stream_id": channel_id, "topic": "x"}
    assert_error(alice.post("/typing", params), "You do not have permission to post in this channel.")


def test_big_channels_get_no_typing_events(live):
    members = [live.make_user(password=None) for _ in range(101)]  # Zulip's limit: 100 subscribers
    channel_id = make_channel(live, "everyone", [m.id for m in members])
    count = len(live.events())
    assert_success(live.owner.post("/typing", {"op": "start", "type": "stream", "stream_id": channel_id, "topic": "x"}))
    assert typing_events(live, count) == []


def test_queues_get_channel_typing_only_with_the_capability(live):
    alice = live.make_user()
    channel_id = make_channel(live, "design", [alice.id])
    plain = register(alice, event_types=["typing"])["queue_id"]
    both = {"stream_typing_notifications": True, "empty_topic_name": True}
    capable = register(alice, event_types=["typing"], client_capabilities=both)["queue_id"]
    renamed = register(alice, event_types=["typing"], client_capabilities={"stream_typing_notifications": True})
    assert_success(live.owner.post("/typing", {"op": "start", "to": [alice.id]}))
    params = {"op": "start", "type": "stream", "stream_id": channel_id, "topic": "general chat"}
    assert_success(live.owner.post("/typing", params))
    assert [e["message_type"] for e in of_type(events_now(alice, plain), "typing")] == ["direct"]
    [_, channel_event] = of_type(events_now(alice, capable), "typing")
    assert channel_event["topic"] == ""
    [_, channel_event] = of_type(events_now(alice, renamed["queue_id"]), "typing")
    assert channel_event["topic"] == "general chat"


def test_typing_settings(live):
    alice, bob = live.make_user(), live.make_user()
    channel_id = make_channel(live, "design", [alice.id, bob.id])
    assert_success(bob.patch("/settings", {"receives_typing_notifications": False}))
    count = len(live.events())
    assert_success(live.owner.post("/typing", {"op": "start", "to": [alice.id, bob.id]}))
    assert typing_events(live, count)[-1][1] == [alice.id]
    assert_success(live.owner.patch("/settings", {"send_private_typing_notifications": False}))
    response = live.owner.post("/typing", {"op": "start", "to": [alice.id]})
    assert_error(response, "User has disabled typing notifications for direct messages")
    assert_success(live.owner.patch("/settings", {"send_stream_typing_notifications": False}))
    params = {"op": "start", "type": "stream", "stream_id": channel_id, "topic": "x"}
    assert_error(live.owner.post("/typing", params), "User has disabled typing notifications for channel messages")


def test_edit_typing(live):
    alice, bob = live.make_user(), live.make_user()
    channel_id = make_channel(live, "design", [alice.id, bob.id])
    message_id = send_ok(live.owner, channel_id, topic="plans")
    direct_id = send_direct_ok(live.owner, [alice.id])
    count = len(live.events())
    assert_success(live.owner.post(f"/messages/{message_id}/typing", {"op": "start"}))
    assert_success(live.owner.post(f"/messages/{direct_id}/typing", {"op": "stop"}))
    events = typing_events(live, count, "typing_edit_message")
    assert events == [
        ({"type": "typing_edit_message", "op": "start", "sender_id": live.owner.id, "message_id": message_id,
          "recipient": {"type": "channel", "channel_id": channel_id, "topic": "plans"}}, [alice.id, bob.id]),
        ({"type": "typing_edit_message", "op": "stop", "sender_id": live.owner.id, "message_id": direct_id,
          "recipient": {"type": "direct", "user_ids": [live.owner.id, alice.id]}}, [alice.id]),
    ]  # fmt: skip


def test_edit_typing_errors(live):
    alice, outsider = live.make_user(), live.make_user()
    direct_id = send_direct_ok(live.owner, [alice.id])
    count = len(live.events())
    assert_error(alice.post(f"/messages/{direct_id}/typing", {"op": "start"}),
                 "You don't have permission to edit this message")  # fmt: skip
    assert_error(outsider.post(f"/messages/{direct_id}/typing", {"op": "start"}), "Invalid message(s)")
    assert_error(live.owner.post("/messages/99999/typing", {"op": "start"}), "Invalid message(s)")
    assert_error(live.owner.post(f"/messages/{direct_id}/typing", {"op": "go"}), "Invalid op")
    assert_error(live.owner.post(f"/messages/{direct_id}/typing", {}), "Missing 'op' argument",
                 "REQUEST_VARIABLE_MISSING")  # fmt: skip
    assert typing_events(live, count, "typing_edit_message") == []


def test_zulip_client_sets_typing_status(live, zulip_client):
    alice = live.make_user()
    count = len(live.events())
    assert zulip_client.set_typing_status({"op": "start", "to": [alice.id]})["result"] == "success"
    assert typing_events(live, count)[0][1] == [alice.id]


def test_declined_receivers_query_plan(live):
    """Who of the audience declined typing notifications: one primary-key lookup per audience member."""
    plan = live.read(lambda tx: [row["detail"] for row in tx.all("EXPLAIN QUERY PLAN " + DECLINED_SQL, ("[1, 2]",))])
    assert plan[0] == "SEARCH user_settings USING PRIMARY KEY (user_id=? AND name=?)"
