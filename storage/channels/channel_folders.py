"""Channel folders: named groups of channels an organization's administrators create."""

from __future__ import annotations

from typing import Any

from storage.channels.channel_creation import first_unprintable
from storage.db.tx import Tx
from storage.model.errors import ApiError, must_be_admin
from storage.model.user import User
from storage.org import groups
from storage.text import markdown

MAX_FOLDER_NAME_LENGTH = 60
MAX_FOLDER_DESCRIPTION_LENGTH = 1024
FOLDER_COLUMNS = "id, name, description, rendered_description, creator_id, date_created, is_archived"


def folder_object(row: Any) -> dict[str, Any]:
    """Return the API channel folder object for a channel_folders row."""
    return {
        "id": row["id"],
        "name": row["name"],
        "description": row["description"],
        "rendered_description": row["rendered_description"],
        "creator_id": row["creator_id"],
        "date_created": row["date_created"],
        "is_archived": bool(row["is_archived"]),
    }


def list_channel_folders(tx: Tx, include_archived: bool) -> list[dict[str, Any]]:
    """Return the folders (archived ones only when asked), by id."""
    rows = tx.all(
        f"SELECT {FOLDER_COLUMNS} FROM channel_folders WHERE ? OR NOT is_archived ORDER BY id", (include_archived,)
    )
    return [folder_object(row) for row in rows]


def check_can_create_folders(actor: User) -> None:
    """Raise unless the actor is an organization administrator."""
    if not actor.is_admin:
        raise must_be_admin()


def check_folder_name(tx: Tx, name: str) -> str:
    """Return the stripped folder name, or raise the API's error for it."""
    name = name.strip()
    if not name:
        raise ApiError("Channel folder name can't be empty.")
    position = first_unprintable(name)
    if position is not None:
        raise ApiError(f"Invalid character in channel folder name, at position {position}.")
    # Names are unique case-insensitively, archived folders included (the column is NOCASE).
    if tx.one("SELECT 1 FROM channel_folders WHERE name = ?", (name,)) is not None:
        raise ApiError("Channel folder name already in use")
    return name


def create_channel_folder(tx: Tx, actor: User, name: str, description: str) -> int:
    """POST /channel_folders/create: create a folder, tell every active user; return its id."""
    check_can_create_folders(actor)
    name = check_folder_name(tx, name)
    cursor = tx.execute(
        "INSERT INTO channel_folders (name, description, rendered_description, creator_id, date_created)"
        " VALUES (?, ?, ?, ?, ?)",
        (name, description, markdown.render(description) if description else "", actor.id, tx.timestamp),
    )
    row = tx.one(f"SELECT {FOLDER_COLUMNS} FROM channel_folders WHERE id = ?", (cursor.lastrowid,))
    assert row is not None
    event = {"type": "channel_folder", "op": "add", "channel_folder": folder_object(row)}
    tx.publish(event, groups.active_user_ids(tx))
    return int(row["id"])
