"""Users, channels, the realm and direct-message conversations held in memory, per connection.

A reader of the connection's change journal (storage/cache/journal.py), which tells it of every write
to the rows it copies: a users row (only the columns a User holds; the columns a message shows also
drop a Sender), a channel (its name also drops the names map), what decides which channels a user may
no longer read, the realm, recipients and conversation members, the linkifier version. Nothing is kept
while a write of its kind is pending. It also holds the connection's encoded messages and kept flags,
which are readers of their own (message_cache.py, flag_cache.py).
"""

from __future__ import annotations

import re
import sqlite3
from typing import Any

import msgspec

from storage.cache.flag_cache import FlagCache
from storage.cache.journal import ChangeJournal, journal
from storage.cache.message_cache import MessageCache
from storage.db.tx import Tx
from storage.model import avatars, recipients
from storage.model.channel import CHANNEL_COLUMNS, UNREADABLE_CHANNELS_SQL, Channel, get_channel_by_id
from storage.model.realm import Realm, get_realm
from storage.model.user import EVERYONE, USER_COLUMNS, User

_DUMMY_EMAIL = re.compile(r"user(\d+)@(.+)", re.IGNORECASE)
# SQLite's NOCASE folds ASCII letters only: the email index folds the same way.
_NOCASE = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


class Sender(msgspec.Struct, frozen=True, array_like=True):
    """What a message object shows of its sender (or a reactor, or a conversation member)."""

    full_name: str
    email: str  # as the API shows it: real when visible to everyone (and for bots), else dummy
    avatar_url: str
    gravatar_null: bool  # avatar_url is null with client_gravatar


