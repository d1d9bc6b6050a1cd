"""Avatar URLs: an uploaded avatar, the generated default, or Gravatar when the server allows it.

Zulip's zerver/lib/avatar.py, with the server's own default where Zulip has a static image: every
URL is versioned (`?v={avatar_version}`, spec 2.5) and its medium size is the same path with
`-medium.png` for `.png`, which is how zulip-flutter asks for the 500x500 image (lib/model/avatar_url.dart).

- Uploaded (avatar_source "U"): /user_avatars/1/{avatar_file}.png, served without credentials as
  Zulip serves /user_avatars/ (the random file name is the secret, not the user id).
- Otherwise, with the server's Gravatar switch on (realm.enable_gravatar): Gravatar, by the md5 of
  the lower-cased real email; a client asking client_gravatar computes it itself (the URL is null).
- Otherwise the generated default, /user_avatars/default/{user_id}.png: an image drawn from the user
  id alone (storage/media/avatars.py), so that no avatar ever needs the internet.
"""

from __future__ import annotations

import functools
import hashlib

from storage.model.realm import Realm
from storage.model.user import User

REALM_ID = 1  # one realm per database
UPLOADED_PREFIX = f"/user_avatars/{REALM_ID}/"
DEFAULT_PREFIX = "/user_avatars/default/"
MEDIUM_SUFFIX = "-medium"
DEFAULT_SIZE = 100  # Zulip's DEFAULT_AVATAR_SIZE
MEDIUM_SIZE = 500  # Zulip's MEDIUM_AVATAR_SIZE
GRAVATAR = "https://secure.gravatar.com/avatar/"
UPLOADED, FROM_GRAVATAR = "U", "G"  # avatar_source


def uses_gravatar(user: User, realm: Realm) -> bool:
    """Whether the avatar is the user's Gravatar: what a client with client_gravatar may compute itself."""
    return realm.enable_gravatar and user.avatar_source != UPLOADED


def avatar_url(user: User, realm: Realm, medium: bool = False) -> str:
    """Return the URL of the user's avatar (the 500x500 one when medium), versioned."""
    return _avatar_url(
        user.id, user.avatar_file if user.avatar_source == UPLOADED else None,
        user.delivery_email if uses_gravatar(user, realm) else None, user.avatar_version, medium,
    )  # fmt: skip


# A pure function run for every user of every POST /register and GET /users: cached (bounded).
@functools.lru_cache(maxsize=16384)
def _avatar_url(user_id: int, avatar_file: str | None, gravatar_email: str | None, version: int, medium: bool) -> str:
    if avatar_file is not None:
        return f"{UPLOADED_PREFIX}{avatar_file}{MEDIUM_SUFFIX if medium else ''}.png?v={version}"
    if gravatar_email is not None:
        digest = hashlib.md5(gravatar_email.lower().encode(), usedforsecurity=False).hexdigest()
        return f"{GRAVATAR}{digest}?v={version}" + (f"&s={MEDIUM_SIZE}" if medium else "")
    return f"{DEFAULT_PREFIX}{user_id}{MEDIUM_SUFFIX if medium else ''}.png?v={version}"
