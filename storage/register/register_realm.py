"""POST /register's `realm` state beyond the basic limits: settings the server keeps and the honest
values of features it does not have (no video calls, invitations, email, billing, GIFs).

Each value is either read from the realm row (enforced elsewhere) or states what this server does.
"""

from __future__ import annotations

from typing import Any

from storage.db.tx import Tx
from storage.media.thumbnail_formats import server_thumbnail_formats
from storage.messages import typing_notifications as typing
from storage.messages.message_reports import report_types
from storage.model.realm import Realm
from storage.org import passwords, presence, profile_fields, realm_images, realm_settings, user_avatars, users
from storage.org.external_accounts import default_external_accounts

PLAN_TYPE_SELF_HOSTED = 1
ORG_TYPE_UNSPECIFIED = 0
VIDEO_CHAT_DISABLED = 0
NO_CHANNEL = -1  # announcement channels: none is configured
# Zulip's WILDCARD_MENTION_POLICY_EVERYONE: anyone may use @all, @channel and @topic, which is what this
# server does (it has no can_mention_many_users_group to restrict them).
WILDCARD_MENTION_POLICY_EVERYONE = 1


# The server's own file (tornchat/handlers/server_files.py), where Zulip serves it.
EMOJI_DATA_PATH = "/static/generated/emoji/emoji_api.json"


def realm_extra_state(tx: Tx, realm: Realm, push_enabled: bool) -> dict[str, Any]:
    """The realm_* keys a client reads at start, as Zulip's fetch_initial_state_data sends them."""
    row = tx.one("SELECT topics_policy FROM realm")
    assert row is not None
    state: dict[str, Any] = realm_settings.realm_settings_state(tx)
    state.update({
        "realm_description": "",
        "realm_default_language": "en",
        # Presence is always on: the realm has no setting to turn it off.
        "realm_presence_disabled": False,
        # What storage/org/presence.py itself uses: clients ping this often and show a user offline
        # after this long without a report.
        "server_presence_ping_interval_seconds": presence.PRESENCE_PING_INTERVAL_SECS,
        "server_presence_offline_threshold_seconds": presence.OFFLINE_THRESHOLD_SECS,
        "server_typing_started_wait_period_milliseconds": typing.TYPING_STARTED_WAIT_PERIOD_MILLISECONDS,
        "server_typing_stopped_wait_period_milliseconds": typing.TYPING_STOPPED_WAIT_PERIOD_MILLISECONDS,
        "server_typing_started_expiry_period_milliseconds": typing.TYPING_STARTED_EXPIRY_PERIOD_MILLISECONDS,
        "realm_wildcard_mention_policy": WILDCARD_MENTION_POLICY_EVERYONE,
        # External-account profile fields are not offered (profile_fields.FIELD_TYPES); the defaults
        # are still sent, as Zulip does, since clients require the key.
        "realm_default_external_accounts": default_external_accounts(),
        "realm_mandatory_topics": row["topics_policy"] == "disable_empty_topic",
        "realm_emails_restricted_to_domains": False,
        # realm_icon_url, realm_logo_url, realm_night_logo_url and their sources.
        **realm_images.realm_images_state(tx),
        # Absolute: zulip-flutter fetches it as it is (fetchServerEmojiData), without the realm's URL.
        "server_emoji_data_url": realm.url + EMOJI_DATA_PATH,
        "realm_available_video_chat_providers": {"disabled": {"name": "None", "id": VIDEO_CHAT_DISABLED}},
        "realm_video_chat_provider": VIDEO_CHAT_DISABLED,
        "realm_jitsi_server_url": None, "server_jitsi_server_url": None,
        "realm_push_notifications_enabled": push_enabled,
        "realm_push_notifications_enabled_end_timestamp": None,
        "realm_plan_type": PLAN_TYPE_SELF_HOSTED, "realm_org_type": ORG_TYPE_UNSPECIFIED,
        "realm_upload_quota_mib": None,  # no realm-wide quota (uploads have a per-user one)
        "max_avatar_file_size_mib": user_avatars.MAX_AVATAR_FILE_SIZE_MIB,
        "realm_avatar_changes_disabled": False, "server_avatar_changes_disabled": False,
        "realm_name_changes_disabled": False, "server_name_changes_disabled": False,
        "realm_email_changes_disabled": True,  # PATCH /settings does not change emails
        "realm_invite_required": True,  # no self sign-up: administrators create accounts
        "realm_digest_emails_enabled": False, "realm_send_welcome_emails": False,  # the server sends no email
        "realm_email_auth_enabled": True, "realm_password_auth_enabled": True,
        "realm_authentication_methods": {"Email": {"enabled": True, "available": True}},
        "realm_inline_url_embed_preview": False,
        "realm_is_zephyr_mirror_realm": False,
        "realm_bot_domain": realm.email_host,
        "realm_default_code_block_language": "",
        "realm_demo_organization_scheduled_deletion_date": None,
        "realm_new_stream_announcements_stream_id": NO_CHANNEL,
        "realm_signup_announcements_stream_id": NO_CHANNEL,
        "realm_zulip_update_announcements_stream_id": NO_CHANNEL,
        "password_min_length": users.MIN_PASSWORD_LENGTH, "password_max_length": passwords.MAX_PASSWORD_LENGTH,
        "server_needs_upgrade": False, "development_environment": False,
        # Search is SQLite FTS5, which drops no stop words.
        "stop_words": [],
        "giphy_api_key": "",  # no GIF picker
        "server_report_message_types": report_types(),
        "server_thumbnail_formats": server_thumbnail_formats(),  # what /user_uploads/thumbnail/ URLs may name
    })  # fmt: skip
    return state


def custom_profile_field_types() -> dict[str, dict[str, Any]]:
    """Zulip's custom_profile_field_types: the field types this server supports, by constant name."""
    names = ("SHORT_TEXT", "LONG_TEXT", "SELECT", "DATE", "URL", "USER", "EXTERNAL_ACCOUNT", "PRONOUNS")
    types = {getattr(profile_fields, name): name for name in names}
    return {types[i]: {"id": i, "name": label} for i, label in profile_fields.FIELD_TYPES.items()}
