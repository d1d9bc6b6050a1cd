"""Uploaded files as the API sees them: attachments, their quota, who may read them, and the messages
that link to them (Zulip's Attachment and do_claim_attachments).

A file is readable by its uploader and by anyone who may read a message linking to it. A message
links a file when its rendered content points at /user_uploads/{path_id}; sending or editing one
records the link (claiming) if the sender uploaded the file or may already read it (re-sharing), so
nobody gains a file by guessing its URL. Deleting a message drops its links (ON DELETE CASCADE).
The bytes are handled by storage.db.upload_files; rows and events here.
"""

from __future__ import annotations

import html
import re
import urllib.parse
from typing import Any

import msgspec

from storage.channels.channels import has_content_access
from storage.db import upload_files
from storage.db.tx import Tx
from storage.media.thumbnail import ImageInfo, remove_thumbnails
from storage.model.channel import get_channel_by_id
from storage.model.errors import ApiError
from storage.model.user import User

REALM_ID = 1  # one realm per database (realm.id is always 1)
# Links in rendered HTML to this server's uploads (the renderer makes them relative).
_UPLOAD_LINK = re.compile(r'(?:href|src)="/?user_uploads/([^"?#]+)"')


class NewUpload(msgspec.Struct, frozen=True):
    """A file staged on disk, waiting for its row: where it is, what it is called, what it holds."""

    staged: str
    path_id: str
    name: str
    content_type: str
    size: int
    image: ImageInfo | None = None  # what its header says, when it is an image to preview and thumbnail


def file_not_found() -> ApiError:
    return ApiError("File not found.", status=404)


def invalid_attachment() -> ApiError:
    return ApiError("Invalid attachment")


def check_file_size(size: int, max_mib: int) -> None:
    """Raise the API's error for a file over the server's per-file limit (max_file_upload_size_mib)."""
    if size > max_mib * upload_files.MIB:
        raise ApiError(f"Uploaded file is larger than the allowed limit of {max_mib} MiB")


def check_quota(tx: Tx, user: User, size: int, quota_mib: int) -> None:
    """Raise the quota error if the user's files and `size` more bytes would exceed their quota."""
    if space_used(tx, user.id) + size > quota_mib * upload_files.MIB:
        raise ApiError("Upload would exceed your upload quota.", "REALM_UPLOAD_QUOTA")


def space_used(tx: Tx, user_id: int) -> int:
    """Bytes of all files the user uploaded (what their quota counts)."""
    return int(tx.value("SELECT COALESCE(SUM(size), 0) FROM attachments WHERE owner_id = ?", (user_id,)))


def attachment_object(tx: Tx, row: Any) -> dict[str, Any]:
    """The API attachment object: id, name, path_id, size, create_time and linking messages (times in ms)."""
    messages = tx.all(
        "SELECT m.id, m.date_sent FROM attachment_messages AS am JOIN messages AS m ON m.id = am.message_id"
        " WHERE am.attachment_id = ? ORDER BY m.id",
        (row["id"],),
    )
    return {
        "id": row["id"],
        "name": row["file_name"],
        "path_id": row["path_id"],
        "size": row["size"],
        "create_time": row["create_time"] * 1000,
        "messages": [{"id": m["id"], "date_sent": m["date_sent"] * 1000} for m in messages],
    }


def publish_attachment(tx: Tx, owner_id: int, op: str, attachment: dict[str, Any]) -> None:
    """Tell the owner's clients an attachment was added, updated or removed (with their space used)."""
    event = {"type": "attachment", "op": op, "attachment": attachment, "upload_space_used": space_used(tx, owner_id)}
    tx.publish(event, [owner_id])


def list_attachments(tx: Tx, user: User) -> dict[str, Any]:
    """GET /attachments: the user's uploads, oldest first, and the bytes they use."""
    rows = tx.all("SELECT * FROM attachments WHERE owner_id = ? ORDER BY id", (user.id,))
    return {"attachments": [attachment_object(tx, row) for row in rows], "upload_space_used": space_used(tx, user.id)}


def create_attachment(tx: Tx, user: User, upload: NewUpload, data_dir: str, quota_mib: int) -> dict[str, str]:
    """POST /user_uploads: record a staged file and move it into place; return uri, url and filename.

    Raises the quota error (nothing stored). The rename happens last, inside the transaction: if it
    fails, the row is rolled back with it.
    """
    check_quota(tx, user, upload.size, quota_mib)  # again: another upload may have committed meanwhile
    cursor = tx.execute(
        "INSERT INTO attachments (owner_id, path_id, file_name, content_type, size, create_time)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        (user.id, upload.path_id, upload.name, upload.content_type, upload.size, tx.timestamp),
    )
    row = tx.one("SELECT * FROM attachments WHERE id = ?", (cursor.lastrowid,))
    if upload.image is not None:
        image = upload.image
        tx.execute(
            "INSERT INTO image_attachments (attachment_id, original_width, original_height, frames, content_type)"
            " VALUES (?, ?, ?, ?, ?)",
            (cursor.lastrowid, image.width, image.height, image.frames, image.content_type),
        )
    upload_files.install(data_dir, upload.staged, upload.path_id)
    publish_attachment(tx, user.id, "add", attachment_object(tx, row))
    url = f"/user_uploads/{upload.path_id}"
    return {"uri": url, "url": url, "filename": upload.name}


