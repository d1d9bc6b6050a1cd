"""EXPLAIN QUERY PLAN pins: every narrow is one index range scan in id order, never a sort."""

from __future__ import annotations

import json

import pytest

from storage.fetch import message_fetch, narrow_select
from storage.fetch.narrow import build_query
from storage.fetch.narrow_select import Side, select_sql
from storage.fetch.narrow_terms import Term


def plan(db, user, terms, side=Side.AT_OR_BEFORE, transform=None):
    def explain(tx):
        query = build_query(tx, user, terms)
        if transform is not None:
            query = transform(query)
        sql, params = select_sql(query, side, 10**9, 100)
        rows = tx.all("EXPLAIN QUERY PLAN " + sql, params)
        return [row["detail"] for row in rows]

    return db.read(explain)


def assert_scan(details, driving, index):
    text = "\n".join(details)
    assert "TEMP B-TREE" not in text, text
    assert details[0].startswith(f"SEARCH {driving} USING") and index in details[0], text


def unread(query):
    return narrow_select.unread_query(query)


def message_ids(query):
    return narrow_select.ids_query(query, [1, 5, 9])


# name: (viewer, terms, driving table, index, transform)
CASES = {
    "no narrow": ("alice", [], "um", "PRIMARY KEY", None),
    "no narrow, hidden channels": ("bob", [], "um", "PRIMARY KEY", None),
    "channel (history)": ("alice", [Term("channel", "general")], "m", "messages_by_recipient", None),
    "channel, unsubscribed (history)": ("bob", [Term("channel", "general")], "m", "messages_by_recipient", None),
    "channel, protected history": ("alice", [Term("channel", "protected")], "m", "messages_by_recipient", None),
    "channel + topic": ("alice", [Term("channel", "general"), Term("topic", "greetings")], "m", "messages_by_topic",
                        None),
    "protected channel + topic": ("alice", [Term("channel", "protected"), Term("topic", "x")], "m",
                                  "messages_by_topic", None),
    "sender": ("alice", [Term("sender", "bob@x.example")], "m", "messages_by_sender", None),
    "channels:public (history)": ("alice", [Term("channels", "public")], "m", "INTEGER PRIMARY KEY", None),
    "channels:public + sender (history)": ("alice", [Term("channels", "public"), Term("sender", "bob@x.example")],
                                           "m", "messages_by_sender", None),
    "dm": ("alice", [Term("dm", "bob@x.example")], "m", "messages_by_recipient", None),
    "dm by ids": ("bob", [Term("dm", [1])], "m", "messages_by_recipient", None),
    "dm-including": ("alice", [Term("dm-including", "bob@x.example")], "um", "PRIMARY KEY", None),
    "group-pm-with": ("alice", [Term("group-pm-with", "bob@x.example")], "um", "PRIMARY KEY", None),
    "is:starred": ("alice", [Term("is", "starred")], "um", "user_messages_starred", None),
    "is:mentioned": ("alice", [Term("is", "mentioned")], "um", "user_messages_mentioned", None),
    "is:unread": ("alice", [Term("is", "unread")], "um", "user_messages_unread", None),
    "is:alerted": ("alice", [Term("is", "alerted")], "um", "user_messages_alerted", None),
    "is:dm": ("alice", [Term("is", "dm")], "um", "user_messages_private", None),
    "is:followed": ("alice", [Term("is", "followed")], "um", "PRIMARY KEY", None),
    "is:muted": ("alice", [Term("is", "muted")], "um", "PRIMARY KEY", None),
    "in:home": ("alice", [Term("in", "home")], "um", "PRIMARY KEY", None),
    "has:reaction": ("alice", [Term("has", "reaction")], "um", "PRIMARY KEY", None),
    "mentions": ("alice", [Term("mentions", "bob@x.example")], "um", "PRIMARY KEY", None),
    "id": ("alice", [Term("id", "5")], "m", "INTEGER PRIMARY KEY", None),
    "id in a channel (history)": ("alice", [Term("channel", "general"), Term("id", 5)], "m", "INTEGER PRIMARY KEY",
                                  None),
    "search in a channel (history)": ("bob", [Term("channel", "general"), Term("search", "hello world")], "m",
                                      "messages_by_recipient", None),
    "has:link, negated topic": ("alice", [Term("has", "link"), Term("topic", "x", negated=True)], "um",
                                "PRIMARY KEY", None),
    "channel + is:starred": ("alice", [Term("channel", "general"), Term("is", "starred")], "m",
                             "messages_by_recipient", None),
    "first_unread": ("alice", [], "um", "user_messages_unread", unread),
    "first_unread, hidden channels": ("bob", [], "um", "user_messages_unread", unread),
    "first_unread in a channel": ("alice", [Term("channel", "general")], "um", "user_messages_unread", unread),
    "first_unread in a topic": ("alice", [Term("channel", "general"), Term("topic", "t")], "um",
                                "user_messages_unread", unread),
    "first_unread in a conversation": ("alice", [Term("dm", "bob@x.example")], "um", "user_messages_unread", unread),
    "first_unread, starred": ("alice", [Term("is", "starred")], "um", "user_messages_unread", unread),
    "message_ids": ("alice", [], "m", "INTEGER PRIMARY KEY", message_ids),
    "message_ids, hidden channels": ("bob", [], "m", "INTEGER PRIMARY KEY", message_ids),
    "message_ids + is:starred": ("alice", [Term("is", "starred")], "m", "INTEGER PRIMARY KEY", message_ids),
    "message_ids in a channel": ("alice", [Term("channel", "general")], "m", "INTEGER PRIMARY KEY", message_ids),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("descending", [True, False])
def test_plan_is_one_ordered_range_scan(plans_db, name, descending):
    db, people = plans_db
    viewer, terms, driving, index, transform = CASES[name]
    details = plan(db, people[viewer], terms, Side.AT_OR_BEFORE if descending else Side.AT_OR_AFTER, transform)
    assert_scan(details, driving, index)


@pytest.mark.parametrize("descending", [True, False])
def test_search_walks_the_full_text_index_in_id_order(plans_db, descending):
    """A search without a channel/sender/flag term is driven by FTS5 itself: its matches in rowid order
    from the anchor (idxNum bit 0x40: ordered by rowid, 0x80: descending; idxStr "M...": MATCH, then
    the rowid bound), each joined to the user's row and the message by primary key; no sort, and no
    set of every match built first (the plan before issue 12's second round: an IN list)."""
    db, people = plans_db
    details = plan(
        db, people["alice"], [Term("search", "hello")], Side.AT_OR_BEFORE if descending else Side.AT_OR_AFTER
    )
    text = "\n".join(details)
    assert "TEMP B-TREE" not in text and "LIST SUBQUERY" not in text, text
    scan = details[0].removeprefix("SCAN messages_fts VIRTUAL TABLE INDEX ")
    assert scan != details[0], text
    idx_num, idx_str = scan.split(":", 1)
    assert int(idx_num) & 0x40 and bool(int(idx_num) & 0x80) == descending, text
    assert idx_str.startswith("M") and ("<" if descending else ">") in idx_str, text
    assert details[1:] == [
        "SEARCH um USING PRIMARY KEY (user_id=? AND message_id=?)",
        "SEARCH m USING INTEGER PRIMARY KEY (rowid=?)",
    ], text


def test_search_with_a_flag_keeps_the_flag_driver_and_the_search_filter(plans_db):
    db, people = plans_db
    sql = db.read(lambda tx: select_sql(build_query(tx, people["alice"], [Term("search", "hi"), Term("is", "starred")]),
                                        Side.AT_OR_BEFORE, 10**9, 100)[0])  # fmt: skip
    assert "FROM user_messages AS um" in sql and "messages_fts MATCH ?" in sql, sql


def test_bob_has_hidden_channels(plans_db):
    """The cases for bob exercise the hidden-channel filter (a private channel he is not in)."""
    db, people = plans_db
    query = db.read(build_query, people["bob"], [])
    assert any("json_each" in f for f in query.filters), query.filters
    assert json.dumps([2]) in query.params


def test_anchor_date_is_one_index_search(plans_db):
    db, _ = plans_db
    details = [row["detail"] for row in db.read(lambda tx: tx.all("EXPLAIN QUERY PLAN " + message_fetch.FIRST_SINCE_SQL,
                                                                  (1,)))]  # fmt: skip
    assert len(details) == 1 and "messages_by_date" in details[0] and "TEMP B-TREE" not in details[0], details


def test_topic_terms_search_the_topic_key(plans_db):
    """A channel + topic narrow is one range of messages_by_topic on the stored topic_key (no collation).

    Selecting ids and flags, the index covers the scan: the channel and topic filters the driver
    guarantees are left out, so no message row is read.
    """
    db, people = plans_db
    terms = [Term("channel", "general"), Term("topic", "GREETINGS")]
    details = plan(db, people["alice"], terms)
    expected = "SEARCH m USING COVERING INDEX messages_by_topic (recipient_id=? AND topic_key=? AND id<?)"
    assert details[0] == expected, details
    query = db.read(build_query, people["alice"], terms)
    assert query.driver == "topic" and query.driver_params[1] == "greetings"
