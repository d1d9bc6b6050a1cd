"""PATCH /messages/{id} topic and channel moves: propagate modes, resolving, permissions, rows and events."""

from __future__ import annotations

import pytest

from tests.support.channel_helpers import archive, make_channel, set_channel_group
from tests.support.helpers import assert_error, assert_success
from tests.support.send_helpers import (
    NO_GENERAL_CHAT,
    NO_NEW_TOPICS,
    NO_PERMISSION,
    send_ok,
    set_topics_policy,
    stored,
    stored_flags,
)

NO_EDIT = "You don't have permission to edit this message"
NO_RESOLVE = "You don't have permission to resolve topics in this channel."
NO_MOVE = "You don't have permission to move this message"


@pytest.fixture
def food_topic(live):
    """Two members in channel "lunch"; three messages in topic "food" (two by sam, one by otto)."""
    sam = live.make_user(full_name="Sam")
    otto = live.make_user(full_name="Otto")
    channel_id = make_channel(live, "lunch", [live.owner.id, sam.id, otto.id])
    ids = [
        send_ok(sam, "lunch", "one", "food"),
        send_ok(otto, "lunch", "two", "Food"),
        send_ok(sam, "lunch", "three", "food"),
    ]
    return live, sam, otto, channel_id, ids


def edit(client, message_id, **params):
    return client.patch(f"/messages/{message_id}", params)


def topics(live, ids):
    return [stored(live, i)["topic"] for i in ids]


def updates(live, before):
    return [(e, ids) for e, ids in live.events()[before:] if e["type"] == "update_message"]


@pytest.mark.parametrize(
    ("mode", "moved"),
    [("change_one", [False, True, False]), ("change_later", [False, True, True]), ("change_all", [True, True, True])],
)
def test_propagate_modes(food_topic, mode, moved):
    live, sam, otto, channel_id, ids = food_topic
    live.clock.advance(30)
    assert_success(edit(otto, ids[1], topic="meals", propagate_mode=mode))
    assert topics(live, ids) == ["meals" if m else t for m, t in zip(moved, ["food", "Food", "food"], strict=True)]
    for message_id, was_moved in zip(ids, moved, strict=True):
        row = stored(live, message_id)
        assert (row["last_moved_timestamp"] == int(live.clock.now)) is was_moved
        assert row["last_edit_timestamp"] is None
    message = assert_success(sam.get(f"/messages/{ids[2]}"))["message"]
    if moved[2]:
        # Every moved message records the move; the topic it left is the edited message's.
        assert message["edit_history"] == [
            {"user_id": otto.id, "timestamp": int(live.clock.now), "prev_topic": "Food", "topic": "meals"}
        ]
        assert message["last_moved_timestamp"] == int(live.clock.now) and "last_edit_timestamp" not in message
    else:
        assert "edit_history" not in message and "last_moved_timestamp" not in message


def test_topic_move_event(food_topic):
    live, sam, otto, channel_id, ids = food_topic
    before = len(live.events())
    assert_success(edit(sam, ids[0], topic="meals", propagate_mode="change_all"))
    [(event, audience)] = updates(live, before)
    assert audience == sorted([live.owner.id, sam.id, otto.id])
    expected = {
        "type": "update_message", "user_id": sam.id, "edit_timestamp": int(live.clock.now), "message_id": ids[0],
        "message_ids": ids, "rendering_only": False, "stream_name": "lunch", "stream_id": channel_id,
        "propagate_mode": "change_all", "orig_subject": "food", "subject": "meals", "topic_links": [],
        "flags": [],
    }  # fmt: skip
    assert event == expected


def test_content_and_topic_in_one_edit(food_topic):
    live, sam, _, _, ids = food_topic
    assert_success(edit(sam, ids[0], content="uno", topic="spanish"))
    [entry] = assert_success(sam.get(f"/messages/{ids[0]}"))["message"]["edit_history"]
    assert entry == {"user_id": sam.id, "timestamp": int(live.clock.now), "prev_content": "one",
                     "prev_rendered_content": "<p>one</p>", "prev_topic": "food", "topic": "spanish"}  # fmt: skip
    row = stored(live, ids[0])
    assert row["last_edit_timestamp"] == row["last_moved_timestamp"] == int(live.clock.now)


def test_topic_normalisation(food_topic):
    live, sam, _, _, ids = food_topic
    assert_success(edit(sam, ids[0], topic="  meals  "))
    assert stored(live, ids[0])["topic"] == "meals"
    assert_success(edit(sam, ids[0], subject="(no topic)"))
    assert stored(live, ids[0])["topic"] == ""
    assert_success(edit(sam, ids[0], topic="t" * 70))
    assert stored(live, ids[0])["topic"] == "t" * 57 + "..."
    assert_error(edit(sam, ids[0], topic="ab\x01c"), "Invalid character in topic, at position 3!")


