"""A user's own settings (PATCH /settings). Only `enable_drafts_synchronization` so far."""

from __future__ import annotations

from storage.db import Tx
from storage.errors import ApiError
from storage.users import User


def check_human(user: User) -> None:
    """Raise for bots: personal settings are for people (Zulip's human_users_only)."""
    if user.is_bot:
        raise ApiError("This endpoint does not accept bot requests.")


def update_user_settings(tx: Tx, user: User, enable_drafts_synchronization: bool | None) -> None:
    """Change the settings given (None: unchanged); each real change sends a user_settings event."""
    check_human(user)
    if enable_drafts_synchronization is not None:
        _set_drafts_synchronization(tx, user, enable_drafts_synchronization)


def _set_drafts_synchronization(tx: Tx, user: User, value: bool) -> None:
    current = bool(tx.value("SELECT enable_drafts_synchronization FROM users WHERE id = ?", (user.id,)))
    if current == value:
        return
    tx.execute("UPDATE users SET enable_drafts_synchronization = ? WHERE id = ?", (value, user.id))
    if not value:
        # Turning synchronization off forgets the drafts kept on the server, without drafts/remove
        # events: the clients keep their local copies, only the syncing stopped (as Zulip does).
        tx.execute("DELETE FROM drafts WHERE user_id = ?", (user.id,))
    event = {"type": "user_settings", "op": "update", "property": "enable_drafts_synchronization", "value": value}
    tx.publish(event, [user.id])
