"""Who gets which events, and in which form: event_types, narrows, message formatting, privacy."""

from __future__ import annotations

import json

import pytest

from storage.org import users
from tests.support.channel_helpers import make_channel
from tests.support.events_helpers import events_now, of_type, register, send_direct, send_stream
from tests.support.helpers import assert_error, assert_success, set_visibility


def messages_in(client, queue_id):
    return [e["message"] for e in of_type(events_now(client, queue_id), "message")]


def message_event(client, queue_id, message_id):
    found = [e for e in of_type(events_now(client, queue_id), "message") if e["message"]["id"] == message_id]
    assert len(found) == 1, found
    return found[0]


# -- event_types --------------------------------------------------------------------------------


def test_event_types_filter_what_is_queued(live):
    only_messages = register(live.owner, event_types=["message"])["queue_id"]
    everything = register(live.owner)["queue_id"]
    assert_success(live.owner.post("/saved_snippets", {"title": "t", "content": "c"}))
    message_id = send_direct(live.owner, [live.owner.id])
    assert [(e["type"], e["message"]["id"]) for e in events_now(live.owner, only_messages)] == [("message", message_id)]
    assert {e["type"] for e in events_now(live.owner, everything)} == {"saved_snippets", "message"}


def test_empty_event_types_get_only_heartbeats(live):
    queue_id = register(live.owner, event_types=[])["queue_id"]
    send_direct(live.owner, [live.owner.id])
    assert events_now(live.owner, queue_id) == []


# -- narrows ------------------------------------------------------------------------------------


@pytest.fixture
def chatter(live):
    """Two channels and a second user; returns (alice, ids of what is sent by send_all)."""
    alice = live.make_user(full_name="Alice", email="alice@example.com")
    set_visibility(live, alice.id, users.EVERYONE)
    make_channel(live, "general", [live.owner.id, alice.id])
    make_channel(live, "random", [live.owner.id, alice.id])
    return alice


def send_all(live, alice):
    return {
        "general/lunch": send_stream(alice, "general", "food", "Lunch"),
        "general/empty": send_stream(alice, "general", "nothing", ""),
        "random/lunch": send_stream(alice, "random", "more food", "lunch"),
        "dm": send_direct(alice, [live.owner.id]),
        "mention": send_stream(alice, "general", "@**Owner** hi", "other"),
        "mine": send_stream(live.owner, "general", "me", "lunch", read_by_sender=True),
    }


@pytest.mark.parametrize(
    ("narrow", "expected"),
    [
        ([["stream", "general"]], ["general/lunch", "general/empty", "mention", "mine"]),
        ([["channel", "GENERAL"]], ["general/lunch", "general/empty", "mention", "mine"]),
        ([["stream", "general"], ["topic", "lunch"]], ["general/lunch", "mine"]),
        ([["topic", "general chat"]], ["general/empty"]),
        ([["sender", "alice@example.com"], ["topic", "LUNCH"]], ["general/lunch", "random/lunch"]),
        ([["is", "dm"]], ["dm"]),
        ([["is", "private"]], ["dm"]),
        ([["dm", "alice@example.com"]], ["dm"]),
        ([["is", "mentioned"]], ["mention"]),
        ([["is", "unread"], ["stream", "general"]], ["general/lunch", "general/empty", "mention"]),
        ([["is", "starred"]], []),
        ([], ["general/lunch", "general/empty", "random/lunch", "dm", "mention", "mine"]),
    ],
)
def test_narrowed_queues_get_matching_messages_only(live, chatter, narrow, expected):
    queue_id = register(live.owner, narrow=narrow)["queue_id"]
    sent = send_all(live, chatter)
    assert [m["id"] for m in messages_in(live.owner, queue_id)] == [sent[name] for name in expected]


def test_sender_narrow_by_id_and_dm_narrow_by_ids(live, chatter):
    by_id = register(live.owner, narrow=[["sender", str(chatter.id)]])["queue_id"]
    dm_ids = register(live.owner, narrow=[["dm", str(chatter.id)]])["queue_id"]
    group = register(live.owner, narrow=[["dm", f"{chatter.id},{live.owner.id}"]])["queue_id"]
    sent = send_all(live, chatter)
    assert len(messages_in(live.owner, by_id)) == 5
    assert [m["id"] for m in messages_in(live.owner, dm_ids)] == [sent["dm"]]
    assert [m["id"] for m in messages_in(live.owner, group)] == [sent["dm"]]


