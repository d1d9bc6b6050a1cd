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
Nothing is kept while a reported write may still be uncommitted. An LRU bounded by bytes.
"""

from __future__ import annotations

from collections import OrderedDict

import msgspec

# Bytes an entry costs besides its value's length: the bytes object's header, the key int and the ordered
# dict's slot and links (tracemalloc: about 140 for 600-byte values; a little more counts the bound safely).
ENTRY_OVERHEAD = 160

# A key is one int (not a tuple, which the garbage collector would track): the message id and 3 bits
# of format (apply_markdown, client_gravatar, allow_empty_topic_name).
Key = int
FORMAT_BITS = 3


def key(message_id: int, shape: int) -> Key:
    return (message_id << FORMAT_BITS) | shape


def shape_of(apply_markdown: bool, client_gravatar: bool, allow_empty_topic_name: bool) -> int:
    return apply_markdown | (client_gravatar << 1) | (allow_empty_topic_name << 2)


_encode = msgspec.json.Encoder().encode


class MessageCache:
    """Message id and format -> the object's JSON without flags and without its closing brace."""

    def __init__(self) -> None:
        self.entries: OrderedDict[Key, bytes] = OrderedDict()
        self.size = 0
        self.limit = 0  # bytes; each page sets it (tornchat/settings.py: message_cache_mib)
        self.linkifier_key: object = None
        self.hits = 0
        self.misses = 0

    def get(self, found_key: Key) -> bytes | None:
        found = self.entries.get(found_key)
        if found is None:
            self.misses += 1
        else:
            self.hits += 1
            self.entries.move_to_end(found_key)
        return found

    def put(self, new_key: Key, value: bytes) -> None:
        if self.limit <= 0:
            return
        old = self.entries.pop(new_key, None)
        if old is not None:
            self.size -= len(old) + ENTRY_OVERHEAD
        self.entries[new_key] = value
        self.size += len(value) + ENTRY_OVERHEAD
        while self.size > self.limit and self.entries:
            _, dropped = self.entries.popitem(last=False)
            self.size -= len(dropped) + ENTRY_OVERHEAD

    def drop_message(self, message_id: int) -> None:
        for shape in range(1 << FORMAT_BITS):
            value = self.entries.pop(key(message_id, shape), None)
            if value is not None:
                self.size -= len(value) + ENTRY_OVERHEAD

    def clear(self) -> None:
        self.entries.clear()
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
