"""PATCH /settings: every personal setting, its validation, storage, events and POST /register state."""

from __future__ import annotations

import pytest

from storage.org.user_settings_definitions import DISPLAY_LEGACY, NOTIFICATION_LEGACY, SETTINGS
from tests.support.events_helpers import events_now, of_type, register
from tests.support.helpers import assert_error, assert_success, make_bot

MODERN = {"user_settings_object": True}


def settings_of(client):
    return register(client, fetch_event_types=["user_settings"], client_capabilities=MODERN)["user_settings"]


def test_register_lists_every_setting_with_zulip_defaults(live):
    values = settings_of(live.owner)
    assert set(values) == set(SETTINGS) | {"emojiset_choices", "timezone", "available_notification_sounds"}
    assert values["twenty_four_hour_time"] is False and values["pm_content_in_desktop_notifications"] is True
    assert values["emojiset"] == "google" and values["color_scheme"] == 1 and values["default_language"] == "en"
    assert values["web_home_view"] == "inbox" and values["web_font_size_px"] == 16
    assert values["left_side_userlist"] is False and values["notification_sound"] == "zulip"
    assert {"key": "text", "text": "Plain text"} in values["emojiset_choices"]
    assert "zulip" in values["available_notification_sounds"]


def test_changes_are_stored_and_shown(live):
    changes = {
        "twenty_four_hour_time": True, "emojiset": "text", "color_scheme": 2, "web_font_size_px": 20,
        "enable_stream_push_notifications": True, "notification_sound": "none", "web_home_view": "all_messages",
        "automatically_follow_topics_policy": 4, "default_language": "de",
    }  # fmt: skip
    assert_success(live.owner.patch("/settings", changes))
    values = settings_of(live.owner)
    assert {k: values[k] for k in changes} == changes
    # Other users keep their own values.
    assert settings_of(live.make_user())["twenty_four_hour_time"] is False
    # Setting a value back to its default removes its row: defaults are never stored.
    assert_success(live.owner.patch("/settings", {"emojiset": "google"}))
    stored = live.read(lambda tx: tx.column("SELECT name FROM user_settings WHERE user_id = ?", (live.owner.id,)))
    assert "emojiset" not in stored and "twenty_four_hour_time" in stored


def test_legacy_top_level_copies_for_clients_without_the_capability(live):
    assert_success(live.owner.patch("/settings", {"twenty_four_hour_time": True, "enable_sounds": False}))
    kinds = ["user_settings", "update_display_settings", "update_global_notifications"]
    old = register(live.owner, fetch_event_types=kinds)
    assert old["twenty_four_hour_time"] is True and old["enable_sounds"] is False
    assert old["pm_content_in_desktop_notifications"] is True and old["user_settings"]["twenty_four_hour_time"] is True
    assert {k for k in SETTINGS if SETTINGS[k].group in (DISPLAY_LEGACY, NOTIFICATION_LEGACY)} <= set(old)
    assert "send_read_receipts" not in old, "modern settings are only in user_settings"
    new = register(live.owner, fetch_event_types=kinds, client_capabilities=MODERN)
    assert "twenty_four_hour_time" not in new and new["user_settings"]["enable_sounds"] is False


def test_events_modern_and_legacy(live):
    old_queue = register(live.owner)["queue_id"]
    new_queue = register(live.owner, client_capabilities=MODERN)["queue_id"]
    assert_success(live.owner.patch("/settings", {"twenty_four_hour_time": True, "enable_sounds": False}))
    assert_success(live.owner.patch("/settings", {"default_language": "fr", "send_read_receipts": False}))
    modern = [
        {"type": "user_settings", "op": "update", "property": "twenty_four_hour_time", "value": True},
        {"type": "user_settings", "op": "update", "property": "enable_sounds", "value": False},
        {"type": "user_settings", "op": "update", "property": "default_language", "value": "fr",
         "language_name": "Français"},
        {"type": "user_settings", "op": "update", "property": "send_read_receipts", "value": False},
    ]  # fmt: skip
    new_events = [{k: v for k, v in e.items() if k != "id"} for e in events_now(live.owner, new_queue)]
    assert new_events == modern
    old_events = [{k: v for k, v in e.items() if k != "id"} for e in events_now(live.owner, old_queue)]
    email = live.owner.email
    assert old_events == [
        modern[0],
        {"type": "update_display_settings", "user": email, "setting_name": "twenty_four_hour_time", "setting": True},
        modern[1],
        {"type": "update_global_notifications", "user": email, "notification_name": "enable_sounds",
         "setting": False},
        modern[2],
        {"type": "update_display_settings", "user": email, "setting_name": "default_language", "setting": "fr",
         "language_name": "Français"},
        modern[3],
    ]  # fmt: skip


