"""A built narrow Query as SQL, and running it within the request's CPU budget (storage/fetch/narrow.py builds it).

A scan reads the matching messages on one Side of an anchor id, in one of two row shapes, each read by
its own function: find_flag_rows' FlagRow (id, flags), which the encoded-message cache turns into a
page, and find_message_rows' MessageRow (storage/fetch/message_objects.py), whole messages.
select_sql is the one place where a Side and what a scan selects become SQL; unread_query and
ids_query give a built Query another driving scan (first_unread's, message_ids').
"""

from __future__ import annotations

import enum
import json
from typing import Any

import msgspec

from storage.cache.directory import directory
from storage.db.tx import QueryBudgetExceeded, Tx
from storage.fetch.message_objects import HTML_ROW_COLUMNS, ROW_COLUMNS, MessageRow
from storage.fetch.narrow import IS_FLAG_CONDITIONS, MUTED_SQL, MUTED_TOPIC_SQL, Query
from storage.model.errors import ApiError

# Within narrow.py's bounds, terms that reject every row still walk the whole history: the queries
# of one request share a CPU budget (storage/db.py, Tx.bounded) and this answer ends them when spent.
NARROW_TOO_SLOW = "narrow took too long to search; add a channel, topic or sender term"

DRIVER_WHERE = {
    "recipient": "m.recipient_id = ?",
    "topic": "m.recipient_id = ? AND m.topic_key = ?",
    "sender": "m.sender_id = ?",
    "id": "m.id = ?",
    "ids": "m.id IN (SELECT value FROM json_each(?))",
    "all": "1",
    "fts": "messages_fts MATCH ?",
}
FLAGS_OF_SQL = (
    "SELECT message_id, flags FROM user_messages WHERE user_id = ? AND message_id IN (SELECT value FROM json_each(?))"
)

# A page row of find_flag_rows: (message id, the viewer's flag bits), the bits None where the viewer has
# no user_messages row (a message of a channel whose history they may read: "historical"). A NamedTuple
# would name the two, but making one costs 0.15-0.25 µs a row where a plain tuple costs 0.04: about a
# tenth of a cached channel + topic page, whose rows come from the index and the kept flags.
FlagRow = tuple[int, int | None]


class Side(enum.Enum):
    """Which messages a scan reads from an anchor id, and in what order (ids grow with time)."""

    AT_OR_BEFORE = enum.auto()  # the anchor and older ones, newest first
    BEFORE = enum.auto()  # older ones, newest first
    AFTER = enum.auto()  # newer ones, oldest first
    AT_OR_AFTER = enum.auto()  # the anchor and newer ones, oldest first


class Selected(enum.Enum):
    """What a scan selects: the columns of a row shape."""

    FLAG_ROWS = enum.auto()  # FlagRow
    MESSAGE_ROWS = enum.auto()  # MessageRow
    HTML_MESSAGE_ROWS = enum.auto()  # MessageRow without the Markdown source (None): apply_markdown shows HTML
    IDS = enum.auto()  # the ids alone, of a history-mode range whose flags come from storage/cache/flag_cache.py


# A Side as SQL: the comparison of the scan's ordering column with the anchor, and the scan's order.
SIDE_SQL = {
    Side.AT_OR_BEFORE: ("<= ?", "DESC"),
    Side.BEFORE: ("< ?", "DESC"),
    Side.AFTER: ("> ?", "ASC"),
    Side.AT_OR_AFTER: (">= ?", "ASC"),
}
# What a scan selects, as columns; FLAG_ROWS' are the scan's ordering column (which its index covers) and um.flags.
SELECTED_COLUMNS = {
    Selected.MESSAGE_ROWS: ROW_COLUMNS,
    Selected.HTML_MESSAGE_ROWS: HTML_ROW_COLUMNS,
    Selected.IDS: "m.id",
}


