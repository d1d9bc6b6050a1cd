"""A write transaction's user_messages rows are inserted together, sorted, before its COMMIT.

Tx.insert_user_messages defers the rows (storage/db.py); Database.write and write_batch insert them
before COMMIT, and any statement of the transaction that names user_messages inserts them first.
"""

from __future__ import annotations

from typing import Any

import pytest

from storage.channels.channel_creation import ChannelOptions, create_channel
from storage.db.database import Connection, Database
from storage.db.tx import Tx
from storage.model import recipients
from storage.org import users
from tornchat.bootstrap import bootstrap
from tornchat.settings import Settings


@pytest.fixture
def rows_db(tmp_path):  # type: ignore[no-untyped-def]
    """A database with three users and a channel; yields (db, user ids, the channel's recipient id)."""
    settings = Settings(data_dir=str(tmp_path), site="http://127.0.0.1:9991", email_host="rows.example")
    owner = bootstrap(settings, "owner@rows.example", "a long test password")
    db = Database(settings.database_path)

    def make(tx: Tx) -> tuple[list[int], int]:
        others = [users.create_user(tx, f"user{n}@rows.example", f"User {n}", None) for n in range(2)]
        channel = create_channel(tx, owner, "rows", ChannelOptions(), True)
        recipient_id = recipients.get_or_create_recipient(tx, recipients.CHANNEL, channel.id)
        return [owner.id] + [u.id for u in others], recipient_id

    user_ids, recipient_id = db.write(make)
    yield db, user_ids, recipient_id
    db.close()


def new_message(tx: Tx, sender_id: int, recipient_id: int) -> int:
    cursor = tx.execute(
        "INSERT INTO messages (sender_id, recipient_id, topic, topic_key, content, rendered_content, date_sent,"
        " client) VALUES (?, ?, 't', 't', 'x', '<p>x</p>', 1, 'test')",
        (sender_id, recipient_id),
    )
    return int(cursor.lastrowid or 0)


def rows_of(db: Database, message_id: int) -> list[tuple[int, int]]:
    query = "SELECT user_id, flags FROM user_messages WHERE message_id = ? ORDER BY user_id"
    return [tuple(row) for row in db.conn.execute(query, (message_id,))]


def test_rows_are_stored_by_the_commit_of_a_single_write(rows_db):
    db, user_ids, recipient_id = rows_db

    def send(tx: Tx) -> int:
        message_id = new_message(tx, user_ids[0], recipient_id)
        tx.insert_user_messages([(u, message_id, n) for n, u in enumerate(reversed(user_ids))])
        assert tx.deferred  # not inserted yet
        return message_id

    message_id = db.write(send)
    assert rows_of(db, message_id) == [(u, 2 - n) for n, u in enumerate(user_ids)]


def test_a_statement_naming_user_messages_sees_the_deferred_rows(rows_db):
    db, user_ids, recipient_id = rows_db

    def send_then_read(tx: Tx) -> tuple[int, int]:
        message_id = new_message(tx, user_ids[0], recipient_id)
        tx.insert_user_messages([(u, message_id, 0) for u in user_ids])
        tx.execute("UPDATE user_messages SET flags = 8 WHERE user_id = ? AND message_id = ?", (user_ids[1], message_id))
        seen = tx.value("SELECT count(*) FROM user_messages WHERE message_id = ?", (message_id,))
        return message_id, seen

    message_id, seen = db.write(send_then_read)
    assert seen == 3
    assert rows_of(db, message_id) == [(user_ids[0], 0), (user_ids[1], 8), (user_ids[2], 0)]


def test_a_batch_inserts_every_calls_rows(rows_db):
    db, user_ids, recipient_id = rows_db

    def send(tx: Tx, sender_id: int) -> int:
        message_id = new_message(tx, sender_id, recipient_id)
        tx.insert_user_messages([(u, message_id, int(u == sender_id)) for u in user_ids])
        return message_id

    outcomes = db.write_batch([(send, (sender,), {}) for sender in user_ids])
    assert [error for error, _ in outcomes] == [None, None, None]
    for sender, (_, message_id) in zip(user_ids, outcomes, strict=True):
        assert rows_of(db, message_id) == [(u, int(u == sender)) for u in user_ids]


def test_a_call_failing_after_deferring_rows_leaves_none_of_them(rows_db):
    """Deferring rows counts as writing: the batch runs again without the failed call."""
    db, user_ids, recipient_id = rows_db
    first: list[int] = []

    def send(tx: Tx) -> int:
        message_id = new_message(tx, user_ids[0], recipient_id)
        tx.insert_user_messages([(u, message_id, 0) for u in user_ids])
        first.append(message_id)
        return message_id

    def defer_then_fail(tx: Tx) -> None:
        tx.insert_user_messages([(user_ids[0], first[-1], 2)])  # a duplicate of the first call's row
        raise ValueError("refused after writing")

    outcomes = db.write_batch([(send, (), {}), (defer_then_fail, (), {})])
    assert outcomes[0] == (None, first[-1])
    assert isinstance(outcomes[1][0], ValueError)
    assert rows_of(db, first[-1]) == [(u, 0) for u in user_ids]


def test_rows_are_inserted_in_primary_key_order(rows_db, monkeypatch):
    db, user_ids, recipient_id = rows_db
    inserted: list[tuple[int, int, int]] = []
    original = Connection.executemany

    def recording(conn: Connection, sql: str, rows: Any) -> Any:
        rows = list(rows)
        if sql.startswith("INSERT INTO user_messages"):
            inserted.extend(rows)
        return original(conn, sql, rows)

    monkeypatch.setattr(Connection, "executemany", recording)

    def send(tx: Tx) -> int:
        message_id = new_message(tx, user_ids[0], recipient_id)
        tx.insert_user_messages([(u, message_id, 0) for u in reversed(user_ids)])
        return message_id

    outcomes = db.write_batch([(send, (), {}), (send, (), {})])
    ids = [message_id for _, message_id in outcomes]
    assert inserted == [(u, m, 0) for u in user_ids for m in ids]
    assert all(rows_of(db, m) == [(u, 0) for u in user_ids] for m in ids)


def test_no_rows_left_behind_by_a_rolled_back_write(rows_db):
    db, user_ids, recipient_id = rows_db

    def send_then_fail(tx: Tx) -> None:
        message_id = new_message(tx, user_ids[0], recipient_id)
        tx.insert_user_messages([(u, message_id, 0) for u in user_ids])
        raise ValueError("no")

    with pytest.raises(ValueError):
        db.write(send_then_fail)
    assert db.conn.execute("SELECT count(*) FROM user_messages").fetchone()[0] == 0