def test_who_may_change_a_topic(food_topic):
    live, sam, otto, channel_id, ids = food_topic
    guest = live.make_user(role="guest")
    assert_success(
        live.owner.post("/users/me/subscriptions", {"subscriptions": [{"name": "lunch"}], "principals": [guest.id]})
    )
    for client in (otto, guest):
        assert_error(edit(client, ids[0], topic="mine"), NO_EDIT)
    assert_success(edit(sam, ids[0], topic="by sender"))
    assert_success(edit(live.make_user(role="moderator"), ids[0], topic="by moderator"))
    set_channel_group(live, channel_id, "can_move_messages_within_channel_group", "role:members")
    assert_success(edit(otto, ids[0], topic="by member"))
    assert_error(edit(guest, ids[0], topic="by guest"), NO_EDIT)
    set_channel_group(live, channel_id, "can_move_messages_within_channel_group", "role:everyone")
    assert_success(edit(guest, ids[0], topic="by guest"))


def test_channel_administrators_may_change_topics(food_topic):
    live, sam, otto, _, ids = food_topic
    channel_id = make_channel(live, "otto's", [sam.id, otto.id], creator=otto)
    message_id = send_ok(sam, channel_id, "hi", "intro")
    assert_success(edit(otto, message_id, topic="introductions"))
    assert_error(edit(otto, ids[0], topic="not here"), NO_EDIT)


def test_resolving_topics(food_topic):
    live, sam, otto, channel_id, ids = food_topic
    live.clock.advance(10)
    assert_error(edit(otto, ids[0], topic="✔ food"), NO_RESOLVE)
    assert_success(edit(sam, ids[0], topic="✔ food", propagate_mode="change_all"))
    assert topics(live, ids) == ["✔ food"] * 3
    message = assert_success(otto.get(f"/messages/{ids[1]}"))["message"]
    # A resolved topic is not a moved one.
    assert "last_moved_timestamp" not in message
    assert message["edit_history"] == [
        {"user_id": sam.id, "timestamp": int(live.clock.now), "prev_topic": "food", "topic": "✔ food"}
    ]
    assert_error(edit(otto, ids[0], topic="food", propagate_mode="change_all"), NO_RESOLVE)
    set_channel_group(live, channel_id, "can_resolve_topics_group", "role:members")
    assert_success(edit(otto, ids[0], topic="food", propagate_mode="change_all"))
    assert topics(live, ids) == ["food"] * 3
    # Renaming while resolving is a topic change, not a resolution.
    assert_error(edit(otto, ids[0], topic="✔ meals"), NO_EDIT)


def test_general_chat_cannot_be_resolved(food_topic):
    _, sam, _, _, ids = food_topic
    for topic in ("✔", "✔ general chat", " ✔ "):
        assert_error(edit(sam, ids[0], topic=topic), "General chat cannot be marked as resolved")


def test_topics_policy_and_topic_creation(food_topic):
    live, sam, otto, channel_id, ids = food_topic
    set_topics_policy(live, "disable_empty_topic", channel_id)
    assert_error(edit(sam, ids[0], topic=""), NO_GENERAL_CHAT)
    set_topics_policy(live, "inherit", channel_id)
    set_channel_group(live, channel_id, "can_create_topic_group", "role:administrators")
    assert_error(edit(sam, ids[0], topic="brand new"), NO_NEW_TOPICS)
    send_ok(live.owner, "lunch", "made by the owner", "existing")
    assert_success(edit(sam, ids[0], topic="EXISTING"))


@pytest.fixture
def two_channels(food_topic):
    live, sam, otto, channel_id, ids = food_topic
    moderator = live.make_user(role="moderator")
    dinner = make_channel(live, "dinner", [live.owner.id, moderator.id])
    return live, sam, otto, moderator, channel_id, dinner, ids


