"""The personal settings a user can change (Zulip's UserBaseSettings): types, defaults, allowed values,
and a user's stored values over those defaults.

Each setting belongs to one of Zulip's four groups. The two legacy groups decide which old-style event
a change also sends (update_display_settings, update_global_notifications) and which settings a client
without the `user_settings_object` capability finds at the top level of POST /register.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec

from storage.db.tx import Tx
from storage.model.errors import ApiError
from storage.model.user import User

DISPLAY_LEGACY, NOTIFICATION_LEGACY, MODERN, MODERN_NOTIFICATION = "display", "notification", "modern", "modern_n"


class Setting(msgspec.Struct, frozen=True):
    """One setting: its type, default, allowed values (None: any of the type) and group."""

    type: type
    default: Any
    group: str
    choices: tuple[Any, ...] | None = None


def _bool(default: bool, group: str) -> Setting:
    return Setting(bool, default, group)


def _int(default: int, group: str, choices: tuple[int, ...] | None = None) -> Setting:
    return Setting(int, default, group, choices)


EMOJISETS = {"google": "Google", "twitter": "Twitter", "text": "Plain text", "google-blob": "Google blobs"}
WEB_HOME_VIEWS = ("recent_topics", "inbox", "all_messages")
WEB_ANIMATE_IMAGE_PREVIEWS = ("always", "on_hover", "never")
# Whether a topic's "marked as resolved" notice arrives already read: always, unless the topic is followed, never.
RESOLVED_NOTICE_POLICIES = ("always", "except_followed", "never")
# The sounds Zulip's clients ship (static/audio/notification_sounds); "none" turns sounds off.
NOTIFICATION_SOUNDS = ("chime", "ding", "glass", "knock", "pop", "pulse", "ring", "zulip")
# Zulip's translations (locale/language_name_map.json): code and the name clients show.
LANGUAGES = {
    "ar": "العربيّة", "be": "Беларуская", "bg": "Български", "bn": "বাংলা", "ca": "Català", "cs": "Čeština",
    "cy": "Cymraeg", "da": "Dansk", "de": "Deutsch", "el": "Ελληνικά", "en": "English", "en_GB": "British English",
    "eo": "Esperanto", "es": "Español", "fa": "فارسی", "fi": "Suomi", "fr": "Français", "gl": "Galego",
    "gu": "ગુજરાતી", "hi": "हिंदी", "hu": "Magyar", "id": "Bahasa Indonesia", "it": "Italiano", "ja": "日本語",
    "ko": "한국어", "lt": "Lietuvių", "lv": "Latviešu", "ml": "മലയാളം", "mn": "Монгол", "nl": "Nederlands",
    "no": "Norsk", "pa": "ਪੰਜਾਬੀ", "pl": "Polski", "pt": "Português", "pt_BR": "Português Brasileiro",
    "pt_PT": "Português (Portugal)", "ro": "Română", "ru": "Русский", "si": "සිංහල", "sr": "Српски",
    "sv": "Svenska", "ta": "தமிழ்", "te": "తెలుగు", "tl": "Tagalog", "tr": "Türkçe", "uk": "Українська",
    "ur": "اُردُو", "uz": "O‘zbek", "vi": "Tiếng Việt", "zh-hans": "简体中文", "zh-hant": "繁體中文",
}  # fmt: skip
MAX_BATCHING_PERIOD_SECONDS = 7 * 24 * 60 * 60

D, N, M, MN = DISPLAY_LEGACY, NOTIFICATION_LEGACY, MODERN, MODERN_NOTIFICATION
AUTOMATIC_POLICIES = (1, 2, 3, 4)  # on participation, on send, on initiation, never
SETTINGS: dict[str, Setting] = {
    # display_settings_legacy
    "color_scheme": _int(1, D, (1, 2, 3)),
    "default_language": Setting(str, "en", D, tuple(LANGUAGES)),
    "web_home_view": Setting(str, "inbox", D, WEB_HOME_VIEWS),
    "demote_inactive_streams": _int(1, D, (1, 2, 3)),
    "emojiset": Setting(str, "google", D, tuple(EMOJISETS)),
    "enable_drafts_synchronization": _bool(True, D),
    "enter_sends": _bool(False, D),
    "fluid_layout_width": _bool(False, D),
    "high_contrast_mode": _bool(False, D),
    "left_side_userlist": _bool(False, D),
    "starred_message_counts": _bool(True, D),
    "translate_emoticons": _bool(False, D),
    "twenty_four_hour_time": _bool(False, D),
    # notification_settings_legacy
    "desktop_icon_count_display": _int(1, N, (1, 2, 3, 4)),
    "email_notifications_batching_period_seconds": _int(120, N),
    "enable_desktop_notifications": _bool(True, N),
    "enable_digest_emails": _bool(True, N),
    "enable_login_emails": _bool(True, N),
    "enable_marketing_emails": _bool(True, N),
    "enable_offline_email_notifications": _bool(True, N),
    "enable_offline_push_notifications": _bool(True, N),
    "enable_online_push_notifications": _bool(True, N),
    "enable_sounds": _bool(True, N),
    "enable_stream_audible_notifications": _bool(False, N),
    "enable_stream_desktop_notifications": _bool(False, N),
    "enable_stream_email_notifications": _bool(False, N),
    "enable_stream_push_notifications": _bool(False, N),
    "message_content_in_email_notifications": _bool(True, N),
    "notification_sound": Setting(str, "zulip", N, (*NOTIFICATION_SOUNDS, "none")),
    "pm_content_in_desktop_notifications": _bool(True, N),
    "presence_enabled": _bool(True, N),
    "realm_name_in_email_notifications_policy": _int(1, N, (1, 2, 3)),
    "wildcard_mentions_notify": _bool(True, N),
    # modern_settings
    "display_emoji_reaction_users": _bool(True, M),
    "email_address_visibility": _int(1, M, (1, 2, 3, 4, 5)),
    "web_escape_navigates_to_home_view": _bool(True, M),
    "receives_typing_notifications": _bool(True, M),
    "send_private_typing_notifications": _bool(True, M),
    "send_read_receipts": _bool(True, M),
    "send_stream_typing_notifications": _bool(True, M),
    "allow_private_data_export": _bool(False, M),
    "web_mark_read_on_scroll_policy": _int(1, M, (1, 2, 3)),
    "web_channel_default_view": _int(1, M, (1, 2)),
    "user_list_style": _int(3, M, (1, 2, 3)),
    "web_animate_image_previews": Setting(str, "on_hover", M, WEB_ANIMATE_IMAGE_PREVIEWS),
    "web_stream_unreads_count_display_policy": _int(2, M, (1, 2, 3)),
    "web_font_size_px": _int(16, M),
    "web_line_height_percent": _int(140, M),
    "web_navigate_to_sent_message": _bool(True, M),
    "web_suggest_update_timezone": _bool(True, M),
    "hide_ai_features": _bool(False, M),
    "resolved_topic_notice_auto_read_policy": Setting(str, "except_followed", M, RESOLVED_NOTICE_POLICIES),
    "web_left_sidebar_unreads_count_summary": _bool(True, M),
    "web_left_sidebar_show_channel_folders": _bool(True, M),
    "web_inbox_show_channel_folders": _bool(True, M),
    # modern_notification_settings
    "enable_followed_topic_desktop_notifications": _bool(True, MN),
    "enable_followed_topic_email_notifications": _bool(True, MN),
    "enable_followed_topic_push_notifications": _bool(True, MN),
    "enable_followed_topic_audible_notifications": _bool(True, MN),
    "enable_followed_topic_wildcard_mentions_notify": _bool(True, MN),
    "automatically_follow_topics_policy": _int(3, MN, AUTOMATIC_POLICIES),
    "automatically_unmute_topics_in_muted_streams_policy": _int(2, MN, AUTOMATIC_POLICIES),
    "automatically_follow_topics_where_mentioned": _bool(True, MN),
}

# Settings kept in a users column (read elsewhere: drafts, email visibility); the rest live in
# user_settings rows, one per setting changed from its default.
USER_COLUMNS = ("enable_drafts_synchronization", "email_address_visibility")


def emojiset_choices() -> list[dict[str, str]]:
    """Return Zulip's emojiset_choices list (key and the name clients show)."""
    return [{"key": key, "text": text} for key, text in EMOJISETS.items()]


def defaults() -> dict[str, Any]:
    """Return every setting's default value."""
    return {name: setting.default for name, setting in SETTINGS.items()}


def check_human(user: User) -> None:
    """Raise for bots: personal settings are for people (Zulip's human_users_only)."""
    if user.is_bot:
        raise ApiError("This endpoint does not accept bot requests.")


def get_user_settings(tx: Tx, user: User) -> dict[str, Any]:
    """Return every setting of the user (Zulip's property_types), stored values over the defaults."""
    values = defaults()
    for row in tx.all("SELECT name, value FROM user_settings WHERE user_id = ?", (user.id,)):
        if row["name"] in SETTINGS:
            values[row["name"]] = json.loads(row["value"])
    values.update({name: getattr(user, name) for name in USER_COLUMNS})
    return values
