"""Narrows: what each term of GET /messages' `narrow` means, built into the Query that serves it.

Zulip's rule holds here: every term only ever removes rows from a base query that is already
limited to what the user may see. The base is either the user's own rows (user_messages, the
default) or, for a channel whose history the user may read, the channel's messages with the
user's rows LEFT JOINed (rows without one are "historical").

Each query is driven by one index range scan in id order, so a page never sorts and never walks
the user's whole history to filter: a channel (+ topic), conversation, sender or id term drives
from `messages` through its index; `is:` flags drive from the partial index of user_messages;
a search term (without those) drives from the full-text index in rowid order; anything else walks
the user's rows from the anchor. CROSS JOIN pins the join order SQLite uses.
Every driving term is also added as a filter, so any driver may replace another (first_unread
and message_ids do). storage/fetch/narrow_terms.py parses and bounds the terms first;
storage/fetch/narrow_select.py turns a built Query into SQL and runs it.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec

from storage.cache.directory import directory
from storage.channels.channels import has_content_access
from storage.channels.topics import RESOLVED_PREFIX, stored_topic
from storage.db.tx import Tx, topic_key
from storage.fetch.narrow_terms import (
    CHANNEL_OPERATORS,
    CHANNELS_OPERATORS,
    DM_OPERATORS,
    DM_TERM_OPERATORS,
    GROUP_DM_OPERATORS,
    MAX_MESSAGE_ID,
    Term,
    bad_narrow,
)
from storage.model import recipients
from storage.model.channel import Channel, get_channel_by_name
from storage.model.realm import get_realm
from storage.model.user import User
from storage.org.users import get_user_by_api_email, get_user_by_id
from storage.text.search_highlight import fts_query, search_terms

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

_MUTED_TOPIC = (
    "EXISTS (SELECT 1 FROM user_topics AS ut WHERE ut.user_id = ? AND ut.channel_id = m.channel_id"
    " AND ut.topic_key = m.topic_key AND ut.visibility_policy = 1)"
)
# Zulip's exclude_stream_and_topic_mutes: a muted topic, or a topic of a channel the user muted
# unless they unmuted or follow that topic. Three parameters, the user's id each time.
MUTED_SQL = (
    f"(m.channel_id IS NOT NULL AND ({_MUTED_TOPIC} OR (EXISTS (SELECT 1 FROM subscriptions AS s"
    " WHERE s.user_id = ? AND s.channel_id = m.channel_id AND s.active AND s.is_muted) AND NOT EXISTS"
    " (SELECT 1 FROM user_topics AS ut WHERE ut.user_id = ? AND ut.channel_id = m.channel_id"
    " AND ut.topic_key = m.topic_key AND ut.visibility_policy IN (2, 3)))))"
)
# Inside a channel narrow only topic muting applies: one may browse a muted channel. One parameter.
MUTED_TOPIC_SQL = f"(m.channel_id IS NOT NULL AND {_MUTED_TOPIC})"
FOLLOWED_SQL = (
    "EXISTS (SELECT 1 FROM user_topics AS ut WHERE ut.user_id = ? AND ut.channel_id = m.channel_id"
    " AND ut.topic_key = m.topic_key AND ut.visibility_policy = 3)"
)
# dm-including / group-pm-with: the conversations (with at least ? members) a user is in.
CONVERSATIONS_WITH_SQL = (
    "m.channel_id IS NULL AND m.recipient_id IN (SELECT r.id FROM direct_message_group_members AS g"
    " JOIN recipients AS r ON r.type = 3 AND r.type_id = g.group_id WHERE g.user_id = ?"
    " AND (SELECT count(*) FROM direct_message_group_members AS n WHERE n.group_id = g.group_id) >= ?)"
)
# A message in the rendered content of which the user is mentioned by name, visibly (not @_silently).
MENTIONS_SQL = "instr(m.rendered_content, '<span class=\"user-mention\" data-user-id=\"' || ? || '\">') > 0"


class Query(msgspec.Struct):
    """A narrow turned into SQL pieces: the driving scan, filters and their parameters."""

    user_id: int
    history: bool = False
    driver: str = "um"  # um | flag | recipient | topic | sender | id | all | ids | fts
    driver_params: list[Any] = msgspec.field(default_factory=list)
    flag_condition: str = ""  # the `is:` operand whose partial index drives the "flag" scan
    filters: list[str] = msgspec.field(default_factory=list)
    params: list[Any] = msgspec.field(default_factory=list)
    search_terms: list[str] = msgspec.field(default_factory=list)
    empty: bool = False  # the narrow can match nothing (e.g. a conversation that never existed)
    dm_only: bool = False
    history_allowed: bool = True  # False with an `is:` term other than is:resolved (Zulip's rule)
    channel_id: int | None = None  # the first positive channel term's: channel muting does not apply inside
    # Filters the driving scan already guarantees, as (index in filters, index of the first parameter
    # in params, parameter count): the channel and topic terms under the topic driver, the search term
    # under the fts driver. They hold only for that scan: select_sql leaves them out while
    # (driver, driver_params) is still `implied_for`, and keeps them for any other (unread, ids).
    implied: list[tuple[int, int, int]] = msgspec.field(default_factory=list)
    implied_for: tuple[str, list[Any]] | None = None

    def add(self, condition: str, params: list[Any], negated: bool = False) -> tuple[int, int, int]:
        """Add a filter; return where it is, as `implied` records it."""
        where = (len(self.filters), len(self.params), len(params))
        self.filters.append(f"NOT ({condition})" if negated else condition)
        self.params.extend(params)
        return where

    def drive(self, driver: str, params: list[Any], *implied: tuple[int, int, int] | None) -> None:
        """Set the driving scan and the filters it makes redundant (None: none)."""
        self.driver, self.driver_params = driver, params
        self.implied = [where for where in implied if where is not None]
        self.implied_for = (driver, params)


def resolve_channel(tx: Tx, operand: Any) -> Channel:
    """A channel by id (integers) or name; digit strings that name no channel are tried as ids.

    Access is not checked: the base query already limits what the term can select.
    """
    by_id = directory(tx).channel  # channels.get_channel_by_id, kept
    channel = get_channel_by_name(tx, operand) if isinstance(operand, str) else by_id(operand)
    if channel is None and isinstance(operand, str) and operand.isdigit() and len(operand) < 19:
        channel = by_id(int(operand))
    if channel is None:
        raise bad_narrow(f"unknown channel {operand}")
    return channel


def resolve_user(tx: Tx, operand: Any) -> User | None:
    if isinstance(operand, int) or (isinstance(operand, str) and operand.isdigit() and len(operand) < 19):
        return get_user_by_id(tx, int(operand))
    return get_user_by_api_email(tx, str(operand), get_realm(tx))


def _user_operand(tx: Tx, operand: Any) -> User:
    user = resolve_user(tx, operand)
    if user is None:
        raise bad_narrow(f"unknown user {operand}")
    return user


def resolve_dm_users(tx: Tx, operand: Any) -> list[int]:
    """The users of a dm operand: a list of ids or comma-separated emails; deactivated ones too."""
    items = operand if isinstance(operand, list) else operand.split(",")
    ids = []
    for item in items:
        user = resolve_user(tx, item.strip() if isinstance(item, str) else item)
        if user is None:
            raise bad_narrow(f"unknown user in {operand}")
        ids.append(user.id)
    return ids


def readable_history(tx: Tx, user: User, channel: Channel) -> bool:
    """Whether the user may read the channel's messages from before they joined."""
    return channel.history_public_to_subscribers and has_content_access(tx, user, channel)


