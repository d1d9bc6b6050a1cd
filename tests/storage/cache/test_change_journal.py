"""The change journal (storage/cache/journal.py): every cache hears of every write through it, once."""

from __future__ import annotations

import pytest

from storage.cache import journal as journal_module
from storage.cache.directory import Directory, directory
from storage.cache.journal import WATCHED, journal
from storage.cache.kept import Kept, kept
from storage.text import linkify
from tests.support.channel_helpers import make_channel


def _columns_but_id(tx):
    return [row[1] for row in tx.execute("PRAGMA table_info(channels)") if row[1] != "id"]


def _replace_under_a_new_id(tx, channel_id):
    """INSERT OR REPLACE a copy of the channel under a new id: its UNIQUE name deletes the old row."""
    columns = ", ".join(_columns_but_id(tx))
    new_id = tx.value("SELECT max(id) + 1 FROM channels")
    tx.execute(f"INSERT OR REPLACE INTO channels (id, {columns}) SELECT ?, {columns} FROM channels WHERE id = ?",
               (new_id, channel_id))  # fmt: skip
    return new_id


def test_connections_turn_recursive_triggers_on(live):
    assert live.read(lambda tx: tx.value("PRAGMA recursive_triggers")) == 1


@pytest.mark.parametrize("recursive", [True, False])
def test_insert_or_replace_reports_the_row_it_deletes(live, recursive):
    channel_id = make_channel(live, "doomed", [])
    assert live.read(lambda tx: directory(tx).channel(channel_id)) is not None  # kept
    live.write(lambda tx: tx.execute(f"PRAGMA recursive_triggers = {int(recursive)}"))
    try:
        new_id = live.write(_replace_under_a_new_id, channel_id)
    finally:
        live.write(lambda tx: tx.execute("PRAGMA recursive_triggers = ON"))
    assert live.read(lambda tx: tx.value("SELECT count(*) FROM channels WHERE id = ?", (channel_id,))) == 0
    seen = live.read(lambda tx: directory(tx).channel(channel_id))
    # With the pragma on, the DELETE trigger reported the old row; off, the directory keeps a channel that is gone.
    assert (seen is None) == recursive
    assert live.read(lambda tx: directory(tx).channel(new_id)).name == "doomed"


def test_every_cache_is_a_reader_of_one_journal(live):
    def readers(tx):
        changes = journal(tx)
        known = directory(tx)
        kept(tx, "anything", lambda tx: 1)
        return changes.readers, known, changes.reader(Kept)

    found, known, values = live.read(readers)
    assert found == [known, known.messages, known.flags, values]
    assert live.read(lambda tx: journal(tx).reader(Directory)) is known


def test_writes_settle_when_their_transaction_ends_without_using_the_journal(live):
    live.read(lambda tx: journal(tx))
    live.write(lambda tx: tx.execute("UPDATE users SET full_name = 'Renamed' WHERE id = ?", (live.owner.id,)))
    assert live.read(lambda tx: journal(tx).pending) == set()  # the write's transaction ended: settled
    assert live.read(lambda tx: directory(tx).user(live.owner.id).full_name) == "Renamed"
    assert live.read(lambda tx: live.owner.id in directory(tx).users)  # and kept at once


def test_a_write_read_back_in_its_transaction_is_pending_until_it_ends(live):
    live.read(lambda tx: journal(tx))

    def rename_and_look(tx):
        tx.execute("UPDATE users SET full_name = 'Inside' WHERE id = ?", (live.owner.id,))
        known = directory(tx)
        return ("users", live.owner.id) in journal(tx).pending, known.user(live.owner.id).full_name, dict(known.users)

    pending, name, users = live.write(rename_and_look)
    assert (pending, name) == (True, "Inside") and live.owner.id not in users  # read inside: not kept
    assert live.read(lambda tx: journal(tx).pending) == set()


def test_a_user_messages_statement_empties_the_kept_flags_and_is_not_pending(live):
    def write_flags(tx):
        known = directory(tx)
        known.flags.limit = 100
        known.flags.keep(live.owner.id, {1: 0})
        tx.execute("UPDATE user_messages SET flags = flags | 2 WHERE user_id = ?", (live.owner.id,))
        return len(known.flags), set(journal(tx).pending)

    assert live.write(write_flags) == (0, set())


def test_values_kept_for_register_are_dropped_by_any_write_they_watch(live):
    reads = []

    def count(tx):
        reads.append(1)
        return tx.value("SELECT count(*) FROM user_groups")

    first = live.read(lambda tx: kept(tx, "groups", count))
    assert live.read(lambda tx: kept(tx, "groups", count)) == first and len(reads) == 1
    live.make_user()  # its role groups: user_group_members
    assert live.read(lambda tx: kept(tx, "groups", count)) == first and len(reads) == 2


def test_every_write_to_linkifiers_bumps_the_version(live):
    def version(tx):
        return tx.value("SELECT version FROM linkifier_state")

    start = live.read(version)
    live.write(lambda tx: tx.execute("INSERT INTO linkifiers (pattern, url_template) VALUES ('#(?P<id>[0-9]+)', 'x')"))
    live.write(lambda tx: tx.execute("UPDATE linkifiers SET url_template = 'y'"))
    live.write(lambda tx: tx.execute("DELETE FROM linkifiers"))
    assert live.read(version) == start + 3


def test_a_linkifier_set_read_while_a_linkifier_write_is_uncommitted_is_shared_with_nobody(live):
    before = live.read(linkify.current)

    def insert_then_fail(tx):
        tx.execute("INSERT INTO linkifiers (pattern, url_template) VALUES ('#(?P<id>[0-9]+)', 'https://x/{id}')")
        inside = linkify.current(tx)
        assert len(inside.linkifiers) == 1 and "uncommitted" in inside.key[0]
        raise RuntimeError("rolled back")

    with pytest.raises(RuntimeError):
        live.write(insert_then_fail)
    after = live.read(linkify.current)
    assert after is before and after.linkifiers == []


def test_the_watched_tables_exist_and_every_trigger_is_installed(live):
    tables = set(live.read(lambda tx: tx.column("SELECT name FROM sqlite_master WHERE type = 'table'")))
    assert {table for _, table, _, _ in WATCHED} <= tables
    live.read(lambda tx: journal(tx))
    assert live.read(lambda tx: tx.value(journal_module.COUNT_TRIGGERS)) == journal_module.TRIGGER_COUNT
