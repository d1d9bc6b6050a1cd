"""Narrows: parse GET /messages' `narrow` and build the SQL that serves it.

Zulip's rule holds here: every term only ever removes rows from a base query that is already
limited to what the user may see. The base is either the user's own rows (user_messages, the
default) or, for a channel whose history the user may read, the channel's messages with the
user's rows LEFT JOINed (rows without one are "historical").

Each query is driven by one index range scan in id order, so a page never sorts and never walks
the user's whole history to filter: a channel (+ topic), conversation, sender or id term drives
from `messages` through its index; `is:` flags drive from the partial index of user_messages;
anything else walks the user's rows from the anchor. CROSS JOIN pins the join order SQLite uses.
"""

from __future__ import annotations

import datetime
import json
import re
from typing import Any

import msgspec

from storage import recipients
from storage.channels import Channel, get_channel_by_id, get_channel_by_name, has_content_access
from storage.db import Tx
from storage.errors import ApiError
from storage.realm import EMPTY_TOPIC_DISPLAY_NAME, get_realm
from storage.topics import RESOLVED_PREFIX
from storage.users import User, get_user_by_api_email, get_user_by_id

CHANNEL_OPERATORS = {"channel", "stream"}
DM_OPERATORS = {"dm", "pm-with", "pm_with"}
ID_OR_STRING_OPERATORS = {"channel", "stream", "id", "sender", "group-pm-with", "group_pm_with", "dm-including",
                          "with", "mentions"}  # fmt: skip
KNOWN_OPERATORS = (
    CHANNEL_OPERATORS | DM_OPERATORS | ID_OR_STRING_OPERATORS
    | {"channels", "streams", "topic", "subject", "is", "has", "in", "near", "search"}
)  # fmt: skip
MAX_MESSAGE_ID = 2147483647


class Term(msgspec.Struct):
    operator: str
    operand: Any
    negated: bool = False


def bad_narrow(desc: str) -> ApiError:
    return ApiError(f"Invalid narrow operator: {desc}", "BAD_NARROW", data={"desc": desc})


