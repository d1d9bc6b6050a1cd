"""POST /register: every key Zulip's register-queue reference lists per fetch_event_types, and the startup
reads of zulip-terminal 0.7.0; the own-user block, conversations, stars and realm settings from real data."""

from __future__ import annotations

import pytest

from storage.messages import system_bots
from tests.support.channel_helpers import make_channel
from tests.support.events_helpers import register, send_direct, send_stream
from tests.support.helpers import assert_success, make_bot

# The keys zulip.com/api/register-queue documents for each event type this server has state for
# (checked in: a key dropped from the server fails here).
DISPLAY_LEGACY = [
    "color_scheme", "default_language", "web_home_view", "demote_inactive_streams", "emojiset",
    "enable_drafts_synchronization", "enter_sends", "fluid_layout_width", "high_contrast_mode",
    "left_side_userlist", "starred_message_counts", "translate_emoticons", "twenty_four_hour_time",
    "emojiset_choices", "timezone",
]  # fmt: skip
NOTIFICATION_LEGACY = [
    "desktop_icon_count_display", "email_notifications_batching_period_seconds", "enable_desktop_notifications",
    "enable_digest_emails", "enable_login_emails", "enable_marketing_emails", "enable_offline_email_notifications",
    "enable_offline_push_notifications", "enable_online_push_notifications", "enable_sounds",
    "enable_stream_audible_notifications", "enable_stream_desktop_notifications",
    "enable_stream_email_notifications", "enable_stream_push_notifications", "message_content_in_email_notifications",
    "notification_sound", "pm_content_in_desktop_notifications", "presence_enabled",
    "realm_name_in_email_notifications_policy", "wildcard_mentions_notify", "available_notification_sounds",
]  # fmt: skip
REGISTER_KEYS = {
    "alert_words": ["alert_words"],
    "custom_profile_fields": ["custom_profile_fields", "custom_profile_field_types"],
    "default_stream_groups": ["realm_default_stream_groups"],
    "default_streams": ["realm_default_streams"],
    "drafts": ["drafts"],
    "message": ["max_message_id"],
    "muted_topics": ["muted_topics"],
    "muted_users": ["muted_users"],
    "onboarding_steps": ["onboarding_steps"],
    "presence": ["presences", "server_timestamp"],
    "realm": [
        "max_file_upload_size_mib", "max_avatar_file_size_mib", "realm_upload_quota_mib", "stop_words",
        "giphy_api_key", "password_min_length", "realm_name", "realm_description", "realm_icon_url",
        "realm_icon_source", "realm_logo_url", "realm_logo_source", "realm_night_logo_url",
        "realm_night_logo_source", "realm_allow_edit_history", "realm_message_edit_history_visibility_policy",
        "realm_allow_message_editing", "realm_message_content_edit_limit_seconds",
        "realm_message_content_delete_limit_seconds", "realm_move_messages_within_stream_limit_seconds",
        "realm_move_messages_between_streams_limit_seconds", "realm_default_language", "realm_presence_disabled",
        "realm_mandatory_topics", "realm_topics_policy", "realm_emails_restricted_to_domains",
        "realm_available_video_chat_providers", "realm_video_chat_provider", "realm_jitsi_server_url",
        "realm_push_notifications_enabled", "realm_push_notifications_enabled_end_timestamp", "realm_plan_type",
        "realm_org_type", "realm_message_retention_days", "realm_waiting_period_threshold",
        "realm_enable_spectator_access", "realm_invite_required",
        "realm_avatar_changes_disabled", "realm_name_changes_disabled", "realm_email_changes_disabled",
        "realm_digest_emails_enabled", "realm_send_welcome_emails", "realm_email_auth_enabled",
        "realm_password_auth_enabled", "realm_authentication_methods", "realm_inline_url_embed_preview",
        "realm_enable_read_receipts", "realm_bot_domain", "realm_default_code_block_language",
        "realm_date_created", "realm_url", "realm_uri", "realm_is_zephyr_mirror_realm",
        "realm_new_stream_announcements_stream_id", "realm_signup_announcements_stream_id",
        "realm_zulip_update_announcements_stream_id", "realm_demo_organization_scheduled_deletion_date",
        "server_thumbnail_formats",
        "realm_can_delete_any_message_group", "realm_can_delete_own_message_group", "realm_can_add_subscribers_group",
        "server_avatar_changes_disabled", "server_name_changes_disabled", "server_needs_upgrade",
        "server_jitsi_server_url", "max_message_length", "max_topic_length", "max_stream_name_length",
        "max_stream_description_length", "realm_empty_topic_display_name", "event_queue_longpoll_timeout_seconds",
        "server_generation", "server_presence_ping_interval_seconds", "server_presence_offline_threshold_seconds",
        "realm_wildcard_mention_policy", "realm_default_external_accounts",
        "server_typing_started_wait_period_milliseconds", "server_typing_stopped_wait_period_milliseconds",
        "server_typing_started_expiry_period_milliseconds", "realm_moderation_request_channel_id",
        "server_report_message_types",
    ],
    "channel_folders": ["channel_folders"],
    "realm_bot": ["realm_bots"],
    "realm_domains": ["realm_domains"],
    "realm_embedded_bots": ["realm_embedded_bots"],
    "realm_emoji": ["realm_emoji"],
    "realm_filters": ["realm_filters"],
    "realm_incoming_webhook_bots": ["realm_incoming_webhook_bots"],
    "realm_linkifiers": ["realm_linkifiers"],
    "realm_playgrounds": ["realm_playgrounds"],
    "realm_user": [
        "realm_users", "realm_non_active_users", "avatar_source", "avatar_url_medium", "avatar_url",
        "can_create_streams", "can_create_public_streams", "can_create_private_streams",
        "can_create_web_public_streams", "can_subscribe_other_users", "can_invite_others_to_realm", "is_admin",
        "is_owner", "is_moderator", "is_guest", "user_id", "email", "delivery_email", "full_name",
        "cross_realm_bots",
    ],
    "realm_user_groups": ["realm_user_groups"],
    "realm_user_settings_defaults": ["realm_user_settings_defaults"],
    "recent_private_conversations": ["recent_private_conversations"],
    "saved_snippets": ["saved_snippets"],
    "scheduled_messages": ["scheduled_messages"],
    "starred_messages": ["starred_messages"],
    "stream": ["streams"],
    "subscription": ["subscriptions", "unsubscribed", "never_subscribed"],
    "update_display_settings": DISPLAY_LEGACY,
    "update_global_notifications": NOTIFICATION_LEGACY,
    "update_message_flags": ["unread_msgs"],
    "user_settings": ["user_settings"],
    "user_status": ["user_status"],
    "user_topic": ["user_topics"],
}  # fmt: skip
ALWAYS = ["queue_id", "last_event_id", "zulip_version", "zulip_feature_level", "zulip_merge_base"]

