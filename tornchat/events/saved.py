"""The saved-queues file (event_queues.json): the queues written at shutdown, read at the next start.

Clients then resume polling their queues after a restart instead of registering again.
"""

from __future__ import annotations

import gc
import logging
import os
from collections.abc import Iterable
from typing import Any

import msgspec

from tornchat.events.body import prepared
from tornchat.events.queue import SAVED_OPTIONS, EventQueue

log = logging.getLogger("tornchat.events")

# Version of the saved-queues file; a list (the first version) holds every event whole.
SAVED_FORMAT = 2


def write_saved(path: str, queues: Iterable[EventQueue]) -> None:
    """Write these queues but the overflowed ones to `path` (atomically), for `read_saved` at the next start.

    Each event body is written once however many queues hold it; a queue lists its events'
    ids and the indexes of their bodies (flat lists of integers: quick to write and to read).
    """
    bodies: list[msgspec.Raw] = []  # each body's JSON, as encoded when it was queued
    index_of: dict[int, int] = {}  # id(body) -> its index in bodies; bodies are alive meanwhile
    saved = []
    for queue in queues:
        if queue.overflowed:
            continue
        indexes = []
        for _, body, _ in queue.entries:
            index = index_of.get(id(body))
            if index is None:
                index = index_of[id(body)] = len(bodies)
                bodies.append(msgspec.Raw(body.json))
            indexes.append(index)
        event_ids = [event_id for event_id, _, _ in queue.entries]
        saved.append({**queue.snapshot(), "event_ids": event_ids, "event_bodies": indexes})
    temporary = path + ".tmp"
    with open(temporary, "wb") as handle:
        handle.write(msgspec.json.encode({"format": SAVED_FORMAT, "bodies": bodies, "queues": saved}))
    os.replace(temporary, path)


def read_saved(path: str) -> list[EventQueue]:
    """The queues saved in `path` (an existing file, removed once read); none if it is damaged."""
    # The cyclic garbage collector is off meanwhile: the file makes one container per event and
    # no cycles, and the collector's passes over the growing heap took 5/6 of the time.
    collecting = gc.isenabled()
    gc.disable()
    try:
        with open(path, "rb") as handle:
            queues = parse_saved(handle.read())
    except (OSError, ValueError, KeyError, TypeError, IndexError) as error:
        # A damaged file must not stop the server: clients simply register again.
        log.warning("Ignoring unreadable saved event queues %s: %s", path, error)
        queues = []
    finally:
        if collecting:
            gc.enable()
    os.remove(path)
    return queues


def parse_saved(data: bytes) -> list[EventQueue]:
    """The queues of a saved-queues file; raise ValueError, KeyError, TypeError or IndexError if damaged."""
    saved = msgspec.json.decode(data)
    if isinstance(saved, list):
        saved = _upgrade(saved)
    if saved["format"] != SAVED_FORMAT:
        raise ValueError(f"unknown format {saved['format']!r}")
    bodies, sizes = [], []
    for body in saved["bodies"]:
        if not isinstance(body, dict):
            raise TypeError(f"an event body is a {type(body).__name__}")
        body, size = prepared(body)
        bodies.append(body)
        sizes.append(size)
    queues = []
    for item in saved["queues"]:
        queue = _restore(item)
        ids, indexes = item["event_ids"], item["event_bodies"]
        queue.entries.extend((event_id, bodies[i], sizes[i]) for event_id, i in zip(ids, indexes, strict=True))
        queue.size = sum(sizes[index] for index in indexes)
        queues.append(queue)
    return queues


def _upgrade(queues: list[dict[str, Any]]) -> dict[str, Any]:
    """Turn the first format (a list of queues, each with its events whole) into the current one."""
    bodies: list[dict[str, Any]] = []
    for item in queues:
        events = item.pop("events")
        item["event_ids"] = [event.pop("id") for event in events]
        item["event_bodies"] = list(range(len(bodies), len(bodies) + len(events)))
        bodies.extend(events)
    return {"format": SAVED_FORMAT, "bodies": bodies, "queues": queues}


def _restore(item: dict[str, Any]) -> EventQueue:
    """A queue with the saved options and counters of `item`, without its events."""
    options = {name: item[name] for name in SAVED_OPTIONS if name in item}
    types = item["event_types"]
    queue = EventQueue(item["id"], item["user_id"], item["last_access"],
                       event_types=None if types is None else set(types), **options)  # fmt: skip
    queue.next_id, queue.newest_pruned_id = item["next_id"], item.get("newest_pruned_id")
    return queue
