"""The change journal: the one way every in-memory copy of the database learns that its rows changed.

Each connection opened by storage/db/database.py's connect() has one journal, made on first use. Its
readers are the caches of this package: the directory (directory.py), the encoded messages
(message_cache.py), the viewers' flags (flag_cache.py) and the values POST /register keeps (kept.py).
docs/design.md has the table of them: what each holds, from which tables, how it is dropped, its bound.

- Writes on this connection: temporary triggers on the watched tables (WATCHED) call
  `tornchat_changed(kind, key)` for every row a statement writes, whatever code path writes it.
  user_messages has no trigger (any trigger on it costs about 2.4 µs per row inserted; bench/README.md,
  GET /messages against the floor, seventh round): the Tx reports each statement that writes it
  (storage/db/tx.py, Tx.user_messages_written).
- Each report reaches every reader at once (`drop`) and stays pending until its transaction has
  ended, committed or rolled back (storage/db/database.py tells the journal); then the readers drop it
  again (`settle`). Nothing of a kind is
  kept while a write of it is pending (`keeps`, `writing`): a value read inside the writing transaction
  (uncommitted) is never kept, and a rolled-back write only costs reloads. Reports of user_messages
  statements are not pending: the flag cache keeps only what transactions that wrote nothing read.
- Commits by other connections, in this process or another, change `PRAGMA data_version`, looked at
  once per transaction: then every reader is reset.
- `PRAGMA recursive_triggers` is on (connect()), so INSERT OR REPLACE reports the rows it deletes.

Rows inserted where no message shows them yet (a new channel, a new recipient, the members of a
conversation that has no recipient yet) are reported with `added` set: the encoded messages stay.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Protocol, TypeVar

from storage.db.tx import Tx
from storage.model.roles import ROLE_GUEST
from storage.model.user import User

R = TypeVar("R")

# The users columns a message object shows (through a Sender): only their changes drop encoded messages.
SENDER_COLUMNS = ["full_name", "delivery_email", "is_bot", "email_address_visibility", "avatar_source",
                  "avatar_version", "avatar_file"]  # fmt: skip
# The users columns a User holds: last_active and the password hash are not among them.
USER_COLUMNS = [field for field in User.__struct_fields__ if field != "id"]
# (kind, table, key column or "0" for the whole kind, columns whose update matters or None for any).
WATCHED = [
    ("users", "users", "id", USER_COLUMNS),
    ("senders", "users", "id", SENDER_COLUMNS),
    ("channels", "channels", "id", None),
    ("channel_names", "channels", "id", ["name"]),  # the one channels column a message shows
    # What decides the channels a user may no longer read (storage/model/channel.py: UNREADABLE_CHANNELS_SQL).
    ("access", "subscriptions", "0", ["active"]),
    ("access", "user_group_members", "0", None),
    ("access", "user_group_subgroups", "0", None),
    ("realm", "realm", "0", None),
    ("recipients", "recipients", "0", None),
    ("groups", "direct_message_group_members", "0", None),
    # The compiled linkifier sets (storage/text/linkify.py): the rows, and the version every write bumps.
    ("linkifiers", "linkifiers", "0", None),
    ("linkifiers", "linkifier_state", "0", None),
    ("messages", "messages", "id", None),  # the encoded messages (message_cache.py)
    ("messages", "reactions", "message_id", None),
    ("messages", "submessages", "message_id", None),  # polls' and to-do lists' data (message_objects.py)
    # What POST /register keeps (kept.py): subscriber counts, groups and their members, channel recipients.
    ("register", "subscriptions", "0", ["user_id", "channel_id", "active"]),
    ("register", "users", "0", ["id", "is_active"]),
    ("register", "recipients", "0", None),
    ("register", "user_groups", "0", None),
    ("register", "user_group_members", "0", None),
    ("register", "user_group_subgroups", "0", None),
]
# Reported by the Tx, not by a trigger (see above); never pending.
USER_MESSAGES = "user_messages"
# A new subscription matters only if active, to a channel that can be unreadable for that user.
INSERT_WHEN = {
    ("access", "subscriptions"): "NEW.active AND ((SELECT invite_only FROM main.channels WHERE id = NEW.channel_id)"
    f" OR (SELECT role FROM main.users WHERE id = NEW.user_id) = {ROLE_GUEST})",
}
# Inserts that no message already sent can show, when the condition holds (None: always).
ADDED_WHEN = {
    "channels": None,
    "recipients": None,
    "direct_message_group_members": (
        "NOT EXISTS (SELECT 1 FROM main.recipients WHERE type = 3 AND type_id = NEW.group_id)"
    ),
}
ADDED = "+"
CHANGED_FUNCTION = "tornchat_changed"
TRIGGER_PREFIX = "tornchat_journal_"


class Reader(Protocol):
    """A cache the journal tells of writes."""

    def drop(self, kind: str, key: int, added: bool) -> None:
        """Drop what is held of this kind and key (key 0: of the whole kind)."""

    def reset(self) -> None:
        """Drop everything: another connection committed."""


def trigger_sql() -> list[str]:
    """The temporary triggers reporting writes to the watched tables.

    One trigger per table and event (and per column list of an UPDATE), whose one SELECT reports
    every kind watching it: a row written runs one trigger program, not one per kind.
    """
    bodies: dict[tuple[str, str], list[str]] = {}
    for kind, table, key, columns in WATCHED:
        old, new = (f"OLD.{key}", f"NEW.{key}") if key != "0" else ("0", "0")
        of = f" OF {', '.join(columns)}" if columns else ""
        for event, keys in (("INSERT", [new]), ("DELETE", [old]), (f"UPDATE{of}", [old, new])):
            reported = f"'{kind}'"
            if event == "INSERT" and table in ADDED_WHEN and kind != "register":
                added = ADDED_WHEN[table]  # the other inserts are reported as any write
                reported = (
                    f"'{kind}{ADDED}'"
                    if added is None
                    else f"CASE WHEN {added} THEN '{kind}{ADDED}' ELSE {reported} END"
                )
            calls = [f"{CHANGED_FUNCTION}({reported}, {k})" for k in keys]
            when = INSERT_WHEN.get((kind, table)) if event == "INSERT" else None
            if when is not None:
                calls = [f"CASE WHEN {when} THEN {call} END" for call in calls]
            found = bodies.setdefault((table, event), [])
            found.extend(call for call in calls if call not in found)
    names: dict[str, int] = {}
    triggers = []
    for (table, event), calls in bodies.items():
        name = f"{TRIGGER_PREFIX}{table}_{event.split()[0].lower()}"
        names[name] = names.get(name, 0) + 1
        triggers.append(
            f"CREATE TEMP TRIGGER IF NOT EXISTS {name}_{names[name]} AFTER {event} ON main.{table}"
            f" BEGIN SELECT {', '.join(calls)}; END"
        )
    return triggers


TRIGGER_COUNT = len(trigger_sql())
COUNT_TRIGGERS = f"SELECT count(*) FROM sqlite_temp_master WHERE type = 'trigger' AND name LIKE '{TRIGGER_PREFIX}%'"


class ChangeJournal:
    """One connection's reported writes, and the readers it tells."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.pending: set[tuple[str, int]] = set()
        self.data_version = -1
        self.installed = False  # the transaction that created the triggers has committed
        self.readers: list[Reader] = []
        self._made: dict[Callable[[ChangeJournal], object], object] = {}

    def subscribe(self, reader: Reader) -> None:
        self.readers.append(reader)

    def reader(self, make: Callable[[ChangeJournal], R]) -> R:
        """The connection's one reader made by make(journal) (made and subscribed on first use)."""
        found = self._made.get(make)
        if found is None:
            found = self._made[make] = make(self)
        return found  # type: ignore[return-value]

    def mark_installed(self) -> None:
        self.installed = True

    # -- reports ---------------------------------------------------------------------------------

    def changed(self, kind: str, key: int) -> None:
        """A trigger's report: readers drop the entry now, and again when the transaction has ended."""
        self.pending.add((kind, key))
        self._drop(kind, key)

    def user_messages_written(self) -> None:
        """The Tx's report of a statement writing user_messages (not pending: see the module's docstring)."""
        for reader in self.readers:
            reader.drop(USER_MESSAGES, 0, False)

    def _drop(self, kind: str, key: int) -> None:
        added = kind.endswith(ADDED)
        kind = kind.removesuffix(ADDED)
        for reader in self.readers:
            reader.drop(kind, key, added)

    def check(self) -> None:
        """Apply other connections' commits (once per transaction: its snapshot stays)."""
        version = self.conn.execute("PRAGMA data_version").fetchone()[0]
        if version != self.data_version:
            self.data_version = version
            for reader in self.readers:
                reader.reset()

    def settle(self) -> None:
        """After a transaction: the writes it reported are committed or gone; readers drop their entries again."""
        if not self.conn.in_transaction:
            for kind, key in self.pending:
                self._drop(kind, key)
            self.pending.clear()

    # -- what may be kept ------------------------------------------------------------------------

    def keeps(self, kind: str, key: int) -> bool:
        """Whether a value of this kind and key just read may be kept: not while its own write is pending."""
        return not self.pending or not any(
            found.removesuffix(ADDED) == kind and found_key in (key, 0) for found, found_key in self.pending
        )

    def writing(self, *kinds: str) -> bool:
        """Whether a write to any of these kinds is pending (uncommitted, or not settled yet)."""
        return any(found.removesuffix(ADDED) in kinds for found, _ in self.pending)