def parse_narrow(raw: Any) -> list[Term]:
    """Return the terms of a decoded `narrow` (objects or legacy pairs); raise the API's errors."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise ApiError("narrow is not a list")
    terms = []
    for index, element in enumerate(raw):
        if isinstance(element, list):
            if len(element) != 2 or not all(isinstance(e, str) for e in element):
                raise ApiError(f"Invalid narrow[{index}]: Value error, element is not a string pair")
            operator, operand, negated = element[0], element[1], False
        elif isinstance(element, dict):
            if "operator" not in element:
                raise ApiError(f"Invalid narrow[{index}]: Value error, operator is missing")
            if element.get("operand") is None:
                raise ApiError(f"Invalid narrow[{index}]: Value error, operand is missing")
            operator, operand = element["operator"], element["operand"]
            negated = element.get("negated", False)
            if not isinstance(negated, bool):
                raise ApiError(f'narrow[{index}]["negated"] is not a boolean')
            if not isinstance(operator, str):
                raise ApiError(f'narrow[{index}]["operator"] is not a string')
        else:
            raise ApiError(f"Invalid narrow[{index}]: Value error, dict or list required")
        terms.append(Term(operator, check_operand(operator, operand), negated))
    return terms


def check_operand(operator: str, operand: Any) -> Any:
    if operator not in KNOWN_OPERATORS:
        raise bad_narrow(f"unknown operator {operator}")
    if operator in DM_OPERATORS:
        if isinstance(operand, list):
            for i, item in enumerate(operand):
                if isinstance(item, bool) or not isinstance(item, int):
                    raise ApiError(f"operand[{i}] is not an integer")
            return operand
        if not isinstance(operand, (str, int)) or isinstance(operand, bool):
            raise ApiError("operand is not a string")
        return operand
    if operator in ID_OR_STRING_OPERATORS:
        if isinstance(operand, bool) or not isinstance(operand, (str, int)):
            raise ApiError("operand is not a string or integer")
        return operand
    if not isinstance(operand, str):
        raise ApiError("operand is not a string")
    if operator == "search" and not operand.strip():
        raise ApiError("operand cannot be blank.")
    return operand


# -- building the query ------------------------------------------------------------------------

IS_FLAG_CONDITIONS = {
    # operand: (condition on um.flags matching the partial index's WHERE exactly, that index)
    "starred": ("(um.flags & 2) != 0", "user_messages_starred"),
    "mentioned": ("(um.flags & 120) != 0", "user_messages_mentioned"),
    "unread": ("(um.flags & 1) = 0", "user_messages_unread"),
    "alerted": ("(um.flags & 128) != 0", "user_messages_alerted"),
    "dm": ("(um.flags & 512) != 0", "user_messages_private"),
    "private": ("(um.flags & 512) != 0", "user_messages_private"),
}
IS_OPERANDS = set(IS_FLAG_CONDITIONS) | {"resolved", "followed", "muted"}
HAS_OPERANDS = {"link", "image", "attachment", "reaction"}
FOLLOWED, MUTED, UNMUTED = 3, 1, 2

# A topic the user muted, or a topic in a muted channel the user did not unmute.
MUTED_SQL = (
    "(m.channel_id IS NOT NULL AND (EXISTS (SELECT 1 FROM user_topics AS ut WHERE ut.user_id = ?"
    " AND ut.channel_id = m.channel_id AND ut.topic = m.topic AND ut.visibility_policy = 1)"
    " OR (EXISTS (SELECT 1 FROM subscriptions AS s WHERE s.user_id = ? AND s.channel_id = m.channel_id"
    " AND s.is_muted) AND NOT EXISTS (SELECT 1 FROM user_topics AS ut WHERE ut.user_id = ?"
    " AND ut.channel_id = m.channel_id AND ut.topic = m.topic AND ut.visibility_policy = 2))))"
)


class Query(msgspec.Struct):
    """A narrow turned into SQL pieces: the driving scan, filters and their parameters."""

    user_id: int
    history: bool = False
    driver: str = "um"  # um | flag | recipient | topic | sender | id | all
    driver_params: list[Any] = msgspec.field(default_factory=list)
    flag_condition: str = ""  # the `is:` operand whose partial index drives the "flag" scan
    filters: list[str] = msgspec.field(default_factory=list)
    params: list[Any] = msgspec.field(default_factory=list)
    search_terms: list[str] = msgspec.field(default_factory=list)
    empty: bool = False  # the narrow can match nothing (e.g. a conversation that never existed)
    dm_only: bool = False

    def add(self, condition: str, params: list[Any], negated: bool = False) -> None:
        self.filters.append(f"NOT ({condition})" if negated else condition)
        self.params.extend(params)


def resolve_channel(tx: Tx, operand: Any) -> Channel:
    channel = None
    if isinstance(operand, int) or (isinstance(operand, str) and operand.isdigit()):
        channel = get_channel_by_id(tx, int(operand))
    if channel is None and isinstance(operand, str):
        channel = get_channel_by_name(tx, operand)
    if channel is None:
        raise bad_narrow(f"unknown channel {operand}")
    return channel


def resolve_user(tx: Tx, operand: Any) -> User | None:
    if isinstance(operand, int) or (isinstance(operand, str) and operand.isdigit()):
        return get_user_by_id(tx, int(operand))
    return get_user_by_api_email(tx, str(operand), get_realm(tx))


def resolve_dm_users(tx: Tx, operand: Any) -> list[int]:
    items = operand if isinstance(operand, list) else [operand] if isinstance(operand, int) else operand.split(",")
    ids = []
    for item in items:
        user = resolve_user(tx, item.strip() if isinstance(item, str) else item)
        if user is None:
            raise bad_narrow(f"unknown user in {operand}")
        ids.append(user.id)
    return ids


def check_operator_combinations(terms: list[Term]) -> None:
    positive = {t.operator for t in terms if not t.negated}
    if positive & CHANNEL_OPERATORS and positive & (DM_OPERATORS | {"group-pm-with", "group_pm_with"}):
        raise bad_narrow("No message can be both a channel message and direct message")
    if sum(1 for t in terms if t.operator == "with") > 1:
        raise ApiError(
            "Invalid narrow operator combination: Duplicate 'with' operators.",
            "BAD_NARROW",
            data={"desc": "Duplicate 'with' operators."},
        )


def readable_history(tx: Tx, user: User, channel: Channel) -> bool:
    """Whether the user may read the channel's messages from before they joined."""
    return channel.history_public_to_subscribers and has_content_access(tx, user, channel)