def test_a_narrow_only_filters_messages(live):
    queue_id = register(live.owner, narrow=[["stream", "general"]])["queue_id"]
    assert_success(live.owner.post("/saved_snippets", {"title": "t", "content": "c"}))
    assert [e["type"] for e in events_now(live.owner, queue_id)] == ["saved_snippets"]


# -- the message as each queue asked for it -----------------------------------------------------


def test_apply_markdown_true_gives_html(live):
    queue_id = register(live.owner, apply_markdown=True)["queue_id"]
    message = message_event(live.owner, queue_id, send_direct(live.owner, [live.owner.id], "**bold**"))["message"]
    assert message["content"] == "<p><strong>bold</strong></p>"
    assert message["content_type"] == "text/html"


def test_apply_markdown_false_gives_the_raw_content(live):
    queue_id = register(live.owner, apply_markdown=False)["queue_id"]
    html = register(live.owner, apply_markdown=True)["queue_id"]
    message_id = send_direct(live.owner, [live.owner.id], "**bold**")
    message = message_event(live.owner, queue_id, message_id)["message"]
    assert (message["content"], message["content_type"]) == ("**bold**", "text/x-markdown")
    assert message_event(live.owner, html, message_id)["message"]["content"] == "<p><strong>bold</strong></p>"


def test_client_gravatar_false_always_gives_an_avatar_url(gravatar_live):
    live = gravatar_live
    queue_id = register(live.owner, client_gravatar=False)["queue_id"]
    message = message_event(live.owner, queue_id, send_direct(live.owner, [live.owner.id]))["message"]
    assert message["avatar_url"].startswith("https://secure.gravatar.com/avatar/")


def test_without_gravatar_client_gravatar_gets_the_served_avatar(live):
    """Gravatar off (the default): nothing for the client to compute, whatever it asked."""
    alice = live.make_user()
    set_visibility(live, alice.id, users.EVERYONE)
    queue_id = register(live.owner, client_gravatar=True)["queue_id"]
    message = message_event(live.owner, queue_id, send_direct(alice, [live.owner.id]))["message"]
    assert message["avatar_url"] == f"/user_avatars/default/{alice.id}.png?v=1"


def test_client_gravatar_leaves_the_gravatar_to_the_client(gravatar_live):
    live = gravatar_live
    alice = live.make_user()
    set_visibility(live, alice.id, users.EVERYONE)
    queue_id = register(live.owner, client_gravatar=True)["queue_id"]
    message = message_event(live.owner, queue_id, send_direct(alice, [live.owner.id]))["message"]
    assert message["avatar_url"] is None


def test_client_gravatar_keeps_the_url_of_a_hidden_email(gravatar_live):
    """A client cannot compute the gravatar of an email it may not see: it gets the URL."""
    live = gravatar_live
    alice, bob = live.make_user(), live.make_user()
    set_visibility(live, alice.id, users.ADMINS)
    queue_id = register(bob, client_gravatar=True)["queue_id"]
    message = message_event(bob, queue_id, send_direct(alice, [bob.id]))["message"]
    assert message["avatar_url"].startswith("https://secure.gravatar.com/avatar/")


@pytest.mark.parametrize(("capabilities", "subject"), [(None, "general chat"), ({"empty_topic_name": True}, "")])
def test_empty_topic_name_capability(live, capabilities, subject):
    make_channel(live, "general", [live.owner.id])
    params = {} if capabilities is None else {"client_capabilities": capabilities}
    queue_id = register(live.owner, **params)["queue_id"]
    message = message_event(live.owner, queue_id, send_stream(live.owner, "general", "x", ""))["message"]
    assert message["subject"] == subject


def test_local_message_id_reaches_the_sending_queue_only(live):
    sending, other = register(live.owner)["queue_id"], register(live.owner)["queue_id"]
    params = {"queue_id": sending, "local_id": "12.01"}
    message_id = send_direct(live.owner, [live.owner.id], "local echo", **params)
    assert message_event(live.owner, sending, message_id)["local_message_id"] == "12.01"
    assert "local_message_id" not in message_event(live.owner, other, message_id)


