"""Scheduled messages: create, edit, list, delete, and delivery through the send path.

A row is waiting (`failed` 0, no `delivered_message_id`), failed (kept in the sender's list until
edited with a new time or deleted), or delivered (`delivered_message_id` set in the very
transaction that stored the message, so a crash can neither lose nor repeat a delivery).
"""

from __future__ import annotations

import datetime
import json
from typing import Any

import msgspec

from storage.channels.topics import normalize_topic
from storage.db.tx import Tx
from storage.messages import system_bots
from storage.messages.message_render import render_message
from storage.messages.messages import SendRequest, message_type, store_message, validate_send
from storage.model.errors import ApiError, not_found
from storage.model.user import User
from storage.org.users import get_user_by_id

# A message more than this late (server down, queue backed up) fails instead of arriving late.
MAX_LATENESS_SECONDS = 10 * 60
LATE = "Message could not be sent at the scheduled time."
SENDER_DEACTIVATED = "Account is deactivated"
INTERNAL_ERROR = "Internal server error"
NOT_IN_FUTURE = "Scheduled delivery time must be in the future."
SCHEDULED_COLUMNS = (
    "id, sender_id, type, channel_id, to_user_ids, topic, content, rendered_content, scheduled_timestamp,"
    " read_by_sender, client, failed, failure_message, delivered_message_id"
)
# What a create or an edit stores: type, channel_id, to_user_ids, topic, content, rendered_content.
Fields = tuple[str, int | None, str | None, str, str, str]


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
        raise ApiError(NOT_IN_FUTURE)


def check_to_shape(kind: str, to: Any) -> None:
    """Channel messages take one channel id, direct messages a list of user ids."""
    if kind == "stream" and not isinstance(to, int):
        raise ApiError("Invalid data type for channel ID")
    if kind == "private" and not isinstance(to, list):
        raise ApiError("Invalid data type for recipients")


def validate(tx: Tx, sender: User, draft: Draft) -> Fields:
    """Run the full send validation (as POST /messages would now); return the fields to store."""
    kind = message_type(draft.type)
    check_to_shape(kind, draft.to)
    to = draft.to if kind == "stream" else sorted(set(draft.to))
    request = SendRequest(type=kind, to=to, content=draft.content, topic=draft.topic)
    destination, content = validate_send(tx, sender, request)
    rendered = render_message(tx, content, sender).html
    if destination.channel is not None:
        return kind, destination.channel.id, None, destination.topic, content, rendered
    return kind, None, json.dumps(to), "", content, rendered


def _stored_to(row: Any) -> Any:
    return row["channel_id"] if row["type"] == "stream" else json.loads(row["to_user_ids"])


def scheduled_object(row: Any) -> dict[str, Any]:
    """Return the API object of a scheduled_messages row."""
    result: dict[str, Any] = {"scheduled_message_id": row["id"], "type": row["type"]}
    if row["type"] == "stream":
        result.update(to=row["channel_id"], topic=row["topic"])
    else:
        # The sender is left out of the recipients, unless the message is to themselves only.
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


def _publish_update(tx: Tx, scheduled_id: int, sender_id: int) -> None:
    updated = scheduled_object(_get(tx, scheduled_id))
    tx.publish({"type": "scheduled_messages", "op": "update", "scheduled_message": updated}, [sender_id])


def _publish_remove(tx: Tx, scheduled_id: int, sender_id: int) -> None:
    tx.publish({"type": "scheduled_messages", "op": "remove", "scheduled_message_id": scheduled_id}, [sender_id])


def create_scheduled_message(tx: Tx, sender: User, draft: Draft, client: str) -> int:
    """POST /scheduled_messages: validate as a send would, store; return the scheduled message id."""
    check_future(tx, draft.scheduled_delivery_timestamp)
    fields = validate(tx, sender, draft)
    cursor = tx.execute(
        "INSERT INTO scheduled_messages (type, channel_id, to_user_ids, topic, content, rendered_content,"
        " sender_id, scheduled_timestamp, read_by_sender, client, date_created)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (*fields, sender.id, draft.scheduled_delivery_timestamp, draft.read_by_sender, client, tx.timestamp),
    )
    scheduled_id = int(cursor.lastrowid or 0)
    added = scheduled_object(_get(tx, scheduled_id))
    tx.publish({"type": "scheduled_messages", "op": "add", "scheduled_messages": [added]}, [sender.id])
    return scheduled_id