def hidden_channel_ids(tx: Tx, user: User) -> list[int]:
    """Channels whose messages the user received but may no longer read (left a private channel)."""
    candidates = tx.all(
        "SELECT c.id FROM channels AS c WHERE (c.invite_only OR ?) AND NOT c.is_web_public AND NOT EXISTS"
        " (SELECT 1 FROM subscriptions AS s WHERE s.user_id = ? AND s.channel_id = c.id AND s.active)",
        (user.is_guest, user.id),
    )
    hidden = []
    for row in candidates:
        channel = get_channel_by_id(tx, row["id"])
        if channel is not None and not has_content_access(tx, user, channel, subscribed=False):
            hidden.append(channel.id)
    return hidden


def build_query(tx: Tx, user: User, terms: list[Term]) -> Query:
    """Return the query serving a narrow for this user; raise the API's narrow errors."""
    check_operator_combinations(terms)
    query = Query(user_id=user.id)
    positive = [t for t in terms if not t.negated]
    _choose_base(tx, user, query, terms, positive)
    for term in terms:
        _add_term(tx, user, query, term)
    if not query.history:
        hidden = hidden_channel_ids(tx, user)
        if hidden:
            query.add("m.channel_id IS NULL OR m.channel_id NOT IN (SELECT value FROM json_each(?))",
                      [json.dumps(hidden)])  # fmt: skip
    query.dm_only = bool(positive) and all(
        t.operator in DM_OPERATORS | {"dm-including", "group-pm-with", "group_pm_with"}
        or (t.operator == "is" and t.operand in ("dm", "private"))
        for t in positive
    )
    return query


def _choose_base(tx: Tx, user: User, query: Query, terms: list[Term], positive: list[Term]) -> None:
    """Pick history mode and the driving index from the non-negated terms."""
    has_is = any(t.operator == "is" and t.operand != "resolved" for t in terms)
    channel_term = next((t for t in positive if t.operator in CHANNEL_OPERATORS), None)
    channels_term = next((t for t in positive if t.operator in ("channels", "streams")), None)
    if channel_term is not None:
        channel = resolve_channel(tx, channel_term.operand)
        query.history = not has_is and readable_history(tx, user, channel)
        recipient_id = recipients.get_recipient(tx, recipients.CHANNEL, channel.id)
        topic_term = next((t for t in positive if t.operator in ("topic", "subject")), None)
        if recipient_id is None:
            query.empty = True
        elif topic_term is not None:
            query.driver, query.driver_params = "topic", [recipient_id, _topic_operand(topic_term.operand)]
        else:
            query.driver, query.driver_params = "recipient", [recipient_id]
        return
    if channels_term is not None and not has_is and not user.is_guest:
        query.history, query.driver = True, "all"
    id_term = next((t for t in positive if t.operator == "id"), None)
    dm_term = next((t for t in positive if t.operator in DM_OPERATORS), None)
    sender_term = next((t for t in positive if t.operator == "sender"), None)
    flag_term = next((t for t in positive if t.operator == "is" and t.operand in IS_FLAG_CONDITIONS), None)
    if query.history:
        return
    if id_term is not None:
        query.driver, query.driver_params = "id", [_message_id(id_term.operand)]
    elif dm_term is not None:
        recipient_id = recipients.get_direct_message_group_recipient(
            tx, [user.id, *resolve_dm_users(tx, dm_term.operand)]
        )
        if recipient_id is None:
            query.empty = True
        else:
            query.driver, query.driver_params = "recipient", [recipient_id]
    elif sender_term is not None:
        sender = resolve_user(tx, sender_term.operand)
        if sender is None:
            raise bad_narrow(f"unknown user {sender_term.operand}")
        query.driver, query.driver_params = "sender", [sender.id]
    elif flag_term is not None:
        query.driver, query.flag_condition = "flag", flag_term.operand


def _topic_operand(operand: str) -> str:
    return "" if operand == EMPTY_TOPIC_DISPLAY_NAME else operand


def _message_id(operand: Any) -> int:
    text = str(operand)
    if not text.isdigit() or int(text) > MAX_MESSAGE_ID:
        raise ApiError("Invalid message ID")
    return int(text)


