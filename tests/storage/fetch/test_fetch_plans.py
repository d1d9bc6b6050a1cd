"""EXPLAIN QUERY PLAN pins for GET /messages' one query per side (issue 12): it stays in its index."""

from __future__ import annotations

from storage.fetch.message_encoded import MISSING_SQL
from storage.fetch.narrow import build_query
from storage.fetch.narrow_select import Selected, Side, ids_query, select_sql, unread_query
from storage.fetch.narrow_terms import Term


def page_plan(db, user, terms):
    def explain(tx):
        sql, params = select_sql(build_query(tx, user, terms), Side.AT_OR_BEFORE, 10**16, 1000, Selected.MESSAGE_ROWS)
        return [row["detail"] for row in tx.all("EXPLAIN QUERY PLAN " + sql, params)]

    return db.read(explain)


def assert_only(details, expected):
    """The plan is exactly these steps (the reactions and submessages subqueries included), with no sort."""
    assert details == expected, "\n".join(details)


# Each message's reactions and submessages: one probe of each index, no per-message query.
REACTIONS = [
    "CORRELATED SCALAR SUBQUERY 1", "SEARCH r USING INDEX reactions_by_message (message_id=?)",
    "CORRELATED SCALAR SUBQUERY 2", "SEARCH s USING INDEX submessages_by_message (message_id=?)",
]  # fmt: skip


def test_no_narrow_walks_only_the_user_messages_primary_key(plans_db):
    db, people = plans_db
    assert_only(
        page_plan(db, people["alice"], []),
        ["SEARCH um USING PRIMARY KEY (user_id=? AND message_id<?)", "SEARCH m USING INTEGER PRIMARY KEY (rowid=?)",
         *REACTIONS],
    )  # fmt: skip


TOPIC_PLAN = [
    "SEARCH m USING INDEX messages_by_topic (recipient_id=? AND topic_key=? AND id<?)",
    "SEARCH um USING PRIMARY KEY (user_id=? AND message_id=?) LEFT-JOIN",
    *REACTIONS,
]


def test_channel_and_topic_stay_in_messages_by_topic(plans_db):
    db, people = plans_db
    assert_only(page_plan(db, people["alice"], [Term("channel", "general"), Term("topic", "lunch")]), TOPIC_PLAN)


def test_repeated_and_duplicate_channel_and_topic_terms_stay_in_messages_by_topic(plans_db):
    db, people = plans_db
    terms = [
        Term("channel", "general"), Term("topic", "lunch"), Term("stream", "general"), Term("topic", "LUNCH"),
        Term("channel", "general"),
    ]  # fmt: skip
    assert_only(page_plan(db, people["alice"], terms), TOPIC_PLAN)
    assert_only(page_plan(db, people["alice"], [Term("topic", "lunch"), Term("channel", "general")]), TOPIC_PLAN)


def test_the_cached_path_reads_only_the_user_messages_primary_key_without_filters(plans_db):
    db, people = plans_db

    def explain(tx):
        sql, params = select_sql(build_query(tx, people["alice"], []), Side.AT_OR_BEFORE, 10**16, 1000)
        return [row["detail"] for row in tx.all("EXPLAIN QUERY PLAN " + sql, params)]

    assert_only(db.read(explain), ["SEARCH um USING PRIMARY KEY (user_id=? AND message_id<?)"])


def test_the_cached_path_of_channel_and_topic_reads_only_messages_by_topic(plans_db):
    """Ids and flags of a channel + topic page: the index covers them (no message row is read)."""
    db, people = plans_db

    def explain(tx):
        query = build_query(tx, people["alice"], [Term("channel", "general"), Term("topic", "lunch")])
        sql, params = select_sql(query, Side.AT_OR_BEFORE, 10**16, 1000)
        assert "m.channel_id" not in sql and "m.topic_key = ?" in sql, sql
        return [row["detail"] for row in tx.all("EXPLAIN QUERY PLAN " + sql, params)]

    assert_only(
        db.read(explain),
        ["SEARCH m USING COVERING INDEX messages_by_topic (recipient_id=? AND topic_key=? AND id<?)",
         "SEARCH um USING PRIMARY KEY (user_id=? AND message_id=?) LEFT-JOIN"],
    )  # fmt: skip


def test_filters_the_driver_implies_come_back_under_another_driver(plans_db):
    """first_unread and message_ids scan other indexes: the channel and topic filters apply to them again."""
    db, people = plans_db

    def sqls(tx):
        query = build_query(tx, people["alice"], [Term("channel", "general"), Term("topic", "lunch")])
        unread, _ = select_sql(unread_query(query), Side.AT_OR_AFTER, 0, 1)
        by_ids, _ = select_sql(ids_query(query, [1, 2]), Side.AT_OR_AFTER, 0, None)
        return unread, by_ids

    for sql in db.read(sqls):
        assert "m.channel_id IS NOT NULL AND m.channel_id = ?" in sql, sql
        assert "m.channel_id IS NOT NULL AND m.topic_key = ?" in sql, sql


def test_messages_missing_from_the_cache_are_read_in_one_query_with_their_submessages(plans_db):
    """message_encoded's read of the messages a cached page lacks: by id, each subquery in its index."""
    db, _ = plans_db

    def explain(tx):
        return [row["detail"] for row in tx.all("EXPLAIN QUERY PLAN " + MISSING_SQL, ("[1, 2, 3]",))]

    details = db.read(explain)
    assert details[-4:] == REACTIONS, "\n".join(details)
    assert details[0].startswith("SEARCH m USING INTEGER PRIMARY KEY"), "\n".join(details)
    assert not any("TEMP B-TREE" in detail for detail in details), "\n".join(details)
