"""Message reports: POST /messages/{message_id}/report, the realm's moderation_request_channel_id
(PATCH /realm, POST /register, events) and the report the notification bot posts."""

from __future__ import annotations

import pytest

from storage.messages.message_reports import MAX_SNIPPET_LENGTH, TRUNCATED, global_time
from tests.support.channel_helpers import make_channel
from tests.support.events_helpers import register
from tests.support.helpers import assert_error, assert_success, events_since
from tests.support.send_helpers import count_rows, send_direct_ok, send_ok, stored


@pytest.fixture
def moderated(people):
    """people, with a private #moderators (owner only) set as the moderation request channel."""
    people.moderators = make_channel(people, "moderators", [people.owner.id], invite_only=True)
    assert_success(people.owner.patch("/realm", {"moderation_request_channel_id": people.moderators}))
    return people


def report(client, message_id, report_type="spam", **params):
    return client.post(f"/messages/{message_id}/report", {"report_type": report_type, **params})


def last_report(live):
    row = live.read(lambda tx: tx.one("SELECT id FROM messages ORDER BY id DESC LIMIT 1"))
    return stored(live, row["id"])


def mention(client, name):
    return f"@_**{name}|{client.id}**"


def test_channel_message_report(moderated):
    live, alice, bob = moderated, moderated.alice, moderated.bob
    message_id = send_ok(bob, "general", "buy cheap stuff", topic="deals")
    sent = stored(live, message_id)["date_sent"]
    assert_success(report(alice, message_id, "spam", description="Not the first time."))
    row = last_report(live)
    assert (row["channel_id"], row["topic"]) == (live.moderators, "Bob moderation")
    assert row["content"] == (
        f"{mention(alice, 'Alice')} reported a message sent by {mention(bob, 'Bob')} at {global_time(sent)}.\n"
        "```quote\n**Spam**. Not the first time.\n```\n\n"
        f"``` spoiler Original message at #**general>deals@{message_id}**\nbuy cheap stuff\n```\n"
    )
    sender = live.read(lambda tx: tx.one("SELECT full_name, is_bot FROM users WHERE id = ?", (row["sender_id"],)))
    assert (sender["full_name"], sender["is_bot"]) == ("Notification Bot", 1)
    assert global_time(0) == "<time:1970-01-01T00:00:00+00:00>"


def test_direct_message_reports_name_the_conversation(moderated):
    live, alice, bob = moderated, moderated.alice, moderated.bob
    carol = live.make_user(full_name="Carol")
    one_to_one = send_direct_ok(bob, [alice.id], "rude words")
    assert_success(report(alice, one_to_one, "harassment"))
    content = last_report(live)["content"]
    assert content.startswith(f"{mention(alice, 'Alice')} reported a direct message sent by {mention(bob, 'Bob')} at")
    assert "**Harassment**. \n" in content
    slug = ",".join(str(i) for i in sorted([alice.id, bob.id]))
    assert f"``` spoiler [Original message](http://127.0.0.1:9991/#narrow/dm/{slug}/near/{one_to_one})\n" in content
    # Reporting one's own direct message names whom it went to.
    assert_success(report(bob, one_to_one, "norms"))
    assert f"sent by {mention(bob, 'Bob')} to {mention(alice, 'Alice')} at" in last_report(live)["content"]
    group = send_direct_ok(bob, [alice.id, carol.id], "group message")
    assert_success(report(alice, group, "inappropriate"))
    content = last_report(live)["content"]
    assert f"sent by {mention(bob, 'Bob')} to {mention(alice, 'Alice')} and {mention(carol, 'Carol')} at" in content
    assert "-group/near/" in content and "**Inappropriate content**" in content


def test_fence_and_truncation(moderated):
    live, alice, bob = moderated, moderated.alice, moderated.bob
    fenced = send_ok(bob, "general", "````\ncode\n````")
    assert_success(report(alice, fenced, "other", description="Weird."))
    content = last_report(live)["content"]
    assert "\n````` spoiler " in content and content.endswith("\n`````\n")
    long_id = send_ok(bob, "general", "x" * 10000)
    assert_success(report(alice, long_id))
    content = last_report(live)["content"]
    assert ("x" * (MAX_SNIPPET_LENGTH - len(TRUNCATED)) + TRUNCATED + "\n```\n") in content
    assert "x" * (MAX_SNIPPET_LENGTH - len(TRUNCATED) + 1) not in content


