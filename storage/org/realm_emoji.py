"""Custom emoji of the realm: list, upload (an image file), deactivate; `realm_emoji` events.

Images live in the data directory under uploads/emoji/ (storage/db/backup.py backs that folder up),
named by the server (random hex and the extension of the type read from the file's first bytes),
never by the client. As in Zulip, removing an emoji only deactivates it: messages and reactions
that show it keep their image, and its name becomes free for a new emoji.
"""

from __future__ import annotations

import os
import re
import secrets
from typing import Any

from storage.db import upload_files
from storage.db.tx import Tx
from storage.model.errors import ApiError
from storage.model.user import User
from storage.org import groups
from storage.org.realm import realm_group
from storage.text import emoji

REALM_ID = 1  # one realm per database (realm.id is always 1)
EMOJI_FOLDER = os.path.join("uploads", "emoji")  # inside the data directory
EMOJI_PATH_PREFIX = "emoji/"  # the folder as upload_files names paths under uploads/
MAX_EMOJI_FILE_SIZE_MIB = 5  # Zulip's MAX_EMOJI_FILE_SIZE_MIB
# The image types Zulip accepts for custom emoji, recognised by their first bytes, never by the
# client's claim: (signature test, content type, extension).
_IMAGE_TYPES = (
    (lambda head: head.startswith(b"\x89PNG\r\n\x1a\n"), "image/png", ".png"),
    (lambda head: head[:6] in (b"GIF87a", b"GIF89a"), "image/gif", ".gif"),
    (lambda head: head.startswith(b"\xff\xd8\xff"), "image/jpeg", ".jpg"),
    (lambda head: head[:4] == b"RIFF" and head[8:12] == b"WEBP", "image/webp", ".webp"),
)
# A stored file's name: what store_image writes, so a request path can be checked against it.
FILE_NAME = re.compile(r"[0-9a-f]{32}\.(?:png|gif|jpg|webp)")
_VALID_NAME = re.compile(r"[0-9a-z\-_]+(?<![\-_])")
_NAME_CHARACTERS = re.compile(r"[0-9a-z\-_]+")


def image_url(file_name: str) -> str:
    """Return the URL an emoji image is served at (Zulip's local-storage layout)."""
    return f"/user_avatars/{REALM_ID}/emoji/images/{file_name}"


def emoji_object(row: Any) -> dict[str, Any]:
    """Return the API object of a realm_emoji row."""
    return {
        "id": str(row["id"]),
        "name": row["name"],
        "source_url": image_url(row["file_name"]) if row["file_name"] else "",
        "still_url": None,  # Zulip's still image of an animated emoji: no image processing here
        "deactivated": bool(row["deactivated"]),
        "author_id": row["author_id"],
    }


def list_realm_emoji(tx: Tx) -> dict[str, dict[str, Any]]:
    """GET /realm/emoji's `emoji`: every custom emoji, deactivated ones too, keyed by id."""
    rows = tx.all("SELECT id, name, author_id, deactivated, file_name FROM realm_emoji ORDER BY id")
    return {str(row["id"]): emoji_object(row) for row in rows}


def realm_emoji_state(tx: Tx) -> dict[str, Any]:
    """POST /register's `realm_emoji`."""
    return {"realm_emoji": list_realm_emoji(tx)}


def active_realm_emoji_urls(tx: Tx) -> dict[str, str]:
    """Return name -> image URL of the active custom emoji that have an image (message rendering)."""
    rows = tx.all("SELECT name, file_name FROM realm_emoji WHERE NOT deactivated AND file_name IS NOT NULL")
    return {row["name"]: image_url(row["file_name"]) for row in rows}


def check_emoji_name(name: str) -> str:
    """Return the name with spaces as underscores, or Zulip's error for an invalid one."""
    name = name.strip().replace(" ", "_")
    if not name:
        raise ApiError("Emoji name is missing")
    if _VALID_NAME.fullmatch(name):
        return name
    if _NAME_CHARACTERS.fullmatch(name):
        raise ApiError("Emoji names must end with either a letter or digit.")
    raise ApiError("Emoji names must contain only lowercase English letters, digits, spaces, dashes, and underscores.")


