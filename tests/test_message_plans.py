"""EXPLAIN QUERY PLAN pins: every narrow is one index range scan in id order, never a sort."""

from __future__ import annotations

import os

import pytest

from storage import realm as realm_storage
from storage import recipients, users
from storage.channels import ChannelOptions, create_channel
from storage.db import Database
from storage.narrow import Term, build_query, select_sql


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    path = os.path.join(str(tmp_path_factory.mktemp("plans")), "db.sqlite3")
    db = Database(path, clock=lambda: 1_800_000_000.0)

    def create(tx):
        realm_storage.create_realm(tx, "Org", "http://x", "x.example")
        alice = users.create_user(tx, "alice@x.example", "Alice", None)
        bob = users.create_user(tx, "bob@x.example", "Bob", None)
        channel = create_channel(tx, alice, "general", ChannelOptions(), True)
        tx.execute("INSERT INTO subscriptions (user_id, channel_id, color) VALUES (?, ?, '#fff')", (alice.id, channel.id))
        recipients.get_or_create_recipient(tx, recipients.CHANNEL, channel.id)
        recipients.get_or_create_direct_message_group(tx, [alice.id, bob.id])
        return alice, bob, channel

    alice, bob, channel = db.write(create)
    yield db, alice, bob, channel
    db.close()


def plan(db, user, terms, comparison="<= ?", descending=True):
    def explain(tx):
        query = build_query(tx, user, terms)
        sql, params = select_sql(query, comparison, descending, 100)
        rows = tx.all("EXPLAIN QUERY PLAN " + sql, params + [10**9])
        return [row["detail"] for row in rows]

    return db.read(explain)


def assert_scan(details, driving, index):
    text = "\n".join(details)
    assert "TEMP B-TREE" not in text, text
    assert details[0].startswith(f"SEARCH {driving} USING") and index in details[0], text


CASES = {
    "no narrow": ([], "um", "PRIMARY KEY"),
    "channel": ([Term("channel", "general")], "m", "messages_by_recipient"),
    "channel + topic": ([Term("channel", "general"), Term("topic", "greetings")], "m", "messages_by_topic"),
    "sender": ([Term("sender", "bob@x.example")], "m", "messages_by_sender"),
    "dm": ([Term("dm", "bob@x.example")], "m", "messages_by_recipient"),
    "is:starred": ([Term("is", "starred")], "um", "user_messages_starred"),
    "is:mentioned": ([Term("is", "mentioned")], "um", "user_messages_mentioned"),
    "is:unread": ([Term("is", "unread")], "um", "user_messages_unread"),
    "is:alerted": ([Term("is", "alerted")], "um", "user_messages_alerted"),
    "is:dm": ([Term("is", "dm")], "um", "user_messages_private"),
    "id": ([Term("id", "5")], "m", "INTEGER PRIMARY KEY"),
    "search": ([Term("search", "hello")], "um", "PRIMARY KEY"),
    "has:link, negated topic": ([Term("has", "link"), Term("topic", "x", negated=True)], "um", "PRIMARY KEY"),
    "channel + is:starred": ([Term("channel", "general"), Term("is", "starred")], "m", "messages_by_recipient"),
    "channels:public": ([Term("channels", "public")], "m", "INTEGER PRIMARY KEY"),
}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("descending", [True, False])
def test_plan_is_one_ordered_range_scan(setup, name, descending):
    db, alice, _, _ = setup
    terms, driving, index = CASES[name]
    details = plan(db, alice, terms, "<= ?" if descending else ">= ?", descending)
    assert_scan(details, driving, index)
