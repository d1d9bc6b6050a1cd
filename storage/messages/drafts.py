"""Drafts: unsent messages kept on the server and synchronized to the user's other clients.

A draft is private to its user: every lookup is by (id, user), so another user's draft answers
"Draft does not exist" exactly like a missing one. Every change is told to all of the user's
clients (drafts events), the acting client included.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal, NamedTuple

import msgspec

from storage.channels.channels import access_channel_by_id
from storage.db.tx import Tx
from storage.messages.messages import check_content
from storage.model.errors import ApiError, not_found
from storage.model.realm import MAX_TOPIC_LENGTH, get_realm
from storage.model.user import User
from storage.org.users import api_email, get_user_by_id

# datetime's last second (9999-12-31): Zulip cannot store a later draft time either.
MAX_TIMESTAMP = 253_402_300_799
Timestamp = Annotated[int, msgspec.Meta(le=MAX_TIMESTAMP)] | Annotated[float, msgspec.Meta(le=MAX_TIMESTAMP)]
DRAFT_COLUMNS = "id, type, channel_id, to_user_ids, topic, content, last_edit_time"
# Unicode's White_Space characters: what Zulip's parameter layer strips from a draft's content
# before its non-blank check. Python's str.strip() also strips U+001C..U+001F; content made of
# those passes the parameter check and fails the message-body check ("Message must not be empty").
WHITE_SPACE = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + "\u2028\u2029\u202f\u205f\u3000"
)


class DraftData(msgspec.Struct, forbid_unknown_fields=True):
    """A draft as clients send it (spec 2.3); unknown keys are errors."""

    type: Literal["", "stream", "private"]
    to: list[int]
    topic: str
    content: str
    timestamp: Timestamp | None = None


class ValidDraft(NamedTuple):
    """A validated draft, as stored."""

    type: str
    channel_id: int | None
    to_user_ids: list[int]
    topic: str
    content: str
    last_edit_time: int


def check_synchronization(user: User) -> None:
    """Raise unless the user keeps drafts on the server (every draft endpoint checks this first)."""
    if not user.enable_drafts_synchronization:
        raise ApiError("User has disabled synchronizing drafts.")


def strip_content(draft: DraftData, name: str) -> DraftData:
    """The parameter-level rule: return the draft with its content stripped, non-blank or raise.

    `name` is the draft's place in the request (`drafts[0]`, `draft`) for the error text.
    """
    content = draft.content.strip(WHITE_SPACE)
    if not content:
        raise ApiError(f'{name}["content"] cannot be blank')
    return msgspec.structs.replace(draft, content=content)


def draft_object(draft_id: int, draft: ValidDraft) -> dict[str, Any]:
    """Return the API draft object (api-notes 4.12)."""
    return {
        "id": draft_id,
        "type": draft.type,
        "to": [draft.channel_id] if draft.type == "stream" else draft.to_user_ids,
        "topic": draft.topic,
        "content": draft.content,
        "timestamp": draft.last_edit_time,
    }


def _stored(row: Any) -> ValidDraft:
    return ValidDraft(row["type"], row["channel_id"], json.loads(row["to_user_ids"]), row["topic"], row["content"],
                      row["last_edit_time"])  # fmt: skip


def truncate_topic(topic: str) -> str:
    # Drafts keep the topic as typed (no stripping or "(no topic)" rule), only cut to length.
    return topic if len(topic) <= MAX_TOPIC_LENGTH else topic[: MAX_TOPIC_LENGTH - 3] + "..."


def private_recipients(tx: Tx, user: User, user_ids: list[int]) -> list[int]:
    """Return a direct draft's `to`: the other participants, or [own id] for a draft to oneself."""
    found = []
    for user_id in sorted(set(user_ids)):
        other = get_user_by_id(tx, user_id)
        if other is None:
            raise ApiError(f"Invalid user ID {user_id}")
        found.append(other)
    realm = get_realm(tx)
    for other in found:
        if not other.is_active:
            raise ApiError(f"'{api_email(other, realm)}' is no longer using Zulip.")
    return [u.id for u in found if u.id != user.id] or [user.id]