def build_query(tx: Tx, user: User, terms: list[Term]) -> Query:
    """Return the query serving a narrow for this user; raise the API's narrow errors in term order."""
    builder = _Builder(tx, user)
    for term in terms:
        handler = _HANDLERS.get(term.operator)
        if handler is None:
            raise bad_narrow(f"unknown operator {term.operator}")
        handler(builder, term)
    query = builder.finish()
    if not query.history:
        hidden = directory(tx).unreadable_channel_ids(user)  # channels.unreadable_channel_ids, kept
        if hidden and query.channel_id is not None:
            # A positive channel term keeps every row in that one channel: readable, or none is.
            query.empty = query.empty or query.channel_id in hidden
        elif hidden:
            query.add("m.channel_id IS NULL OR m.channel_id NOT IN (SELECT value FROM json_each(?))",
                      [json.dumps(hidden)])  # fmt: skip
    positive = [t for t in terms if not t.negated]
    query.dm_only = bool(positive) and all(
        t.operator in DM_TERM_OPERATORS or (t.operator == "is" and t.operand in ("dm", "private")) for t in positive
    )
    return query


class _Builder:
    """Turns terms into filters, noting what the positive terms offer to drive the scan."""

    def __init__(self, tx: Tx, user: User) -> None:
        self.tx, self.user = tx, user
        self.query = Query(user_id=user.id)
        self.kinds: set[str] = set()
        self.history = False  # the last positive channel/channels term decides (Zulip's rule)
        self.channel_recipient: int | None = None
        self.channel_filter: tuple[int, int, int] | None = None  # the term that gave channel_recipient
        self.topic_key: str | None = None  # the first positive topic term's, casefolded
        self.topic_filter: tuple[int, int, int] | None = None
        self.dm_recipient: int | None = None
        self.dm_filter: tuple[int, int, int] | None = None
        self.sender_id: int | None = None
        self.message_id: int | None = None
        self.flag = ""
        self.search: tuple[int, int, int] | None = None  # the first positive search term's filter

    def conversation_kind(self, kind: str, negated: bool) -> None:
        if negated:
            return
        self.kinds.add(kind)
        if len(self.kinds) == 2:
            raise bad_narrow("No message can be both a channel message and direct message")

    def finish(self) -> Query:
        """Choose history mode and the driving scan: the most selective positive term."""
        query = self.query
        query.history = self.history and query.history_allowed
        # The channel's recipient pins the channel (and channel_id IS NOT NULL), and the topic
        # driver's key the topic: those terms' filters would only read each message's row again.
        if self.message_id is not None:
            query.driver, query.driver_params = "id", [self.message_id]
        elif self.channel_recipient is not None and self.topic_key is not None:
            query.drive("topic", [self.channel_recipient, self.topic_key], self.channel_filter, self.topic_filter)
        elif self.channel_recipient is not None:
            query.drive("recipient", [self.channel_recipient], self.channel_filter)
        elif self.dm_recipient is not None and not query.history:
            query.drive("recipient", [self.dm_recipient], self.dm_filter)
        elif self.sender_id is not None:
            query.driver, query.driver_params = "sender", [self.sender_id]
        elif query.history:
            query.driver = "all"
        elif self.flag:
            query.driver, query.flag_condition = "flag", self.flag
        elif self.search is not None:
            # FTS5 walks its matches in rowid (= message id) order from the anchor: far fewer rows
            # than the user's whole history, and no set of every match built first.
            query.drive("fts", [query.params[self.search[1]]], self.search)
        return query


