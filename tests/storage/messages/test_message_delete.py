"""DELETE /messages/{id}: who may delete, what goes with a message, and the delete_message event."""

from __future__ import annotations

import pytest

from tests.support.channel_helpers import archive, make_channel, set_channel_group, set_realm_group
from tests.support.helpers import assert_error, assert_success, make_bot
from tests.support.send_helpers import count_rows, send_direct_ok, send_ok

NO_DELETE = "You don't have permission to delete this message"
INVALID = "Invalid message(s)"


@pytest.fixture
def lunch_and_dinner(live):
    """Members sam and otto in public "lunch" and "dinner"; one message of sam's in each."""
    sam, otto = live.make_user(), live.make_user()
    lunch = make_channel(live, "lunch", [live.owner.id, sam.id, otto.id])
    dinner = make_channel(live, "dinner", [sam.id, otto.id])
    return live, sam, otto, lunch, dinner, send_ok(sam, lunch, "soup", "menu"), send_ok(sam, dinner, "stew", "menu")


def delete(client, message_id, **params):
    return client.delete(f"/messages/{message_id}", params)


def exists(live, message_id):
    return live.read(lambda tx: tx.value("SELECT count(*) FROM messages WHERE id = ?", (message_id,))) == 1


def test_sender_deletes_own_message(lunch_and_dinner):
    live, sam, otto, lunch, _, message_id, _ = lunch_and_dinner
    live.write(lambda tx: tx.execute(
        "INSERT INTO reactions (message_id, user_id, emoji_name, emoji_code, reaction_type)"
        " VALUES (?, ?, 'smile', '1f642', 'unicode_emoji')", (message_id, otto.id)))  # fmt: skip
    body = assert_success(delete(sam, message_id))
    assert set(body) == {"result", "msg"}
    assert not exists(live, message_id)
    assert count_rows(live, "reactions") == 0
    assert live.read(lambda tx: tx.value("SELECT count(*) FROM user_messages WHERE message_id = ?", (message_id,))) == 0
    assert_error(otto.get(f"/messages/{message_id}"), INVALID)
    assert_error(delete(sam, message_id), INVALID)
    narrow = [{"operator": "search", "operand": "soup"}]
    found = assert_success(
        otto.get("/messages", {"anchor": "newest", "num_before": 5, "num_after": 0, "narrow": narrow})
    )
    assert found["messages"] == []


def test_delete_event(lunch_and_dinner):
    live, sam, otto, lunch, _, message_id, _ = lunch_and_dinner
    late = live.make_user()  # subscribed after the message: sees it through the channel's shared history
    assert_success(late.post("/users/me/subscriptions", {"subscriptions": [{"name": "lunch"}]}))
    before = len(live.events())
    assert_success(delete(sam, message_id))
    [(event, audience)] = [(e, ids) for e, ids in live.events()[before:] if e["type"] == "delete_message"]
    assert event == {"type": "delete_message", "message_ids": [message_id], "message_id": message_id,
                     "message_type": "stream", "stream_id": lunch, "topic": "menu"}  # fmt: skip
    assert audience == sorted([live.owner.id, sam.id, otto.id, late.id])


def test_direct_message_delete_event(live):
    alice, bob = live.make_user(), live.make_user()
    message_id = send_direct_ok(alice, [bob.id], "oops")
    assert_error(delete(bob, message_id), NO_DELETE)
    before = len(live.events())
    assert_success(delete(alice, message_id))
    [(event, audience)] = [(e, ids) for e, ids in live.events()[before:] if e["type"] == "delete_message"]
    assert event == {
        "type": "delete_message",
        "message_ids": [message_id],
        "message_id": message_id,
        "message_type": "private",
    }
    assert audience == sorted([alice.id, bob.id])


@pytest.mark.parametrize("role", ["member", "moderator", "guest"])
def test_others_messages_need_a_permission(lunch_and_dinner, role):
    live, _, _, lunch, _, message_id, _ = lunch_and_dinner
    client = live.make_user(role=role)
    if role == "guest":
        assert_success(
            live.owner.post(
                "/users/me/subscriptions", {"subscriptions": [{"name": "lunch"}], "principals": [client.id]}
            )
        )
    assert_error(delete(client, message_id), NO_DELETE)
    assert exists(live, message_id)


@pytest.mark.parametrize("role", ["admin", "owner"])
def test_administrators_delete_anything(lunch_and_dinner, role):
    live, sam, _, _, _, message_id, _ = lunch_and_dinner
    client = live.owner if role == "owner" else live.make_user(role=role)
    assert_success(delete(client, message_id))
    dm = send_direct_ok(sam, [client.id], "hello")
    assert_success(delete(client, dm))


def test_realm_and_channel_delete_any_groups(lunch_and_dinner):
    live, sam, otto, lunch, dinner, in_lunch, in_dinner = lunch_and_dinner
    moderator = live.make_user(role="moderator")
    set_channel_group(live, lunch, "can_delete_any_message_group", "role:members")
    assert_success(delete(otto, in_lunch))
    assert_error(delete(otto, in_dinner), NO_DELETE)
    set_realm_group(live, "can_delete_any_message_group", "role:moderators")
    assert_error(delete(otto, in_dinner), NO_DELETE)
    assert_success(delete(moderator, in_dinner))


def test_realm_and_channel_delete_own_groups(lunch_and_dinner):
    live, sam, otto, lunch, dinner, in_lunch, in_dinner = lunch_and_dinner
    dm = send_direct_ok(sam, [otto.id], "private")
    set_realm_group(live, "can_delete_own_message_group", "role:administrators")
    for message_id in (in_lunch, in_dinner, dm):
        assert_error(delete(sam, message_id), NO_DELETE)
    set_channel_group(live, lunch, "can_delete_own_message_group", "role:members")
    assert_success(delete(sam, in_lunch))
    assert_error(delete(sam, in_dinner), NO_DELETE)
    assert_error(delete(sam, dm), NO_DELETE)
    # The channel's own-message group never covers other people's messages.
    set_channel_group(live, dinner, "can_delete_own_message_group", "role:members")
    assert_error(delete(otto, in_dinner), NO_DELETE)


def test_bot_owners_delete_their_bots_messages(lunch_and_dinner):
    live, sam, otto, lunch, _, _, _ = lunch_and_dinner
    bot = live.client_for(live.user(make_bot(live, sam.id)))
    assert_success(
        live.owner.post("/users/me/subscriptions", {"subscriptions": [{"name": "lunch"}], "principals": [bot.id]})
    )
    message_id = send_ok(bot, lunch, "beep", "menu")
    assert_error(delete(otto, message_id), NO_DELETE)
    assert_success(delete(sam, message_id))


def test_delete_errors(lunch_and_dinner):
    live, sam, _, lunch, _, message_id, _ = lunch_and_dinner
    assert_error(delete(sam, 999999), INVALID)
    assert_error(delete(sam, 0), INVALID)
    body = assert_success(delete(sam, message_id, reason="typo"))
    assert body["ignored_parameters_unsupported"] == ["reason"]
    kept = send_ok(sam, lunch, "kept", "menu")
    archive(live, lunch)
    assert_error(delete(sam, kept), INVALID)
    assert_error(live.owner.delete(f"/messages/{kept}"), INVALID)
