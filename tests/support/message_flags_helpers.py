"""Helpers shared by the message flag tests (tests/storage/messages/test_message_flags*.py): flags as
GET /messages shows them, POST /messages/flags, its events, and their organization (World).
The fixture `world` (tests/storage/messages/conftest.py) makes a World."""

from __future__ import annotations

from tests.support.channel_helpers import make_channel
from tests.support.helpers import assert_success


def flags_of(client, message_ids):
    """{id: flags} as GET /messages shows them to the client."""
    messages = assert_success(client.get("/messages", {"message_ids": message_ids}))["messages"]
    return {m["id"]: m["flags"] for m in messages}


def unread_ids(client, narrow=()):
    narrow = [*narrow, {"operator": "is", "operand": "unread"}]
    params = {"anchor": "oldest", "num_before": 0, "num_after": 1000, "narrow": narrow}
    return [m["id"] for m in assert_success(client.get("/messages", params))["messages"]]


def set_flag(client, message_ids, op, flag, **extra):
    return client.post("/messages/flags", {"messages": message_ids, "op": op, "flag": flag, **extra})


def flag_events(live, before):
    return [(e, ids) for e, ids in live.events()[before:] if e["type"] == "update_message_flags"]


def user_message_row(live, user_id, message_id):
    sql = "SELECT flags FROM user_messages WHERE user_id = ? AND message_id = ?"
    return live.read(lambda tx: tx.value(sql, (user_id, message_id)))


class World:
    """The owner and two members, all subscribed to the public channel "general"."""

    def __init__(self, live):
        self.live = live
        self.owner = live.owner
        self.alice = live.make_user(full_name="Alice")
        self.bob = live.make_user(full_name="Bob")
        self.general = make_channel(live, "general", [live.owner.id, self.alice.id, self.bob.id])
