"""Users, channels, the realm and direct-message conversations held in memory (issue 12).

Each connection has its own Directory. Temporary triggers on the tables it copies call
`tornchat_stale(kind, key)` for every row a statement writes (users: only the columns a User holds,
so last_active does not count, and the encoded messages only for the columns a message shows),
whatever code path writes it: the entry is dropped at once and
stays "pending" (read each time, never kept) until a transaction that used the directory has
committed after it, when it is dropped again. So an entry read inside the writing transaction
(uncommitted) is never kept, and a rolled-back write only costs reloads. Commits by any other connection, in this
process or another, change `PRAGMA data_version`: then everything is dropped.
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
from typing import Any

import msgspec

from storage.cache.flag_cache import FlagCache
from storage.cache.message_cache import MessageCache
from storage.db.tx import Tx
from storage.model import recipients
from storage.model.channel import UNREADABLE_CHANNELS_SQL, Channel, get_channel_by_id
from storage.model.realm import Realm, get_realm
from storage.model.roles import ROLE_GUEST
from storage.model.user import EVERYONE, USER_COLUMNS, User

# The users columns a message object shows (through Sender): only their changes drop encoded messages.
SENDER_COLUMNS = ["full_name", "delivery_email", "is_bot", "email_address_visibility", "avatar_source",
                  "avatar_version"]  # fmt: skip
# (kind, table, key column or "0" for the whole kind, columns whose update matters or None for any)
WATCHED = [
    ("users", "users", "id", [f for f in User.__struct_fields__ if f != "id"]),
    ("senders", "users", "id", SENDER_COLUMNS),
    ("channels", "channels", "id", None),
    ("channel_names", "channels", "id", ["name"]),  # the one channels column a message shows
    # What decides the channels a user may no longer read (storage/channels/channels.py: UNREADABLE_CHANNELS_SQL).
    ("access", "subscriptions", "0", ["active"]),
    ("access", "user_group_members", "0", None),
    ("access", "user_group_subgroups", "0", None),
    ("realm", "realm", "0", None),
    ("recipients", "recipients", "0", None),
    ("groups", "direct_message_group_members", "0", None),
    ("linkifiers", "linkifier_state", "0", None),  # the version storage/text/linkify.py compiles
    ("messages", "messages", "id", None),  # the encoded messages of storage/cache/message_cache.py
    ("messages", "reactions", "message_id", None),
]
# A new subscription matters only if active, to a channel that can be unreadable for that user.
INSERT_WHEN = {
    "subscriptions": "NEW.active AND ((SELECT invite_only FROM main.channels WHERE id = NEW.channel_id)"
    f" OR (SELECT role FROM main.users WHERE id = NEW.user_id) = {ROLE_GUEST})",
}
# Inserts that no message already sent can show (when the condition holds, or always for None): they
# are reported as their kind plus ADDED and leave the encoded messages alone. A new channel or recipient
# has no messages yet; members added to a conversation that has no recipient yet (a new one) neither.
ADDED = "+"
ADDED_WHEN = {
    "channels": None,
    "recipients": None,
    "direct_message_group_members": (
        "NOT EXISTS (SELECT 1 FROM main.recipients WHERE type = 3 AND type_id = NEW.group_id)"
    ),
}
STALE_FUNCTION = "tornchat_stale"
_DUMMY_EMAIL = re.compile(r"user(\d+)@(.+)", re.IGNORECASE)
# SQLite's NOCASE folds ASCII letters only: the email index folds the same way.
_NOCASE = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


class Sender(msgspec.Struct, frozen=True, array_like=True):
    """What a message object shows of its sender (or a reactor, or a conversation member)."""

    full_name: str
    email: str  # as the API shows it: real when visible to everyone (and for bots), else dummy
    avatar_url: str
    gravatar_null: bool  # avatar_url is null with client_gravatar


def trigger_sql() -> list[str]:
    """The temporary triggers reporting writes to the watched tables."""
    found = []
    for kind, table, key, columns in WATCHED:
        old, new = (f"OLD.{key}", f"NEW.{key}") if key != "0" else ("0", "0")
        of = f" OF {', '.join(columns)}" if columns else ""
        for event, keys in (("INSERT", [new]), ("DELETE", [old]), (f"UPDATE{of}", [old, new])):
            name = f"tornchat_directory_{kind}_{table}_{event.split()[0].lower()}"
            when = INSERT_WHEN.get(table) if event == "INSERT" else None
            variants = [(name, kind, [when])]
            if event == "INSERT" and table in ADDED_WHEN:
                added = ADDED_WHEN[table]
                variants = [(f"{name}_added", kind + ADDED, [when, added])]
                if added is not None:  # the other inserts are reported as any write
                    variants.append((name, kind, [when, f"NOT ({added})"]))
            for trigger, reported, conditions in variants:
                calls = ", ".join(f"{STALE_FUNCTION}('{reported}', {k})" for k in keys)
                found.append(
                    f"CREATE TEMP TRIGGER IF NOT EXISTS {trigger} AFTER {event} ON main.{table}{_when(conditions)}"
                    f" BEGIN SELECT {calls}; END"
                )
    return found


def _when(conditions: list[str | None]) -> str:
    """A trigger's WHEN clause: all of the conditions given (None: no condition)."""
    found = [f"({condition})" for condition in conditions if condition is not None]
    return f" WHEN {' AND '.join(found)}" if found else ""