def _add_term(tx: Tx, user: User, query: Query, term: Term) -> None:
    """Add the filter of one term (the driving term's filter is redundant but harmless)."""
    operator, operand, negated = term.operator, term.operand, term.negated
    if operator in CHANNEL_OPERATORS:
        query.add("m.channel_id = ?", [resolve_channel(tx, operand).id], negated)
    elif operator in ("channels", "streams"):
        if operand not in ("public", "web-public"):
            raise bad_narrow(f"unknown channels operand {operand}")
        column = "NOT c.invite_only" if operand == "public" else "c.is_web_public"
        query.add(f"m.channel_id IN (SELECT c.id FROM channels AS c WHERE {column})", [], negated)
    elif operator in ("topic", "subject"):
        query.add("m.channel_id IS NOT NULL AND m.topic = ? COLLATE NOCASE", [_topic_operand(operand)], negated)
    elif operator == "sender":
        sender = resolve_user(tx, operand)
        if sender is None:
            raise bad_narrow(f"unknown user {operand}")
        query.add("m.sender_id = ?", [sender.id], negated)
    elif operator in DM_OPERATORS:
        recipient_id = recipients.get_direct_message_group_recipient(tx, [user.id, *resolve_dm_users(tx, operand)])
        query.add("m.recipient_id = ?", [recipient_id if recipient_id is not None else -1], negated)
    elif operator in ("dm-including", "group-pm-with", "group_pm_with"):
        _add_dm_including(tx, user, query, term)
    elif operator == "is":
        _add_is(user, query, term)
    elif operator == "has":
        _add_has(query, term)
    elif operator == "in":
        if operand not in ("home", "all"):
            raise bad_narrow(f"unknown 'in' operand {operand}")
        if operand == "home":
            query.add(MUTED_SQL, [user.id] * 3, not negated)
    elif operator == "id":
        query.add("m.id = ?", [_message_id(operand)], negated)
    elif operator == "mentions":
        _add_mentions(tx, user, query, term)
    elif operator == "search":
        _add_search(query, term)
    # near: accepted, no filtering; with: rewritten before the query is built.


def _add_dm_including(tx: Tx, user: User, query: Query, term: Term) -> None:
    other = resolve_user(tx, term.operand)
    if other is None:
        raise bad_narrow(f"unknown user {term.operand}")
    minimum = 3 if term.operator != "dm-including" else 1
    if term.operator == "dm-including" and other.id == user.id:
        query.add("m.channel_id IS NULL", [], term.negated)
        return
    query.add(
        "m.channel_id IS NULL AND m.recipient_id IN (SELECT r.id FROM direct_message_group_members AS g"
        " JOIN recipients AS r ON r.type = 3 AND r.type_id = g.group_id WHERE g.user_id = ?"
        " AND (SELECT count(*) FROM direct_message_group_members AS n WHERE n.group_id = g.group_id) >= ?)",
        [other.id, minimum],
        term.negated,
    )


def _add_is(user: User, query: Query, term: Term) -> None:
    operand = term.operand
    if operand not in IS_OPERANDS:
        raise bad_narrow(f"unknown 'is' operand {operand}")
    if operand in IS_FLAG_CONDITIONS:
        # History rows have no user_messages row: they are read and carry no other flag.
        condition = IS_FLAG_CONDITIONS[operand][0]
        if operand in ("dm", "private"):
            condition = "m.channel_id IS NULL"
        query.add(condition if operand != "unread" else f"um.flags IS NOT NULL AND {condition}", [], term.negated)
    elif operand == "resolved":
        query.add("substr(m.topic, 1, 2) = ?", [RESOLVED_PREFIX], term.negated)
    elif operand == "followed":
        query.add(
            "EXISTS (SELECT 1 FROM user_topics AS ut WHERE ut.user_id = ? AND ut.channel_id = m.channel_id"
            " AND ut.topic = m.topic AND ut.visibility_policy = 3)",
            [user.id],
            term.negated,
        )
    else:
        query.add(MUTED_SQL, [user.id] * 3, term.negated)


def _add_has(query: Query, term: Term) -> None:
    if term.operand not in HAS_OPERANDS:
        raise bad_narrow(f"unknown 'has' operand {term.operand}")
    if term.operand == "reaction":
        query.add("EXISTS (SELECT 1 FROM reactions AS r WHERE r.message_id = m.id)", [], term.negated)
    else:
        query.add(f"m.has_{term.operand}", [], term.negated)


def _add_mentions(tx: Tx, user: User, query: Query, term: Term) -> None:
    target = resolve_user(tx, term.operand)
    if target is None:
        raise bad_narrow(f"unknown user {term.operand}")
    query.add(
        "EXISTS (SELECT 1 FROM user_messages AS x WHERE x.user_id = ? AND x.message_id = m.id AND (x.flags & 8) != 0)",
        [target.id],
        term.negated,
    )


_PHRASE = re.compile(r'"([^"]+)"|(\S+)')


