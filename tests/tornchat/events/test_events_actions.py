"""Every kind of action reaches the right queues over GET /events, with api-notes §3b's payloads."""

from __future__ import annotations

import pytest

from tests.support.channel_helpers import make_channel, unsubscribe
from tests.support.events_helpers import events_now, register, send_direct, send_stream
from tests.support.helpers import assert_success

DRAFT = {"type": "", "to": [], "topic": "", "content": "half a thought", "timestamp": 1_700_000_000}


class Listener:
    """One registered client: `take()` returns the events queued since the last call."""

    def __init__(self, client, **params) -> None:
        self.client = client
        self.queue_id = register(client, **params)["queue_id"]
        self.last = -1

    def take(self, event_type: str | None = None) -> list[dict]:
        events = events_now(self.client, self.queue_id, self.last)
        if events:
            self.last = events[-1]["id"]
        return [e for e in events if event_type is None or e["type"] == event_type]


def kinds(events):
    return [(e["type"], e.get("op")) for e in events]


def payload(event):
    return set(event) - {"type", "op", "id"}


@pytest.fixture
def bob(live):
    return live.make_user(full_name="Bob")


# -- drafts, snippets, scheduled messages: the acting user's clients only (spec 6.1) -------------


def test_drafts_sync_to_every_client_of_the_user(live, bob):
    phone, laptop, other = Listener(live.owner), Listener(live.owner), Listener(bob)
    draft_id = assert_success(live.owner.post("/drafts", {"drafts": [DRAFT]}))["ids"][0]
    assert_success(live.owner.patch(f"/drafts/{draft_id}", {"draft": {**DRAFT, "content": "whole"}}))
    assert_success(live.owner.delete(f"/drafts/{draft_id}"))
    for client in (phone, laptop):
        events = client.take()
        assert kinds(events) == [("drafts", "add"), ("drafts", "update"), ("drafts", "remove")]
        assert [payload(e) for e in events] == [{"drafts"}, {"draft"}, {"draft_id"}]
        assert events[1]["draft"]["content"] == "whole" and events[2]["draft_id"] == draft_id
    assert other.take() == []


def test_saved_snippets_and_scheduled_messages(live, bob):
    mine, other = Listener(live.owner), Listener(bob)
    general = make_channel(live, "general", [live.owner.id])
    mine.take()
    snippet_id = assert_success(live.owner.post("/saved_snippets", {"title": "t", "content": "c"}))["saved_snippet_id"]
    assert_success(live.owner.delete(f"/saved_snippets/{snippet_id}"))
    later = {
        "type": "stream",
        "to": general,
        "topic": "t",
        "content": "later",
        "scheduled_delivery_timestamp": int(live.clock.now) + 3600,
    }
    scheduled_id = assert_success(live.owner.post("/scheduled_messages", later))["scheduled_message_id"]
    assert_success(live.owner.delete(f"/scheduled_messages/{scheduled_id}"))
    events = mine.take()
    assert kinds(events) == [
        ("saved_snippets", "add"),
        ("saved_snippets", "remove"),
        ("scheduled_messages", "add"),
        ("scheduled_messages", "remove"),
    ]
    assert [payload(e) for e in events] == [
        {"saved_snippet"},
        {"saved_snippet_id"},
        {"scheduled_messages"},
        {"scheduled_message_id"},
    ]
    assert not {"saved_snippets", "scheduled_messages"} & {e["type"] for e in other.take()}


# -- users and groups: everyone ------------------------------------------------------------------


def test_user_events_reach_everyone(live, bob):
    owner_events, bob_events = Listener(live.owner), Listener(bob)
    created = assert_success(
        live.owner.post("/users", {"email": "new@example.com", "password": "secret-pass", "full_name": "New"})
    )
    assert_success(live.owner.patch(f"/users/{bob.id}", {"full_name": "Robert"}))
    for listener in (owner_events, bob_events):
        events = listener.take("realm_user")
        assert kinds(events) == [("realm_user", "add"), ("realm_user", "update")]
        assert events[0]["person"]["user_id"] == created["user_id"]
        assert events[1]["person"] == {"user_id": bob.id, "full_name": "Robert"}


