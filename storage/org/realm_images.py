"""The organization's icon, logo and night logo: POST and DELETE /realm/icon and /realm/logo, their URLs.

As Zulip's zerver/views/realm_icon.py and realm_logo.py: administrators only, one image file of at
most 5 MiB, kept as a PNG (storage/media/icons.py resizes it, off the event loop), a version bumped
by every change and a `realm` update_dict event to every active user. Without an upload each points
at the server's drawn icon (Zulip: a Gravatar identicon and its own logo). Files are named like
avatars' (random hex, uploads/realm/{file}.png): a new upload gets a new name and the replaced file is
removed once the change is committed. Removing one only goes back to the default.
"""

from __future__ import annotations

import re
import secrets
from typing import Any

import msgspec

from storage.db import upload_files
from storage.db.tx import Tx
from storage.model.errors import ApiError, must_be_admin
from storage.model.user import User
from storage.org import groups

MAX_ICON_FILE_SIZE_MIB = 5  # Zulip's MAX_ICON_FILE_SIZE_MIB
MAX_LOGO_FILE_SIZE_MIB = 5  # Zulip's MAX_LOGO_FILE_SIZE_MIB
DEFAULT_ICON_PATH = "/static/images/logo/zulip-icon-128x128.png"  # tornchat/handlers/server_files.py
UPLOADED_PREFIX = "/user_avatars/1/realm/"
PATH_PREFIX = "realm/"  # the folder under uploads/, as upload_files names paths
FILE_NAME = re.compile(r"[0-9a-f]{32}\.png")


class Kind(msgspec.Struct, frozen=True):
    """One of the three images: its columns and how Zulip names it in events and register."""

    name: str  # icon, logo, night_logo: the event's property, the columns' prefix
    uploaded: str  # the source of an uploaded one
    default: str  # the source of the default one


ICON = Kind("icon", "U", "G")
LOGO = Kind("logo", "U", "D")
NIGHT_LOGO = Kind("night_logo", "U", "D")
KINDS = (ICON, LOGO, NIGHT_LOGO)


def logo_kind(night: bool) -> Kind:
    return NIGHT_LOGO if night else LOGO


def image_state(tx: Tx, kind: Kind) -> dict[str, str]:
    """{"{kind}_url", "{kind}_source"}: Zulip's icon_url/icon_source and its logo data, absolute URLs."""
    row = tx.one(f"SELECT url, {kind.name}_file AS file, {kind.name}_version AS version FROM realm")
    assert row is not None
    if row["file"] is None:
        return {f"{kind.name}_url": row["url"] + DEFAULT_ICON_PATH, f"{kind.name}_source": kind.default}
    url = f"{row['url']}{UPLOADED_PREFIX}{row['file']}?version={row['version']}"
    return {f"{kind.name}_url": url, f"{kind.name}_source": kind.uploaded}


def realm_images_state(tx: Tx) -> dict[str, str]:
    """POST /register's realm_icon_url, realm_icon_source, realm_logo_* and realm_night_logo_*."""
    return {f"realm_{key}": value for kind in KINDS for key, value in image_state(tx, kind).items()}


def realm_icon_url(tx: Tx) -> str:
    """GET /server_settings' realm_icon."""
    return image_state(tx, ICON)["icon_url"]


def check_image_upload(tx: Tx, user: User, kind: Kind, files: list[bytes]) -> bytes:
    """Return the one uploaded file, or raise as Zulip's upload_icon and upload_logo do, in their order."""
    if not user.is_admin:
        raise must_be_admin()
    what, limit = ("icon", MAX_ICON_FILE_SIZE_MIB) if kind is ICON else ("logo", MAX_LOGO_FILE_SIZE_MIB)
    if len(files) != 1:
        raise ApiError(f"You must upload exactly one {what}.")
    if len(files[0]) > limit * 1024 * 1024:
        raise ApiError(f"Uploaded file is larger than the allowed limit of {limit} MiB")
    return files[0]


def store_image_file(data_dir: str, png: bytes) -> str:
    """Write a processed image under uploads/realm/ (staged, fsynced, renamed into place); return its file name."""
    file_name = secrets.token_hex(16) + ".png"
    upload_files.install(data_dir, upload_files.stage(data_dir, png), PATH_PREFIX + file_name)
    return file_name


def remove_image_file(data_dir: str, file_name: str | None) -> None:
    """Delete an image file nothing names any more; a missing one is no error."""
    if file_name is not None:
        upload_files.remove(data_dir, PATH_PREFIX + file_name)


def image_file_path(data_dir: str, file_name: str) -> str | None:
    """Where a served realm image lives (the file may be gone), or None for a name no upload has."""
    return upload_files.local_path(data_dir, PATH_PREFIX + file_name) if FILE_NAME.fullmatch(file_name) else None


def change_image(tx: Tx, user: User, kind: Kind, file_name: str | None) -> tuple[dict[str, str], str | None]:
    """Record an uploaded image (file_name) or go back to the default (None); return (its state, the replaced file).

    Administrators only (checked again in the writing transaction); sends Zulip's realm update_dict event.
    """
    if not user.is_admin:
        raise must_be_admin()
    replaced = tx.value(f"SELECT {kind.name}_file FROM realm")
    tx.execute(f"UPDATE realm SET {kind.name}_file = ?, {kind.name}_version = {kind.name}_version + 1", (file_name,))
    state = image_state(tx, kind)
    event: dict[str, Any] = {"type": "realm", "op": "update_dict", "property": kind.name, "data": state}
    tx.publish(event, groups.active_user_ids(tx))
    return state, replaced