def _channel(b: _Builder, term: Term) -> None:
    b.conversation_kind("channel", term.negated)
    channel = resolve_channel(b.tx, term.operand)
    # channel_id is NULL for direct messages: the IS NOT NULL keeps the negation true for them.
    where = b.query.add("m.channel_id IS NOT NULL AND m.channel_id = ?", [channel.id], term.negated)
    if not term.negated:
        if b.query.channel_id is None:
            b.query.channel_id = channel.id
        b.history = readable_history(b.tx, b.user, channel)
        recipient_id = directory(b.tx).channel_recipient(channel.id)
        if recipient_id is None:
            b.query.empty = True
        elif b.channel_recipient is None:
            b.channel_recipient, b.channel_filter = recipient_id, where


def _channels(b: _Builder, term: Term) -> None:
    b.conversation_kind("channel", term.negated)
    if term.operand not in ("public", "web-public"):
        raise bad_narrow(f"unknown channels operand {term.operand}")
    column = "NOT c.invite_only" if term.operand == "public" else "c.is_web_public"
    b.query.add(f"m.channel_id IS NOT NULL AND m.channel_id IN (SELECT c.id FROM channels AS c WHERE {column})", [],
                term.negated)  # fmt: skip
    if not term.negated:
        b.history = not b.user.is_guest


def _topic(b: _Builder, term: Term) -> None:
    b.conversation_kind("channel", term.negated)
    key = topic_key(stored_topic(term.operand))
    where = b.query.add("m.channel_id IS NOT NULL AND m.topic_key = ?", [key], term.negated)
    if not term.negated and b.topic_key is None:
        b.topic_key, b.topic_filter = key, where


def _sender(b: _Builder, term: Term) -> None:
    sender = _user_operand(b.tx, term.operand)
    b.query.add("m.sender_id = ?", [sender.id], term.negated)
    if not term.negated and b.sender_id is None:
        b.sender_id = sender.id


