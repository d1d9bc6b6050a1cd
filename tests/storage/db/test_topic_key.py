"""Topics match case-insensitively in every script through a stored topic_key (casefold), with no
custom collation: the database opens, checks and queries from plain sqlite3 and the sqlite3 shell."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess

import pytest

from storage.db import migrate as migrate_module
from storage.db.database import connect
from storage.db.migrate import migrate
from tests.support.channel_helpers import make_channel
from tests.support.events_helpers import register
from tests.support.get_messages_helpers import narrow_ids
from tests.support.helpers import assert_success
from tests.support.send_helpers import send_ok

SHELL = shutil.which("sqlite3")
SHELL_MISSING = "the sqlite3 shell is needed (Debian package sqlite3; .ci/run installs it)"


def shell(path: str, sql: str) -> str:
    assert SHELL is not None, SHELL_MISSING
    done = subprocess.run([SHELL, path, sql], capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    return done.stdout


def topic_narrow(channel_id: int, topic: str) -> list[dict[str, object]]:
    return [{"operator": "channel", "operand": channel_id}, {"operator": "topic", "operand": topic}]


def test_topics_match_by_casefold_in_any_script(live):
    channel_id = make_channel(live, "lunch", [live.owner.id])
    uber = [send_ok(live.owner, channel_id, "a", topic) for topic in ("Über", "über", "ÜBER")]
    street = send_ok(live.owner, channel_id, "b", "Straße")  # casefold: "strasse"
    greek = send_ok(live.owner, channel_id, "c", "ΣΊΣΥΦΟΣ")
    other = send_ok(live.owner, channel_id, "d", "uber")
    assert narrow_ids(live.owner, topic_narrow(channel_id, "üBeR")) == uber
    assert narrow_ids(live.owner, topic_narrow(channel_id, "STRASSE")) == [street]
    assert narrow_ids(live.owner, topic_narrow(channel_id, "σίσυφος")) == [greek]
    assert narrow_ids(live.owner, topic_narrow(channel_id, "Uber")) == [other]
    # Other topic lookups too: marking a topic read, moving a whole topic.
    assert_success(live.owner.post("/mark_topic_as_read", {"stream_id": channel_id, "topic_name": "STRASSE"}))
    assert_success(live.owner.patch(f"/messages/{uber[1]}", {"topic": "moved", "propagate_mode": "change_all"}))
    assert narrow_ids(live.owner, topic_narrow(channel_id, "MOVED")) == uber
    assert narrow_ids(live.owner, topic_narrow(channel_id, "über")) == []


def test_unread_topics_are_one_entry_whatever_the_case(live):
    alice = live.make_user(full_name="Alice")
    channel_id = make_channel(live, "lunch", [live.owner.id, alice.id])
    ids = [send_ok(alice, channel_id, "hi", topic) for topic in ("Über", "über", "zebra", "ÜBER")]
    unread = register(live.owner, fetch_event_types=["message"])["unread_msgs"]
    assert unread["streams"] == [  # sorted by the folded name: "zebra" < "über"
        {"stream_id": channel_id, "topic": "zebra", "unread_message_ids": [ids[2]]},
        {"stream_id": channel_id, "topic": "Über", "unread_message_ids": [ids[0], ids[1], ids[3]]},
    ]


def test_plain_sqlite_and_the_shell_check_and_query_topics(live):
    channel_id = make_channel(live, "lunch", [live.owner.id])
    for topic in ("Über", "über", "Straße", "other"):
        send_ok(live.owner, channel_id, "hello", topic)
    path = live.settings.database_path
    select = (
        "SELECT DISTINCT m.topic FROM messages AS m JOIN recipients AS r ON r.id = m.recipient_id"
        f" WHERE r.type = 2 AND r.type_id = {channel_id} AND m.topic_key = 'über' ORDER BY m.topic"
    )
    conn = sqlite3.connect(path)  # registers nothing
    assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    assert conn.execute(select).fetchall() == [("Über",), ("über",)]
    plan = " ".join(row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + select))
    assert "messages_by_topic (recipient_id=? AND topic_key=?)" in plan
    conn.close()
    assert shell(path, "PRAGMA integrity_check;") == "ok\n"
    assert shell(path, select + ";") == "Über\nüber\n"
    assert shell(path, "SELECT count(*) FROM user_topics WHERE topic_key = 'strasse';") == "0\n"
    assert shell(path, "SELECT topic FROM messages WHERE topic_key = 'strasse';") == "Straße\n"


def _version_7_database(path: str) -> None:
    """A database as migrations 0001-0007 left it (the TOPIC collation era), with a few rows."""
    conn = connect(path)
    migrate(conn, 1_800_000_000, until=7)
    # What tornchat registered on every connection then: the old user_topics key needs it.
    conn.create_collation("TOPIC", lambda a, b: (a.casefold() > b.casefold()) - (a.casefold() < b.casefold()))
    conn.executescript(
        """
        BEGIN;
        INSERT INTO user_groups (id, name, is_system_group) VALUES (1, 'role:everyone', 1);
        INSERT INTO users (id, delivery_email, full_name, api_key, role, date_joined)
            VALUES (1, 'a@x.example', 'A', 'key-a', 100, 0), (2, 'b@x.example', 'B', 'key-b', 400, 0);
        INSERT INTO channels (id, name, date_created, can_add_subscribers_group, can_administer_channel_group,
            can_create_topic_group, can_delete_any_message_group, can_delete_own_message_group,
            can_move_messages_out_of_channel_group, can_move_messages_within_channel_group,
            can_remove_subscribers_group, can_resolve_topics_group, can_send_message_group, can_subscribe_group)
            VALUES (1, 'lunch', 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1);
        INSERT INTO recipients (id, type, type_id) VALUES (1, 2, 1);
        INSERT INTO messages (id, sender_id, recipient_id, channel_id, topic, content, rendered_content,
            date_sent, client) VALUES
            (1, 1, 1, 1, 'Über', 'hello world', '<p>hello world</p>', 0, 'test'),
            (2, 2, 1, 1, 'über', 'second hello', '<p>second hello</p>', 0, 'test'),
            (3, 1, 1, 1, 'Straße', 'third', '<p>third</p>', 0, 'test'),
            (4, 1, 1, 1, 'gone', 'deleted', '<p>deleted</p>', 0, 'test');
        INSERT INTO user_messages (user_id, message_id) VALUES (1, 1), (1, 2), (2, 2), (1, 3), (1, 4);
        DELETE FROM user_messages WHERE message_id = 4;
        DELETE FROM messages WHERE id = 4;
        INSERT INTO user_topics (user_id, channel_id, topic, visibility_policy, last_updated)
            VALUES (1, 1, 'ÜBER', 1, 0), (2, 1, 'Straße', 3, 0);
        INSERT INTO drafts (user_id, type, content, last_edit_time) VALUES (1, '', 'draft', 0);
        COMMIT;
        """
    )
    conn.close()


def test_migration_8_keeps_every_row_and_fills_topic_key(tmp_path):
    path = os.path.join(str(tmp_path), "old.sqlite3")
    _version_7_database(path)
    conn = connect(path)
    assert migrate(conn, 1_800_000_000, until=8) == ["0008_autoincrement_topic_key.sql"]
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    conn.close()

    conn = sqlite3.connect(path, isolation_level=None)  # registers nothing
    assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    rows = conn.execute("SELECT id, topic, topic_key FROM messages ORDER BY id").fetchall()
    assert rows == [(1, "Über", "über"), (2, "über", "über"), (3, "Straße", "strasse")]
    user_topics = conn.execute("SELECT user_id, topic, topic_key, visibility_policy FROM user_topics ORDER BY 1")
    assert user_topics.fetchall() == [(1, "ÜBER", "über", 1), (2, "Straße", "strasse", 3)]
    assert conn.execute("SELECT count(*) FROM user_messages").fetchone()[0] == 4
    assert conn.execute("SELECT content FROM drafts").fetchall() == [("draft",)]
    # The full-text index still matches the rows it indexed (ids kept) and stays consistent.
    found = conn.execute("SELECT rowid FROM messages_fts WHERE messages_fts MATCH 'hello' ORDER BY rowid")
    assert found.fetchall() == [(1,), (2,)]
    conn.execute("INSERT INTO messages_fts (messages_fts) VALUES ('integrity-check')")
    # The high-water mark starts at the largest id present, and holds from now on.
    assert conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'messages'").fetchone() == (3,)
    conn.execute("DELETE FROM user_messages WHERE message_id = 3")
    conn.execute("DELETE FROM messages WHERE id = 3")
    conn.execute(
        "INSERT INTO messages (sender_id, recipient_id, channel_id, topic, topic_key, content, rendered_content,"
        " date_sent, client) VALUES (1, 1, 1, 'new', 'new', 'new', '<p>new</p>', 0, 'test')"
    )
    assert conn.execute("SELECT max(id) FROM messages").fetchone() == (4,)
    assert conn.execute("SELECT sql FROM sqlite_master WHERE sql LIKE '%COLLATE TOPIC%'").fetchall() == []
    conn.close()
    assert shell(path, "PRAGMA integrity_check;") == "ok\n"


def test_a_migration_that_breaks_a_foreign_key_is_not_applied(tmp_path, monkeypatch):
    conn = connect(os.path.join(str(tmp_path), "fk.sqlite3"))
    migrate(conn, 1_800_000_000)
    bogus = "INSERT INTO drafts (user_id, type, content, last_edit_time) VALUES (12345, '', 'orphan', 0);"
    monkeypatch.setattr(migrate_module, "migration_scripts", lambda: [(99, "0099_bogus.sql", bogus)])
    with pytest.raises(sqlite3.IntegrityError, match="0099_bogus.sql"):
        migrate(conn, 1_800_000_000)
    assert not conn.in_transaction
    assert conn.execute("SELECT count(*) FROM drafts").fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM migrations WHERE id = 99").fetchone()[0] == 0
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    conn.close()