def test_topic_policy_and_long_names(moderated):
    live, alice = moderated, moderated.alice
    long_name = live.make_user(full_name="N" * 70)
    make_channel(live, "talk", [alice.id, long_name.id])
    message_id = send_ok(long_name, "talk", "hello")
    assert_success(report(alice, message_id))
    assert last_report(live)["topic"] == "N" * 57 + "..."
    live.write(lambda tx: tx.execute("UPDATE channels SET topics_policy = 'empty_topic_only' WHERE id = ?",
                                     (live.moderators,)))  # fmt: skip
    assert_success(report(alice, message_id))
    assert last_report(live)["topic"] == ""


def test_setting_the_channel(people):
    live = people
    assert register(live.alice, fetch_event_types=["realm"])["realm_moderation_request_channel_id"] == -1
    assert_error(report(live.alice, send_ok(live.bob, "general", "hi")),
                 "Message reporting is not enabled in this organization.")  # fmt: skip
    private = make_channel(live, "mods", [live.owner.id], invite_only=True)
    public = live.channel_id
    count = len(live.events())
    assert_error(live.owner.patch("/realm", {"moderation_request_channel_id": public}),
                 "Moderation request channel must be private.")  # fmt: skip
    assert_error(live.owner.patch("/realm", {"moderation_request_channel_id": 9999}), "Invalid channel ID")
    assert_error(live.alice.patch("/realm", {"moderation_request_channel_id": private}),
                 "Must be an organization administrator", "UNAUTHORIZED_PRINCIPAL")  # fmt: skip
    assert events_since(live, count, "realm") == []
    body = assert_success(live.owner.patch("/realm", {"moderation_request_channel_id": private}))
    assert body["moderation_request_channel_id"] == private
    audience = [live.owner.id, live.alice.id, live.bob.id]
    event = {"type": "realm", "op": "update", "property": "moderation_request_channel_id", "value": private}
    assert events_since(live, count, "realm") == [(event, audience)]
    assert register(live.alice, fetch_event_types=["realm"])["realm_moderation_request_channel_id"] == private
    # The channel stays private while it is the moderation request channel.
    assert_error(live.owner.patch(f"/streams/{private}", {"is_private": False}),
                 "Moderation request channel must be private.")  # fmt: skip
    count = len(live.events())
    assert_success(live.owner.patch("/realm", {"moderation_request_channel_id": -1}))
    assert events_since(live, count, "realm") == [({**event, "value": -1}, audience)]
    assert register(live.alice, fetch_event_types=["realm"])["realm_moderation_request_channel_id"] == -1


def test_report_types_in_register(people):
    types = register(people.alice, fetch_event_types=["realm"])["server_report_message_types"]
    assert [t["key"] for t in types] == ["spam", "harassment", "inappropriate", "norms", "other"]
    assert types[3] == {"key": "norms", "name": "Violates community norms"}


@pytest.mark.parametrize(
    ("params", "msg"),
    [
        ({"report_type": "other"}, "An explanation is required."),
        ({"report_type": "rude"}, "Invalid report_type: Value error, Not in the list of possible values"),
        ({"report_type": "spam", "description": "d" * 1001}, "description is too long (limit: 1000 characters)"),
        ({}, "Missing 'report_type' argument"),
    ],
)
def test_errors_send_nothing(moderated, params, msg):
    live = moderated
    message_id = send_ok(live.bob, "general", "hello")
    before = count_rows(live, "messages")
    count = len(live.events())
    code = "REQUEST_VARIABLE_MISSING" if not params else "BAD_REQUEST"
    assert_error(live.alice.post(f"/messages/{message_id}/report", params), msg, code)
    assert count_rows(live, "messages") == before
    assert live.events()[count:] == []


def test_messages_the_reporter_cannot_read(moderated):
    live = moderated
    direct = send_direct_ok(live.owner, [live.bob.id], "between us")
    before = count_rows(live, "messages")
    assert_error(report(live.alice, direct), "Invalid message(s)")
    assert_error(report(live.alice, 999999), "Invalid message(s)")
    assert count_rows(live, "messages") == before
