"""A page of GET /messages as JSON bytes from the encoded-message cache (storage/cache/message_cache.py).

The page's query selects only what changes per viewer or request: id and flags (encoded_page). A
search narrow's selects whole rows (encoded_search_page): the highlights read rendered_content, the
scan reads each message row anyway, and messages not cached yet are built from those rows. Other
messages missing from the cache are read in one more query, built as storage/fetch/message_objects.py
builds them, encoded and kept. The bytes equal those of encoding the objects message_objects returns
(tests/storage/cache/test_message_cache.py compares them).
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import itemgetter

import msgspec

from storage.cache.directory import Directory, directory
from storage.cache.message_cache import closing_tail, flags_tail, highlights, join, prefix, shape_of
from storage.channels.topics import display_topic
from storage.db.tx import Tx
from storage.fetch.message_objects import (
    CHANNEL_ID,
    MESSAGE_COLUMNS,
    RENDERED,
    TOPIC,
    Formats,
    MessageRow,
    unflagged_objects,
)
from storage.fetch.narrow_select import FlagRow
from storage.text import linkify
from storage.text.search_highlight import highlight_content, highlight_topic

_first, _second = itemgetter(0), itemgetter(1)  # a row's message id and flags
# The messages a page lacks in the cache, by id (a JSON array): one query, reactions and submessages with them.
MISSING_SQL = f"SELECT {MESSAGE_COLUMNS} FROM messages AS m WHERE m.id IN (SELECT value FROM json_each(?))"


def encoded_page(tx: Tx, rows: Sequence[FlagRow], formats: Formats, limit: int) -> msgspec.Raw:
    """The `messages` array of a page of (id, flags) rows, oldest first; `limit`: the cache's bound in bytes."""
    if not rows:
        return join([])
    return _join_closed(rows, _prefixes(tx, list(map(_first, rows)), formats, limit))


def encoded_search_page(
    tx: Tx, rows: Sequence[MessageRow], formats: Formats, search_terms: list[str], limit: int
) -> msgspec.Raw:
    """The `messages` array of a search narrow's page of whole rows, oldest first, with their highlights."""
    if not rows:
        return join([])
    prefixes = _prefixes(tx, [row[0] for row in rows], formats, limit, rows)
    parts = []
    for row, found in zip(rows, prefixes, strict=True):
        subject = display_topic(row[TOPIC], formats.allow_empty_topic_name) if row[CHANNEL_ID] is not None else ""
        marks = highlights(highlight_content(row[RENDERED], search_terms), highlight_topic(subject, search_terms))
        parts.append(found + flags_tail(row[1]) + marks + b"}")
    return join(parts)


def _prefixes(
    tx: Tx, message_ids: list[int], formats: Formats, limit: int, rows: Sequence[MessageRow] | None = None
) -> list[bytes]:
    """Each message's cached bytes (message_cache.prefix); those missing are built (from `rows`, whole
    rows of these messages, where given; else read) and kept."""
    known = directory(tx)
    cache = known.messages
    cache.limit = limit
    shape = shape_of(formats.apply_markdown, formats.client_gravatar, formats.allow_empty_topic_name)
    prefixes = cache.lookup(shape, message_ids)
    missing: list[int] = []
    if None in prefixes:
        missing = [message_id for message_id, found in zip(message_ids, prefixes, strict=True) if found is None]
    cache.hits += len(message_ids) - len(missing)
    cache.misses += len(missing)
    if missing:
        keep = not known.journal.pending  # nothing read while a reported write may be uncommitted
        linkifiers = linkify.current(tx)  # what building the missing ones needs (topic links)
        if rows is not None:  # whole rows: build the missing messages from them
            wanted = set(missing)
            unflagged = [(row[0], *row[2:]) for row in rows if row[0] in wanted]
            fresh = {obj.id: prefix(obj) for obj in unflagged_objects(known, linkifiers, unflagged, formats)}
        else:
            fresh = dict(_encode_missing(tx, known, linkifiers, missing, formats))
        if keep:
            for message_id, encoded in fresh.items():
                cache.put(shape, message_id, encoded)
        prefixes = [
            fresh[message_id] if found is None else found
            for message_id, found in zip(message_ids, prefixes, strict=True)
        ]
    return prefixes  # type: ignore[return-value]


def _join_closed(rows: Sequence[FlagRow], prefixes: list[bytes]) -> msgspec.Raw:
    """join() of each prefix with its closing flags tail and a comma, in one copy of the bytes."""
    flag_sets = list(map(_second, rows))
    pieces: list[bytes] = [b""] * (2 * len(prefixes))
    pieces[0::2] = prefixes
    pieces[1::2] = map(_comma_tails.__getitem__, flag_sets)
    pieces[-1] = closing_tail(flag_sets[-1])  # the last object has no comma after it
    pieces[0] = b"[" + pieces[0]
    pieces.append(b"]")
    return msgspec.Raw(b"".join(pieces))


class _CommaTails(dict[int | None, bytes]):
    """Flag bits -> closing_tail(bits) and the comma before the next object, made on first use."""

    def __missing__(self, bits: int | None) -> bytes:
        found = self[bits] = closing_tail(bits) + b","
        return found


_comma_tails = _CommaTails()


def _encode_missing(
    tx: Tx, known: Directory, linkifiers: linkify.LinkifierSet, message_ids: list[int], formats: Formats
) -> list[tuple[int, bytes]]:
    rows = tx.tuples(MISSING_SQL, (msgspec.json.encode(message_ids).decode(),))
    return [(obj.id, prefix(obj)) for obj in unflagged_objects(known, linkifiers, rows, formats)]
