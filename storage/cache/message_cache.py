"""Encoded messages, kept between fetches.

A message's JSON does not change from one GET /messages to the next except for the viewer's flags
(and, for search narrows, the highlights). So each message object is encoded once per format
(apply_markdown, client_gravatar, allow_empty_topic_name) without its flags, and a page joins
those bytes with a tail per flag set: `{...,"flags":[...]}`, the same bytes as encoding the whole
object, whose last keys are flags (and match_content, match_subject).

One cache per connection, held by its directory and told of writes by the change journal
(storage/cache/journal.py): a write to a message, its reactions or its submessages (widget data)
drops that message's entries; a write to what messages show of users (journal.py: SENDER_COLUMNS), a
channel's name, the realm, direct-message conversations or the linkifiers drops them all, except new
rows no message shows yet (a channel, a recipient, a new conversation's members). Nothing is kept
while a reported write may still be uncommitted (storage/fetch/message_encoded.py asks the journal).
Bounded by bytes.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Iterable

import msgspec

from storage.model.flags import flag_list

# Bytes an entry costs besides its value's length: the bytes object's header, the key int and the ordered
# dict's slot and links (tracemalloc: about 140 for 600-byte values; a little more counts the bound safely).
ENTRY_OVERHEAD = 160

# The journal's kinds whose writes change what any message object shows (besides "messages", one message).
SHOWN_KINDS = frozenset({"senders", "channel_names", "realm", "recipients", "groups", "linkifiers"})

# A format is 3 bits: apply_markdown, client_gravatar, allow_empty_topic_name.
FORMAT_BITS = 3


def shape_of(apply_markdown: bool, client_gravatar: bool, allow_empty_topic_name: bool) -> int:
    return apply_markdown | (client_gravatar << 1) | (allow_empty_topic_name << 2)


_encode = msgspec.json.Encoder().encode


class MessageCache:
    """Per format (`shape`): message id -> the object's JSON without flags and without its closing brace.

    An LRU bounded by bytes: one ordered dict per format, keyed by message id (a key the page has at
    hand, where one dict for all formats needed a key computed per row: 55 ns a message, a third of
    a cached page's assembly). Past the bound, the least recently used entries of the format that
    holds the most bytes go first.
    """

    def __init__(self) -> None:
        self.entries: list[OrderedDict[int, bytes]] = [OrderedDict() for _ in range(1 << FORMAT_BITS)]
        self.sizes = [0] * (1 << FORMAT_BITS)
        self.size = 0
        self.limit = 0  # bytes; each page sets it (tornchat/settings.py: message_cache_mib)
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return sum(map(len, self.entries))

    def lookup(self, shape: int, message_ids: Iterable[int]) -> list[bytes | None]:
        """The entries of these messages in one format, None where there is none (not counted);
        each one found becomes the most recently used."""
        ids = list(message_ids)
        entries = self.entries[shape]
        found: list[bytes | None] = list(map(entries.get, ids))
        if None not in found:
            deque(map(entries.move_to_end, ids), maxlen=0)
            return found
        for message_id, value in zip(ids, found, strict=True):
            if value is not None:
                entries.move_to_end(message_id)
        return found

    def put(self, shape: int, message_id: int, value: bytes) -> None:
        if self.limit <= 0:
            return
        self._discard(shape, message_id)
        cost = len(value) + ENTRY_OVERHEAD
        self.entries[shape][message_id] = value
        self.sizes[shape] += cost
        self.size += cost
        while self.size > self.limit:
            largest = max(range(len(self.sizes)), key=self.sizes.__getitem__)
            _, dropped = self.entries[largest].popitem(last=False)
            self.sizes[largest] -= len(dropped) + ENTRY_OVERHEAD
            self.size -= len(dropped) + ENTRY_OVERHEAD

    def drop(self, kind: str, key: int, added: bool) -> None:
        """The change journal's report of a write (storage/cache/journal.py)."""
        if kind == "messages":
            self.drop_message(key)
        elif kind in SHOWN_KINDS and not added:
            self.clear()

    def reset(self) -> None:
        self.clear()

    def drop_message(self, message_id: int) -> None:
        for shape in range(1 << FORMAT_BITS):
            self._discard(shape, message_id)

    def _discard(self, shape: int, message_id: int) -> None:
        value = self.entries[shape].pop(message_id, None)
        if value is not None:
            self.sizes[shape] -= len(value) + ENTRY_OVERHEAD
            self.size -= len(value) + ENTRY_OVERHEAD

    def clear(self) -> None:
        for entries in self.entries:
            entries.clear()
        self.sizes = [0] * (1 << FORMAT_BITS)
        self.size = 0


def prefix(obj: object) -> bytes:
    """The object's JSON without its closing brace (the object must not hold flags or highlights)."""
    return _encode(obj)[:-1]


_flag_tails: dict[int | None, bytes] = {}
_closing_tails: dict[int | None, bytes] = {}


def flags_tail(bits: int | None) -> bytes:
    """`,"flags":[...]` for a bit set (None: historical), encoded once per distinct value."""
    found = _flag_tails.get(bits)
    if found is None:
        found = _flag_tails[bits] = b',"flags":' + _encode(flag_list(bits))
    return found


def closing_tail(bits: int | None) -> bytes:
    """`,"flags":[...]}`: the end of a message object with these flags (and no highlights)."""
    found = _closing_tails.get(bits)
    if found is None:
        found = _closing_tails[bits] = flags_tail(bits) + b"}"
    return found


def join(parts: list[bytes]) -> msgspec.Raw:
    """The `messages` array of a page from its encoded messages."""
    return msgspec.Raw(b"[" + b",".join(parts) + b"]")


def highlights(match_content: str, match_subject: str) -> bytes:
    return b',"match_content":' + _encode(match_content) + b',"match_subject":' + _encode(match_subject)