def test_moving_to_another_channel(two_channels):
    live, sam, otto, moderator, lunch, dinner, ids = two_channels
    live.clock.advance(20)
    assert_success(edit(moderator, ids[1], stream_id=dinner, propagate_mode="change_later"))
    rows = [stored(live, i) for i in ids]
    assert [r["channel_id"] for r in rows] == [lunch, dinner, dinner]
    assert rows[1]["topic"] == "Food" and rows[2]["topic"] == "food"
    message = assert_success(otto.get(f"/messages/{ids[2]}"))["message"]
    assert (message["stream_id"], message["display_recipient"]) == (dinner, "dinner")
    assert message["edit_history"] == [
        {"user_id": moderator.id, "timestamp": int(live.clock.now), "prev_stream": lunch, "stream": dinner}
    ]
    assert message["last_moved_timestamp"] == int(live.clock.now)
    # Public target: everyone keeps their rows; the target's subscribers gain read ones.
    assert stored_flags(live, ids[1]) == {live.owner.id: [], sam.id: [], otto.id: [], moderator.id: ["read"]}


def test_moving_with_a_new_topic(two_channels):
    live, sam, otto, moderator, lunch, dinner, ids = two_channels
    before = len(live.events())
    assert_success(edit(moderator, ids[0], stream_id=dinner, topic="supper", propagate_mode="change_all"))
    assert [(stored(live, i)["channel_id"], stored(live, i)["topic"]) for i in ids] == [(dinner, "supper")] * 3
    entry = assert_success(sam.get(f"/messages/{ids[0]}"))["message"]["edit_history"][0]
    assert entry == {"user_id": moderator.id, "timestamp": int(live.clock.now), "prev_stream": lunch, "stream": dinner,
                     "prev_topic": "food", "topic": "supper"}  # fmt: skip
    events = updates(live, before)
    event = events[0][0]
    assert (event["stream_id"], event["new_stream_id"], event["orig_subject"], event["subject"]) == (
        lunch,
        dinner,
        "food",
        "supper",
    )
    assert event["message_ids"] == ids and event["propagate_mode"] == "change_all"
    assert sorted(u for _, users in events for u in users) == sorted([live.owner.id, sam.id, otto.id, moderator.id])


def test_moving_to_a_private_channel(two_channels):
    live, sam, otto, moderator, lunch, _, ids = two_channels
    vault = make_channel(live, "vault", [live.owner.id, sam.id, moderator.id], invite_only=True)
    before = len(live.events())
    assert_success(edit(moderator, ids[0], stream_id=vault, propagate_mode="change_all"))
    assert set(stored_flags(live, ids[1])) == {live.owner.id, sam.id, moderator.id}
    assert_error(otto.get(f"/messages/{ids[1]}"), "Invalid message(s)")
    deletes = [(e, users) for e, users in live.events()[before:] if e["type"] == "delete_message"]
    assert deletes == [
        ({"type": "delete_message", "message_ids": ids, "message_id": ids[0], "message_type": "stream",
          "stream_id": lunch, "topic": "food"}, [otto.id]),
    ]  # fmt: skip
    assert all(otto.id not in users for _, users in updates(live, before))


def test_guests_lose_what_moves_to_a_public_channel_they_are_not_in(two_channels):
    live, sam, otto, moderator, lunch, dinner, ids = two_channels
    guest = live.make_user(role="guest")
    principals = {"subscriptions": [{"name": "lunch"}], "principals": [guest.id]}
    assert_success(live.owner.post("/users/me/subscriptions", principals))
    message_id = send_ok(sam, lunch, "for everyone", "news")
    before = len(live.events())
    assert_success(edit(moderator, message_id, stream_id=dinner))
    assert guest.id not in stored_flags(live, message_id)
    assert_error(guest.get(f"/messages/{message_id}"), "Invalid message(s)")
    deletes = [users for e, users in live.events()[before:] if e["type"] == "delete_message"]
    assert deletes == [[guest.id]]
    audience = sorted(u for _, users in updates(live, before) for u in users)
    assert audience == sorted([live.owner.id, sam.id, otto.id, moderator.id])


def test_target_topics_policy_applies(two_channels):
    live, sam, otto, moderator, lunch, dinner, ids = two_channels
    set_topics_policy(live, "empty_topic_only", dinner)
    assert_error(edit(moderator, ids[0], stream_id=dinner), "Only the general chat topic is allowed in this channel.")
    assert_success(edit(moderator, ids[0], stream_id=dinner, topic="general chat"))
    assert (stored(live, ids[0])["channel_id"], stored(live, ids[0])["topic"]) == (dinner, "")


def test_moving_out_of_protected_history_takes_only_what_the_mover_read(live):
    sam, mover = live.make_user(), live.make_user(role="moderator")
    vault = make_channel(live, "vault", [live.owner.id, sam.id], invite_only=True, history_public_to_subscribers=False)
    early = send_ok(sam, vault, "before", "plans")
    assert_success(
        live.owner.post("/users/me/subscriptions", {"subscriptions": [{"name": "vault"}], "principals": [mover.id]})
    )
    later = send_ok(sam, vault, "after", "plans")
    target = make_channel(live, "open", [mover.id])
    assert_success(edit(mover, later, stream_id=target, propagate_mode="change_all"))
    assert (stored(live, early)["channel_id"], stored(live, later)["channel_id"]) == (vault, target)