def search_terms(operand: str) -> list[str]:
    """Split a search operand into words and "quoted phrases"."""
    return [phrase or word for phrase, word in _PHRASE.findall(operand) if (phrase or word).strip('"')]


def fts_query(terms: list[str]) -> str:
    """An FTS5 query matching every term (each quoted, so user text is never FTS syntax)."""
    return " ".join('"' + term.replace('"', '""') + '"' for term in terms)


def _add_search(query: Query, term: Term) -> None:
    words = search_terms(term.operand)
    if not words:
        raise ApiError("operand cannot be blank.")
    query.add("m.id IN (SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?)", [fts_query(words)], term.negated)
    if not term.negated:
        query.search_terms.extend(words)


# -- running it --------------------------------------------------------------------------------

DRIVER_WHERE = {
    "recipient": ("m.recipient_id = ?", "m.id"),
    "topic": ("m.recipient_id = ? AND m.topic = ? COLLATE NOCASE", "m.id"),
    "sender": ("m.sender_id = ?", "m.id"),
    "id": ("m.id = ?", "m.id"),
    "all": ("1", "m.id"),
}


def select_sql(query: Query, comparison: str, descending: bool, limit: int | None) -> tuple[str, list[Any]]:
    """Return SQL and parameters selecting (id, flags) of matching messages on one side of an anchor.

    `comparison` is an SQL fragment on the ordering column, such as "<= ?" or "IN (...)".
    """
    params: list[Any] = []
    if query.driver in ("um", "flag"):
        order_column = "um.message_id"
        # Without statistics SQLite prefers the primary key to an equally keyed partial index.
        condition, index = IS_FLAG_CONDITIONS[query.flag_condition] if query.driver == "flag" else ("", "")
        indexed = f" INDEXED BY {index}" if index else ""
        source = f"user_messages AS um{indexed} CROSS JOIN messages AS m ON m.id = um.message_id"
        where = ["um.user_id = ?"] + ([condition] if condition else [])
        params.append(query.user_id)
    else:
        condition, order_column = DRIVER_WHERE[query.driver]
        join = "LEFT JOIN" if query.history else "CROSS JOIN"
        source = f"messages AS m {join} user_messages AS um ON um.user_id = ? AND um.message_id = m.id"
        params.append(query.user_id)
        where = [condition]
        params.extend(query.driver_params)
    where.extend(f"({f})" for f in query.filters)
    params.extend(query.params)
    where.append(f"{order_column} {comparison}")
    sql = f"SELECT {order_column} AS id, um.flags AS flags FROM {source} WHERE {' AND '.join(where)}"
    if query.driver != "id":  # an id term matches one row at most: nothing to order
        sql += f" ORDER BY {order_column} {'DESC' if descending else 'ASC'}"
    if limit is not None:
        sql += f" LIMIT {int(limit)}"
    return sql, params


def find_ids(
    tx: Tx, query: Query, comparison: str, values: list[Any], descending: bool, limit: int | None
) -> list[tuple[int, int | None]]:
    """Return (id, flags) of matching messages: flags None for historical rows."""
    if query.empty or limit == 0:
        return []
    sql, params = select_sql(query, comparison, descending, limit)
    return [(row[0], row[1]) for row in tx.execute(sql, params + values)]


def anchor_for_date(tx: Tx, query: Query, value: str | None) -> int | None:
    """Return the first matching message sent on or after the date, or None if there is none."""
    if not value:
        raise ApiError("Missing 'anchor_date' argument")
    try:
        moment = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ApiError("Invalid anchor_date") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    first = tx.value(
        "SELECT id FROM messages WHERE date_sent >= ? ORDER BY date_sent, id LIMIT 1", (int(moment.timestamp()),)
    )
    if first is None:
        return None
    found = find_ids(tx, query, ">= ?", [first], False, 1)
    return found[0][0] if found else None


def first_unread(tx: Tx, query: Query) -> int | None:
    """Return the oldest unread message matching the query (muted ones skipped unless DM-only)."""
    unread = Query(**{f: getattr(query, f) for f in query.__struct_fields__})
    unread.filters = list(query.filters) + ["um.flags IS NOT NULL AND (um.flags & 1) = 0"]
    unread.params = list(query.params)
    if query.driver == "um":
        unread.driver, unread.flag_condition = "flag", "unread"
    if not query.dm_only:
        unread.add(MUTED_SQL, [query.user_id] * 3, negated=True)
    found = find_ids(tx, unread, ">= ?", [0], False, 1)
    return found[0][0] if found else None
