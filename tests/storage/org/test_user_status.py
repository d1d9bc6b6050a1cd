"""User status: POST /users/me/status, GET /users/{user_id}/status, an administrator's POST of it,
the user_status event and POST /register's user_status."""

from __future__ import annotations

import pytest

from storage.text import emoji
from tests.support.events_helpers import events_now, of_type, register
from tests.support.helpers import assert_error, assert_success, events_since, make_bot

OWN = "/users/me/status"
NEEDS_NAME = "Client must pass emoji_name if they pass either emoji_code or reaction_type."


def status_of(client, user_id):
    return assert_success(client.get(f"/users/{user_id}/status"))["status"]


def statuses(client):
    return register(client, fetch_event_types=["user_status"])["user_status"]


def test_set_text_and_emoji_then_clear_each(live):
    alice = live.make_user()
    count = len(live.events())
    assert_success(alice.post(OWN, {"status_text": "  In a meeting ", "emoji_name": "calendar"}))
    expected = {"status_text": "In a meeting", "emoji_name": "calendar", "emoji_code": "1f4c5",
                "reaction_type": "unicode_emoji"}  # fmt: skip
    assert status_of(live.owner, alice.id) == expected
    assert statuses(live.owner) == {str(alice.id): expected}
    # Everyone active hears it, with what was given (the emoji completed from its name).
    assert events_since(live, count, "user_status") == [
        ({"type": "user_status", "user_id": alice.id, **expected}, [live.owner.id, alice.id])
    ]
    # Changing the text alone keeps the emoji; "" clears the text.
    assert_success(alice.post(OWN, {"status_text": ""}))
    emoji_only = {k: v for k, v in expected.items() if k != "status_text"}
    assert status_of(alice, alice.id) == emoji_only
    count = len(live.events())
    assert_success(alice.post(OWN, {"emoji_name": ""}))
    event = {"type": "user_status", "user_id": alice.id, "emoji_name": "", "emoji_code": "",
             "reaction_type": "unicode_emoji"}  # fmt: skip
    assert events_since(live, count, "user_status") == [(event, [live.owner.id, alice.id])]
    assert status_of(alice, alice.id) == {}
    assert statuses(live.owner) == {}  # nothing left to show


def test_custom_and_zulip_emoji(live):
    alice = live.make_user()
    emoji_id = live.write(emoji.create_realm_emoji, "octo", live.owner.id)
    assert_success(alice.post(OWN, {"emoji_name": "octo"}))
    assert status_of(alice, alice.id) == {
        "emoji_name": "octo", "emoji_code": str(emoji_id), "reaction_type": "realm_emoji"
    }  # fmt: skip
    zulip = {"emoji_name": "zulip", "emoji_code": "zulip", "reaction_type": "zulip_extra_emoji"}
    assert_success(alice.post(OWN, zulip))
    assert status_of(alice, alice.id)["reaction_type"] == "zulip_extra_emoji"
    live.write(lambda tx: tx.execute("UPDATE realm_emoji SET deactivated = 1 WHERE id = ?", (emoji_id,)))
    assert_error(alice.post(OWN, {"emoji_name": "octo", "emoji_code": str(emoji_id), "reaction_type": "realm_emoji"}),
                 "This custom emoji has been deactivated.")  # fmt: skip


def test_away_is_presence_enabled(live):
    alice = live.make_user()
    count = len(live.events())
    assert_success(alice.post(OWN, {"away": "true"}))
    assert events_since(live, count, "user_settings")[0][0]["property"] == "presence_enabled"
    assert events_since(live, count, "user_status") == [
        ({"type": "user_status", "user_id": alice.id, "away": True}, [live.owner.id, alice.id])
    ]
    assert statuses(live.owner) == {str(alice.id): {"away": True}}
    assert register(alice, fetch_event_types=["user_settings"])["user_settings"]["presence_enabled"] is False
    assert_success(alice.post(OWN, {"away": "false"}))
    assert statuses(live.owner) == {}


