"""The API message object (spec 2.6, api-notes 4.5), built for a page of messages at once.

Objects are msgspec Structs (MessageObject), encoded as they are by GET /messages and the
encoded-message cache; events and single-message answers take them as dicts (as_dict).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import msgspec
from msgspec import UNSET, UnsetType

from storage.cache.directory import Directory, directory
from storage.channels.topics import display_topic
from storage.db.tx import Tx
from storage.model.flags import flag_list
from storage.text import linkify

# Reactions of the message, oldest first: [[user_id, emoji_name, emoji_code, reaction_type], ...] or NULL.
REACTIONS_SQL = (
    "(SELECT json_group_array(json_array(r.user_id, r.emoji_name, r.emoji_code, r.reaction_type))"
    " FROM reactions AS r INDEXED BY reactions_by_message WHERE r.message_id = m.id HAVING count(*) > 0)"
)
# Submessages (widget data) of the message, oldest first (Zulip orders them by id):
# [[id, sender_id, msg_type, content], ...] or NULL. Most messages have none: one probe of the index.
SUBMESSAGES_SQL = (
    "(SELECT json_group_array(json_array(s.id, s.sender_id, s.msg_type, s.content))"
    " FROM submessages AS s INDEXED BY submessages_by_message WHERE s.message_id = m.id HAVING count(*) > 0)"
)
_FIELDS = (
    "m.sender_id, m.recipient_id, m.channel_id, m.topic, m.content, m.rendered_content, m.date_sent, m.client,"
    f" m.is_me_message, m.last_edit_timestamp, m.last_moved_timestamp, m.edit_history, {REACTIONS_SQL} AS reactions,"
    f" {SUBMESSAGES_SQL} AS submessages"
)
# A message row without flags (`FROM messages AS m`), for message_objects' mapping rows.
MESSAGE_COLUMNS = f"m.id, {_FIELDS}"
# A MessageRow, as a page's query selects it (`um`: the viewer's row, NULL if historical).
ROW_COLUMNS = f"m.id, um.flags, {_FIELDS}"
# The same row for apply_markdown=true, which shows rendered_content only: the Markdown source is not read.
HTML_ROW_COLUMNS = ROW_COLUMNS.replace("m.content,", "NULL AS content,", 1)
_ROW_NAMES = (
    "id", "flags", "sender_id", "recipient_id", "channel_id", "topic", "content", "rendered_content", "date_sent",
    "client", "is_me_message", "last_edit_timestamp", "last_moved_timestamp", "edit_history", "reactions",
    "submessages",
)  # fmt: skip
# The row message_tuple_objects builds from, ROW_COLUMNS in _ROW_NAMES' order: flags None if historical,
# channel_id None for a direct message, content None with HTML_ROW_COLUMNS, edit_history, reactions and
# submessages JSON or None. A NamedTuple would name the fields, but making one from SQLite's tuple costs
# about 0.2 µs a row.
MessageRow = tuple[
    int, int | None, int, int, int | None, str, str | None, str, int, str, int, int | None, int | None, str | None,
    str | None, str | None,
]  # fmt: skip
RENDERED = _ROW_NAMES.index("rendered_content")
TOPIC = _ROW_NAMES.index("topic")
CHANNEL_ID = _ROW_NAMES.index("channel_id")


class Formats(msgspec.Struct, frozen=True):
    """The request parameters that change a message object."""

    apply_markdown: bool = True
    client_gravatar: bool = True
    allow_empty_topic_name: bool = False


class MessageObject(msgspec.Struct):
    """A message as the API shows it, its keys in Zulip's order; UNSET fields are left out.

    `flags` is UNSET in events and the encoded-message cache (which adds the viewer's flags);
    match_content and match_subject are set for search narrows only.
    """

    id: int
    sender_id: int
    content: str
    content_type: str
    recipient_id: int
    timestamp: int
    client: str
    subject: str
    topic_links: list[dict[str, str]]
    is_me_message: bool
    reactions: list[dict[str, Any]]
    submessages: list[Any]
    sender_full_name: str
    sender_email: str
    sender_realm_str: str
    display_recipient: str | list[dict[str, Any]]
    type: str
    avatar_url: str | None
    stream_id: int | UnsetType = UNSET
    last_edit_timestamp: int | UnsetType = UNSET
    last_moved_timestamp: int | UnsetType = UNSET
    edit_history: list[dict[str, Any]] | UnsetType = UNSET
    flags: list[str] | UnsetType = UNSET
    match_content: str | UnsetType = UNSET
    match_subject: str | UnsetType = UNSET


def as_dict(message: MessageObject) -> dict[str, Any]:
    """The object as a dict of its set fields (in order), with its own copies of the lists inside."""
    return msgspec.to_builtins(message)  # type: ignore[no-any-return]


def message_tuple_objects(tx: Tx, rows: Sequence[MessageRow], formats: Formats) -> list[MessageObject]:
    """Return API objects (with flags) for message rows, from the in-memory directory."""
    if not rows:
        return []
    known = directory(tx)
    known.load_members([row[3] for row in rows if row[4] is None])
    page = _Page(known, linkify.current(tx), formats)
    return [build_object(page, row, True) for row in rows]


def unflagged_objects(
    known: Directory, linkifiers: linkify.LinkifierSet, rows: Sequence[tuple[Any, ...]], formats: Formats
) -> list[MessageObject]:
    """Return API objects without flags for rows of MESSAGE_COLUMNS (events, the encoded-message cache)."""
    known.load_members([row[2] for row in rows if row[3] is None])
    page = _Page(known, linkifiers, formats)
    return [build_object(page, (row[0], None, *row[1:]), False) for row in rows]


_NOTHING: list[Any] = []  # shared by objects with no submessages, reactions or topic links (encoded, never changed)


class _Page:
    """What the objects of one page share: the directory, formats, and the maps they look up."""

    def __init__(self, known: Directory, linkifiers: linkify.LinkifierSet, formats: Formats) -> None:
        self.known = known
        self.markdown = formats.apply_markdown
        self.client_gravatar = formats.client_gravatar
        self.allow_empty_topic_name = formats.allow_empty_topic_name
        self.allow_history = known.allow_edit_history()
        self.senders = known.senders  # a dict hit for most; known.sender() computes (and may keep) the rest
        self.channel_names = known.channel_name_map()
        self.topic_links = linkify.topic_links_of(linkifiers)


def build_object(page: _Page, row: MessageRow, with_flags: bool) -> MessageObject:
    (message_id, bits, sender_id, recipient_id, channel_id, topic, content, rendered, date_sent, client, me,
     edited, moved, history, reactions, submessages) = row  # fmt: skip
    sender = page.senders.get(sender_id) or page.known.sender(sender_id)
    markdown = page.markdown
    in_channel = channel_id is not None
    # Positional (in field order): a Struct takes them about three times faster than keywords.
    return MessageObject(
        message_id,
        sender_id,
        rendered if markdown else content,
        "text/html" if markdown else "text/x-markdown",
        recipient_id,
        date_sent,
        client,
        display_topic(topic, page.allow_empty_topic_name) if in_channel else "",  # subject
        page.topic_links[topic] if in_channel else _NOTHING,
        bool(me),
        _reactions(page.known, reactions) if reactions is not None else _NOTHING,
        _submessages(message_id, submessages) if submessages is not None else _NOTHING,
        sender.full_name,
        sender.email,
        "",  # sender_realm_str
        page.channel_names.get(channel_id, "") if in_channel else _participants(page.known, recipient_id),
        "stream" if in_channel else "private",
        # A null avatar_url asks the client to compute the gravatar from sender_email, which is the real
        # address only when everyone may see it (Zulip forces client_gravatar off otherwise).
        None if page.client_gravatar and sender.gravatar_null else sender.avatar_url,
        channel_id if in_channel else UNSET,  # stream_id
        UNSET if edited is None else edited,
        UNSET if moved is None else moved,
        _edit_history(history, page.allow_empty_topic_name) if history is not None and page.allow_history else UNSET,
        flag_list(bits) if with_flags else UNSET,
    )


def _reactions(known: Directory, packed: str) -> list[dict[str, Any]]:
    """Reactions as the API shows them; `user` is the deprecated copy of the reactor older clients read."""
    found = []
    for user_id, emoji_name, emoji_code, reaction_type in msgspec.json.decode(packed):
        reactor = known.sender(user_id)
        found.append(
            {
                "emoji_name": emoji_name,
                "emoji_code": emoji_code,
                "reaction_type": reaction_type,
                "user_id": user_id,
                "user": {"user_id": user_id, "email": reactor.email, "full_name": reactor.full_name},
            }
        )
    return found


def _submessages(message_id: int, packed: str) -> list[dict[str, Any]]:
    """Submessages as Zulip lists them in message objects (oldest first)."""
    return [
        {"id": found_id, "message_id": message_id, "sender_id": sender_id, "msg_type": msg_type, "content": content}
        for found_id, sender_id, msg_type, content in msgspec.json.decode(packed)
    ]


def _participants(known: Directory, recipient_id: int) -> list[dict[str, Any]]:
    """Every participant of the conversation (the viewer included)."""
    found = []
    for user_id in known.members(recipient_id):
        member = known.sender(user_id)
        found.append({"id": user_id, "email": member.email, "full_name": member.full_name, "is_mirror_dummy": False})
    return found


def _edit_history(stored: str, allow_empty_topic_name: bool) -> list[dict[str, Any]]:
    history = json.loads(stored)
    for entry in history:
        for key in ("prev_topic", "topic"):
            if key in entry:
                entry[key] = display_topic(entry[key], allow_empty_topic_name)
    return list(history)


def message_objects(
    tx: Tx,
    rows: Sequence[Any],
    *,
    apply_markdown: bool = True,
    client_gravatar: bool = True,
    allow_empty_topic_name: bool = False,
) -> list[dict[str, Any]]:
    """Return API objects with their flags for mapping rows of MESSAGE_COLUMNS plus `flags` (None: historical).

    Who views them does not change the objects: only their flags, which the rows carry.
    """
    tuples = [tuple(row[name] for name in _ROW_NAMES) for row in rows]
    objects = message_tuple_objects(tx, tuples, Formats(apply_markdown, client_gravatar, allow_empty_topic_name))
    return [as_dict(obj) for obj in objects]


def event_message_object(tx: Tx, message_id: int) -> dict[str, Any]:
    """Return the message object carried by message events (HTML content, avatar URLs, no flags)."""
    row = tx.one(f"SELECT {MESSAGE_COLUMNS} FROM messages AS m WHERE m.id = ?", (message_id,))
    assert row is not None
    formats = Formats(apply_markdown=True, client_gravatar=False, allow_empty_topic_name=True)
    return as_dict(unflagged_objects(directory(tx), linkify.current(tx), [tuple(row)], formats)[0])
