"""POST /messages: the message events and their audience, one transaction, local echo, the zulip client."""

from __future__ import annotations

import storage.messages
from storage.org import passwords
from tests.support.channel_helpers import make_channel
from tests.support.helpers import assert_error, assert_success
from tests.support.send_helpers import (
    count_rows,
    message_events,
    send,
    send_direct_ok,
    send_ok,
    stored,
    stored_flags,
)

# -- events ------------------------------------------------------------------------------------------


def test_one_event_per_distinct_flag_set(live, team):
    alice, bob, carol, channel = team
    message_id = send_ok(alice, "general", "hi @**Bob**", client="website")
    events = message_events(live, message_id)
    by_flags = {tuple(event["flags"]): audience for event, audience in events}
    assert by_flags == {(): [live.owner.id], ("read",): [alice.id], ("mentioned",): [bob.id]}
    message = events[0][0]["message"]
    assert all(event["message"] == message for event, _ in events)
    assert message["id"] == message_id and message["stream_id"] == channel
    assert message["display_recipient"] == "general" and message["subject"] == "greetings"
    assert message["content"] == f'<p>hi <span class="user-mention" data-user-id="{bob.id}">@Bob</span></p>'
    assert message["client"] == "website" and message["sender_id"] == alice.id
    assert message["timestamp"] == int(live.clock.now)


def test_event_audience_is_subscribers_and_sender(live, team):
    alice, bob, carol, _ = team
    message_id = send_ok(carol, "general")
    audience = sorted(user for _, ids in message_events(live, message_id) for user in ids)
    assert audience == [live.owner.id, alice.id, bob.id, carol.id]


def test_private_channel_event_never_reaches_non_subscribers(live, team):
    alice, bob, carol, _ = team
    admin = live.make_user("admin")
    make_channel(live, "secret", [alice.id, bob.id], invite_only=True)
    message_id = send_ok(alice, "secret", "@**all** @**Carol**")
    audience = sorted(user for _, ids in message_events(live, message_id) for user in ids)
    assert audience == [alice.id, bob.id]
    assert sorted(stored_flags(live, message_id)) == [alice.id, bob.id]
    assert admin.id not in audience and live.owner.id not in audience


def test_deactivated_subscribers_get_nothing(live, team):
    alice, bob, *_ = team
    assert_success(live.owner.delete(f"/users/{bob.id}"))
    message_id = send_ok(alice, "general")
    assert bob.id not in stored_flags(live, message_id)


def test_failed_send_publishes_nothing(live, team):
    alice, *_ = team
    before = len(live.events())
    assert_error(send(alice, "general", content=""), "Message must not be empty")
    assert len(live.events()) == before


# -- through event queues (POST /register, GET /events) ------------------------------------------------


def register(client, **params):
    return assert_success(client.post("/register", {"event_types": ["message"], **params}))["queue_id"]


def queued_messages(client, queue_id):
    params = {"queue_id": queue_id, "last_event_id": -1, "dont_block": True}
    return [e for e in assert_success(client.get("/events", params))["events"] if e["type"] == "message"]


def test_local_echo_reaches_the_sending_queue_only(live, team):
    alice, bob, *_ = team
    sending, other, bobs = register(alice), register(alice), register(bob)
    message_id = send_ok(alice, "general", queue_id=sending, local_id="12.01")
    [event] = queued_messages(alice, sending)
    assert (event["message"]["id"], event["local_message_id"]) == (message_id, "12.01")
    assert "local_message_id" not in queued_messages(alice, other)[0]
    assert "local_message_id" not in queued_messages(bob, bobs)[0]


def test_queued_message_events_carry_no_private_keys(live, team):
    alice, bob, *_ = team
    queue_id = register(bob, apply_markdown=False)
    send_ok(alice, "general", "**bold** @**Bob**", queue_id="elsewhere", local_id="1")
    [event] = queued_messages(bob, queue_id)
    assert set(event) == {"type", "message", "flags", "id"}
    assert event["flags"] == ["mentioned"]
    assert (event["message"]["content"], event["message"]["content_type"]) == ("**bold** @**Bob**", "text/x-markdown")
    assert not [key for key in event["message"] if key.startswith("_")]


def test_all_public_streams_queues_see_public_channels_only(live, team):
    alice, bob, carol, _ = team
    make_channel(live, "secret", [alice.id, bob.id], invite_only=True)
    queue_id = register(carol, all_public_streams=True)
    public = send_ok(alice, "general")
    send_ok(alice, "secret")
    send_direct_ok(alice, [bob.id])
    assert [(e["message"]["id"], e["flags"]) for e in queued_messages(carol, queue_id)] == [(public, [])]


