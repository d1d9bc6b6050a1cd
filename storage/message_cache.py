"""Encoded messages, kept between fetches (issue 12 point 3).

A message's JSON does not change from one GET /messages to the next except for the viewer's flags
(and, for search narrows, the highlights). So each message object is encoded once per format
(apply_markdown, client_gravatar, allow_empty_topic_name) without its flags, and a page joins
those bytes with a tail per flag set: `{...,"flags":[...]}`, the same bytes as encoding the whole
object, whose last keys are flags (and match_content, match_subject).

The cache belongs to a connection's directory (storage/directory.py) and its triggers keep it
right: a write to a message or its reactions drops that message's entries; a write to what
messages show of users (storage/directory.py: SENDER_COLUMNS), a channel's name, the realm or
direct-message conversations, or another linkifier version, drops them all, except new rows no
message shows yet (a channel, a recipient, a new conversation's members).
Nothing is kept while a reported write may still be uncommitted. Bounded by bytes (MessageCache).
"""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

# Bytes an entry costs besides its value's length: the bytes object's header, the key int and the ordered
# dict's slot and links (tracemalloc: about 140 for 600-byte values; a little more counts the bound safely).
ENTRY_OVERHEAD = 160

# A format is 3 bits: apply_markdown, client_gravatar, allow_empty_topic_name.
FORMAT_BITS = 3


def shape_of(apply_markdown: bool, client_gravatar: bool, allow_empty_topic_name: bool) -> int:
    return apply_markdown | (client_gravatar << 1) | (allow_empty_topic_name << 2)


_encode = msgspec.json.Encoder().encode


class MessageCache:
    """Per format (`shape`): message id -> the object's JSON without flags and without its closing brace.

    Bounded by bytes in two generations, an LRU approximation that costs nothing on a hit: new
    entries go into `young`; an entry found in `old` moves to `young`; when `young` would pass half
    the limit, `old` is dropped and `young` becomes `old`. So every entry used since the last
    turnover survives the next one, and the two together never hold more than the limit. A strict
    LRU moved each hit to the end of an ordered dict: 42 ns a message, a third of a cached page's
    assembly (with the key each hit needed computed in Python).
    """

    def __init__(self) -> None:
        self.young: list[dict[int, bytes]] = [{} for _ in range(1 << FORMAT_BITS)]
        self.old: list[dict[int, bytes]] = [{} for _ in range(1 << FORMAT_BITS)]
        self.young_size = 0
        self.old_size = 0
        self.limit = 0  # bytes; each page sets it (tornchat/settings.py: message_cache_mib)
        self.linkifier_key: object = None
        self.hits = 0
        self.misses = 0

    @property
    def size(self) -> int:
        return self.young_size + self.old_size

    def __len__(self) -> int:
        return sum(map(len, self.young)) + sum(map(len, self.old))

    def lookup(self, shape: int, message_ids: Iterable[int]) -> list[bytes | None]:
        """The entries of these messages in one format, None where there is none (not counted)."""
        ids = list(message_ids)
        found: list[bytes | None] = list(map(self.young[shape].get, ids))
        if None in found and self.old[shape]:
            for index, message_id in enumerate(ids):
                if found[index] is None:
                    value = self.old[shape].pop(message_id, None)  # self.old: a put may turn it over
                    if value is not None:
                        self.old_size -= len(value) + ENTRY_OVERHEAD
                        self.put(shape, message_id, value)
                        found[index] = value
        return found

    def get(self, shape: int, message_id: int) -> bytes | None:
        return self.lookup(shape, [message_id])[0]

    def put(self, shape: int, message_id: int, value: bytes) -> None:
        cost = len(value) + ENTRY_OVERHEAD
        if cost > self.limit // 2:  # also a limit of 0: the cache is off
            return
        self._pop(shape, message_id)
        if self.young_size + cost > self.limit // 2:  # turnover: what was not used since the last one goes
            self.old, self.old_size = self.young, self.young_size
            self.young, self.young_size = [{} for _ in range(1 << FORMAT_BITS)], 0
        self.young[shape][message_id] = value
        self.young_size += cost

    def drop_message(self, message_id: int) -> None:
        for shape in range(1 << FORMAT_BITS):
            self._pop(shape, message_id)

    def _pop(self, shape: int, message_id: int) -> None:
        value = self.young[shape].pop(message_id, None)
        if value is not None:
            self.young_size -= len(value) + ENTRY_OVERHEAD
        value = self.old[shape].pop(message_id, None)
        if value is not None:
            self.old_size -= len(value) + ENTRY_OVERHEAD

    def clear(self) -> None:
        for generation in (self.young, self.old):
            for entries in generation:
                entries.clear()
        self.young_size = self.old_size = 0


def prefix(obj: object) -> bytes:
    """The object's JSON without its closing brace (the object must not hold flags or highlights)."""
    return _encode(obj)[:-1]


_flag_tails: dict[int | None, bytes] = {}
_closing_tails: dict[int | None, bytes] = {}


def flags_tail(bits: int | None) -> bytes:
    """`,"flags":[...]` for a bit set (None: historical), encoded once per distinct value."""
    found = _flag_tails.get(bits)
    if found is None:
        from storage.message_objects import flag_list  # which builds on the directory, which holds this cache

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