class Directory:
    """One connection's copies; every accessor takes the connection's current Tx-level view."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.pending: set[tuple[str, int]] = set()
        self.data_version = -1
        self.messages = MessageCache()
        self.flags = FlagCache()  # emptied by the Tx on a write to user_messages (storage/cache/flag_cache.py)
        self.installed = False  # the transaction that created the triggers has committed
        self.reset()

    def mark_installed(self) -> None:
        self.installed = True

    def reset(self) -> None:
        self.users: dict[int, User] = {}
        self.all_users_loaded = False
        self.by_email: dict[str, int] = {}
        self.senders: dict[int, Sender] = {}
        self.channel_names: dict[int, str] | None = None
        self.channels: dict[int, Channel] = {}
        self.channel_recipients: dict[int, int] = {}
        self.realm_value: Realm | None = None
        self.edit_history_allowed: bool | None = None
        self.linkifier_version: tuple[str, int] | None = None
        self.participants: dict[int, list[int]] = {}
        self.unreadable: dict[tuple[int, bool], list[int]] = {}
        self.messages.clear()
        self.flags.clear()

    # -- invalidation ------------------------------------------------------------------------

    def stale(self, kind: str, key: int) -> None:
        """A trigger's report: drop the entry now and again when the transaction ends."""
        self.pending.add((kind, key))
        self.drop(kind, key)

    def drop(self, kind: str, key: int) -> None:
        added = kind.endswith(ADDED)  # new rows that no message shows yet
        kind = kind.removesuffix(ADDED)
        if kind == "messages":
            self.messages.drop_message(key)
            return
        if kind == "users":  # a users row's columns: only SENDER_COLUMNS ("senders") show in messages
            user = self.users.pop(key, None)
            if user is not None and self.by_email.get(_fold(user.delivery_email)) == key:
                del self.by_email[_fold(user.delivery_email)]
            return
        if kind in ("access", "channels"):
            self.unreadable.clear()
            if kind == "channels":  # any column; a name change also reports "channel_names"
                self.channels.pop(key, None)
            return
        if not added:
            self.messages.clear()  # what every other kind holds shows in message objects
        if kind == "senders":
            self.senders.pop(key, None)
        elif kind == "channel_names":
            self.channel_names = None
        elif kind == "linkifiers":
            self.linkifier_version = None
        elif kind == "realm":
            self.realm_value, self.edit_history_allowed = None, None
            self.senders.clear()  # dummy emails name the realm's host
        else:
            self.participants.clear()
            self.channel_recipients.clear()

    def check(self, tx: Tx) -> None:
        """Apply other connections' commits; have reported writes settled once this transaction commits."""
        if self.pending and self.settle not in tx.after_commit:
            tx.after_commit.append(self.settle)
        version = self.conn.execute("PRAGMA data_version").fetchone()[0]
        if version != self.data_version:
            self.data_version = version
            self.reset()

    def settle(self) -> None:
        """After a commit: the transactions that reported writes have ended; drop their entries again."""
        if not self.conn.in_transaction:
            for kind, key in self.pending:
                self.drop(kind, key)
            self.pending.clear()

    def keeps(self, kind: str, key: int) -> bool:
        """Whether a value just read may be kept: not while its own write is uncommitted."""
        return not self.pending or not any(
            found.removesuffix(ADDED) == kind and found_key in (key, 0) for found, found_key in self.pending
        )

    def writing(self, *kinds: str) -> bool:
        """Whether a write to any of these kinds is pending (uncommitted, or not settled yet)."""
        return any(found.removesuffix(ADDED) in kinds for found, _ in self.pending)

    # -- linkifiers --------------------------------------------------------------------------

    def linkifier_state(self) -> tuple[str, int]:
        """The database's linkifier (token, version): what storage/text/linkify.py keys its compiled sets on."""
        found = self.linkifier_version
        if found is None:
            token, version = self.conn.execute("SELECT token, version FROM linkifier_state").fetchone()
            found = (str(token), int(version))
            if self.keeps("linkifiers", 0):
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
        if self.keeps("users", user.id):
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
            digest = hashlib.md5(user.delivery_email.lower().encode(), usedforsecurity=False).hexdigest()
            found = Sender(
                user.full_name,
                user.delivery_email if shown else f"user{user.id}@{self.realm().email_host}",
                f"https://secure.gravatar.com/avatar/{digest}?v={user.avatar_version}",
                user.email_address_visibility == EVERYONE and user.avatar_source == "G",
            )
            if self.keeps("users", user_id) and self.keeps("senders", user_id) and self.keeps("realm", 0):
                self.senders[user_id] = found
        return found

    # -- the rest ----------------------------------------------------------------------------

    def realm(self) -> Realm:
        if self.realm_value is not None:
            return self.realm_value
        found = get_realm(_Reader(self.conn))  # type: ignore[arg-type]
        if self.keeps("realm", 0):
            self.realm_value = found
        return found

    def allow_edit_history(self) -> bool:
        if self.edit_history_allowed is not None:
            return self.edit_history_allowed
        found = bool(self.conn.execute("SELECT allow_edit_history FROM realm").fetchone()[0])
        if self.keeps("realm", 0):
            self.edit_history_allowed = found
        return found

    def channel_name(self, channel_id: int) -> str:
        return str(self.channel_name_map().get(channel_id, ""))

    def channel(self, channel_id: int) -> Channel | None:
        """channels.get_channel_by_id, kept until a write to that channel."""
        found = self.channels.get(channel_id)
        if found is None:
            found = get_channel_by_id(_Reader(self.conn), channel_id)  # type: ignore[arg-type]
            if found is not None and self.keeps("channels", channel_id):
                self.channels[channel_id] = found
        return found

    def channel_recipient(self, channel_id: int) -> int | None:
        """The recipient id of a channel (None until something was sent to it), kept once there is one."""
        found = self.channel_recipients.get(channel_id)
        if found is None:
            found = recipients.get_recipient(_Reader(self.conn), recipients.CHANNEL, channel_id)  # type: ignore[arg-type]
            if found is not None and not self.writing("recipients"):
                self.channel_recipients[channel_id] = found
        return found

    def channel_name_map(self) -> dict[int, str]:
        """Channel id -> name, every channel (for callers that look up many; do not change it)."""
        names = self.channel_names
        if names is None:
            names = dict(self.conn.execute("SELECT id, name FROM channels").fetchall())
            if not self.writing("channel_names"):
                self.channel_names = names
        return names

    def unreadable_channel_ids(self, user: User) -> list[int]:
        """channels.unreadable_channel_ids, kept per user until a write to what decides it."""
        found = self.unreadable.get((user.id, user.is_guest))
        if found is None:
            found = [
                row[0] for row in self.conn.execute(UNREADABLE_CHANNELS_SQL, {"user": user.id, "guest": user.is_guest})
            ]
            if not self.writing("access", "channels"):
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
        if not self.writing("recipients", "groups"):
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


