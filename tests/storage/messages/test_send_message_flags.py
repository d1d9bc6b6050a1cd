"""POST /messages: read_by_sender and the mention flags of each receiver."""

from __future__ import annotations

import pytest

from storage.model import flags
from tests.support.helpers import assert_error, assert_success
from tests.support.send_helpers import (
    message_events,
    send,
    send_direct_ok,
    send_ok,
    stored_bits,
    stored_flags,
)

# -- read_by_sender --------------------------------------------------------------------------------


def test_api_clients_leave_the_message_unread_for_the_sender(live, team):
    alice, *_ = team
    message_id = send_ok(alice, "general")
    assert stored_flags(live, message_id)[alice.id] == []


@pytest.mark.parametrize(
    "client", ["website", "ZulipMobile", "zulipterminal", "ZulipElectron", "ios", "Zulip desktop app"]
)
def test_interactive_clients_mark_it_read(live, team, client):
    alice, bob, *_ = team
    message_id = send_ok(alice, "general", client=client)
    assert stored_flags(live, message_id)[alice.id] == ["read"]
    assert stored_flags(live, message_id)[bob.id] == []


def test_interactive_user_agent_marks_it_read(live, team):
    alice, *_ = team
    body = {"type": "stream", "to": "general", "topic": "t", "content": "x"}
    response = alice.post("/messages", body, headers={"User-Agent": "ZulipAndroid/1.0 (Android 14)"})
    assert stored_flags(live, assert_success(response)["id"])[alice.id] == ["read"]


def test_explicit_read_by_sender(live, team):
    alice, bob, *_ = team
    assert stored_flags(live, send_ok(alice, "general", read_by_sender=True))[alice.id] == ["read"]
    assert stored_flags(live, send_ok(alice, "general", read_by_sender=False, client="website"))[alice.id] == []
    assert stored_flags(live, send_ok(alice, "general", read_by_sender=True))[bob.id] == []


def test_read_by_sender_must_be_a_boolean(live, team):
    alice, *_ = team
    assert_error(send(alice, "general", read_by_sender="yes"), "read_by_sender is not valid JSON")
    assert_error(send(alice, "general", read_by_sender="1"), "read_by_sender is not a boolean")


def test_message_to_oneself_stays_unread_by_default(live, team):
    alice, bob, *_ = team
    assert stored_flags(live, send_direct_ok(alice, [alice.id], client="website"))[alice.id] == []
    assert stored_flags(live, send_direct_ok(alice, [alice.id], read_by_sender=True))[alice.id] == ["read"]
    assert stored_flags(live, send_direct_ok(alice, [bob.id], client="website"))[alice.id] == ["read"]


# -- mentions ------------------------------------------------------------------------------------------


def test_user_mention(live, team):
    alice, bob, carol, _ = team
    message_id = send_ok(alice, "general", "hi @**Bob** and @**Carol**")
    got = stored_flags(live, message_id)
    assert got[bob.id] == ["mentioned"]
    assert got[live.owner.id] == [] and got[alice.id] == []
    # Carol is mentioned but not subscribed: she gets no row.
    assert carol.id not in got


def test_silent_mention_sets_no_flag(live, team):
    alice, bob, *_ = team
    assert stored_flags(live, send_ok(alice, "general", "hi @_**Bob**"))[bob.id] == []


def test_stream_wildcard_mentions_every_subscriber(live, team):
    alice, bob, carol, _ = team
    message_id = send_ok(carol, "general", "hey @**all**")
    got = stored_flags(live, message_id)
    assert sorted(got) == [live.owner.id, alice.id, bob.id, carol.id]
    for user_id in got:
        assert got[user_id] == ["stream_wildcard_mentioned", "wildcard_mentioned"]


@pytest.mark.parametrize("word", ["everyone", "channel", "stream"])
def test_other_stream_wildcards(live, team, word):
    alice, bob, *_ = team
    assert "stream_wildcard_mentioned" in stored_flags(live, send_ok(alice, "general", f"@**{word}**"))[bob.id]


def test_topic_wildcard_mentions_topic_participants(live, team):
    alice, bob, carol, _ = team
    earlier = send_ok(bob, "general", "first", topic="Plans")
    send_ok(alice, "general", "elsewhere", topic="other")
    # Reacting makes one a participant too.
    live.write(
        lambda tx: tx.execute(
            "INSERT INTO reactions (message_id, user_id, emoji_name, emoji_code, reaction_type)"
            " VALUES (?, ?, 'smile', '1f604', 'unicode_emoji')",
            (earlier, live.owner.id),
        )
    )
    message_id = send_ok(carol, "general", "ping @**topic**", topic="plans")
    got = stored_flags(live, message_id)
    participants = ["topic_wildcard_mentioned", "wildcard_mentioned"]
    assert got[bob.id] == participants  # sent in the topic (spelled differently)
    assert got[live.owner.id] == participants  # reacted in the topic
    assert got[carol.id] == participants  # the sender
    assert got[alice.id] == []  # posted in another topic only


def test_group_mention(live, team):
    alice, bob, carol, _ = team
    created = live.owner.post(
        "/user_groups/create", {"name": "support", "description": "", "members": [bob.id, carol.id]}
    )
    assert_success(created)
    message_id = send_ok(alice, "general", "@*support* help")
    got = stored_flags(live, message_id)
    assert got[bob.id] == ["mentioned", "group_mentioned"]
    assert got[alice.id] == [] and got[live.owner.id] == []
    assert carol.id not in got
    assert stored_flags(live, send_ok(alice, "general", "@_*support* fyi"))[bob.id] == []


def test_mentions_in_code_do_not_count(live, team):
    alice, bob, *_ = team
    assert stored_flags(live, send_ok(alice, "general", "`@**Bob**` and `@**all**`"))[bob.id] == []


def test_direct_message_flags_hide_is_private(live, team):
    alice, bob, *_ = team
    message_id = send_direct_ok(alice, [bob.id], "hi @**Bob**")
    bits = stored_bits(live, message_id)
    assert bits[alice.id] & flags.IS_PRIVATE and bits[bob.id] & flags.IS_PRIVATE
    assert stored_flags(live, message_id) == {alice.id: [], bob.id: ["mentioned"]}
    for event, _ in message_events(live, message_id):
        assert "is_private" not in event["flags"]