def test_administrator_sets_someone_elses_status(live):
    alice = live.make_user()
    bob = live.make_user()
    assert_success(live.owner.post(f"/users/{alice.id}/status", {"status_text": "On leave", "away": "true"}))
    assert status_of(bob, alice.id) == {"status_text": "On leave"}  # `away` is not the admin's to set
    response = assert_error(bob.post(f"/users/{alice.id}/status", {"status_text": "hacked"}),
                            "Insufficient permission")  # fmt: skip
    assert "ignored_parameters_unsupported" not in response
    assert status_of(bob, alice.id) == {"status_text": "On leave"}
    bot_id = make_bot(live, live.owner.id)
    assert_error(live.owner.post(f"/users/{bot_id}/status", {"status_text": "x"}), "No such user")


@pytest.mark.parametrize(
    ("params", "msg"),
    [
        ({}, "Client did not pass any new values."),
        ({"status_text": "x" * 61}, "status_text is too long (limit: 60 characters)"),
        ({"status_text": "x", "emoji_code": "1f4c5"}, NEEDS_NAME),
        ({"emoji_name": "no_such_emoji"}, "Emoji 'no_such_emoji' does not exist"),
        ({"emoji_name": "calendar", "emoji_code": "1f600"}, "Invalid emoji name."),
        ({"emoji_name": "calendar", "emoji_code": "zzzz"}, "Invalid emoji code."),
        ({"emoji_name": "calendar", "reaction_type": "bogus"}, "Invalid emoji type."),
        ({"away": "maybe"}, "away is not valid JSON"),
    ],
)
def test_errors_change_nothing(live, params, msg):
    alice = live.make_user()
    assert_success(alice.post(OWN, {"status_text": "kept"}))
    count = len(live.events())
    assert_error(alice.post(OWN, params), msg)
    assert status_of(alice, alice.id) == {"status_text": "kept"}
    assert live.events()[count:] == []


def test_text_is_stripped_before_its_limit(live):
    alice = live.make_user()
    assert_success(alice.post(OWN, {"status_text": "  " + "x" * 60 + "  "}))
    assert status_of(alice, alice.id) == {"status_text": "x" * 60}


def test_get_errors(live):
    assert_error(live.owner.get("/users/999/status"), "No such user")
    bot_id = make_bot(live, live.owner.id)
    assert_error(live.owner.get(f"/users/{bot_id}/status"), "No such user")
    bot = live.client_for(live.user(bot_id))
    assert_error(bot.post(OWN, {"status_text": "beep"}), "This endpoint does not accept bot requests.")


def test_deactivated_users_are_left_out_of_register(live):
    alice = live.make_user()
    assert_success(alice.post(OWN, {"status_text": "bye"}))
    live.write(lambda tx: tx.execute("UPDATE users SET is_active = 0 WHERE id = ?", (alice.id,)))
    assert statuses(live.owner) == {}


def test_events_reach_a_mobile_apps_queue(live):
    """The queue of a client registered as the Zulip mobile app registers (all event types, modern
    capabilities) gets user_status and muted_users events in the shape its decoders read."""
    alice = live.make_user()
    bob = live.make_user()
    capabilities = {"user_settings_object": True, "empty_topic_name": True, "bulk_message_deletion": True}
    queue = register(alice, apply_markdown=True, slim_presence=True, client_capabilities=capabilities)
    assert queue["user_status"] == {} and queue["muted_users"] == []
    assert queue["realm_enable_read_receipts"] is True and queue["realm_moderation_request_channel_id"] == -1
    assert_success(bob.post(OWN, {"status_text": "Lunch", "emoji_name": "pizza"}))
    assert_success(alice.post(f"/users/me/muted_users/{bob.id}"))
    events = [
        {k: v for k, v in e.items() if k != "id"} for e in of_type(events_now(alice, queue["queue_id"]), "user_status")
    ]
    assert events == [{"type": "user_status", "user_id": bob.id, "status_text": "Lunch", "emoji_name": "pizza",
                       "emoji_code": "1f355", "reaction_type": "unicode_emoji"}]  # fmt: skip
    [muted] = of_type(events_now(alice, queue["queue_id"]), "muted_users")
    assert isinstance(muted["id"], int) and muted["muted_users"] == [{"id": bob.id, "timestamp": int(live.clock.now)}]