def test_who_may_move_to_another_channel(two_channels):
    live, sam, otto, moderator, lunch, dinner, ids = two_channels
    admin = live.make_user(role="admin")
    assert_error(edit(sam, ids[0], stream_id=dinner), NO_MOVE)
    assert_success(edit(admin, ids[0], stream_id=dinner))
    set_channel_group(live, lunch, "can_move_messages_out_of_channel_group", "role:members")
    assert_success(edit(otto, ids[1], stream_id=dinner))
    set_channel_group(live, dinner, "can_send_message_group", "role:administrators")
    assert_error(edit(otto, ids[2], stream_id=dinner), NO_PERMISSION)
    assert_error(edit(moderator, ids[2], stream_id=dinner), NO_PERMISSION)


def test_target_channel_must_be_readable_and_active(two_channels):
    live, sam, otto, moderator, lunch, dinner, ids = two_channels
    hidden = make_channel(live, "hidden", [live.owner.id], invite_only=True)
    for stream_id in (999999, hidden):
        assert_error(edit(moderator, ids[0], stream_id=stream_id), "Invalid channel ID")
    archive(live, dinner)
    assert_error(edit(moderator, ids[0], stream_id=dinner), "Invalid channel ID")


def test_moving_needs_topic_creation_rights_in_the_target(two_channels):
    live, sam, otto, moderator, lunch, dinner, ids = two_channels
    set_channel_group(live, dinner, "can_create_topic_group", "role:administrators")
    assert_error(edit(moderator, ids[0], stream_id=dinner), NO_NEW_TOPICS)
    send_ok(live.owner, dinner, "first", "food")
    assert_success(edit(moderator, ids[0], stream_id=dinner))


def test_topic_settings_move_with_the_whole_topic(food_topic):
    live, sam, otto, channel_id, ids = food_topic

    def set_policy(user_id, topic, policy):
        live.write(lambda tx: tx.execute(
            "INSERT OR REPLACE INTO user_topics (user_id, channel_id, topic, topic_key, visibility_policy,"
            " last_updated) VALUES (?, ?, ?, ?, ?, 0)",
            (user_id, channel_id, topic, topic.casefold(), policy)))  # fmt: skip

    def policies():
        return live.read(
            lambda tx: [
                tuple(r) for r in tx.all("SELECT user_id, topic, visibility_policy FROM user_topics ORDER BY 1")
            ]
        )

    set_policy(sam.id, "food", 1)
    set_policy(otto.id, "food", 3)
    set_policy(otto.id, "meals", 1)
    assert_success(edit(sam, ids[0], topic="meals"))  # a part of the topic: settings stay
    assert policies() == [(sam.id, "food", 1), (otto.id, "food", 3), (otto.id, "meals", 1)]
    before = len(live.events())
    assert_success(edit(sam, ids[2], topic="meals", propagate_mode="change_all"))
    # Merged, the more visible setting wins.
    assert policies() == [(sam.id, "meals", 1), (otto.id, "meals", 3)]
    events = [
        (e["topic_name"], e["visibility_policy"], users)
        for e, users in live.events()[before:]
        if e["type"] == "user_topic"
    ]
    assert sorted(events) == sorted(
        [("food", 0, [sam.id]), ("meals", 1, [sam.id]), ("food", 0, [otto.id]), ("meals", 3, [otto.id])]
    )


def test_topics_match_case_insensitively_beyond_ascii(food_topic):
    live, sam, _, _, ids = food_topic
    umlauts = [
        send_ok(sam, "lunch", "a", "Über"),
        send_ok(sam, "lunch", "b", "über"),
        send_ok(sam, "lunch", "c", "uber"),
    ]
    assert_success(edit(sam, umlauts[0], topic="moved", propagate_mode="change_all"))
    assert topics(live, umlauts) == ["moved", "moved", "uber"]


def test_the_topic_range_uses_its_index(live):
    plan = live.read(lambda tx: tx.all(
        "EXPLAIN QUERY PLAN SELECT id FROM messages WHERE recipient_id = ? AND topic_key = ? AND id >= ? ORDER BY id",
        (1, "food", 0)))  # fmt: skip
    assert "USING COVERING INDEX messages_by_topic" in plan[0]["detail"]