def image_type(data: bytes) -> tuple[str, str]:
    """Return (content type, extension) of image data by its first bytes; "Invalid image format" else."""
    head = data[:16]
    for matches, content_type, extension in _IMAGE_TYPES:
        if matches(head):
            return content_type, extension
    raise ApiError("Invalid image format")


def check_upload(tx: Tx, user: User, name: str, files: list[bytes]) -> str:
    """Return the checked name of a new emoji, or raise as Zulip's upload_emoji does, in its order."""
    if user.is_guest:
        raise ApiError("Not allowed for guest users")
    name = check_emoji_name(name)
    if not groups.is_member(tx, user.id, realm_group(tx, "can_add_custom_emoji_group")):
        raise ApiError("Insufficient permission")
    if tx.value("SELECT 1 FROM realm_emoji WHERE name = ? AND NOT deactivated", (name,)):
        raise ApiError("A custom emoji with this name already exists.")
    if len(files) != 1:
        raise ApiError("You must upload exactly one file.")
    if name in emoji.NAME_TO_CODE and not user.is_admin:
        raise ApiError("Only administrators can override built-in emoji.")
    if len(files[0]) > MAX_EMOJI_FILE_SIZE_MIB * 1024 * 1024:
        raise ApiError(f"Uploaded file is larger than the allowed limit of {MAX_EMOJI_FILE_SIZE_MIB} MiB")
    image_type(files[0])
    return name


def store_image(data_dir: str, data: bytes) -> tuple[str, str]:
    """Write checked image data under uploads/emoji/ (staged, fsynced, renamed into place, as uploads
    are); return (file name, type)."""
    content_type, extension = image_type(data)
    file_name = secrets.token_hex(16) + extension
    upload_files.install(data_dir, upload_files.stage(data_dir, data), EMOJI_PATH_PREFIX + file_name)
    return file_name, content_type


def remove_image(data_dir: str, file_name: str) -> None:
    """Delete a stored image whose emoji was never recorded (a failed upload)."""
    upload_files.discard(upload_files.local_path(data_dir, EMOJI_PATH_PREFIX + file_name))


def upload_realm_emoji(tx: Tx, user: User, name: str, files: list[bytes], file_name: str, content_type: str) -> int:
    """POST /realm/emoji/{name}: record an emoji whose image store_image wrote; return its id.

    The checks run again here, in the writing transaction, so two uploads of one name cannot both win.
    """
    name = check_upload(tx, user, name, files)
    cursor = tx.execute(
        "INSERT INTO realm_emoji (name, author_id, file_name, content_type, date_created) VALUES (?, ?, ?, ?, ?)",
        (name, user.id, file_name, content_type, int(tx.timestamp)),
    )
    _publish(tx)
    return int(cursor.lastrowid or 0)


def deactivate_realm_emoji(tx: Tx, user: User, name: str) -> None:
    """DELETE /realm/emoji/{name}: deactivate an active emoji; only its author or an administrator."""
    row = tx.one("SELECT id, author_id FROM realm_emoji WHERE name = ? AND NOT deactivated", (name,))
    if row is None:
        raise ApiError(f"Emoji '{name}' does not exist", status=404)
    if not user.is_admin and row["author_id"] != user.id:
        raise ApiError("Must be an organization administrator or emoji author")
    tx.execute("UPDATE realm_emoji SET deactivated = 1 WHERE id = ?", (row["id"],))
    _publish(tx)


def get_image_content_type(tx: Tx, file_name: str) -> str | None:
    """Return the content type of a stored emoji image (active or not), or None when no emoji names it."""
    return tx.value("SELECT content_type FROM realm_emoji WHERE file_name = ?", (file_name,))


def _publish(tx: Tx) -> None:
    # Zulip sends the whole custom emoji set to every active user after each change.
    event = {"type": "realm_emoji", "op": "update", "realm_emoji": list_realm_emoji(tx)}
    tx.publish(event, groups.active_user_ids(tx))