# zulip-terminal 0.7.0 (zulipterminal/model.py): what it asks for, and what it reads, fatally if missing.
ZT_FETCH = [
    "realm", "presence", "subscription", "message", "starred_messages", "update_message_flags", "muted_topics",
    "realm_user", "realm_user_groups", "update_global_notifications", "update_display_settings", "user_settings",
    "realm_emoji", "zulip_version",
]  # fmt: skip
ZT_READS = [
    "user_id", "email", "full_name", "presences", "cross_realm_bots", "muted_topics", "realm_emoji",
    "twenty_four_hour_time", "pm_content_in_desktop_notifications", "starred_messages", "zulip_version",
    "subscriptions", "realm_user_groups", "realm_users", "realm_name", "realm_message_retention_days", "unread_msgs",
    "max_stream_name_length", "max_topic_length", "max_message_length",
    # read later: the message-info popup and editing
    "realm_allow_edit_history", "realm_allow_message_editing", "realm_message_content_edit_limit_seconds",
]  # fmt: skip


@pytest.mark.parametrize("kind", sorted(REGISTER_KEYS))
def test_each_event_type_sends_every_documented_key(live, kind):
    body = register(live.owner, fetch_event_types=[kind])
    assert set(REGISTER_KEYS[kind] + ALWAYS) - set(body) == set()