def test_message_event_shape_and_flags(live):
    alice = live.make_user(full_name="Alice")
    make_channel(live, "general", [live.owner.id, alice.id])
    owner_queue, alice_queue = register(live.owner)["queue_id"], register(alice)["queue_id"]
    message_id = send_stream(alice, "general", "@**Owner** hi", "t", read_by_sender=True)
    event = message_event(live.owner, owner_queue, message_id)
    assert set(event) == {"type", "message", "flags", "id"}
    assert event["flags"] == ["mentioned"]
    assert message_event(alice, alice_queue, message_id)["flags"] == ["read"]
    assert not [k for k in event["message"] if k.startswith("_")], "private keys never reach clients"


# -- all_public_streams -------------------------------------------------------------------------


def test_all_public_streams_never_sees_private_channels_or_others_dms(live):
    alice, bob, carol = live.make_user(), live.make_user(), live.make_user()
    make_channel(live, "secret", [alice.id, bob.id], invite_only=True)
    queue_id = register(carol, all_public_streams=True)["queue_id"]
    send_stream(alice, "secret", "psst")
    send_direct(alice, [bob.id])
    assert messages_in(carol, queue_id) == []


def test_all_public_streams_sees_public_channels_without_subscribing(live):
    alice, carol = live.make_user(), live.make_user()
    make_channel(live, "open", [alice.id])
    listening, plain = register(carol, all_public_streams=True)["queue_id"], register(carol)["queue_id"]
    message_id = send_stream(alice, "open", "hello all")
    event = message_event(carol, listening, message_id)
    assert event["flags"] == []
    assert messages_in(carol, plain) == []


def test_all_public_streams_keeps_a_subscribers_own_flags(live):
    alice, carol, dave = live.make_user(), live.make_user(full_name="Carol"), live.make_user()
    make_channel(live, "open", [alice.id, carol.id, dave.id])
    listening = register(carol, all_public_streams=True)["queue_id"]
    sender_queue = register(alice, all_public_streams=True)["queue_id"]
    message_id = send_stream(alice, "open", "@**Carol** look", read_by_sender=True)
    assert message_event(carol, listening, message_id)["flags"] == ["mentioned"]
    assert message_event(alice, sender_queue, message_id)["flags"] == ["read"]


def test_guests_cannot_poll_all_public_streams_either(live):
    guest = live.make_user(role="guest")
    response = guest.get("/events", {"dont_block": True, "all_public_streams": True})
    assert_error(response, "User not authorized for this query")


# -- several clients, private channels ----------------------------------------------------------


def test_every_client_of_a_user_gets_the_event(live):
    alice = live.make_user()
    queues = [register(live.owner)["queue_id"] for _ in range(3)]
    message_id = send_direct(alice, [live.owner.id])
    for queue_id in queues:
        assert [m["id"] for m in messages_in(live.owner, queue_id)] == [message_id]


def test_a_private_channels_events_never_reach_non_members(live):
    alice, bob, outsider = live.make_user(), live.make_user(), live.make_user()
    outsider_queue = register(outsider, all_public_streams=True)["queue_id"]
    bob_queue = register(bob)["queue_id"]
    channel_id = make_channel(live, "secret", [alice.id], creator=alice, invite_only=True)
    assert_success(
        alice.post("/users/me/subscriptions", {"subscriptions": [{"name": "secret"}], "principals": [bob.id]})
    )
    message_id = send_stream(alice, "secret", "classified", "plans")
    assert_success(alice.post(f"/messages/{message_id}/reactions", {"emoji_name": "smile"}))
    assert_success(alice.patch(f"/streams/{channel_id}", {"description": "still secret"}))
    leaked = [
        e
        for e in events_now(outsider, outsider_queue)
        if "secret" in json.dumps(e) or channel_id in e.get("stream_ids", [])
    ]
    assert leaked == []
    seen = {(e["type"], e.get("op")) for e in events_now(bob, bob_queue)}
    assert {("subscription", "add"), ("message", None), ("reaction", "add")} <= seen
