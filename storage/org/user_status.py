"""User status: a short text and an emoji a user shows beside their name (Zulip's UserStatus).

POST /users/me/status changes what it is given and leaves the rest: status_text ("" clears it),
emoji_name ("" clears the emoji, with its code and type), and the legacy `away`, which is the
inverse of the presence_enabled setting (Zulip still accepts it and still reports it). An
administrator may set another human's status (POST /users/{user_id}/status, without `away`).
Every change goes to the whole realm as a `user_status` event carrying just what was given.

POST /register's `user_status` holds the users with something to show: a text, an emoji, or
`away`; GET /users/{user_id}/status answers one user's, {} when there is nothing.
"""

from __future__ import annotations

from typing import Any

import msgspec

from storage.db.tx import Tx
from storage.model.errors import ApiError, no_such_user
from storage.model.user import User
from storage.org import groups
from storage.org.user_settings import update_user_settings
from storage.org.user_settings_definitions import check_human, get_user_settings
from storage.org.users import access_user_by_id
from storage.text import emoji

MAX_STATUS_TEXT_LENGTH = 60  # Zulip's limit

# Every status with something to show, with the user's presence_enabled setting (`away` is its
# inverse): the rows of active users, by the primary keys of user_statuses and user_settings.
STATUSES_SQL = (
    "SELECT s.user_id, s.status_text, s.emoji_name, s.emoji_code, s.reaction_type, us.value AS presence_enabled"
    " FROM user_statuses AS s JOIN users AS u ON u.id = s.user_id"
    " LEFT JOIN user_settings AS us ON us.user_id = s.user_id AND us.name = 'presence_enabled'"
    " WHERE u.is_active ORDER BY s.user_id"
)


class StatusChange(msgspec.Struct, frozen=True, kw_only=True):
    """What a request changes: None leaves a part as it is."""

    away: bool | None = None
    status_text: str | None = None
    emoji_name: str | None = None
    emoji_code: str | None = None
    reaction_type: str | None = None


def _status_dict(row: Any, away: bool) -> dict[str, Any]:
    """Zulip's form of one status: only the parts that are set."""
    status: dict[str, Any] = {}
    if away:
        status["away"] = True
    if row is not None and row["status_text"]:
        status["status_text"] = row["status_text"]
    if row is not None and row["emoji_name"]:
        status.update(emoji_name=row["emoji_name"], emoji_code=row["emoji_code"], reaction_type=row["reaction_type"])
    return status


def user_status_state(tx: Tx) -> dict[str, Any]:
    """POST /register's `user_status`: user id (a string) to status, for users with one to show."""
    result: dict[str, Any] = {}
    for row in tx.all(STATUSES_SQL):
        status = _status_dict(row, row["presence_enabled"] == "false")
        if status:
            result[str(row["user_id"])] = status
    return result


def get_user_status(tx: Tx, actor: User, user_id: int) -> dict[str, Any]:
    """GET /users/{user_id}/status: the user's status ({} if none); "No such user" for bots and unknown ids."""
    target = access_user_by_id(tx, actor, user_id, for_admin=False)
    if target.is_bot:
        raise no_such_user()
    row = tx.one("SELECT * FROM user_statuses WHERE user_id = ?", (target.id,))
    if row is None:
        return {}
    return _status_dict(row, not get_user_settings(tx, target)["presence_enabled"])


def check_status_change(tx: Tx, change: StatusChange) -> StatusChange:
    """Return the change with its emoji completed and checked (Zulip's check_update_user_status)."""
    text = None if change.status_text is None else change.status_text.strip()
    if text is not None and len(text) > MAX_STATUS_TEXT_LENGTH:  # after stripping, as Zulip counts
        raise ApiError(f"status_text is too long (limit: {MAX_STATUS_TEXT_LENGTH} characters)")
    if change.away is None and text is None and change.emoji_name is None:
        raise ApiError("Client did not pass any new values.")
    name, code, kind = change.emoji_name, change.emoji_code, change.reaction_type
    if name == "":
        code, kind = "", emoji.UNICODE_EMOJI  # clears the emoji
    elif name is not None:
        kind = None if kind is None else emoji.reaction_type(kind)
        if code is None or kind is None:
            found_code, found_kind = emoji.emoji_for_name(tx, name)
            code = found_code if code is None else code
            kind = found_kind if kind is None else kind
        emoji.check_emoji(tx, name, code, kind)
    elif kind or code:
        raise ApiError("Client must pass emoji_name if they pass either emoji_code or reaction_type.")
    return StatusChange(away=change.away, status_text=text, emoji_name=name, emoji_code=code, reaction_type=kind)


def update_user_status(tx: Tx, actor: User, change: StatusChange, user_id: int | None = None) -> None:
    """POST /users/me/status (user_id None) or an administrator's POST /users/{user_id}/status.

    Raises the API's errors: nothing to change, a bad emoji, "No such user" (bots included) or
    "Insufficient permission" for someone else's status without being an administrator.
    """
    target = actor
    if user_id is None:
        check_human(actor)
    else:
        target = access_user_by_id(tx, actor, user_id, for_admin=False)
        if target.is_bot:
            raise no_such_user()
        if not actor.is_admin:
            raise ApiError("Insufficient permission")
    change = check_status_change(tx, change)
    if change.away is not None:
        update_user_settings(tx, target, {"presence_enabled": not change.away})
    columns = {"status_text": change.status_text}
    if change.emoji_name is not None:
        columns.update(emoji_name=change.emoji_name, emoji_code=change.emoji_code, reaction_type=change.reaction_type)
    given = {name: value for name, value in columns.items() if value is not None}
    tx.execute("INSERT OR IGNORE INTO user_statuses (user_id, timestamp) VALUES (?, ?)", (target.id, tx.timestamp))
    assignments = ", ".join(f"{name} = ?" for name in given)  # names: the columns above
    tx.execute(
        f"UPDATE user_statuses SET {assignments}{', ' if given else ''}timestamp = ? WHERE user_id = ?",
        (*given.values(), tx.timestamp, target.id),
    )
    event: dict[str, Any] = {"type": "user_status", "user_id": target.id}
    if change.away is not None:
        event["away"] = change.away
    event.update(given)
    tx.publish(event, groups.active_user_ids(tx))
