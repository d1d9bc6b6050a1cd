"""Helpers shared by the channel and subscription tests."""

from __future__ import annotations

from storage.channels import channels
from storage.org import groups
from tests.support.helpers import assert_success

INSUFFICIENT = "Insufficient permission"
ROLES = ("owner", "admin", "moderator", "member", "guest")


def user_for(live, role):
    return live.owner if role == "owner" else live.make_user(role=role)


def make_channel(live, name, subscribers=(), creator=None, **params):
    """Create a channel through POST /channels/create (as the owner by default); return its id."""
    creator = creator or live.owner
    body = assert_success(creator.post("/channels/create", {"name": name, "subscribers": list(subscribers), **params}))
    return body["id"]


def subscribe(client, names, **params):
    entries = [name if isinstance(name, dict) else {"name": name} for name in names]
    return client.post("/users/me/subscriptions", {"subscriptions": entries, **params})


def unsubscribe(client, names, **params):
    return client.delete("/users/me/subscriptions", {"subscriptions": list(names), **params})


def my_subscriptions(client, **params):
    return assert_success(client.get("/users/me/subscriptions", params))["subscriptions"]


def subscribed_names(client):
    return [sub["name"] for sub in my_subscriptions(client)]


def subscriber_ids(live, channel_id):
    return live.read(channels.subscriber_ids, channel_id)


def set_realm_group(live, setting, group_name):
    live.write(lambda tx: tx.execute(f"UPDATE realm SET {setting} = ?", (groups.system_group_id(tx, group_name),)))


def set_channel_group(live, channel_id, setting, group_name):
    def update(tx):
        tx.execute(
            f"UPDATE channels SET {setting} = ? WHERE id = ?", (groups.system_group_id(tx, group_name), channel_id)
        )

    live.write(update)


def archive(live, channel_id):
    live.write(lambda tx: tx.execute("UPDATE channels SET is_archived = 1 WHERE id = ?", (channel_id,)))


def events_after(live, before, event_type=None):
    return [(e, ids) for e, ids in live.events()[before:] if event_type is None or e["type"] == event_type]