def select_sql(
    query: Query, side: Side, anchor: int, limit: int | None, selected: Selected = Selected.FLAG_ROWS
) -> tuple[str, list[Any]]:
    """Return SQL and parameters selecting matching messages on one side of an anchor id.

    Selected.IDS reads `m` alone, without the viewer's row (SQLite keeps an unused LEFT JOIN): only
    for a history-mode range, where every message is a row and no filter names `um`.
    """
    join_viewer = selected is not Selected.IDS
    if not join_viewer:
        assert query.history and query.driver in HISTORY_RANGES, query.driver
    params: list[Any] = [query.user_id] if join_viewer else []
    if query.driver in ("um", "flag"):
        order_column = "um.message_id"
        # Without statistics SQLite prefers the primary key to an equally keyed partial index.
        condition, index = IS_FLAG_CONDITIONS[query.flag_condition] if query.driver == "flag" else ("", "")
        indexed = f" INDEXED BY {index}" if index else ""
        source = f"user_messages AS um{indexed} CROSS JOIN messages AS m ON m.id = um.message_id"
        if not query.filters and selected is Selected.FLAG_ROWS:  # nothing reads `m`: the user's rows alone answer
            source = f"user_messages AS um{indexed}"
        where = ["um.user_id = ?"] + ([condition] if condition else [])
    elif query.driver == "fts":
        order_column = "messages_fts.rowid"
        source = (
            "messages_fts CROSS JOIN user_messages AS um ON um.user_id = ? AND um.message_id = messages_fts.rowid"
            " CROSS JOIN messages AS m ON m.id = messages_fts.rowid"
        )
        where = [DRIVER_WHERE["fts"]]
        params.extend(query.driver_params)
    else:
        order_column = "m.id"
        join = "LEFT JOIN" if query.history else "CROSS JOIN"
        source = "messages AS m"
        if join_viewer:
            source += f" {join} user_messages AS um ON um.user_id = ? AND um.message_id = m.id"
        where = [DRIVER_WHERE[query.driver]]
        params.extend(query.driver_params)
    filters, filter_params = _filters(query)
    where.extend(f"({f})" for f in filters)
    params.extend(filter_params)
    comparison, order = SIDE_SQL[side]
    where.append(f"{order_column} {comparison}")
    params.append(anchor)
    if selected is Selected.FLAG_ROWS:
        columns = f"{order_column} AS id, um.flags AS flags"
    else:
        columns = SELECTED_COLUMNS[selected]
    sql = f"SELECT {columns} FROM {source} WHERE {' AND '.join(where)}"
    if query.driver != "id":  # an id term matches one row at most: nothing to order
        sql += f" ORDER BY {order_column} {order}"
    if limit is not None:
        sql += f" LIMIT {int(limit)}"
    return sql, params


# Drivers whose index range, joined to user_messages with a LEFT JOIN (history mode), yields a row
# for every entry: nothing but filters can skip one.
HISTORY_RANGES = ("recipient", "topic", "sender", "all")


def every_row_matches(query: Query) -> bool:
    """Whether every row the driving scan reads is a match: no filter is left to test, and no join skips one.

    The user's own rows (um, flag) all match; a message range does in history mode, where a message
    without the user's row still shows. Outside it the join skips those, and search's MATCH is no range.
    """
    if query.driver not in ("um", "flag") and not (query.history and query.driver in HISTORY_RANGES):
        return False
    return len(query.filters) == len(_implied(query))  # each implied entry is one filter


def _implied(query: Query) -> list[tuple[int, int, int]]:
    """The query's implied filters that hold for its current driving scan (none once it changed)."""
    return query.implied if query.implied_for == (query.driver, query.driver_params) else []


def _filters(query: Query) -> tuple[list[str], list[Any]]:
    """The query's filters and their parameters, less those its driving scan already guarantees."""
    implied = _implied(query)
    if not implied:
        return query.filters, query.params
    filters, params = list(query.filters), list(query.params)
    for filter_index, param_index, count in sorted(implied, reverse=True):
        del filters[filter_index]
        del params[param_index : param_index + count]
    return filters, params


# -- other scans of a narrow: its unread messages, the ids asked for -------------------------


def unread_query(query: Query) -> Query:
    """The query limited to the user's unread, unmuted rows, driven by user_messages_unread.

    Historical messages are never unread, so the narrow's own driver gives way to the unread index.
    Inside a channel narrow only topic muting applies: one may read a muted channel (Zulip's rule).
    """
    unread = msgspec.structs.replace(
        query, history=False, driver="flag", flag_condition="unread", driver_params=[],
        filters=list(query.filters), params=list(query.params),
    )  # fmt: skip
    if query.dm_only:  # muting is about channels: nothing to skip
        return unread
    if query.channel_id is None:
        unread.add(MUTED_SQL, [query.user_id] * 3, negated=True)
    else:
        unread.add(MUTED_TOPIC_SQL, [query.user_id], negated=True)
    return unread