def validate_draft(tx: Tx, user: User, draft: DraftData) -> ValidDraft:
    """Return the draft to store, or raise the API's error (checked in Zulip's order)."""
    content = check_content(draft.content.rstrip().lstrip("\n"))
    timestamp = tx.timestamp if draft.timestamp is None else round(draft.timestamp, 6)
    if timestamp < 0:
        raise ApiError("Timestamp must not be negative.")
    if draft.type == "stream":
        topic = truncate_topic(draft.topic)
        if "\x00" in topic:
            raise ApiError("Topic must not contain null bytes")
        if len(draft.to) != 1:
            raise ApiError("Must specify exactly 1 channel ID for channel messages")
        # A draft may name only a live channel whose messages the user may read.
        channel = access_channel_by_id(tx, user, draft.to[0], require_content=True)
        if channel.is_archived:
            raise ApiError("Invalid channel ID")
        return ValidDraft("stream", channel.id, [], topic, content, int(timestamp))
    if draft.type == "private" and draft.to:
        to = private_recipients(tx, user, draft.to)
        return ValidDraft("private", None, to, "", content, int(timestamp))
    # Unaddressed, or "private" with nobody yet: Zulip stores and shows both as unaddressed.
    return ValidDraft("", None, [], "", content, int(timestamp))


def access_draft(tx: Tx, user: User, draft_id: int) -> ValidDraft:
    """Return the user's draft; another user's answers 404 "Draft does not exist" like a missing one."""
    row = tx.one(f"SELECT {DRAFT_COLUMNS} FROM drafts WHERE id = ? AND user_id = ?", (draft_id, user.id))
    if row is None:
        raise not_found("Draft does not exist")
    return _stored(row)


def _values(valid: ValidDraft) -> tuple[Any, ...]:
    return (valid.type, valid.channel_id, json.dumps(valid.to_user_ids), valid.topic, valid.content,
            valid.last_edit_time)  # fmt: skip


def list_drafts(tx: Tx, user: User) -> list[dict[str, Any]]:
    """GET /drafts: the user's drafts, least recently edited first."""
    check_synchronization(user)
    rows = tx.all(f"SELECT {DRAFT_COLUMNS} FROM drafts WHERE user_id = ? ORDER BY last_edit_time, id", (user.id,))
    return [draft_object(row["id"], _stored(row)) for row in rows]


def drafts_state(tx: Tx, user: User) -> dict[str, Any]:
    """POST /register's `drafts`: the user's drafts, or none when synchronization is off."""
    return {"drafts": list_drafts(tx, user) if user.enable_drafts_synchronization else []}


def create_drafts(tx: Tx, user: User, drafts: list[DraftData]) -> list[int]:
    """POST /drafts: store every draft or none (all are validated first); return ids in order."""
    check_synchronization(user)
    valid = [validate_draft(tx, user, draft) for draft in drafts]
    ids = []
    for draft in valid:
        cursor = tx.execute(
            "INSERT INTO drafts (user_id, type, channel_id, to_user_ids, topic, content, last_edit_time)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            (user.id, *_values(draft)),
        )
        ids.append(int(cursor.lastrowid or 0))
    if ids:
        objects = [draft_object(draft_id, draft) for draft_id, draft in zip(ids, valid, strict=True)]
        tx.publish({"type": "drafts", "op": "add", "drafts": objects}, [user.id])
    return ids


def edit_draft(tx: Tx, user: User, draft_id: int, draft: DraftData) -> None:
    """PATCH /drafts/{id}: replace the user's draft; 404 "Draft does not exist" otherwise."""
    check_synchronization(user)
    access_draft(tx, user, draft_id)
    valid = validate_draft(tx, user, draft)
    tx.execute(
        "UPDATE drafts SET type = ?, channel_id = ?, to_user_ids = ?, topic = ?, content = ?, last_edit_time = ?"
        " WHERE id = ?",
        (*_values(valid), draft_id),
    )
    tx.publish({"type": "drafts", "op": "update", "draft": draft_object(draft_id, valid)}, [user.id])


def delete_draft(tx: Tx, user: User, draft_id: int) -> None:
    """DELETE /drafts/{id}: delete the user's draft; 404 "Draft does not exist" otherwise."""
    check_synchronization(user)
    access_draft(tx, user, draft_id)
    tx.execute("DELETE FROM drafts WHERE id = ?", (draft_id,))
    tx.publish({"type": "drafts", "op": "remove", "draft_id": draft_id}, [user.id])
