"""Helpers shared by the scheduled-message and scheduler tests (no tests here; the name keeps it among them)."""

from __future__ import annotations

from typing import Any

from scheduler import deliver_due
from tests.support.helpers import assert_success

IN_AN_HOUR = 3600


def schedule(sender, to: Any, /, **params):
    """POST /scheduled_messages. Defaults: a channel message "later" in topic "plans"; a None value
    leaves the parameter out. Non-string values are JSON-encoded (as the zulip client does)."""
    body = {"type": "stream", "to": to, "content": "later", "topic": "plans", **params}
    return sender.post("/scheduled_messages", {k: v for k, v in body.items() if v is not None})


def schedule_ok(live, sender, to: Any, /, at: float | None = None, **params) -> int:
    """Schedule (by default an hour from the live clock) and return the id, asserting the response
    is exactly {"scheduled_message_id": ...}."""
    at = int(live.clock.now + IN_AN_HOUR if at is None else at)
    body = assert_success(schedule(sender, to, scheduled_delivery_timestamp=at, **params))
    assert set(body) == {"result", "msg", "scheduled_message_id"}, body
    return body["scheduled_message_id"]


def schedule_direct_ok(live, sender, to: Any, /, at: float | None = None, **params) -> int:
    return schedule_ok(live, sender, to, at=at, topic=None, type="direct", **params)


def listed(client) -> list[dict[str, Any]]:
    body = assert_success(client.get("/scheduled_messages"))
    assert set(body) == {"result", "msg", "scheduled_messages"}, body
    return body["scheduled_messages"]


def listed_one(client, scheduled_id: int) -> dict[str, Any]:
    found = [obj for obj in listed(client) if obj["scheduled_message_id"] == scheduled_id]
    assert len(found) == 1, found
    return found[0]


def stored_row(live, scheduled_id: int) -> dict[str, Any] | None:
    row = live.read(lambda tx: tx.one("SELECT * FROM scheduled_messages WHERE id = ?", (scheduled_id,)))
    return None if row is None else dict(row)


def deliver(live, now: float | None = None, limit: int = 1000) -> list[int | None]:
    """Run deliver_due on the server's thread, at the live clock unless told otherwise."""
    at = live.clock.now if now is None else now
    return live.call(lambda: deliver_due(live.server.db, at, limit))


def scheduled_events(live, before: int = 0) -> list[tuple[dict[str, Any], list[int]]]:
    return [(e, ids) for e, ids in live.events()[before:] if e["type"] == "scheduled_messages"]


def message_ids_seen_by(client) -> list[int]:
    """Ids of the messages GET /messages shows this user (the newest 1000)."""
    body = assert_success(client.get("/messages", {"anchor": "newest", "num_before": 1000, "num_after": 0}))
    return [message["id"] for message in body["messages"]]


def notification_bot_messages(live, user_id: int) -> list[dict[str, Any]]:
    """Direct messages from the notification bot that this user received, oldest first."""
    rows = live.read(
        lambda tx: tx.all(
            "SELECT m.* FROM messages AS m JOIN user_messages AS um ON um.message_id = m.id"
            " JOIN users AS u ON u.id = m.sender_id"
            " WHERE um.user_id = ? AND u.delivery_email LIKE 'notification-bot@%' ORDER BY m.id",
            (user_id,),
        )
    )
    return [dict(row) for row in rows]
