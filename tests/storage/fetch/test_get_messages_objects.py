"""GET /messages: the message object (spec 2.6, api-notes 4.5) and its display options."""

from __future__ import annotations

import json

from storage.model import flags
from tests.support.channel_helpers import make_channel
from tests.support.get_messages_helpers import (
    add_reaction_row,
    fetch,
    ids_of,
    message_by_id,
    post,
    post_direct,
    set_flag,
)
from tests.support.helpers import set_visibility
from tests.support.send_helpers import send_direct_ok, send_ok

ADMINS = 3


def recipient_of(live, message_id):
    return live.read(lambda tx: tx.value("SELECT recipient_id FROM messages WHERE id = ?", (message_id,)))


def test_channel_message_object(people):
    live = people
    message_id = send_ok(live.owner, "general", "Hello **world**", "greetings", client="ZulipMobile")
    message = message_by_id(live.alice, message_id)
    assert message == {
        "id": message_id,
        "sender_id": live.owner.id,
        "content": "<p>Hello <strong>world</strong></p>",
        "content_type": "text/html",
        "recipient_id": recipient_of(live, message_id),
        "timestamp": int(live.clock.now),
        "client": "ZulipMobile",
        "subject": "greetings",
        "topic_links": [],
        "is_me_message": False,
        "reactions": [],
        "submessages": [],
        "sender_full_name": "Owner",
        "sender_email": "owner@example.com",
        "sender_realm_str": "",
        "display_recipient": "general",
        "type": "stream",
        "stream_id": live.channel_id,
        "avatar_url": f"/user_avatars/default/{live.owner.id}.png?v=1",  # served here: Gravatar is off
        "flags": [],
    }
    assert message_by_id(live.owner, message_id)["flags"] == ["read"]  # sent from a mobile client


def test_direct_message_objects_list_every_participant(people):
    live = people
    owner, alice, bob = live.owner, live.alice, live.bob

    def participant(client, name):
        return {"id": client.id, "email": client.email, "full_name": name, "is_mirror_dummy": False}

    one = send_direct_ok(owner, [alice.id], "hi")
    reply = send_direct_ok(alice, [owner.id], "hi back")
    group = send_direct_ok(bob, [alice.id, owner.id], "all of us")
    own = send_direct_ok(owner, [owner.id], "to myself")
    for viewer in (owner, alice):
        messages = {m["id"]: m for m in fetch(viewer, message_ids=[one, reply, group, own])["messages"]}
        for message_id in (one, reply):
            message = messages[message_id]
            assert message["display_recipient"] == [participant(owner, "Owner"), participant(alice, "Alice")]
            assert (message["type"], message["subject"]) == ("private", "")
            assert "stream_id" not in message
        # One conversation, one recipient_id, whoever sent and whoever looks.
        assert messages[one]["recipient_id"] == messages[reply]["recipient_id"]
        assert messages[group]["display_recipient"] == [
            participant(owner, "Owner"), participant(alice, "Alice"), participant(bob, "Bob"),
        ]  # fmt: skip
    assert fetch(alice, message_ids=[own])["messages"] == []
    [self_message] = fetch(owner, message_ids=[own])["messages"]
    assert self_message["display_recipient"] == [participant(owner, "Owner")]


def test_apply_markdown_false_gives_the_markdown(people):
    live = people
    message_id = post(live, live.owner, "general", "greetings", "Some **bold** and `code`")
    message = message_by_id(live.alice, message_id, apply_markdown=False)
    assert (message["content"], message["content_type"]) == ("Some **bold** and `code`", "text/x-markdown")
    message = message_by_id(live.alice, message_id, apply_markdown=True)
    assert message["content_type"] == "text/html" and "<strong>bold</strong>" in message["content"]


def test_avatar_url_is_null_only_for_a_gravatar_the_client_can_compute(gravatar_live):
    live = gravatar_live
    live.alice, live.bob = live.make_user(), live.make_user()
    make_channel(live, "general", [live.owner.id, live.alice.id, live.bob.id])
    message_id = post(live, live.alice, "general", "greetings", "hi")
    gravatar = message_by_id(live.bob, message_id, client_gravatar=False)["avatar_url"]
    assert gravatar.startswith("https://secure.gravatar.com/avatar/")
    assert message_by_id(live.bob, message_id)["avatar_url"] is None
    assert message_by_id(live.bob, message_id, client_gravatar=True)["avatar_url"] is None
    # A hidden address: sender_email is the dummy one, so the client cannot compute the gravatar,
    # not even an administrator who may see the real address.
    set_visibility(live, live.alice.id, ADMINS)
    for viewer in (live.bob, live.owner):
        message = message_by_id(viewer, message_id, client_gravatar=True)
        assert message["avatar_url"] == gravatar
        assert message["sender_email"] == f"user{live.alice.id}@zulip.testserver"