def access_scheduled_message(tx: Tx, sender: User, scheduled_id: int) -> Any:
    """Return the sender's own scheduled message row; 404 "Scheduled message does not exist" otherwise."""
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


def _edited_fields(tx: Tx, sender: User, row: Any, edit: Edit) -> Fields:
    """Return the fields after the edit. A new type, recipient or content is validated as a new
    send; a topic alone only as a topic (ignored for direct messages); a time alone not at all."""
    if edit.type is not None or edit.to is not None or edit.content is not None:
        draft = Draft(
            type=edit.type if edit.type is not None else row["type"],
            to=edit.to if edit.to is not None else _stored_to(row),
            content=edit.content if edit.content is not None else row["content"],
            topic=edit.topic if edit.topic is not None else row["topic"],
            scheduled_delivery_timestamp=row["scheduled_timestamp"],
        )
        return validate(tx, sender, draft)
    topic = row["topic"]
    if edit.topic is not None and row["type"] == "stream":
        topic = normalize_topic(edit.topic)
    return row["type"], row["channel_id"], row["to_user_ids"], topic, row["content"], row["rendered_content"]


def edit_scheduled_message(tx: Tx, sender: User, scheduled_id: int, edit: Edit) -> None:
    """PATCH /scheduled_messages/{id}: apply the edit (checks in api-notes 4.2 order); it clears `failed`."""
    _check_edit_shape(edit)
    if edit.scheduled_delivery_timestamp is not None:
        check_future(tx, edit.scheduled_delivery_timestamp)
    row = access_scheduled_message(tx, sender, scheduled_id)
    if row["delivered_message_id"] is not None:
        raise ApiError("Scheduled message was already sent")
    # A failed message needs a new time: the old one is past, and it would just fail again.
    if row["failed"] and edit.scheduled_delivery_timestamp is None:
        raise ApiError(NOT_IN_FUTURE)
    fields = _edited_fields(tx, sender, row, edit)
    timestamp = edit.scheduled_delivery_timestamp or row["scheduled_timestamp"]
    tx.execute(
        "UPDATE scheduled_messages SET type = ?, channel_id = ?, to_user_ids = ?, topic = ?, content = ?,"
        " rendered_content = ?, scheduled_timestamp = ?, failed = 0, failure_message = NULL WHERE id = ?",
        (*fields, timestamp, scheduled_id),
    )
    _publish_update(tx, scheduled_id, sender.id)


def list_scheduled_messages(tx: Tx, sender: User) -> list[dict[str, Any]]:
    """GET /scheduled_messages: the sender's undelivered messages (failed ones too), soonest first."""
    return [scheduled_object(row) for row in tx.all(LIST_SQL, (sender.id,))]


def delete_scheduled_message(tx: Tx, sender: User, scheduled_id: int) -> None:
    """DELETE /scheduled_messages/{id}: cancel an undelivered (waiting or failed) scheduled message."""
    row = access_scheduled_message(tx, sender, scheduled_id)
    # A delivered row is history: it left the sender's list when its message was sent.
    if row["delivered_message_id"] is not None:
        raise not_found("Scheduled message does not exist")
    tx.execute("DELETE FROM scheduled_messages WHERE id = ?", (scheduled_id,))
    _publish_remove(tx, scheduled_id, sender.id)


# -- delivery --------------------------------------------------------------------------------

