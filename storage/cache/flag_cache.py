"""A viewer's flags of the messages their pages showed, kept between fetches.

A page of a channel, topic or sender narrow in history mode reads its messages' ids from the
narrow's index and each one's flags from user_messages: one primary-key probe per message, about
two thirds of the page's SQL (bench/README.md: GET /messages against the floor, seventh round).
Once a page was read, its (message id -> flags) pairs are kept per viewer, and the next page over
those messages reads only the index: a message without a kept flag is looked up in one query.

What is kept comes from transactions that had written nothing (Tx.unwritten), so it is committed.
The change journal (storage/cache/journal.py) tells the cache of every statement that writes
user_messages, and the whole cache is emptied; the inserts of a send (Tx.insert_user_messages) are
not told, as they are rows of messages new in that transaction: no flag of theirs was read before.
Another connection's commit empties it too. Bounded by entries, the least recently used viewer first.
"""

from __future__ import annotations

from collections import OrderedDict

from storage.cache.journal import USER_MESSAGES

# Bytes one kept flag is counted as (tracemalloc: 79 a flag for viewers of 50, the dict's slot and
# the message id; flags are small ints); the cache may use an eighth of the encoded-message cache's bound.
ENTRY_BYTES = 100
SHARE = 8


def entries_for(cache_bytes: int | None) -> int:
    """How many flags may be kept beside an encoded-message cache of `cache_bytes` (None: off, 0)."""
    return 0 if cache_bytes is None else cache_bytes // SHARE // ENTRY_BYTES


class FlagCache:
    """Viewer id -> {message id: flags (None: no user_messages row)}, least recently used viewer first."""

    def __init__(self) -> None:
        self.viewers: OrderedDict[int, dict[int, int | None]] = OrderedDict()
        self.size = 0  # entries
        self.limit = 0  # entries; each page sets it
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return self.size

    def of(self, user_id: int) -> dict[int, int | None] | None:
        found = self.viewers.get(user_id)
        if found is not None:
            self.viewers.move_to_end(user_id)
        return found

    def keep(self, user_id: int, flags: dict[int, int | None]) -> None:
        if self.limit <= 0 or not flags:
            return
        kept = self.viewers.get(user_id)
        if kept is None:
            kept = self.viewers[user_id] = {}
        self.viewers.move_to_end(user_id)
        before = len(kept)
        kept.update(flags)
        self.size += len(kept) - before
        while self.size > self.limit and self.viewers:
            _, dropped = self.viewers.popitem(last=False)
            self.size -= len(dropped)

    def clear(self) -> None:
        self.viewers.clear()
        self.size = 0

    def drop(self, kind: str, key: int, added: bool) -> None:
        """The change journal's report of a write (storage/cache/journal.py): any to user_messages empties it."""
        if kind == USER_MESSAGES:
            self.clear()

    def reset(self) -> None:
        self.clear()