def test_group_events_reach_everyone(live, bob):
    listener = Listener(bob)
    params = {"name": "team", "description": "the team", "members": [live.owner.id]}
    assert_success(live.owner.post("/user_groups/create", params))
    events = listener.take("user_group")
    assert kinds(events) == [("user_group", "add")]
    assert events[0]["group"]["name"] == "team" and events[0]["group"]["members"] == [live.owner.id]


# -- channels and subscriptions --------------------------------------------------------------------


def test_channel_and_subscription_events(live, bob):
    owner_events, bob_events = Listener(live.owner), Listener(bob)
    channel_id = make_channel(live, "general", [live.owner.id])
    bob_view = bob_events.take()
    assert ("stream", "create") in kinds(bob_view), "a public channel is announced to everyone"
    assert ("subscription", "add") not in kinds(bob_view)
    owner_view = owner_events.take("subscription")
    assert kinds(owner_view) == [("subscription", "add")]
    assert owner_view[0]["subscriptions"][0]["stream_id"] == channel_id
    assert_success(bob.post("/users/me/subscriptions", {"subscriptions": [{"name": "general"}]}))
    peer = owner_events.take("subscription")
    assert [(e["op"], e["stream_ids"], e["user_ids"]) for e in peer] == [("peer_add", [channel_id], [bob.id])]
    assert_success(unsubscribe(bob, ["general"]))
    assert [e["op"] for e in bob_events.take("subscription")] == ["add", "remove"]
    assert [e["op"] for e in owner_events.take("subscription")] == ["peer_remove"]


def test_muting_sends_two_subscription_updates(live):
    """Spec 6.2: is_muted (or in_home_view) changes send one update per property, to the user only."""
    channel_id = make_channel(live, "general", [live.owner.id])
    listener = Listener(live.owner)
    params = {"property": "is_muted", "value": "true"}
    assert_success(live.owner.patch(f"/users/me/subscriptions/{channel_id}", params))
    events = listener.take("subscription")
    assert sorted((e["property"], e["value"]) for e in events) == [("in_home_view", False), ("is_muted", True)]
    assert all(e["op"] == "update" and e["stream_id"] == channel_id for e in events)


# -- messages, reactions, flags --------------------------------------------------------------------


def test_message_reaction_and_flag_events(live, bob):
    make_channel(live, "general", [live.owner.id, bob.id])
    owner_events, bob_events = Listener(live.owner), Listener(bob)
    message_id = send_stream(bob, "general", "hello", "t")
    assert_success(live.owner.post(f"/messages/{message_id}/reactions", {"emoji_name": "smile"}))
    flags = {"messages": [message_id], "op": "add", "flag": "starred"}
    assert_success(live.owner.post("/messages/flags", flags))
    events = owner_events.take()
    assert kinds(events) == [("message", None), ("reaction", "add"), ("update_message_flags", "add")]
    reaction = events[1]
    assert payload(reaction) >= {"message_id", "emoji_name", "emoji_code", "reaction_type", "user_id", "user"}
    assert reaction["user"]["user_id"] == live.owner.id
    assert (events[2]["operation"], events[2]["flag"], events[2]["messages"]) == ("add", "starred", [message_id])
    assert events[2]["all"] is False
    bob_kinds = kinds(bob_events.take())
    assert bob_kinds == [("message", None), ("reaction", "add")], "flags are the owner's own business"


def test_direct_messages_reach_their_participants_only(live, bob):
    carol = live.make_user()
    listeners = {name: Listener(client) for name, client in (("owner", live.owner), ("bob", bob), ("carol", carol))}
    message_id = send_direct(bob, [live.owner.id])
    seen = {name: [e["message"]["id"] for e in listener.take("message")] for name, listener in listeners.items()}
    assert seen == {"owner": [message_id], "bob": [message_id], "carol": []}
