"""The realm's settings PATCH /realm changes: message editing and the checks that enforce it, read
receipts (storage/messages/read_receipts.py) and the moderation request channel
(storage/messages/message_reports.py).

Zulip's rules: editing a message's content needs allow_message_editing and, unless the limit is
unlimited (NULL), happens within message_content_edit_limit_seconds of sending (plus a 20-second grace
for the client's round trip); deleting one's own message (not by the right to delete any) within
message_content_delete_limit_seconds; users below moderator move a message within
move_messages_within_stream_limit_seconds (topic) or move_messages_between_streams_limit_seconds
(channel); allow_edit_history decides whether anyone sees earlier versions.
"""

from __future__ import annotations

from typing import Any

import msgspec

from storage.db.tx import Tx
from storage.model.channel import get_channel_by_id
from storage.model.errors import ApiError, must_be_admin
from storage.model.user import User
from storage.org import groups

# Zulip's edit_limit_buffer: seconds of grace after the edit limit.
EDIT_LIMIT_BUFFER = 20
UNLIMITED = "unlimited"
MAX_TIME_LIMIT = 2**31 - 1  # Zulip's PositiveIntegerField
TIME_LIMITS = (
    "message_content_edit_limit_seconds",
    "message_content_delete_limit_seconds",
    "move_messages_within_stream_limit_seconds",
    "move_messages_between_streams_limit_seconds",
)
# Settings whose events keep their historical update_dict form in Zulip.
UPDATE_DICT_SETTINGS = ("allow_message_editing", "message_content_edit_limit_seconds")
# The other settings PATCH /realm takes, and their types there. A moderation request channel of
# -1 (NULL in the realm row) turns message reports off.
OTHER_SETTINGS: dict[str, type] = {"enable_read_receipts": bool, "moderation_request_channel_id": int}
NO_CHANNEL = -1


class RealmSettings(msgspec.Struct, frozen=True):
    """The realm's message-editing settings; a None limit means no limit."""

    allow_message_editing: bool
    message_content_edit_limit_seconds: int | None
    allow_edit_history: bool
    message_content_delete_limit_seconds: int | None
    move_messages_within_stream_limit_seconds: int | None
    move_messages_between_streams_limit_seconds: int | None


COLUMNS = ", ".join(RealmSettings.__struct_fields__)


def get_realm_settings(tx: Tx) -> RealmSettings:
    """Return the realm's message-editing settings."""
    row = tx.one(f"SELECT {COLUMNS} FROM realm")
    assert row is not None
    return msgspec.convert(dict(row), RealmSettings, strict=False)


def get_other_settings(tx: Tx) -> dict[str, Any]:
    """Return OTHER_SETTINGS' values as the API shows them (-1: no moderation request channel)."""
    row = tx.one("SELECT enable_read_receipts, moderation_request_channel_id FROM realm")
    assert row is not None
    channel_id = row["moderation_request_channel_id"]
    return {
        "enable_read_receipts": bool(row["enable_read_receipts"]),
        "moderation_request_channel_id": NO_CHANNEL if channel_id is None else channel_id,
    }


def realm_settings_state(tx: Tx) -> dict[str, Any]:
    """POST /register's realm_* keys of these settings (and the policy that replaced allow_edit_history)."""
    settings = get_realm_settings(tx)
    state = {f"realm_{name}": getattr(settings, name) for name in RealmSettings.__struct_fields__}
    state["realm_message_edit_history_visibility_policy"] = "all" if settings.allow_edit_history else "none"
    state.update({f"realm_{name}": value for name, value in get_other_settings(tx).items()})
    return state


def check_moderation_channel(tx: Tx, channel_id: int) -> int | None:
    """Return the column's value for a moderation request channel: None for -1, else a private channel's id.

    Administrators may name any channel, so an unknown or archived one is "Invalid channel ID".
    """
    if channel_id == NO_CHANNEL:
        return None
    channel = get_channel_by_id(tx, channel_id)
    if channel is None or channel.is_archived:
        raise ApiError("Invalid channel ID")
    if not channel.invite_only:
        raise ApiError("Moderation request channel must be private.")
    return channel.id


