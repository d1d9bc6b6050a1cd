"""Values POST /register reads of every channel, group and subscription, kept between registrations.

Counting subscribers reads every active subscription (20,000 rows for 1,000 users in 20 channels
each); the groups, their members and the channels' recipients are read whole too. Each value is kept
per connection under a name until any write to the tables it comes from: the change journal
(storage/cache/journal.py) reports those writes as the kind "register", and nothing is kept while one
is pending. Message statistics change with every message: they are read each time, not kept.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from storage.cache.journal import ChangeJournal, journal
from storage.db.tx import Tx

R = TypeVar("R")
KIND = "register"


class Kept:
    """One connection's kept values by name."""

    def __init__(self, changes: ChangeJournal) -> None:
        self.values: dict[str, Any] = {}
        changes.subscribe(self)

    def drop(self, kind: str, key: int, added: bool) -> None:
        if kind == KIND:
            self.values.clear()

    def reset(self) -> None:
        self.values.clear()


def kept(tx: Tx, name: str, read: Callable[[Tx], R]) -> R:
    """read(tx), kept per connection until a write to what the journal watches for it (shared: do not change it)."""
    changes = journal(tx)
    found = changes.reader(Kept)
    if name in found.values:
        return found.values[name]  # type: ignore[no-any-return]
    value = read(tx)
    if not changes.writing(KIND):
        found.values[name] = value
    return value
