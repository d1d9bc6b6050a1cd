"""Scheduled messages: create, edit, list, delete, and delivery through the send path."""

from __future__ import annotations

import json
from typing import Any

import msgspec

from storage import system_bots
from storage.db import Tx
from storage.errors import ApiError, not_found
from storage.message_render import render_message
from storage.messages import SendRequest, message_type, store_message, validate_send
from storage.users import User, get_user_by_id

# A message more than this late (server down, queue backed up) fails instead of arriving late.
MAX_LATENESS_SECONDS = 10 * 60
LATE = "Message could not be sent at the scheduled time."
SCHEDULED_COLUMNS = (
    "id, sender_id, type, channel_id, to_user_ids, topic, content, rendered_content, scheduled_timestamp,"
    " read_by_sender, client, failed, failure_message, delivered_message_id"
)


class Draft(msgspec.Struct, kw_only=True):
    """A scheduled message's fields as given (create) or as they will be after an edit."""

    type: str
    to: Any
    content: str
    topic: str | None
    scheduled_delivery_timestamp: int
    read_by_sender: bool | None = None


def check_future(tx: Tx, timestamp: int) -> None:
    if timestamp <= tx.now:
        raise ApiError("Scheduled delivery time must be in the future.")


def check_to_shape(kind: str, to: Any) -> None:
    """Channel messages take one channel id, direct messages a list of user ids."""
    if kind == "stream" and not isinstance(to, int):
        raise ApiError("Invalid data type for channel ID")
    if kind == "private" and not isinstance(to, list):
        raise ApiError("Invalid data type for recipients")


def validate(tx: Tx, sender: User, draft: Draft, client: str) -> tuple[str, Any, str, str, str]:
    """Run the full send validation; return (type, to, topic, content, rendered content) to store."""
    kind = message_type(draft.type)
    check_to_shape(kind, draft.to)
    to = draft.to if kind == "stream" else sorted(set(draft.to))
    request = SendRequest(type=kind, to=to, content=draft.content, topic=draft.topic, client=client)
    destination, content = validate_send(tx, sender, request)
    rendered = render_message(tx, content, sender).html
    return kind, to, destination.topic, content, rendered


def scheduled_object(row: Any) -> dict[str, Any]:
    """Return the API object of a scheduled_messages row."""
    result: dict[str, Any] = {"scheduled_message_id": row["id"], "type": row["type"]}
    if row["type"] == "stream":
        result.update(to=row["channel_id"], topic=row["topic"])
    else:
        others = [u for u in json.loads(row["to_user_ids"]) if u != row["sender_id"]]
        result["to"] = others or [row["sender_id"]]
    result.update(
        content=row["content"],
        rendered_content=row["rendered_content"],
        scheduled_delivery_timestamp=row["scheduled_timestamp"],
        failed=bool(row["failed"]),
    )
    return result


def _get(tx: Tx, scheduled_id: int) -> Any:
    return tx.one(f"SELECT {SCHEDULED_COLUMNS} FROM scheduled_messages WHERE id = ?", (scheduled_id,))


def create_scheduled_message(tx: Tx, sender: User, draft: Draft, client: str) -> int:
    """POST /scheduled_messages: validate as a send would, store; return the scheduled message id."""
    check_future(tx, draft.scheduled_delivery_timestamp)
    kind, to, topic, content, rendered = validate(tx, sender, draft, client)
    cursor = tx.execute(
        "INSERT INTO scheduled_messages (sender_id, type, channel_id, to_user_ids, topic, content, rendered_content,"
        " scheduled_timestamp, read_by_sender, client, date_created) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            sender.id, kind, to if kind == "stream" else None, json.dumps(to) if kind == "private" else None,
            topic, content, rendered, draft.scheduled_delivery_timestamp, draft.read_by_sender, client, tx.timestamp,
        ),
    )  # fmt: skip
    scheduled_id = int(cursor.lastrowid or 0)
    event = {
        "type": "scheduled_messages",
        "op": "add",
        "scheduled_messages": [scheduled_object(_get(tx, scheduled_id))],
    }
    tx.publish(event, [sender.id])
    return scheduled_id


def access_scheduled_message(tx: Tx, sender: User, scheduled_id: int) -> Any:
    """Return the sender's own scheduled message; 404 "Scheduled message does not exist" otherwise."""
    row = _get(tx, scheduled_id) if 0 < scheduled_id < 2**63 else None
    if row is None or row["sender_id"] != sender.id:
        raise not_found("Scheduled message does not exist")
    return row


class Edit(msgspec.Struct, kw_only=True):
    type: str | None = None
    to: Any = None
    content: str | None = None
    topic: str | None = None
    scheduled_delivery_timestamp: int | None = None


def _check_edit_shape(edit: Edit) -> None:
    if all(getattr(edit, f) is None for f in edit.__struct_fields__):
        raise ApiError("Nothing to change")
    if edit.type is not None and edit.to is None:
        raise ApiError("Recipient required when updating type of scheduled message.")
    if edit.type is not None and message_type(edit.type) == "stream" and edit.topic is None:
        raise ApiError("Topic required when updating scheduled message type to channel.")