# Both served by the partial index scheduled_messages_due (tests/scheduler/test_scheduler.py pins the plans).
_WAITING = "delivered_message_id IS NULL AND NOT failed"
NEXT_DUE_SQL = (
    f"SELECT scheduled_timestamp FROM scheduled_messages WHERE {_WAITING} ORDER BY scheduled_timestamp, id LIMIT 1"
)
DUE_SQL = (
    f"SELECT id FROM scheduled_messages WHERE {_WAITING} AND scheduled_timestamp <= ?"
    " ORDER BY scheduled_timestamp, id LIMIT ?"
)
# GET /scheduled_messages, served by scheduled_messages_by_sender.
LIST_SQL = (
    f"SELECT {SCHEDULED_COLUMNS} FROM scheduled_messages WHERE sender_id = ? AND delivered_message_id IS NULL"
    " ORDER BY scheduled_timestamp, id"
)


def next_due_time(tx: Tx) -> int | None:
    """Return when the next waiting scheduled message is due, or None if none waits."""
    value = tx.value(NEXT_DUE_SQL)
    return None if value is None else int(value)


def due_ids(tx: Tx, now: float, limit: int) -> list[int]:
    """Return up to `limit` ids of waiting messages due at `now`, oldest first."""
    return tx.column(DUE_SQL, (int(now), limit))


def deliver_one(tx: Tx, scheduled_id: int) -> int | None:
    """Deliver one due message in the current transaction; return the message id, or None if it failed
    (or was no longer waiting).

    The message, its per-user rows and this row's status commit together: a crash loses or
    repeats nothing. Permissions are checked again now, as the sender's rights may have changed.
    """
    row = _get(tx, scheduled_id)
    if row is None or row["delivered_message_id"] is not None or row["failed"]:
        return None
    sender = get_user_by_id(tx, row["sender_id"])
    assert sender is not None
    if not sender.is_active:
        # Nobody would read the notification: the row is marked failed, quietly.
        fail(tx, sender, row, SENDER_DEACTIVATED, notify=False)
        return None
    try:
        if tx.now - row["scheduled_timestamp"] > MAX_LATENESS_SECONDS:
            raise ApiError(LATE)
        request = SendRequest(type=row["type"], to=_stored_to(row), content=row["content"], topic=row["topic"])
        destination, content = validate_send(tx, sender, request)
    except ApiError as error:
        fail(tx, sender, row, error.msg)
        return None
    read_by_sender = None if row["read_by_sender"] is None else bool(row["read_by_sender"])
    message_id = store_message(tx, sender, destination, content, row["client"], read_by_sender)
    tx.execute("UPDATE scheduled_messages SET delivered_message_id = ? WHERE id = ?", (message_id, scheduled_id))
    _publish_remove(tx, scheduled_id, sender.id)
    return message_id


def fail_scheduled_message(tx: Tx, scheduled_id: int, reason: str) -> None:
    """Mark a still-waiting message failed with `reason` (delivery raised something unexpected)."""
    row = _get(tx, scheduled_id)
    if row is None or row["delivered_message_id"] is not None or row["failed"]:
        return
    sender = get_user_by_id(tx, row["sender_id"])
    assert sender is not None
    fail(tx, sender, row, reason, notify=sender.is_active)


def fail(tx: Tx, sender: User, row: Any, reason: str, notify: bool = True) -> None:
    """Mark a scheduled message failed (it stays in the list) and tell the sender, by event and by a DM."""
    tx.execute("UPDATE scheduled_messages SET failed = 1, failure_message = ? WHERE id = ?", (reason, row["id"]))
    _publish_update(tx, row["id"], sender.id)
    if notify:
        system_bots.notify(tx, sender, failure_notice(row["scheduled_timestamp"], reason))


def failure_notice(scheduled_timestamp: int, reason: str) -> str:
    """Return the notification bot's message about a scheduled message that was not sent."""
    when = datetime.datetime.fromtimestamp(scheduled_timestamp, datetime.UTC).isoformat()
    return (
        f"The message you scheduled for <time:{when}> was not sent because of the following error:\n\n"
        f"> {reason}\n\n[View scheduled messages](#scheduled)"
    )