def test_without_fetch_event_types_every_key_is_sent(live):
    body = register(live.owner)
    expected = {key for keys in REGISTER_KEYS.values() for key in keys}
    assert expected - set(body) == set()
    assert "twenty_four_hour_time" in body, "no user_settings_object capability: the legacy copies too"
    modern = register(live.owner, client_capabilities={"user_settings_object": True})
    assert not set(DISPLAY_LEGACY + NOTIFICATION_LEGACY) & set(modern)
    assert modern["user_settings"]["twenty_four_hour_time"] is False


def test_zulip_terminal_startup_reads(live):
    alice = live.make_user(full_name="Alice")
    make_channel(live, "general", [live.owner.id, alice.id])
    send_stream(alice, "general", "hi")
    body = register(live.owner, fetch_event_types=ZT_FETCH, event_types=ZT_FETCH, apply_markdown=True)
    assert set(ZT_READS) - set(body) == set()
    assert (body["user_id"], body["email"], body["full_name"]) == (live.owner.id, live.owner.email, "Owner")
    # Its edit box compares the limit with 0 (a None would crash it): Zulip's default 600 is a number.
    assert body["realm_message_content_edit_limit_seconds"] == 600 and body["realm_allow_message_editing"] is True
    assert body["realm_allow_edit_history"] is True
    assert isinstance(body["muted_topics"], list) and isinstance(body["presences"], dict)
    assert body["twenty_four_hour_time"] is False and body["pm_content_in_desktop_notifications"] is True


def test_own_user_block(live):
    moderator = live.make_user(role="moderator", full_name="Mo")
    body = register(moderator, fetch_event_types=["realm_user"])
    assert {k: body[k] for k in ("user_id", "full_name", "is_admin", "is_owner", "is_moderator", "is_guest")} == {
        "user_id": moderator.id, "full_name": "Mo", "is_admin": False, "is_owner": False, "is_moderator": True,
        "is_guest": False,
    }  # fmt: skip
    assert body["email"] == moderator.email and body["delivery_email"] == live.user(moderator.id).delivery_email
    assert body["avatar_url"] == f"/user_avatars/default/{moderator.id}.png?v=1"
    assert body["avatar_url_medium"] == f"/user_avatars/default/{moderator.id}-medium.png?v=1"
    assert body["can_create_public_streams"] is True and body["can_create_web_public_streams"] is False
    assert body["can_invite_others_to_realm"] is False
    assert moderator.id in {u["user_id"] for u in body["realm_users"]}, "realm_users includes the requester"
    guest = register(live.make_user(role="guest"), fetch_event_types=["realm_user"])
    assert guest["is_guest"] is True and guest["can_create_streams"] is False


def test_cross_realm_bots_are_the_system_bots(live):
    assert register(live.owner, fetch_event_types=["realm_user"])["cross_realm_bots"] == []
    bot = live.write(system_bots.notification_bot)
    [listed] = register(live.owner, fetch_event_types=["realm_user"])["cross_realm_bots"]
    assert (listed["user_id"], listed["is_bot"], listed["is_system_bot"]) == (bot.id, True, True)


def test_realm_bots(live):
    bot_id = make_bot(live, live.owner.id)
    member = live.make_user()
    [bot] = register(live.owner, fetch_event_types=["realm_bot"])["realm_bots"]
    assert (bot["user_id"], bot["owner_id"], bot["is_active"]) == (bot_id, live.owner.id, True)
    assert register(member, fetch_event_types=["realm_bot"])["realm_bots"] == []


def test_recent_private_conversations(live):
    alice, bob = live.make_user(), live.make_user()
    make_channel(live, "general", [live.owner.id, alice.id])
    send_direct(alice, [live.owner.id])  # an older message of the conversation with alice
    group = send_direct(live.owner, [alice.id, bob.id])
    mine = send_direct(live.owner, [live.owner.id])
    send_stream(alice, "general")  # channel messages are no conversation
    latest = send_direct(live.owner, [alice.id])
    send_direct(alice, [bob.id])  # not the owner's
    body = register(live.owner, fetch_event_types=["recent_private_conversations"])
    assert body["recent_private_conversations"] == [
        {"max_message_id": latest, "user_ids": [alice.id]},
        {"max_message_id": mine, "user_ids": []},
        {"max_message_id": group, "user_ids": sorted([alice.id, bob.id])},
    ]