def ids_query(query: Query, message_ids: list[int]) -> Query:
    """The query limited to requested ids, readable channel history included unless `is:` forbids it.

    Outside history mode the hidden-channel filter is already there, so a channel whose history is
    public to subscribers and is not hidden is one whose history the user may read.
    """
    ids = json.dumps(sorted({i for i in message_ids if i < 2**63}))
    result = msgspec.structs.replace(
        query, driver="ids", driver_params=[ids], filters=list(query.filters), params=list(query.params)
    )
    if not query.history and query.history_allowed:
        result.history = True
        result.add("um.message_id IS NOT NULL OR m.channel_id IN"
                   " (SELECT c.id FROM channels AS c WHERE c.history_public_to_subscribers)", [])  # fmt: skip
    return result


# -- running a scan --------------------------------------------------------------------------


def find_flag_rows(
    tx: Tx, query: Query, side: Side, anchor: int, limit: int | None, flag_entries: int = 0
) -> list[FlagRow]:
    """Return (id, flags) rows of the matching messages on one side of the anchor, in the scan's order.

    With `flag_entries` (the bound of storage/cache/flag_cache.py), a query keeps_flags accepts takes
    its flags from that cache.
    """
    if query.empty or limit == 0:
        return []
    if flag_entries and keeps_flags(query, limit):
        return _rows_with_kept_flags(tx, query, side, anchor, limit, flag_entries)
    return _run(tx, query, *select_sql(query, side, anchor, limit), limit)


def find_message_rows(
    tx: Tx, query: Query, side: Side, anchor: int, limit: int | None, *, markdown: bool
) -> list[MessageRow]:
    """Return whole rows of the matching messages on one side of the anchor, in the scan's order.

    With `markdown` (apply_markdown: the objects show rendered_content), the Markdown source is not read.
    """
    if query.empty or limit == 0:
        return []
    selected = Selected.HTML_MESSAGE_ROWS if markdown else Selected.MESSAGE_ROWS
    return _run(tx, query, *select_sql(query, side, anchor, limit, selected), limit)


def _run(tx: Tx, query: Query, sql: str, params: list[Any], limit: int | None) -> list[Any]:
    """The rows of a scan's statement, within the request's CPU budget where the scan may read far."""
    if limit is not None and every_row_matches(query):
        # The scan stops after `limit` rows: the budget's progress handler (a Python call every
        # PROGRESS_STEPS instructions, set and cleared around the statement) is not needed.
        return tx.tuples(sql, params)
    try:
        return tx.bounded(sql, params)
    except QueryBudgetExceeded:
        raise ApiError(NARROW_TOO_SLOW) from None


def keeps_flags(query: Query, limit: int | None) -> bool:
    """Whether find_flag_rows' rows of this query can come from the narrow's index and the cache.

    A history-mode range with nothing left to filter: every message of the index range is a row,
    flagged or historical, so the range's LIMIT is the page's.
    """
    return limit is not None and query.history and query.driver in HISTORY_RANGES and every_row_matches(query)


def _rows_with_kept_flags(
    tx: Tx, query: Query, side: Side, anchor: int, limit: int | None, entries: int
) -> list[FlagRow]:
    """(id, flags) rows: ids from the narrow's index, flags from the viewer's kept ones (cache/flag_cache.py).

    The viewer's kept flags are a dict by message id, whose None is a historical message's: a message
    not in the dict has no flags kept.
    """
    cache = directory(tx).flags
    cache.limit = entries
    kept = cache.of(query.user_id)
    if kept is None:  # a viewer not seen yet: the usual join, and its flags kept
        rows = _run(tx, query, *select_sql(query, side, anchor, limit), limit)
        cache.misses += len(rows)
        if tx.unwritten():
            cache.keep(query.user_id, dict(rows))
        return rows
    sql, params = select_sql(query, side, anchor, limit, Selected.IDS)
    ids = [row[0] for row in tx.tuples(sql, params)]
    try:
        flags = list(map(kept.__getitem__, ids))
    except KeyError:  # some have no flags kept: those are read in one query
        missing = [message_id for message_id in ids if message_id not in kept]
    else:
        cache.hits += len(ids)
        return list(zip(ids, flags, strict=True))
    read = dict(tx.tuples(FLAGS_OF_SQL, (query.user_id, msgspec.json.encode(missing).decode())))
    fresh = {message_id: read.get(message_id) for message_id in missing}
    rows = [(message_id, fresh[message_id] if message_id in fresh else kept[message_id]) for message_id in ids]
    cache.misses += len(missing)
    cache.hits += len(ids) - len(missing)
    if tx.unwritten():
        cache.keep(query.user_id, fresh)
    return rows