def test_unchanged_values_send_nothing(live):
    queue = register(live.owner)["queue_id"]
    assert_success(live.owner.patch("/settings", {"twenty_four_hour_time": False, "emojiset": "google"}))
    assert events_now(live.owner, queue) == []


def test_timezone(live):
    other = live.make_user()
    queue = register(other)["queue_id"]
    assert_success(live.owner.patch("/settings", {"timezone": "Europe/Paris"}))
    assert settings_of(live.owner)["timezone"] == "Europe/Paris"
    assert live.user(live.owner.id).timezone == "Europe/Paris"
    [event] = of_type(events_now(other, queue), "realm_user")
    assert event["person"] == {"user_id": live.owner.id, "timezone": "Europe/Paris"}
    assert_error(live.owner.patch("/settings", {"timezone": "Mars/Olympus"}), "timezone is not a recognized time zone")


def test_presence_enabled_off_shows_the_user_offline_to_others(live):
    other = live.make_user()
    assert_success(live.owner.post("/users/me/presence", {"status": "active"}))
    queue = register(other)["queue_id"]
    assert_success(live.owner.patch("/settings", {"presence_enabled": False}))
    events = of_type(events_now(other, queue), "presence")
    assert events and {e["user_id"] for e in events} == {live.owner.id}
    presence = assert_success(other.get(f"/users/{live.owner.id}/presence"))["presence"]
    assert presence["aggregated"]["status"] == "offline"


def test_full_name(live):
    other = live.make_user()
    queue = register(other)["queue_id"]
    assert_success(live.owner.patch("/settings", {"full_name": "  New Name "}))
    assert live.user(live.owner.id).full_name == "New Name"
    [event] = of_type(events_now(other, queue), "realm_user")
    assert event["person"] == {"user_id": live.owner.id, "full_name": "New Name"}
    assert_error(live.owner.patch("/settings", {"full_name": "a*b"}), "Invalid characters in name!")
    assert_error(live.owner.patch("/settings", {"full_name": "x" * 101}), "Name too long!")


def test_email_address_visibility_tells_everyone_the_new_address(live):
    member = live.make_user()
    queue = register(member)["queue_id"]
    assert_success(live.owner.patch("/settings", {"email_address_visibility": 4}))  # nobody
    assert settings_of(live.owner)["email_address_visibility"] == 4
    updates = [e["person"] for e in of_type(events_now(member, queue), "realm_user")]
    assert {"user_id": live.owner.id, "new_email": f"user{live.owner.id}@zulip.testserver"} in updates
    assert {"user_id": live.owner.id, "delivery_email": None} in updates
    body = assert_success(member.get(f"/users/{live.owner.id}"))
    assert body["user"]["email"] == f"user{live.owner.id}@zulip.testserver"


@pytest.mark.parametrize(
    ("params", "msg"),
    [
        ({"emojiset": "apple"}, "Invalid emojiset"),
        ({"color_scheme": 9}, "Invalid color_scheme"),
        ({"web_home_view": "feed"}, "Invalid web_home_view"),
        ({"default_language": "xx"}, "Invalid default_language"),
        ({"notification_sound": "boing"}, "Invalid notification sound 'boing'"),
        ({"email_notifications_batching_period_seconds": 0}, "Invalid email batching period: 0 seconds"),
        ({"email_notifications_batching_period_seconds": 604801}, "Invalid email batching period: 604801 seconds"),
        ({"email_address_visibility": 6}, "Invalid email_address_visibility"),
        ({"user_list_style": 0}, "Invalid user_list_style"),
        ({"twenty_four_hour_time": "yes"}, "twenty_four_hour_time is not valid JSON"),
        ({"twenty_four_hour_time": 1}, "twenty_four_hour_time is not a boolean"),
        ({"web_font_size_px": True}, "web_font_size_px is not an integer"),
    ],
)
def test_invalid_values(live, params, msg):
    assert_error(live.owner.patch("/settings", params), msg)