# -- one transaction ------------------------------------------------------------------------------


def add_subscribers(live, channel_id, count):
    """Insert `count` users subscribed to the channel directly (no password hashing, no events)."""

    def insert(tx):
        first = tx.value("SELECT max(id) FROM users") + 1
        tx.executemany(
            "INSERT INTO users (id, delivery_email, full_name, api_key, role, date_joined, email_address_visibility)"
            " VALUES (?, ?, ?, ?, 400, ?, 1)",
            [
                (first + n, f"bulk{n}@example.com", f"Bulk {n}", passwords.generate_api_key(), tx.timestamp)
                for n in range(count)
            ],
        )
        tx.executemany(
            "INSERT INTO subscriptions (user_id, channel_id, color) VALUES (?, ?, '#c2c2c2')",
            [(first + n, channel_id) for n in range(count)],
        )

    live.write(insert)


def test_thousand_subscribers_in_one_transaction(live, monkeypatch):
    channel = make_channel(live, "crowd", [live.owner.id])
    add_subscribers(live, channel, 999)
    messages, rows = count_rows(live, "messages"), count_rows(live, "user_messages")

    message_id = send_ok(live.owner, channel, "to everyone")
    assert count_rows(live, "messages") == messages + 1
    assert count_rows(live, "user_messages") == rows + 1000
    assert len(stored_flags(live, message_id)) == 1000
    assert sum(len(ids) for _, ids in message_events(live, message_id)) == 1000

    def fail(*args, **kwargs):
        raise RuntimeError("publishing failed")

    # A failure after the message and its 1000 rows were inserted rolls all of them back.
    monkeypatch.setattr(storage.messages.messages, "publish_message", fail)
    events = len(live.events())
    response = send(live.owner, channel, "lost")
    assert response.status_code == 500
    assert response.json()["result"] == "error"
    assert count_rows(live, "messages") == messages + 1
    assert count_rows(live, "user_messages") == rows + 1000
    assert live.read(lambda tx: tx.value("SELECT count(*) FROM messages WHERE content = 'lost'")) == 0
    assert live.read(lambda tx: tx.value("SELECT count(*) FROM messages_fts WHERE messages_fts MATCH 'lost'")) == 0
    assert len(live.events()) == events

    monkeypatch.undo()
    assert send_ok(live.owner, channel, "back") == message_id + 1


def test_failed_direct_message_leaves_no_conversation(live, team, monkeypatch):
    alice, bob, *_ = team

    def fail(*args, **kwargs):
        raise RuntimeError("publishing failed")

    monkeypatch.setattr(storage.messages.messages, "publish_message", fail)
    groups = count_rows(live, "direct_message_groups")
    assert send(alice, [bob.id], type="direct", topic=None).status_code == 500
    assert count_rows(live, "direct_message_groups") == groups
    assert count_rows(live, "user_messages") == 0


# -- the zulip client ---------------------------------------------------------------------------------


def test_zulip_client_sends_to_a_channel(live, zulip_client):
    channel = make_channel(live, "general", [live.owner.id])
    result = zulip_client.send_message({"type": "stream", "to": "general", "topic": "from python", "content": "hi"})
    assert result["result"] == "success", result
    row = stored(live, result["id"])
    assert (row["channel_id"], row["topic"], row["content"]) == (channel, "from python", "hi")
    assert row["client"].startswith("ZulipPython")
    result = zulip_client.send_message({"type": "channel", "to": channel, "topic": "by id", "content": "hi"})
    assert stored(live, result["id"])["channel_id"] == channel


def test_zulip_client_sends_direct_messages(live, zulip_client):
    alice = live.make_user(email="alice@example.com")
    result = zulip_client.send_message({"type": "private", "to": ["alice@example.com"], "content": "hello"})
    assert result["result"] == "success", result
    assert sorted(stored_flags(live, result["id"])) == [live.owner.id, alice.id]
    result = zulip_client.send_message({"type": "direct", "to": [alice.id], "content": "again"})
    assert sorted(stored_flags(live, result["id"])) == [live.owner.id, alice.id]


def test_zulip_client_gets_errors(live, zulip_client):
    result = zulip_client.send_message({"type": "stream", "to": "nowhere", "topic": "t", "content": "x"})
    assert result == {
        "result": "error",
        "msg": "Channel 'nowhere' does not exist",
        "code": "STREAM_DOES_NOT_EXIST",
        "stream": "nowhere",
    }
