"""Submessages: the data of message widgets (polls, to-do lists), as Zulip keeps them.

A message whose content is a `/poll` or `/todo` command gets its first submessage (msg_type "widget",
the widget's type and initial data) in the transaction that stores it (create_widget_submessage, from
store_message). POST /submessage adds the rest (add_submessage): votes, options, tasks. Message objects
carry them (storage/fetch/message_objects.py); the change journal drops a message's cached objects
when one is written (storage/cache/journal.py).
"""

from __future__ import annotations

import json
from typing import Any

import msgspec

from storage.db.tx import Tx
from storage.fetch.message_access import access_message, message_channel, message_viewers
from storage.messages.widgets import VALIDATORS, get_widget_data
from storage.model.errors import ApiError
from storage.model.user import User

WIDGET = "widget"  # the msg_type of a widget's first submessage


def _insert(tx: Tx, message_id: int, sender_id: int, msg_type: str, content: str) -> int:
    cursor = tx.execute(
        "INSERT INTO submessages (message_id, sender_id, msg_type, content) VALUES (?, ?, ?, ?)",
        (message_id, sender_id, msg_type, content),
    )
    return int(cursor.lastrowid or 0)


def create_widget_submessage(
    tx: Tx, sender_id: int, message_id: int, content: str, widget: tuple[str, Any] | None = None
) -> None:
    """Store the widget submessage of a new message: the `widget` given with it (widgets.check_widget_content),
    else the one its content's command starts (else nothing)."""
    found = widget if widget is not None else get_widget_data(content)
    if found is not None:
        widget_type, extra_data = found
        _insert(tx, message_id, sender_id, WIDGET, json.dumps({"widget_type": widget_type, "extra_data": extra_data}))


def is_widget_message(tx: Tx, message_id: int) -> bool:
    """Whether the message has any submessage (every widget message has one, and only they do)."""
    return tx.value("SELECT 1 FROM submessages WHERE message_id = ? LIMIT 1", (message_id,)) is not None


def get_widget_type(tx: Tx, message_id: int) -> str | None:
    """Return the widget type the message's first "widget" submessage names, or None."""
    content = tx.value(
        "SELECT content FROM submessages WHERE message_id = ? AND msg_type = ? ORDER BY id LIMIT 1",
        (message_id, WIDGET),
    )
    try:
        widget_type = json.loads(content)["widget_type"] if content is not None else None
    except (ValueError, TypeError, KeyError):
        return None
    return widget_type if isinstance(widget_type, str) else None


def _check_sender(tx: Tx, user: User, row: Any) -> None:
    """Zulip's rule: the message's sender attaches its first submessage; then any reader may add more."""
    if user.id == row["sender_id"]:
        return
    if tx.value("SELECT 1 FROM submessages WHERE message_id = ? AND sender_id = ?", (row["id"], row["sender_id"])):
        return
    raise ApiError("You cannot attach a submessage to this message.")


def add_submessage(tx: Tx, user: User, message_id: int, msg_type: str, content: str) -> int:
    """Store a submessage of a message the user may read, publish it, and return its id.

    Raises "Invalid message(s)", "You cannot attach a submessage to this message.", "Invalid json for
    submessage", or the widget's own validation error (storage/messages/widgets.py).
    """
    row, _ = access_message(tx, user, message_id)
    _check_sender(tx, user, row)
    try:
        data = msgspec.json.decode(content)  # strict JSON, as Zulip's orjson: no NaN, no trailing text
    except msgspec.DecodeError:
        raise ApiError("Invalid json for submessage") from None
    validate = VALIDATORS.get(get_widget_type(tx, message_id) or "")
    if validate is not None:
        validate(data, row["sender_id"] == user.id)
    submessage_id = _insert(tx, message_id, user.id, msg_type, content)
    event = {
        "type": "submessage",
        "msg_type": msg_type,
        "message_id": message_id,
        "submessage_id": submessage_id,
        "sender_id": user.id,
        "content": content,
    }
    # Everyone who may be looking at the message: its rows, and subscribers where history is shared.
    tx.publish(event, list(message_viewers(tx, row, message_channel(tx, row))))
    return submessage_id
