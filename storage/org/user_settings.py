"""A user's own settings (PATCH /settings) and the state POST /register shows of them."""

from __future__ import annotations

import json
import zoneinfo
from functools import cache
from typing import Any

from storage.db.tx import Tx
from storage.model.errors import ApiError
from storage.model.realm import get_realm
from storage.model.user import User
from storage.org import groups, presence, users
from storage.org.user_changes import change_full_name
from storage.org.user_settings_definitions import (
    DISPLAY_LEGACY,
    LANGUAGES,
    MAX_BATCHING_PERIOD_SECONDS,
    NOTIFICATION_LEGACY,
    NOTIFICATION_SOUNDS,
    SETTINGS,
    check_human,
    defaults,
    emojiset_choices,
    get_user_settings,
)


@cache
def _time_zones() -> frozenset[str]:
    return frozenset(zoneinfo.available_timezones())


def user_settings_state(tx: Tx, user: User, legacy: bool, wants: dict[str, bool]) -> dict[str, Any]:
    """POST /register's `user_settings` object, and the legacy top-level copies for older clients.

    wants: which of user_settings, update_display_settings and update_global_notifications were asked.
    """
    values = get_user_settings(tx, user)
    state: dict[str, Any] = {}
    if wants["user_settings"]:
        state["user_settings"] = {
            **values, "emojiset_choices": emojiset_choices(), "timezone": user.timezone,
            "available_notification_sounds": list(NOTIFICATION_SOUNDS),
        }  # fmt: skip
    if legacy and wants["update_display_settings"]:
        state.update({k: v for k, v in values.items() if SETTINGS[k].group == DISPLAY_LEGACY})
        state.update(emojiset_choices=emojiset_choices(), timezone=user.timezone)
    if legacy and wants["update_global_notifications"]:
        state.update({k: v for k, v in values.items() if SETTINGS[k].group == NOTIFICATION_LEGACY})
        state["available_notification_sounds"] = list(NOTIFICATION_SOUNDS)
    return state


def realm_user_settings_defaults(tx: Tx) -> dict[str, Any]:
    """POST /register's realm_user_settings_defaults: the settings a new user starts with."""
    values = defaults()
    values["email_address_visibility"] = tx.value("SELECT default_email_address_visibility FROM realm")
    sounds = list(NOTIFICATION_SOUNDS)
    return {**values, "emojiset_choices": emojiset_choices(), "available_notification_sounds": sounds}


def check_setting(name: str, value: Any) -> Any:
    """Return the value if the setting allows it; raise Zulip's error otherwise (types are checked at the edge)."""
    setting = SETTINGS[name]
    if name == "notification_sound" and value not in setting.choices:  # type: ignore[operator]
        raise ApiError(f"Invalid notification sound '{value}'")
    if name == "email_notifications_batching_period_seconds" and not 0 < value <= MAX_BATCHING_PERIOD_SECONDS:
        raise ApiError(f"Invalid email batching period: {value} seconds")
    if setting.choices is not None and value not in setting.choices:
        raise ApiError(f"Invalid {name}")
    return value


def check_timezone(value: str) -> str:
    """Return an IANA time zone name (or "" for none); raise Zulip's error for any other text."""
    if value and value not in _time_zones():
        raise ApiError("timezone is not a recognized time zone")
    return value


def update_user_settings(
    tx: Tx, user: User, changes: dict[str, Any], full_name: str | None = None, timezone: str | None = None
) -> None:
    """Apply PATCH /settings: check every value first (nothing is written on an error), then each change.

    Each real change sends a user_settings event, and the legacy event where Zulip sends one.
    """
    check_human(user)
    for name, value in changes.items():
        check_setting(name, value)
    if timezone is not None:
        check_timezone(timezone)
    if full_name is not None:
        change_full_name(tx, user, full_name)
    current = get_user_settings(tx, user)
    for name, value in changes.items():
        if current[name] != value:
            _store(tx, user, name, value)
            _publish(tx, user, name, value)
            if name == "presence_enabled":  # invisible mode: others see the user go offline (or come back) now
                presence.presence_enabled_changed(tx, get_realm(tx), user, value)
    if timezone is not None and timezone != user.timezone:
        tx.execute("UPDATE users SET timezone = ? WHERE id = ?", (timezone, user.id))
        _publish(tx, user, "timezone", timezone)
        person = {"user_id": user.id, "timezone": timezone}
        tx.publish({"type": "realm_user", "op": "update", "person": person}, groups.active_user_ids(tx))


def _store(tx: Tx, user: User, name: str, value: Any) -> None:
    if name == "enable_drafts_synchronization":
        tx.execute("UPDATE users SET enable_drafts_synchronization = ? WHERE id = ?", (value, user.id))
        if not value:
            # Turning synchronization off forgets the drafts kept on the server, without drafts/remove
            # events: the clients keep their local copies, only the syncing stopped (as Zulip does).
            tx.execute("DELETE FROM drafts WHERE user_id = ?", (user.id,))
    elif name == "email_address_visibility":
        _change_email_visibility(tx, user, value)
    elif value == SETTINGS[name].default:
        tx.execute("DELETE FROM user_settings WHERE user_id = ? AND name = ?", (user.id, name))
    else:
        tx.execute(
            "INSERT INTO user_settings (user_id, name, value) VALUES (?, ?, ?)"
            " ON CONFLICT (user_id, name) DO UPDATE SET value = excluded.value",
            (user.id, name, json.dumps(value)),
        )


def _change_email_visibility(tx: Tx, user: User, value: int) -> None:
    """Store who may see the user's real email, and tell everyone whose view of it changed (as Zulip)."""
    realm = get_realm(tx)
    could_see = set(users.users_who_see_email(tx, user))
    tx.execute("UPDATE users SET email_address_visibility = ? WHERE id = ?", (value, user.id))
    changed = users.get_user_by_id(tx, user.id)
    assert changed is not None
    can_see = set(users.users_who_see_email(tx, changed))
    new_email = users.api_email(changed, realm)
    if new_email != users.api_email(user, realm):
        person = {"user_id": user.id, "new_email": new_email}
        tx.publish({"type": "realm_user", "op": "update", "person": person}, groups.active_user_ids(tx))
    gained, lost = can_see - could_see, could_see - can_see
    if gained:
        person = {"user_id": user.id, "delivery_email": user.delivery_email}
        tx.publish({"type": "realm_user", "op": "update", "person": person}, gained)
    if lost:
        person = {"user_id": user.id, "delivery_email": None}
        tx.publish({"type": "realm_user", "op": "update", "person": person}, lost)


def _publish(tx: Tx, user: User, name: str, value: Any) -> None:
    """The user_settings event, and the legacy one for clients without the user_settings_object capability."""
    event: dict[str, Any] = {"type": "user_settings", "op": "update", "property": name, "value": value}
    if name == "default_language":
        event["language_name"] = LANGUAGES[value]
    tx.publish(event, [user.id])
    email = users.api_email(user, get_realm(tx))
    group = "timezone" if name == "timezone" else SETTINGS[name].group
    if group in (DISPLAY_LEGACY, "timezone"):
        legacy = {"type": "update_display_settings", "user": email, "setting_name": name, "setting": value}
        if name == "default_language":
            legacy["language_name"] = event["language_name"]
        tx.publish(legacy, [user.id])
    elif group == NOTIFICATION_LEGACY:
        legacy = {"type": "update_global_notifications", "user": email, "notification_name": name, "setting": value}
        tx.publish(legacy, [user.id])