class Directory:
    """One connection's copies; every accessor takes the connection's current Tx-level view."""

    def __init__(self, journal: ChangeJournal) -> None:
        self.conn = journal.conn
        self.journal = journal
        self.messages = MessageCache()
        self.flags = FlagCache()
        for reader in (self, self.messages, self.flags):
            journal.subscribe(reader)
        self.reset()

    def reset(self) -> None:
        self.users: dict[int, User] = {}
        self.all_users_loaded = False
        self.by_email: dict[str, int] = {}
        self.senders: dict[int, Sender] = {}
        self.channel_names: dict[int, str] | None = None
        self.channels: dict[int, Channel] = {}
        self.every_channel: dict[int, Channel] | None = None
        self.channel_recipients: dict[int, int] = {}
        self.realm_value: Realm | None = None
        self.edit_history_allowed: bool | None = None
        self.linkifier_version: tuple[str, int] | None = None
        self.participants: dict[int, list[int]] = {}
        self.unreadable: dict[tuple[int, bool], list[int]] = {}

    def drop(self, kind: str, key: int, added: bool) -> None:
        """The journal's report of a write: drop what this kind and key held."""
        if kind == "users":  # a users row's columns: the ones a message shows also report "senders"
            user = self.users.pop(key, None)
            if user is not None and self.by_email.get(_fold(user.delivery_email)) == key:
                del self.by_email[_fold(user.delivery_email)]
        elif kind in ("access", "channels"):
            self.unreadable.clear()
            if kind == "channels":  # any column; a name change also reports "channel_names"
                self.channels.pop(key, None)
                self.every_channel = None
        elif kind == "senders":
            self.senders.pop(key, None)
        elif kind == "channel_names":
            self.channel_names = None
        elif kind == "linkifiers":
            self.linkifier_version = None
        elif kind == "realm":
            self.realm_value, self.edit_history_allowed = None, None
            self.senders.clear()  # dummy emails name the realm's host
        elif kind in ("recipients", "groups"):
            self.participants.clear()
            self.channel_recipients.clear()

    # -- linkifiers --------------------------------------------------------------------------

    def linkifier_state(self) -> tuple[str, int]:
        """The database's linkifier (token, version): what storage/text/linkify.py keys its compiled sets on."""
        found = self.linkifier_version
        if found is None:
            token, version = self.conn.execute("SELECT token, version FROM linkifier_state").fetchone()
            found = (str(token), int(version))
            if self.journal.keeps("linkifiers", 0):
                self.linkifier_version = found
        return found

    # -- users -------------------------------------------------------------------------------

    def user(self, user_id: int) -> User | None:
        found = self.users.get(user_id)
        if found is not None:
            return found
        if not self.all_users_loaded:
            self._load_all_users()
            found = self.users.get(user_id)
            if found is not None:
                return found
        if not 0 < user_id < 2**63:
            return None
        row = self.conn.execute(f"SELECT {USER_COLUMNS} FROM users WHERE id = ?", (user_id,)).fetchone()
        return None if row is None else self._keep(_user(row))

    def _load_all_users(self) -> None:
        for row in self.conn.execute(f"SELECT {USER_COLUMNS} FROM users"):
            self._keep(_user(row))
        self.all_users_loaded = True

    def _keep(self, user: User) -> User:
        if self.journal.keeps("users", user.id):
            self.users[user.id] = user
            self.by_email[_fold(user.delivery_email)] = user.id
        return user

    def user_by_api_email(self, email: str) -> User | None:
        """The user an API email names: a dummy `user{id}@host` address or a real one (users.get_user_by_api_email)."""
        email = email.strip()
        match = _DUMMY_EMAIL.fullmatch(email)
        if match and match.group(2).lower() == self.realm().email_host.lower():
            return self.user(int(match.group(1)))
        if not self.all_users_loaded:
            self._load_all_users()
        user_id = self.by_email.get(_fold(email))
        if user_id is not None:
            found = self.user(user_id)
            if found is not None and _fold(found.delivery_email) == _fold(email):
                return found
        row = self.conn.execute(f"SELECT {USER_COLUMNS} FROM users WHERE delivery_email = ?", (email,)).fetchone()
        return None if row is None else self._keep(_user(row))

    def sender(self, user_id: int) -> Sender:
        found = self.senders.get(user_id)
        if found is None:
            user = self.user(user_id)
            assert user is not None, user_id
            shown = user.is_bot or user.email_address_visibility == EVERYONE
            realm = self.realm()
            found = Sender(
                user.full_name,
                user.delivery_email if shown else f"user{user.id}@{realm.email_host}",
                avatars.avatar_url(user, realm),
                user.email_address_visibility == EVERYONE and avatars.uses_gravatar(user, realm),
            )
            keeps = self.journal.keeps
            if keeps("users", user_id) and keeps("senders", user_id) and keeps("realm", 0):
                self.senders[user_id] = found
        return found

    # -- the rest ----------------------------------------------------------------------------

    def realm(self) -> Realm:
        if self.realm_value is not None:
            return self.realm_value
        found = get_realm(_Reader(self.conn))  # type: ignore[arg-type]
        if self.journal.keeps("realm", 0):
            self.realm_value = found
        return found

    def allow_edit_history(self) -> bool:
        if self.edit_history_allowed is not None:
            return self.edit_history_allowed
        found = bool(self.conn.execute("SELECT allow_edit_history FROM realm").fetchone()[0])
        if self.journal.keeps("realm", 0):
            self.edit_history_allowed = found
        return found

    def channel_name(self, channel_id: int) -> str:
        return str(self.channel_name_map().get(channel_id, ""))

    def channel(self, channel_id: int) -> Channel | None:
        """channels.get_channel_by_id, kept until a write to that channel."""
        found = self.channels.get(channel_id)
        if found is None:
            found = get_channel_by_id(_Reader(self.conn), channel_id)  # type: ignore[arg-type]
            if found is not None and self.journal.keeps("channels", channel_id):
                self.channels[channel_id] = found
        return found

    def all_channels(self) -> dict[int, Channel]:
        """Every channel by id, archived ones too (shared: do not change it), kept until a write to any."""
        found = self.every_channel
        if found is None:
            rows = self.conn.execute(f"SELECT {CHANNEL_COLUMNS} FROM channels").fetchall()
            fields = Channel.__struct_fields__
            listed = msgspec.convert([dict(zip(fields, row, strict=True)) for row in rows], list[Channel], strict=False)
            found = {channel.id: channel for channel in listed}
            if not self.journal.writing("channels"):
                self.every_channel = found
        return found

    def channel_recipient(self, channel_id: int) -> int | None:
        """The recipient id of a channel (None until something was sent to it), kept once there is one."""
        found = self.channel_recipients.get(channel_id)
        if found is None:
            found = recipients.get_recipient(_Reader(self.conn), recipients.CHANNEL, channel_id)  # type: ignore[arg-type]
            if found is not None and not self.journal.writing("recipients"):
                self.channel_recipients[channel_id] = found
        return found

    def channel_name_map(self) -> dict[int, str]:
        """Channel id -> name, every channel (for callers that look up many; do not change it)."""
        names = self.channel_names
        if names is None:
            names = dict(self.conn.execute("SELECT id, name FROM channels").fetchall())
            if not self.journal.writing("channel_names"):
                self.channel_names = names
        return names

    def unreadable_channel_ids(self, user: User) -> list[int]:
        """channels.unreadable_channel_ids, kept per user until a write to what decides it."""
        found = self.unreadable.get((user.id, user.is_guest))
        if found is None:
            found = [
                row[0] for row in self.conn.execute(UNREADABLE_CHANNELS_SQL, {"user": user.id, "guest": user.is_guest})
            ]
            if not self.journal.writing("access", "channels"):
                self.unreadable[(user.id, user.is_guest)] = found
        return found

    def members(self, recipient_id: int) -> list[int]:
        """The members, sorted, of a direct-message conversation (by its recipient id)."""
        found = self.participants.get(recipient_id)
        if found is None:
            found = self.load_members([recipient_id]).get(recipient_id, [])
        return found

    def members_of(self, recipient_ids: list[int]) -> dict[int, list[int]]:
        """The members, sorted, of each of these conversations (shared lists: do not change them)."""
        read = self.load_members(recipient_ids)
        return {r: read[r] if r in read else self.participants[r] for r in recipient_ids}

    def load_members(self, recipient_ids: list[int]) -> dict[int, list[int]]:
        """Read the members of the conversations not yet known, in one query; return what it read."""
        missing = sorted({r for r in recipient_ids if r not in self.participants})
        if not missing:
            return {}
        found: dict[int, list[int]] = {r: [] for r in missing}
        for recipient_id, user_id in self.conn.execute(
            "SELECT r.id, m.user_id FROM recipients AS r JOIN direct_message_group_members AS m"
            " ON m.group_id = r.type_id WHERE r.id IN (SELECT value FROM json_each(?)) AND r.type = 3"
            " ORDER BY r.id, m.user_id",
            (msgspec.json.encode(missing).decode(),),
        ):
            found[recipient_id].append(user_id)
        if not self.journal.writing("recipients", "groups"):
            self.participants.update(found)
        return found


class _Reader:
    """The Tx methods get_realm, get_channel_by_id and get_recipient use, on the directory's connection."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def one(self, sql: str, params: Any = ()) -> Any:
        return self.conn.execute(sql, params).fetchone()

    def value(self, sql: str, params: Any = ()) -> Any:
        row = self.conn.execute(sql, params).fetchone()
        return None if row is None else row[0]


def _fold(email: str) -> str:
    email = email.strip()
    # For ASCII text lower() folds exactly what NOCASE does, and much faster than translate().
    return email.lower() if email.isascii() else email.translate(_NOCASE)


def _user(row: Any) -> User:
    return msgspec.convert(dict(row), User, strict=False)


def directory(tx: Tx) -> Directory:
    """The connection's directory (storage/cache/journal.py: journal), checked against what ended since its last use."""
    return journal(tx).reader(Directory)
