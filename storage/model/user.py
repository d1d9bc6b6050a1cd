"""The User: a users row without its password hash, as every layer reads it."""

from __future__ import annotations

import msgspec

from storage.model.roles import ROLE_ADMINISTRATOR, ROLE_GUEST, ROLE_MODERATOR, ROLE_OWNER

# email_address_visibility: who may see a user's real email.
EVERYONE, MEMBERS, ADMINS, NOBODY, MODERATORS = 1, 2, 3, 4, 5
# SQLite's largest INTEGER: a larger id from a URL or a dummy email names no user (and would raise).
MAX_ID = 2**63 - 1


class User(msgspec.Struct, frozen=True):
    """A users row without its password hash."""

    id: int
    delivery_email: str
    full_name: str
    api_key: str
    role: int
    is_active: bool
    is_bot: bool
    bot_type: int | None
    bot_owner_id: int | None
    timezone: str
    date_joined: int
    avatar_source: str
    avatar_version: int
    avatar_file: str | None  # the uploaded avatar's files (storage/model/avatars.py), None without one
    email_address_visibility: int
    is_imported_stub: bool
    can_create_users: bool
    can_change_user_emails: bool
    enable_drafts_synchronization: bool

    @property
    def is_owner(self) -> bool:
        return self.role == ROLE_OWNER

    @property
    def is_admin(self) -> bool:
        return self.role in (ROLE_OWNER, ROLE_ADMINISTRATOR)

    @property
    def is_moderator(self) -> bool:
        return self.role in (ROLE_OWNER, ROLE_ADMINISTRATOR, ROLE_MODERATOR)

    @property
    def is_guest(self) -> bool:
        return self.role == ROLE_GUEST


USER_COLUMNS = ", ".join(User.__struct_fields__)