def edit_scheduled_message(tx: Tx, sender: User, scheduled_id: int, edit: Edit) -> None:
    """PATCH /scheduled_messages/{id}: apply the edit (spec 4.2 rules); an edit clears `failed`."""
    _check_edit_shape(edit)
    if edit.scheduled_delivery_timestamp is not None:
        check_future(tx, edit.scheduled_delivery_timestamp)
    row = access_scheduled_message(tx, sender, scheduled_id)
    if row["delivered_message_id"] is not None:
        raise ApiError("Scheduled message was already sent")
    if row["failed"] and edit.scheduled_delivery_timestamp is None:
        raise ApiError("Scheduled delivery time must be in the future.")
    kind = message_type(edit.type) if edit.type is not None else row["type"]
    current_to = row["channel_id"] if row["type"] == "stream" else json.loads(row["to_user_ids"])
    draft = Draft(
        type=kind,
        to=edit.to if edit.to is not None else current_to,
        content=edit.content if edit.content is not None else row["content"],
        # The topic is ignored for direct messages; a channel message keeps its topic unless given.
        topic=(edit.topic if edit.topic is not None else row["topic"]) if kind == "stream" else None,
        scheduled_delivery_timestamp=edit.scheduled_delivery_timestamp or row["scheduled_timestamp"],
    )
    kind, to, topic, content, rendered = validate(tx, sender, draft, row["client"])
    tx.execute(
        "UPDATE scheduled_messages SET type = ?, channel_id = ?, to_user_ids = ?, topic = ?, content = ?,"
        " rendered_content = ?, scheduled_timestamp = ?, failed = 0, failure_message = NULL WHERE id = ?",
        (
            kind, to if kind == "stream" else None, json.dumps(to) if kind == "private" else None, topic, content,
            rendered, draft.scheduled_delivery_timestamp, scheduled_id,
        ),
    )  # fmt: skip
    updated = scheduled_object(_get(tx, scheduled_id))
    tx.publish({"type": "scheduled_messages", "op": "update", "scheduled_message": updated}, [sender.id])


def list_scheduled_messages(tx: Tx, sender: User) -> list[dict[str, Any]]:
    """GET /scheduled_messages: the sender's undelivered messages (failed ones too), soonest first."""
    rows = tx.all(
        f"SELECT {SCHEDULED_COLUMNS} FROM scheduled_messages WHERE sender_id = ? AND delivered_message_id IS NULL"
        " ORDER BY scheduled_timestamp, id",
        (sender.id,),
    )
    return [scheduled_object(row) for row in rows]


def delete_scheduled_message(tx: Tx, sender: User, scheduled_id: int) -> None:
    """DELETE /scheduled_messages/{id}: cancel an undelivered scheduled message."""
    row = access_scheduled_message(tx, sender, scheduled_id)
    if row["delivered_message_id"] is not None:
        raise not_found("Scheduled message does not exist")
    tx.execute("DELETE FROM scheduled_messages WHERE id = ?", (scheduled_id,))
    tx.publish({"type": "scheduled_messages", "op": "remove", "scheduled_message_id": scheduled_id}, [sender.id])


# -- delivery --------------------------------------------------------------------------------


def next_due_time(tx: Tx) -> int | None:
    """Return when the next scheduled message is due, or None if none waits."""
    value = tx.value(
        "SELECT scheduled_timestamp FROM scheduled_messages WHERE delivered_message_id IS NULL AND NOT failed"
        " ORDER BY scheduled_timestamp, id LIMIT 1"
    )
    return None if value is None else int(value)


def due_ids(tx: Tx, now: float, limit: int) -> list[int]:
    """Return up to `limit` ids of messages due at `now`, oldest first."""
    return tx.column(
        "SELECT id FROM scheduled_messages WHERE delivered_message_id IS NULL AND NOT failed"
        " AND scheduled_timestamp <= ? ORDER BY scheduled_timestamp, id LIMIT ?",
        (int(now), limit),
    )


def deliver_one(tx: Tx, scheduled_id: int) -> int | None:
    """Deliver one due message in the current transaction; return the message id, or None if it failed.

    The message, its per-user rows and this row's status commit together: a crash loses or
    repeats nothing. Permissions are checked again now, as the sender's rights may have changed.
    """
    row = _get(tx, scheduled_id)
    if row is None or row["delivered_message_id"] is not None or row["failed"]:
        return None
    sender = get_user_by_id(tx, row["sender_id"])
    assert sender is not None
    try:
        if tx.now - row["scheduled_timestamp"] > MAX_LATENESS_SECONDS:
            raise ApiError(LATE)
        if not sender.is_active:
            raise ApiError("Sender is deactivated.")
        to = row["channel_id"] if row["type"] == "stream" else json.loads(row["to_user_ids"])
        request = SendRequest(type=row["type"], to=to, content=row["content"], topic=row["topic"], client=row["client"])
        destination, content = validate_send(tx, sender, request)
    except ApiError as error:
        fail(tx, sender, row, error.msg)
        return None
    read_by_sender = None if row["read_by_sender"] is None else bool(row["read_by_sender"])
    message_id = store_message(tx, sender, destination, content, row["client"], read_by_sender)
    tx.execute("UPDATE scheduled_messages SET delivered_message_id = ? WHERE id = ?", (message_id, scheduled_id))
    tx.publish({"type": "scheduled_messages", "op": "remove", "scheduled_message_id": scheduled_id}, [sender.id])
    return message_id


def fail(tx: Tx, sender: User, row: Any, reason: str) -> None:
    """Mark a scheduled message failed (kept in the list) and tell the sender, by event and by a DM."""
    tx.execute("UPDATE scheduled_messages SET failed = 1, failure_message = ? WHERE id = ?", (reason, row["id"]))
    updated = scheduled_object(_get(tx, row["id"]))
    tx.publish({"type": "scheduled_messages", "op": "update", "scheduled_message": updated}, [sender.id])
    if sender.is_active:
        text = f"The message you scheduled for <time:{row['scheduled_timestamp']}> was not sent: {reason}"
        system_bots.notify(tx, sender, text)