def parse_time_limit(name: str, value: int | str) -> int | None:
    """Return a limit in seconds, or None for "unlimited"; Zulip's error for anything else."""
    if value == UNLIMITED:
        return None
    if isinstance(value, str) or not 0 < value <= MAX_TIME_LIMIT:
        raise ApiError(
            f"Bad value for '{name}': {value}", "REQUEST_VARIABLE_INVALID", data={"var_name": name, "bad_value": value}
        )
    return value


def update_realm_settings(tx: Tx, actor: User, changes: dict[str, Any]) -> dict[str, Any]:
    """Apply PATCH /realm (administrators only); return the changed values, each announced to everyone.

    changes: setting name to new value (booleans, or raw limits: seconds or "unlimited").
    """
    if not actor.is_admin:
        raise must_be_admin()
    wanted = {name: parse_time_limit(name, v) if name in TIME_LIMITS else v for name, v in changes.items()}
    current = {**msgspec.structs.asdict(get_realm_settings(tx)), **get_other_settings(tx)}
    changed = {name: value for name, value in wanted.items() if current[name] != value}
    if "moderation_request_channel_id" in changed:
        stored = check_moderation_channel(tx, changed["moderation_request_channel_id"])
        tx.execute("UPDATE realm SET moderation_request_channel_id = ?", (stored,))
    audience = groups.active_user_ids(tx)
    for name, value in changed.items():
        if name != "moderation_request_channel_id":
            tx.execute(f"UPDATE realm SET {name} = ?", (value,))  # name: a field of RealmSettings or OTHER_SETTINGS
        if name in UPDATE_DICT_SETTINGS:
            event = {"type": "realm", "op": "update_dict", "property": "default", "data": {name: value}}
        else:
            event = {"type": "realm", "op": "update", "property": name, "value": value}
        tx.publish(event, audience)
        if name == "allow_edit_history":
            policy = "all" if value else "none"
            event = {"type": "realm", "op": "update", "property": "message_edit_history_visibility_policy"}
            tx.publish({**event, "value": policy}, audience)
    return changed


def _older_than(tx: Tx, row: Any, seconds: int) -> bool:
    return tx.now - row["date_sent"] > seconds


def check_content_edit(tx: Tx, actor: User, row: Any) -> None:
    """Raise unless the actor may edit this message's content now (Zulip's order of checks)."""
    settings = get_realm_settings(tx)
    if not settings.allow_message_editing:
        raise ApiError("Your organization has turned off message editing")
    if row["sender_id"] != actor.id:
        raise ApiError("You don't have permission to edit this message")
    limit = settings.message_content_edit_limit_seconds
    if limit is not None and _older_than(tx, row, limit + EDIT_LIMIT_BUFFER):
        raise ApiError("The time limit for editing this message has passed")


def check_move_limits(tx: Tx, actor: User, row: Any, topic_edited: bool, stream_edited: bool) -> None:
    """Raise when a user below moderator moves a message older than the realm's move limits."""
    if actor.is_moderator:
        return
    settings = get_realm_settings(tx)
    limit = settings.move_messages_within_stream_limit_seconds
    if topic_edited and limit is not None and _older_than(tx, row, limit):
        raise ApiError("The time limit for editing this message's topic has passed.")
    limit = settings.move_messages_between_streams_limit_seconds
    if stream_edited and limit is not None and _older_than(tx, row, limit):
        raise ApiError("The time limit for editing this message's channel has passed.")


def check_delete_limit(tx: Tx, row: Any) -> None:
    """Raise when the realm's limit for deleting one's own messages has passed for this message."""
    limit = get_realm_settings(tx).message_content_delete_limit_seconds
    if limit is not None and _older_than(tx, row, limit):
        raise ApiError("The time limit for deleting this message has passed")
