"""A built narrow Query as SQL, and running it within the request's CPU budget (storage/narrow.py builds it)."""

from __future__ import annotations

from typing import Any

from storage.db import QueryBudgetExceeded, Tx
from storage.errors import ApiError
from storage.narrow import IS_FLAG_CONDITIONS, Query

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


def select_sql(
    query: Query, comparison: str, descending: bool, limit: int | None, columns: str | None = None
) -> tuple[str, list[Any]]:
    """Return SQL and parameters selecting matching messages on one side of an anchor.

    `comparison` is an SQL fragment on the ordering column, such as "<= ?" or "> ?"; `columns`
    what to select from `m` and `um` (default: id, flags).
    """
    params: list[Any] = [query.user_id]
    if query.driver in ("um", "flag"):
        order_column = "um.message_id"
        # Without statistics SQLite prefers the primary key to an equally keyed partial index.
        condition, index = IS_FLAG_CONDITIONS[query.flag_condition] if query.driver == "flag" else ("", "")
        indexed = f" INDEXED BY {index}" if index else ""
        source = f"user_messages AS um{indexed} CROSS JOIN messages AS m ON m.id = um.message_id"
        if not query.filters and columns is None:  # nothing reads `m`: the user's rows alone answer
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
        source = f"messages AS m {join} user_messages AS um ON um.user_id = ? AND um.message_id = m.id"
        where = [DRIVER_WHERE[query.driver]]
        params.extend(query.driver_params)
    filters, filter_params = _filters(query)
    where.extend(f"({f})" for f in filters)
    params.extend(filter_params)
    where.append(f"{order_column} {comparison}")
    selected = columns or f"{order_column} AS id, um.flags AS flags"
    sql = f"SELECT {selected} FROM {source} WHERE {' AND '.join(where)}"
    if query.driver != "id":  # an id term matches one row at most: nothing to order
        sql += f" ORDER BY {order_column} {'DESC' if descending else 'ASC'}"
    if limit is not None:
        sql += f" LIMIT {int(limit)}"
    return sql, params


# Drivers whose index range, joined to user_messages with a LEFT JOIN (history mode), yields a row
# for every entry: nothing but filters can skip one.
_HISTORY_RANGES = ("recipient", "topic", "sender", "all")


def every_row_matches(query: Query) -> bool:
    """Whether every row the driving scan reads is a match: no filter is left to test, and no join skips one.

    The user's own rows (um, flag) all match; a message range does in history mode, where a message
    without the user's row still shows. Outside it the join skips those, and search's MATCH is no range.
    """
    if query.driver not in ("um", "flag") and not (query.history and query.driver in _HISTORY_RANGES):
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


def find_rows(
    tx: Tx,
    query: Query,
    comparison: str,
    values: list[Any],
    descending: bool,
    limit: int | None,
    columns: str | None = None,
) -> list[tuple[Any, ...]]:
    """Return tuples of `columns` of matching messages, in one query.

    The default columns are id and flags, flags None for historical rows.
    """
    if query.empty or limit == 0:
        return []
    sql, params = select_sql(query, comparison, descending, limit, columns)
    if limit is not None and every_row_matches(query):
        # The scan stops after `limit` rows: the budget's progress handler (a Python call every
        # PROGRESS_STEPS instructions, set and cleared around the statement) is not needed.
        return tx.tuples(sql, params + values)
    try:
        return tx.bounded(sql, params + values)
    except QueryBudgetExceeded:
        raise ApiError(NARROW_TOO_SLOW) from None