def _dm(b: _Builder, term: Term) -> None:
    b.conversation_kind("dm", term.negated)
    others = resolve_dm_users(b.tx, term.operand)
    # An empty list names no conversation (Zulip); a list holding only the user is the self-DM.
    recipient_id = recipients.get_direct_message_group_recipient(b.tx, [b.user.id, *others]) if others else None
    where = b.query.add("m.recipient_id = ?", [-1 if recipient_id is None else recipient_id], term.negated)
    if not term.negated:
        if recipient_id is None:
            b.query.empty = True
        elif b.dm_recipient is None:
            b.dm_recipient, b.dm_filter = recipient_id, where


def _dm_including(b: _Builder, term: Term) -> None:
    b.conversation_kind("dm", term.negated)
    other = _user_operand(b.tx, term.operand)
    if term.operator == "dm-including" and other.id == b.user.id:
        b.query.add("m.channel_id IS NULL", [], term.negated)
        return
    # The user's own rows limit these to conversations with both; group-pm-with: three or more.
    minimum = 1 if term.operator == "dm-including" else 3
    b.query.add(CONVERSATIONS_WITH_SQL, [other.id, minimum], term.negated)


def _is(b: _Builder, term: Term) -> None:
    operand = term.operand
    if operand in ("dm", "private"):
        b.conversation_kind("channel" if term.negated else "dm", False)
    if operand not in IS_OPERANDS:
        raise bad_narrow(f"unknown 'is' operand {operand}")
    if operand != "resolved":
        b.query.history_allowed = False
    if operand in IS_FLAG_CONDITIONS:
        b.query.add(IS_FLAG_CONDITIONS[operand][0], [], term.negated)
        if not term.negated and not b.flag:
            b.flag = operand
    elif operand == "resolved":
        b.query.add("substr(m.topic, 1, 2) = ?", [RESOLVED_PREFIX], term.negated)
    elif operand == "followed":
        b.query.add(FOLLOWED_SQL, [b.user.id], term.negated)
    else:
        b.query.add(MUTED_SQL, [b.user.id] * 3, term.negated)


def _has(b: _Builder, term: Term) -> None:
    if term.operand not in HAS_OPERANDS:
        raise bad_narrow(f"unknown 'has' operand {term.operand}")
    if term.operand == "reaction":
        b.query.add("EXISTS (SELECT 1 FROM reactions AS r WHERE r.message_id = m.id)", [], term.negated)
    else:
        b.query.add(f"m.has_{term.operand}", [], term.negated)


def _in(b: _Builder, term: Term) -> None:
    if term.operand not in ("home", "all"):
        raise bad_narrow(f"unknown 'in' operand {term.operand}")
    if term.operand == "home":  # in:all selects everything, negated or not (as in Zulip)
        b.query.add(MUTED_SQL, [b.user.id] * 3, not term.negated)


def _id(b: _Builder, term: Term) -> None:
    text = str(term.operand)
    if not text.isdigit() or int(text) > MAX_MESSAGE_ID:
        raise bad_narrow("Invalid message ID")
    b.query.add("m.id = ?", [int(text)], term.negated)
    if not term.negated and b.message_id is None:
        b.message_id = int(text)


def _mentions(b: _Builder, term: Term) -> None:
    target = _user_operand(b.tx, term.operand)
    b.query.add(MENTIONS_SQL, [str(target.id)], term.negated)


def _search(b: _Builder, term: Term) -> None:
    words = search_terms(term.operand)
    if not words:  # only quotes: nothing to look for
        b.query.add("0", [], term.negated)
        if not term.negated:
            b.query.empty = True
        return
    where = b.query.add("m.id IN (SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?)", [fts_query(words)],
                        term.negated)  # fmt: skip
    if not term.negated and b.search is None:
        b.search = where
    if not term.negated:
        b.query.search_terms.extend(words)


def _no_filter(b: _Builder, term: Term) -> None:
    """near only moves the client's anchor; with is rewritten beforehand (message_fetch.rewrite_with)."""


_HANDLERS = {
    **dict.fromkeys(CHANNEL_OPERATORS, _channel),
    **dict.fromkeys(CHANNELS_OPERATORS, _channels),
    **dict.fromkeys(DM_OPERATORS, _dm),
    **dict.fromkeys(GROUP_DM_OPERATORS | {"dm-including"}, _dm_including),
    "topic": _topic, "sender": _sender, "is": _is, "has": _has, "in": _in, "id": _id,
    "mentions": _mentions, "search": _search, "near": _no_filter, "with": _no_filter,
}  # fmt: skip