def journal(tx: Tx) -> ChangeJournal:
    """The connection's journal, checked against what ended since its last use.

    The triggers are created on first use, inside whatever transaction that is: if it rolls back
    they go with it. Until a transaction that created them has committed, their presence is
    checked on every use (a look at the temporary schema) and they are created again, with a new
    journal and new readers, when missing. A connection not opened by storage.db.database.connect
    gets a fresh journal, without triggers, each time.
    """
    conn = tx.conn
    if not hasattr(conn, "journal"):
        return ChangeJournal(conn)
    found: ChangeJournal | None = conn.journal
    if found is not None and tx.journal_checked:
        return found
    if found is None or (not found.installed and conn.execute(COUNT_TRIGGERS).fetchone()[0] != TRIGGER_COUNT):
        found = _install(tx)
    found.check()
    tx.journal_checked = found.installed
    return found


def _install(tx: Tx) -> ChangeJournal:
    """Create the connection's journal and the triggers that report to it (the tables must exist)."""
    conn = tx.conn
    found = ChangeJournal(conn)
    conn.create_function(CHANGED_FUNCTION, 2, found.changed)
    for sql in trigger_sql():
        conn.execute(sql)
    conn.journal = found  # type: ignore[attr-defined]
    tx.after_commit.append(found.mark_installed)
    return found