def test_starred_messages(live):
    make_channel(live, "general", [live.owner.id])
    one, _, three = (send_stream(live.owner, "general", str(n)) for n in range(3))
    params = {"messages": [three, one], "op": "add", "flag": "starred"}
    assert_success(live.owner.post("/messages/flags", params))
    assert register(live.owner, fetch_event_types=["starred_messages"])["starred_messages"] == [one, three]


def test_realm_values_are_real(live):
    body = register(live.owner, fetch_event_types=["realm"])
    assert body["realm_push_notifications_enabled"] is False, "no push bouncer configured"
    assert body["realm_mandatory_topics"] is False and body["realm_plan_type"] == 1
    assert body["realm_available_video_chat_providers"] == {"disabled": {"name": "None", "id": 0}}
    live.write(lambda tx: tx.execute("UPDATE realm SET topics_policy = 'disable_empty_topic'"))
    assert register(live.owner, fetch_event_types=["realm"])["realm_mandatory_topics"] is True


def test_keys_zulip_removed_are_gone(live):
    body = register(live.owner)
    # Gone at feature levels 163 (realm_email_address_visibility), 363 (is_billing_admin), 364 (dense_mode).
    assert {"realm_email_address_visibility", "is_billing_admin", "dense_mode"} & set(body) == set()
    assert "dense_mode" not in body["user_settings"] and "dense_mode" not in body["realm_user_settings_defaults"]


def test_keys_the_zulip_mobile_app_requires(live):
    body = register(live.owner, fetch_event_types=["realm"])
    assert body["realm_wildcard_mention_policy"] == 1, "everyone: this server does not restrict wildcard mentions"
    accounts = body["realm_default_external_accounts"]
    assert accounts["github"] == {
        "name": "GitHub username", "text": "GitHub", "hint": "", "url_pattern": "https://github.com/%(username)s"
    }  # fmt: skip
    assert accounts["mastodon"]["hint"] == "The full URL to your profile"
    assert accounts["discord"]["url_pattern"] == "", "a plain-text field"
    for account in accounts.values():  # every entry has the four strings the app decodes
        assert sorted(account) == ["hint", "name", "text", "url_pattern"]
        assert all(isinstance(value, str) for value in account.values())


def test_typing_protocol_is_zulips(live):
    body = register(live.owner, fetch_event_types=["realm"])
    periods = ("started_wait", "stopped_wait", "started_expiry")
    assert [body[f"server_typing_{p}_period_milliseconds"] for p in periods] == [30_000, 12_000, 45_000]


def test_channel_folders_archived_ones_too(live):
    assert register(live.owner, fetch_event_types=["channel_folders"])["channel_folders"] == []
    for name in ("Teams", "Old"):
        assert_success(live.owner.post("/channel_folders/create", {"name": name, "description": ""}))
    live.write(lambda tx: tx.execute("UPDATE channel_folders SET is_archived = 1 WHERE name = 'Old'"))
    folders = register(live.make_user(), fetch_event_types=["channel_folders"])["channel_folders"]
    assert [(f["name"], f["is_archived"]) for f in folders] == [("Teams", False), ("Old", True)]
    assert set(folders[0]) == {
        "id", "name", "description", "rendered_description", "creator_id", "date_created", "is_archived"
    }  # fmt: skip


def test_streams_and_default_streams(live):
    public = make_channel(live, "public")
    private = make_channel(live, "secret", invite_only=True)
    member = live.make_user()
    names = {s["stream_id"] for s in register(member, fetch_event_types=["stream"])["streams"]}
    assert public in names and private not in names
    live.write(lambda tx: tx.execute("INSERT INTO default_channels (channel_id) VALUES (?)", (public,)))
    [default] = register(member, fetch_event_types=["default_streams"])["realm_default_streams"]
    assert default["stream_id"] == public