def test_no_partial_write(live):
    queue = register(live.owner)["queue_id"]
    response = live.owner.patch("/settings", {"twenty_four_hour_time": True, "full_name": "Changed", "emojiset": "x"})
    assert_error(response, "Invalid emojiset")
    assert settings_of(live.owner)["twenty_four_hour_time"] is False
    assert live.user(live.owner.id).full_name != "Changed"
    assert events_now(live.owner, queue) == []


def test_bots_are_refused(live):
    bot = live.client_for(live.user(make_bot(live, live.owner.id)))
    assert_error(bot.patch("/settings", {"twenty_four_hour_time": True}), "This endpoint does not accept bot requests.")


def test_unknown_parameters_are_reported(live):
    body = assert_success(live.owner.patch("/settings", {"enter_sends": True, "new_password": "x", "email": "a@b.c"}))
    assert body["ignored_parameters_unsupported"] == ["email", "new_password"]
    assert settings_of(live.owner)["enter_sends"] is True


# Zulip's settings of feature levels 350 to 431, each with its default and another value.
NEWER_SETTINGS = {
    "hide_ai_features": (False, True),
    "resolved_topic_notice_auto_read_policy": ("except_followed", "never"),
    "web_left_sidebar_unreads_count_summary": (True, False),
    "web_left_sidebar_show_channel_folders": (True, False),
    "web_inbox_show_channel_folders": (True, False),
}


def test_newer_settings_are_stored_with_events(live):
    values = settings_of(live.owner)
    defaults = register(live.owner, fetch_event_types=["realm_user_settings_defaults"])["realm_user_settings_defaults"]
    assert {name: values[name] for name in NEWER_SETTINGS} == {name: d for name, (d, _) in NEWER_SETTINGS.items()}
    assert {name: defaults[name] for name in NEWER_SETTINGS} == {name: d for name, (d, _) in NEWER_SETTINGS.items()}
    queue = register(live.owner, client_capabilities=MODERN)["queue_id"]
    changes = {name: changed for name, (_, changed) in NEWER_SETTINGS.items()}
    body = assert_success(live.owner.patch("/settings", changes))
    assert "ignored_parameters_unsupported" not in body
    assert {name: settings_of(live.owner)[name] for name in NEWER_SETTINGS} == changes
    events = [{k: v for k, v in e.items() if k != "id"} for e in events_now(live.owner, queue)]
    assert events == [{"type": "user_settings", "op": "update", "property": k, "value": v} for k, v in changes.items()]


def test_resolved_topic_notice_auto_read_policy_choices(live):
    body = live.owner.patch("/settings", {"resolved_topic_notice_auto_read_policy": "sometimes"})
    assert_error(body, "Invalid resolved_topic_notice_auto_read_policy")
    assert settings_of(live.owner)["resolved_topic_notice_auto_read_policy"] == "except_followed"


def test_dense_mode_is_gone(live):
    # Removed at feature level 364: Zulip reports it as an unsupported parameter and stores nothing.
    queue = register(live.owner)["queue_id"]
    body = assert_success(live.owner.patch("/settings", {"dense_mode": True}))
    assert body["ignored_parameters_unsupported"] == ["dense_mode"]
    assert events_now(live.owner, queue) == []
    assert "dense_mode" not in settings_of(live.owner)


def test_realm_user_settings_defaults(live):
    assert_success(live.owner.patch("/settings", {"twenty_four_hour_time": True}))
    defaults = register(live.owner, fetch_event_types=["realm_user_settings_defaults"])["realm_user_settings_defaults"]
    assert defaults["twenty_four_hour_time"] is False, "the realm's defaults, not the user's values"
    assert set(SETTINGS) <= set(defaults)
    live.write(lambda tx: tx.execute("UPDATE realm SET default_email_address_visibility = 3"))
    defaults = register(live.owner, fetch_event_types=["realm_user_settings_defaults"])["realm_user_settings_defaults"]
    assert defaults["email_address_visibility"] == 3, "the realm's default for new users"


def test_zulip_client(live, zulip_client):
    result = zulip_client.call_endpoint(url="settings", method="PATCH", request={"twenty_four_hour_time": True})
    assert result["result"] == "success", result
    assert settings_of(live.owner)["twenty_four_hour_time"] is True