TRIGGER_COUNT = len(trigger_sql())
COUNT_TRIGGERS = "SELECT count(*) FROM sqlite_temp_master WHERE type = 'trigger' AND name LIKE 'tornchat_directory_%'"


def directory(tx: Tx) -> Directory:
    """The connection's directory, checked against what ended since its last use.

    The triggers are created on first use, inside whatever transaction that is: if it rolls back
    they go with it. Until a transaction that created them has committed, their presence is
    checked on every use (a look at the temporary schema) and they are created again, with a new
    directory, when missing. A connection not opened by storage.db.connect gets a fresh directory
    each time.
    """
    conn = tx.conn
    if not hasattr(conn, "directory"):
        return Directory(conn)
    found: Directory | None = conn.directory
    if found is not None and tx.directory_checked:  # data_version once per transaction: its snapshot stays
        if found.pending and found.settle not in tx.after_commit:
            tx.after_commit.append(found.settle)
        return found
    if found is None or (not found.installed and conn.execute(COUNT_TRIGGERS).fetchone()[0] != TRIGGER_COUNT):
        found = install(tx)
    found.check(tx)
    tx.directory_checked = found.installed
    return found


def install(tx: Tx) -> Directory:
    """Create the connection's directory and the triggers that keep it right (the tables must exist)."""
    conn = tx.conn
    found = Directory(conn)
    conn.create_function(STALE_FUNCTION, 2, found.stale)
    for sql in trigger_sql():
        conn.execute(sql)
    conn.directory = found  # type: ignore[attr-defined]
    tx.after_commit.append(found.mark_installed)
    return found