def delete_attachment(tx: Tx, user: User, attachment_id: int, data_dir: str) -> None:
    """DELETE /attachments/{id}: delete the user's own upload (row now, file and thumbnails once committed)."""
    row = tx.one("SELECT * FROM attachments WHERE id = ? AND owner_id = ?", (attachment_id, user.id))
    if row is None:
        raise invalid_attachment()
    tx.execute("DELETE FROM attachments WHERE id = ?", (attachment_id,))
    publish_attachment(tx, user.id, "remove", {"id": attachment_id})
    tx.after_commit.append(lambda: upload_files.remove(data_dir, row["path_id"]))
    tx.after_commit.append(lambda: remove_thumbnails(data_dir, row["path_id"]))


# -- reading --------------------------------------------------------------------------------------


def can_read(tx: Tx, user: User, row: Any) -> bool:
    """Whether the user uploaded the file or may read a message linking to it (access_message's rules)."""
    if row["owner_id"] == user.id:
        return True
    direct = tx.value(
        "SELECT 1 FROM attachment_messages AS am JOIN messages AS m ON m.id = am.message_id"
        " JOIN user_messages AS um ON um.message_id = m.id AND um.user_id = ?"
        " WHERE am.attachment_id = ? AND m.channel_id IS NULL LIMIT 1",
        (user.id, row["id"]),
    )
    if direct:
        return True
    channels = tx.all(
        "SELECT m.channel_id, MAX(um.user_id IS NOT NULL) AS received FROM attachment_messages AS am"
        " JOIN messages AS m ON m.id = am.message_id"
        " LEFT JOIN user_messages AS um ON um.message_id = m.id AND um.user_id = ?"
        " WHERE am.attachment_id = ? AND m.channel_id IS NOT NULL GROUP BY m.channel_id",
        (user.id, row["id"]),
    )
    for linked in channels:
        channel = get_channel_by_id(tx, linked["channel_id"])
        if channel is None or channel.is_archived or not has_content_access(tx, user, channel):
            continue
        if linked["received"] or channel.history_public_to_subscribers:
            return True
    return False


def access_upload(tx: Tx, user: User, path_id: str) -> Any:
    """Return the attachment row of a path_id the user may read; "File not found." (404) otherwise."""
    row = get_upload(tx, path_id)
    if row is None or not can_read(tx, user, row):
        raise file_not_found()
    return row


def get_upload(tx: Tx, path_id: str) -> Any:
    """Return the attachment row of a path_id, or None (no permission check: callers make their own)."""
    return tx.one("SELECT * FROM attachments WHERE path_id = ?", (path_id,))


# -- messages linking files -----------------------------------------------------------------------


def linked_path_ids(rendered_html: str) -> list[str]:
    """The path_ids of this server's uploads a rendered message links to or shows, in order, once each."""
    found: dict[str, None] = {}
    for match in _UPLOAD_LINK.finditer(rendered_html):
        path_id = urllib.parse.unquote(html.unescape(match.group(1)))
        if not path_id.startswith("temporary/"):
            found[path_id] = None
    return list(found)


def claim_attachments(tx: Tx, sender: User, message_id: int, rendered_html: str) -> None:
    """Link a new or edited message to the uploads it points at that the sender may share.

    The sender may link a file they uploaded or can already read; other links stay plain links.
    Each newly linked file's owner is told (attachment update).
    """
    if "user_uploads/" not in rendered_html:
        return
    for path_id in linked_path_ids(rendered_html):
        row = get_upload(tx, path_id)
        if row is None or not can_read(tx, sender, row):
            continue
        cursor = tx.execute(
            "INSERT OR IGNORE INTO attachment_messages (attachment_id, message_id) VALUES (?, ?)",
            (row["id"], message_id),
        )
        if cursor.rowcount:
            publish_attachment(tx, row["owner_id"], "update", attachment_object(tx, row))


def relink_attachments(tx: Tx, actor: User, message_id: int) -> list[dict[str, Any]]:
    """After a content edit: link what the new content points at, unlink what it no longer does.

    Returns Zulip's detached_uploads: the actor's files this edit unlinked that no message links now.
    """
    rendered_html = tx.value("SELECT rendered_content FROM messages WHERE id = ?", (message_id,)) or ""
    kept = set(linked_path_ids(rendered_html))
    before = tx.all(
        "SELECT a.* FROM attachment_messages AS am JOIN attachments AS a ON a.id = am.attachment_id"
        " WHERE am.message_id = ? ORDER BY a.id",
        (message_id,),
    )
    detached: list[dict[str, Any]] = []
    for row in before:
        if row["path_id"] in kept:
            continue
        unlink = "DELETE FROM attachment_messages WHERE attachment_id = ? AND message_id = ?"
        tx.execute(unlink, (row["id"], message_id))
        attachment = attachment_object(tx, row)
        publish_attachment(tx, row["owner_id"], "update", attachment)
        if row["owner_id"] == actor.id and not attachment["messages"]:
            detached.append(attachment)
    claim_attachments(tx, actor, message_id, rendered_html)
    return detached
