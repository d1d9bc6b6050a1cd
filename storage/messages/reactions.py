"""Emoji reactions: add_reaction and remove_reaction actions (spec 4.16, api-notes)."""

from __future__ import annotations

from storage.db.tx import Tx
from storage.fetch.message_access import access_message
from storage.model import flags
from storage.model.errors import ApiError
from storage.model.realm import get_realm
from storage.model.user import User
from storage.org.users import api_email
from storage.text import emoji


def _reaction_exists(tx: Tx, user: User, message_id: int, code: str, kind: str) -> bool:
    return bool(
        tx.value(
            "SELECT 1 FROM reactions WHERE message_id = ? AND user_id = ? AND reaction_type = ? AND emoji_code = ?",
            (message_id, user.id, kind, code),
        )
    )


def _publish(tx: Tx, op: str, user: User, message_id: int, name: str, code: str, kind: str) -> None:
    """Send the reaction event to everyone with a user_messages row for the message.

    Reactors without one got a historical row first, so they follow later reactions too.
    """
    event = {
        "type": "reaction",
        "op": op,
        "message_id": message_id,
        "emoji_name": name,
        "emoji_code": code,
        "reaction_type": kind,
        "user_id": user.id,
        "user": {"user_id": user.id, "email": api_email(user, get_realm(tx)), "full_name": user.full_name},
    }
    tx.publish(event, tx.column("SELECT user_id FROM user_messages WHERE message_id = ?", (message_id,)))


def _code_and_type(tx: Tx, name: str | None, code: str | None, kind: str | None) -> tuple[str, str]:
    """Return (emoji_code, reaction_type) from the request; a missing code is looked up by name.

    A type given without a code is still checked; the code looked up decides the type, so a custom
    emoji or "zulip" is found by name alone. A code given without a type is a Unicode emoji code.
    """
    given_type = None if kind is None else emoji.reaction_type(kind)
    if code is None:
        if name is None:
            raise ApiError("At least one of the following arguments must be present: emoji_name, emoji_code")
        return emoji.emoji_for_name(tx, name)
    return code, given_type or emoji.UNICODE_EMOJI


def add_reaction(tx: Tx, user: User, message_id: int, name: str, code: str | None, kind: str | None) -> None:
    """Add the user's reaction to a message they may read; raise ApiError as api-notes list."""
    _, bits = access_message(tx, user, message_id)
    code, kind = _code_and_type(tx, name, code, kind)
    if _reaction_exists(tx, user, message_id, code, kind):
        raise ApiError("Reaction already exists.", "REACTION_ALREADY_EXISTS")
    # A second reactor with the same emoji votes for the existing reaction, whatever name they sent
    # (the emoji data may have renamed it since); only a new reaction's name must be valid.
    existing = tx.value(
        "SELECT emoji_name FROM reactions WHERE message_id = ? AND reaction_type = ? AND emoji_code = ?"
        " ORDER BY id LIMIT 1",
        (message_id, kind, code),
    )
    if existing is not None:
        name = existing
    else:
        emoji.check_emoji(tx, name, code, kind)
    if bits is None:
        # As in Zulip: reacting to channel history the user never received gives them a row, so the
        # message shows up among theirs and they get later reaction and edit events.
        tx.execute(
            "INSERT INTO user_messages (user_id, message_id, flags) VALUES (?, ?, ?)",
            (user.id, message_id, flags.HISTORICAL | flags.READ),
        )
    tx.execute(
        "INSERT INTO reactions (message_id, user_id, emoji_name, emoji_code, reaction_type) VALUES (?, ?, ?, ?, ?)",
        (message_id, user.id, name, code, kind),
    )
    _publish(tx, "add", user, message_id, name, code, kind)


def remove_reaction(tx: Tx, user: User, message_id: int, name: str | None, code: str | None, kind: str | None) -> None:
    """Remove the user's reaction; "Invalid emoji code." for a code of no emoji, else
    REACTION_DOES_NOT_EXIST when the user has no such reaction."""
    access_message(tx, user, message_id)
    code, kind = _code_and_type(tx, name, code, kind)
    # Spec 4.16: an invalid code is a BAD_REQUEST of its own, before looking for the reaction.
    emoji.check_emoji_code(tx, code, kind)
    row = tx.one(
        "SELECT id, emoji_name FROM reactions"
        " WHERE message_id = ? AND user_id = ? AND reaction_type = ? AND emoji_code = ?",
        (message_id, user.id, kind, code),
    )
    if row is None:
        raise ApiError("Reaction doesn't exist.", "REACTION_DOES_NOT_EXIST")
    tx.execute("DELETE FROM reactions WHERE id = ?", (row["id"],))
    _publish(tx, "remove", user, message_id, row["emoji_name"], code, kind)