def test_empty_topic_and_edit_history(people):
    live = people
    message_id = post(live, live.owner, "general", "", "in general chat")
    message = message_by_id(live.alice, message_id)
    assert message["subject"] == "general chat"
    assert not {"edit_history", "last_edit_timestamp", "last_moved_timestamp"} & set(message)
    assert message_by_id(live.alice, message_id, allow_empty_topic_name=True)["subject"] == ""
    history = [
        {"user_id": live.owner.id, "timestamp": 1_800_000_200, "prev_topic": "old", "topic": ""},
        {
            "user_id": live.owner.id,
            "timestamp": 1_800_000_100,
            "prev_content": "x",
            "prev_rendered_content": "<p>x</p>",
        },
    ]
    live.write(lambda tx: tx.execute(
        "UPDATE messages SET edit_history = ?, last_edit_timestamp = ?, last_moved_timestamp = ? WHERE id = ?",
        (json.dumps(history), 1_800_000_100, 1_800_000_200, message_id),
    ))  # fmt: skip
    message = message_by_id(live.alice, message_id)
    assert message["last_edit_timestamp"] == 1_800_000_100 and message["last_moved_timestamp"] == 1_800_000_200
    assert message["edit_history"][0] == {**history[0], "topic": "general chat"}
    assert message["edit_history"][1] == history[1]
    message = message_by_id(live.alice, message_id, allow_empty_topic_name=True)
    assert message["edit_history"] == history
    # Search highlights use the same name.
    [found] = fetch(live.alice, anchor="newest", num_before=1, num_after=0, narrow=[["search", "general"]])["messages"]
    assert found["match_subject"] == '<span class="highlight">general</span> chat'


def test_reactions_oldest_first(people):
    live = people
    message_id = post(live, live.owner, "general", "greetings", "react to me")
    add_reaction_row(live, message_id, live.bob.id, "tada", "1f389")
    add_reaction_row(live, message_id, live.alice.id, "octopus", "1f419")
    add_reaction_row(live, message_id, live.bob.id, "zulip", "zulip", "zulip_extra_emoji")
    reactions = message_by_id(live.owner, message_id)["reactions"]
    assert [(r["user_id"], r["emoji_name"], r["emoji_code"], r["reaction_type"]) for r in reactions] == [
        (live.bob.id, "tada", "1f389", "unicode_emoji"),
        (live.alice.id, "octopus", "1f419", "unicode_emoji"),
        (live.bob.id, "zulip", "zulip", "zulip_extra_emoji"),
    ]
    assert reactions[1]["user"] == {"user_id": live.alice.id, "email": "alice@example.com", "full_name": "Alice"}


def test_flags(people):
    live = people
    mention = post(live, live.owner, "general", "greetings", "hi @**Alice**")
    wildcard = post(live, live.owner, "general", "greetings", "hi @**all**")
    plain = post(live, live.owner, "general", "greetings", "hi")
    set_flag(live, live.alice.id, plain, flags.STARRED | flags.READ | flags.COLLAPSED | flags.HAS_ALERT_WORD)
    dm = post_direct(live, live.owner, [live.alice.id], "hi")
    messages = {m["id"]: m["flags"] for m in fetch(live.alice, message_ids=[mention, wildcard, plain, dm])["messages"]}
    assert messages == {
        mention: ["mentioned"],
        wildcard: ["stream_wildcard_mentioned", "wildcard_mentioned"],
        plain: ["read", "starred", "collapsed", "has_alert_word"],
        dm: [],  # is_private is internal
    }


def test_me_messages(people):
    live = people
    me = post(live, live.owner, "general", "greetings", "/me waves")
    not_me = post(live, live.owner, "general", "greetings", "waves /me")
    messages = fetch(live.alice, message_ids=[me, not_me])["messages"]
    assert [m["is_me_message"] for m in messages] == [True, False]


def statements_during(live, action):
    """The SQL statements the server runs while `action` (an HTTP request) is served."""
    executed: list[str] = []
    live.call(lambda: live.server.db.conn.set_trace_callback(executed.append))
    try:
        action()
    finally:
        live.call(lambda: live.server.db.conn.set_trace_callback(None))
    return executed


def test_a_page_costs_the_same_queries_however_many_conversations_it_holds(people):
    live = people
    others = [live.make_user(full_name=f"Person {n}") for n in range(6)]
    for n, other in enumerate(others):
        post_direct(live, live.owner, [other.id], f"one to one {n}")
        post_direct(live, live.owner, [other.id, others[n - 1].id], f"group {n}")
        post(live, other if n % 2 else live.owner, "general", f"topic {n}", "channel message")
    add_reaction_row(live, 1, live.alice.id, "tada", "1f389")

    def page(size):
        return lambda: fetch(live.owner, anchor="newest", num_before=size, num_after=0)

    page(1)()  # warm up: the first request of a user may touch its last-active time
    small, large = statements_during(live, page(2)), statements_during(live, page(18))
    assert len(large) == len(small), "\n".join(large)
    assert len(ids_of(fetch(live.owner, anchor="newest", num_before=18, num_after=0))) == 18
