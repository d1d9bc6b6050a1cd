"""An event body as queues hold it: its JSON encoded once, and what holding it costs a queue.

Queues share the bodies of the events they hold (tornchat/events/forms.py builds them), and so
does the saved-queues file; a body is never changed once queued. A poll's answer is assembled from
the bodies' encoded JSON.
"""

from __future__ import annotations

from typing import Any

import msgspec

# What holding one event costs a queue besides its body, which queues share: the queue's entry
# (event id, body reference, size) in its deque. Measured with tracemalloc: about 135 bytes.
EVENT_OVERHEAD = 128

_encode = msgspec.json.Encoder().encode


def event_size(body: dict[str, Any]) -> int:
    """The bytes a queue is charged for an event: its JSON (what the client downloads) plus EVENT_OVERHEAD."""
    return len(_encode(body)) + EVENT_OVERHEAD


class Body(dict[str, Any]):
    """An event as queues hold it (without its id) and its JSON, encoded once for every poll that answers it."""

    __slots__ = ("json",)
    json: bytes


def prepared(body: dict[str, Any], encoded: bytes | None = None) -> tuple[Body, int]:
    """The body as a Body (itself if it is one) and its size; `encoded` is its JSON when already known."""
    if isinstance(body, Body):
        return body, len(body.json) + EVENT_OVERHEAD
    result = Body(body)
    result.json = _encode(result) if encoded is None else encoded
    return result, len(result.json) + EVENT_OVERHEAD


def entry_json(event_id: int, body: Body) -> bytes:
    """The JSON of `{**body, "id": event_id}` (a queued event as a poll answers it), from the body's JSON."""
    if "id" in body or not body:  # the id would replace a key in place, or there is no key to follow
        return _encode({**body, "id": event_id})
    return b'%s,"id":%d}' % (body.json[:-1], event_id)
