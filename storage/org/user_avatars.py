"""Uploaded avatars: POST /users/me/avatar (store), DELETE /users/me/avatar (back to the default).

As Zulip's set_avatar_backend and do_change_avatar_fields: one image file of at most
MAX_AVATAR_FILE_SIZE_MIB, kept as two square PNGs (storage/media/avatars.py makes them, off the
event loop); each change bumps avatar_version and tells every active user (realm_user update with
the new URLs). The files live in the data directory under uploads/avatars/ (the folder `tornchat
backup` archives), named `{avatar_file}.png` and `{avatar_file}-medium.png` with avatar_file random
hex chosen here: a new upload gets new names, and the old files are removed once the change is
committed. Encoded messages show avatar URLs: the change journal drops them when avatar_file or
avatar_version change (storage/cache/journal.py: SENDER_COLUMNS).
"""

from __future__ import annotations

import re
import secrets
from typing import Any

from storage.db import upload_files
from storage.db.tx import Tx
from storage.model import avatars
from storage.model.errors import ApiError
from storage.model.realm import get_realm
from storage.model.user import User
from storage.org import groups, users

MAX_AVATAR_FILE_SIZE_MIB = 5  # Zulip's MAX_AVATAR_FILE_SIZE_MIB
AVATAR_PATH_PREFIX = "avatars/"  # the folder under uploads/, as upload_files names paths
# What a stored file is named: a request path is checked against it before the file system is asked.
FILE_NAME = re.compile(r"([0-9a-f]{32})(-medium)?\.png")


def check_avatar_files(files: list[bytes]) -> bytes:
    """Return the one uploaded file, or raise as Zulip's set_avatar_backend does, in its order."""
    if len(files) != 1:
        raise ApiError("You must upload exactly one avatar.")
    if len(files[0]) > MAX_AVATAR_FILE_SIZE_MIB * 1024 * 1024:
        raise ApiError(f"Uploaded file is larger than the allowed limit of {MAX_AVATAR_FILE_SIZE_MIB} MiB")
    return files[0]


def _path_id(avatar_file: str, medium: bool) -> str:
    return f"{AVATAR_PATH_PREFIX}{avatar_file}{avatars.MEDIUM_SUFFIX if medium else ''}.png"


def store_avatar_files(data_dir: str, small: bytes, medium: bytes) -> str:
    """Write the two PNGs under uploads/avatars/ (staged, fsynced, renamed into place); return their avatar_file."""
    avatar_file = secrets.token_hex(16)
    for data, is_medium in ((small, False), (medium, True)):
        upload_files.install(data_dir, upload_files.stage(data_dir, data), _path_id(avatar_file, is_medium))
    return avatar_file


def remove_avatar_files(data_dir: str, avatar_file: str | None) -> None:
    """Delete an avatar's two files (a failed upload, or files a change replaced); missing ones are no error."""
    if avatar_file is not None:
        for medium in (False, True):
            upload_files.remove(data_dir, _path_id(avatar_file, medium))


def avatar_file_path(data_dir: str, file_name: str) -> str | None:
    """Where a served avatar file name lives (the file may be gone), or None for a name no upload has."""
    if not FILE_NAME.fullmatch(file_name):
        return None
    return upload_files.local_path(data_dir, AVATAR_PATH_PREFIX + file_name)


def set_avatar(tx: Tx, user: User, avatar_file: str) -> tuple[dict[str, Any], str | None]:
    """POST /users/me/avatar, once store_avatar_files wrote the files: ({avatar_url}, the replaced avatar_file)."""
    return _change(tx, user, avatars.UPLOADED, avatar_file)


def delete_avatar(tx: Tx, user: User) -> tuple[dict[str, Any], str | None]:
    """DELETE /users/me/avatar: back to the default (or Gravatar); ({avatar_url}, the replaced avatar_file)."""
    return _change(tx, user, avatars.FROM_GRAVATAR, None)


def _change(tx: Tx, user: User, source: str, avatar_file: str | None) -> tuple[dict[str, Any], str | None]:
    # Read in the transaction: the row as it is now, not as the request's authentication saw it.
    current = users.get_user_by_id(tx, user.id)
    assert current is not None
    tx.execute(
        "UPDATE users SET avatar_source = ?, avatar_file = ?, avatar_version = avatar_version + 1 WHERE id = ?",
        (source, avatar_file, user.id),
    )
    changed = users.get_user_by_id(tx, user.id)
    assert changed is not None
    realm = get_realm(tx)
    url = users.avatar_url(changed, realm)
    # Zulip's notify_avatar_url_change: the URLs even for clients that compute Gravatars themselves.
    person = {
        "avatar_source": changed.avatar_source,
        "avatar_url": url,
        "avatar_url_medium": users.avatar_url(changed, realm, medium=True),
        "avatar_version": changed.avatar_version,
        "user_id": changed.id,
    }
    tx.publish({"type": "realm_user", "op": "update", "person": person}, groups.active_user_ids(tx))
    return {"avatar_url": url}, current.avatar_file


def access_avatar_url(tx: Tx, viewer: User | None, email_or_id: str, medium: bool) -> str:
    """GET /avatar/{email_or_id}[/medium]: the URL to redirect to (Zulip's avatar view).

    viewer None: a spectator, who may name users by id only (Zulip: defense in depth, since a spectator
    sees dummy emails anyway); the caller has checked that spectators are allowed. Raise "No such user"
    (404) for an id or email that names nobody the viewer may name.
    """
    realm = get_realm(tx)
    if re.fullmatch(r"[0-9]{1,18}", email_or_id):
        target = users.get_user_by_id(tx, int(email_or_id))
    elif re.fullmatch(r"[0-9]+", email_or_id):
        target = None  # past any id
    elif viewer is not None:
        target = users.get_user_by_api_email(tx, email_or_id, realm)
        if target is not None and target.delivery_email.lower() == email_or_id.strip().lower():
            # A real address names the user only for a viewer who may see it (as GET /users/{email}).
            target = target if users.can_see_delivery_email(viewer, target) else None
    else:
        raise users.unauthorized("Not logged in: API authentication or user session required")
    if target is None:
        raise ApiError("No such user", status=404)
    return users.avatar_url(target, realm, medium)
