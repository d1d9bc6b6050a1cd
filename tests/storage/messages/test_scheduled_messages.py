"""POST and GET /scheduled_messages: every type, the shape of `to`, validation, the object, events."""

from __future__ import annotations

import pytest

from storage.model import flags
from tests.support.channel_helpers import archive, make_channel, set_channel_group
from tests.support.helpers import assert_error, assert_success
from tests.support.scheduled_helpers import (
    IN_AN_HOUR,
    deliver,
    listed,
    listed_one,
    schedule,
    schedule_direct_ok,
    schedule_ok,
    scheduled_events,
    stored_row,
)
from tests.support.send_helpers import NO_GENERAL_CHAT, NO_PERMISSION, count_rows, send_ok, set_topics_policy

FUTURE = "Scheduled delivery time must be in the future."


def later(live, seconds: int = IN_AN_HOUR) -> int:
    return int(live.clock.now) + seconds


# -- types and the shape of `to` ----------------------------------------------------------------


@pytest.mark.parametrize("kind", ["stream", "channel"])
def test_channel_types_are_stored_as_stream(live, general, kind):
    scheduled_id = schedule_ok(live, live.owner, general, type=kind, content="see you", topic="plans")
    assert listed(live.owner) == [
        {
            "scheduled_message_id": scheduled_id,
            "type": "stream",
            "to": general,
            "topic": "plans",
            "content": "see you",
            "rendered_content": "<p>see you</p>",
            "scheduled_delivery_timestamp": later(live),
            "failed": False,
        }
    ]


@pytest.mark.parametrize("kind", ["direct", "private"])
def test_direct_types_are_stored_as_private(live, kind):
    other = live.make_user()
    scheduled_id = schedule_ok(live, live.owner, [other.id], type=kind, topic=None, content="psst")
    assert listed(live.owner) == [
        {
            "scheduled_message_id": scheduled_id,
            "type": "private",
            "to": [other.id],
            "content": "psst",
            "rendered_content": "<p>psst</p>",
            "scheduled_delivery_timestamp": later(live),
            "failed": False,
        }
    ]


@pytest.mark.parametrize("kind", ["", "Stream", "dm", "huddle"])
def test_invalid_type(live, general, kind):
    assert_error(schedule(live.owner, general, type=kind, scheduled_delivery_timestamp=later(live)), "Invalid type")


@pytest.mark.parametrize("kind", ["stream", "channel"])
@pytest.mark.parametrize("to", [[1], [], [1, 2]])
def test_channel_to_must_be_an_int(live, general, kind, to):
    response = schedule(live.owner, to, type=kind, scheduled_delivery_timestamp=later(live))
    assert_error(response, "Invalid data type for channel ID")


@pytest.mark.parametrize("kind", ["direct", "private"])
def test_direct_to_must_be_a_list(live, kind):
    other = live.make_user()
    response = schedule(live.owner, other.id, type=kind, topic=None, scheduled_delivery_timestamp=later(live))
    assert_error(response, "Invalid data type for recipients")


@pytest.mark.parametrize("to", ['["user@example.com"]', '"general"', "true", "[1, true]", "null", '{"a": 1}'])
def test_to_must_be_an_int_or_a_list_of_ints(live, general, to):
    response = schedule(live.owner, to, scheduled_delivery_timestamp=later(live))
    assert_error(response, 'to["int"] is not an integer')


def test_to_must_be_json(live, general):
    response = schedule(live.owner, "general", scheduled_delivery_timestamp=later(live))
    assert_error(response, "to is not valid JSON")


def test_missing_arguments(live, general):
    base = {"type": "stream", "to": general, "content": "x", "topic": "t", "scheduled_delivery_timestamp": later(live)}
    for name in ("type", "to", "content", "scheduled_delivery_timestamp"):
        params = {k: v for k, v in base.items() if k != name}
        body = assert_error(live.owner.post("/scheduled_messages", params), f"Missing '{name}' argument",
                            "REQUEST_VARIABLE_MISSING")  # fmt: skip
        assert body["var_name"] == name


def test_timestamp_must_be_an_integer(live, general):
    response = schedule(live.owner, general, scheduled_delivery_timestamp="soon")
    assert_error(response, "scheduled_delivery_timestamp is not valid JSON")
    response = schedule(live.owner, general, scheduled_delivery_timestamp="1.5")
    assert_error(response, "scheduled_delivery_timestamp is not an integer")


def test_direct_recipients_are_deduplicated_and_exclude_the_sender(live):
    alice, bob = live.make_user(), live.make_user()
    scheduled_id = schedule_direct_ok(live, live.owner, [bob.id, alice.id, bob.id, live.owner.id])
    assert listed_one(live.owner, scheduled_id)["to"] == sorted([alice.id, bob.id])
    assert stored_row(live, scheduled_id)["to_user_ids"] == str(sorted([live.owner.id, alice.id, bob.id]))


def test_direct_message_to_oneself_lists_the_sender(live):
    scheduled_id = schedule_direct_ok(live, live.owner, [live.owner.id])
    assert listed_one(live.owner, scheduled_id)["to"] == [live.owner.id]


def test_group_direct_message(live):
    alice, bob = live.make_user(), live.make_user()
    scheduled_id = schedule_direct_ok(live, live.owner, [alice.id, bob.id])
    assert listed_one(live.owner, scheduled_id)["to"] == [alice.id, bob.id]


# -- the delivery time ----------------------------------------------------------------------------


@pytest.mark.parametrize("offset", [0, -1, -86400])
def test_time_must_be_in_the_future(live, general, offset):
    response = schedule(live.owner, general, scheduled_delivery_timestamp=later(live, offset))
    assert_error(response, FUTURE)


def test_time_is_checked_before_anything_else(live):
    """Even an invalid type, recipient or content loses to a past time (Zulip checks it first)."""
    past = later(live, -5)
    assert_error(schedule(live.owner, 99, type="nonsense", content="", scheduled_delivery_timestamp=past), FUTURE)
    assert_error(schedule(live.owner, [99], type="direct", scheduled_delivery_timestamp=past), FUTURE)
    assert_error(schedule(live.owner, [1], type="stream", scheduled_delivery_timestamp=past), FUTURE)


def test_one_second_ahead_is_the_future(live, general):
    schedule_ok(live, live.owner, general, at=later(live, 1))


# -- validation shared with POST /messages ----------------------------------------------------------


def test_unknown_channel(live):
    body = assert_error(schedule(live.owner, 9999, scheduled_delivery_timestamp=later(live)),
                        "Channel with ID '9999' does not exist", "STREAM_DOES_NOT_EXIST")  # fmt: skip
    assert body["stream_id"] == 9999


def test_private_channel_hidden_from_the_sender_does_not_exist(live):
    secret = make_channel(live, "secret", [live.owner.id], invite_only=True)
    member = live.make_user()
    body = assert_error(schedule(member, secret, scheduled_delivery_timestamp=later(live)),
                        f"Channel with ID '{secret}' does not exist", "STREAM_DOES_NOT_EXIST")  # fmt: skip
    assert body["stream_id"] == secret


@pytest.mark.parametrize("to", [[9999], [2, 9999]])
def test_invalid_user_id(live, to):
    live.make_user()
    response = schedule(live.owner, to, type="direct", topic=None, scheduled_delivery_timestamp=later(live))
    assert_error(response, "Invalid user ID 9999")


def test_no_recipients(live):
    response = schedule(live.owner, [], type="direct", topic=None, scheduled_delivery_timestamp=later(live))
    assert_error(response, "Message must have recipients")


def test_deactivated_recipient(live):
    gone = live.make_user(email="gone@example.com")
    assert_success(live.owner.delete(f"/users/{gone.id}"))
    response = schedule(live.owner, [gone.id], type="direct", topic=None, scheduled_delivery_timestamp=later(live))
    assert_error(response, "'gone@example.com' is no longer using Zulip.")


def test_archived_channel(live, general):
    archive(live, general)
    response = schedule(live.owner, general, scheduled_delivery_timestamp=later(live))
    assert_error(response, "Not authorized to send to channel 'general'")


def test_can_send_message_group(live, general):
    set_channel_group(live, general, "can_send_message_group", "role:nobody")
    assert_error(schedule(live.owner, general, scheduled_delivery_timestamp=later(live)), NO_PERMISSION)


@pytest.mark.parametrize(("content", "msg"), [("", "Message must not be empty"), (" \n\t", "Message must not be empty"),
                                              ("a\x00b", "Message must not contain null bytes")])  # fmt: skip
def test_content_rules(live, general, content, msg):
    assert_error(schedule(live.owner, general, content=content, scheduled_delivery_timestamp=later(live)), msg)


def test_long_content_is_truncated(live, general):
    scheduled_id = schedule_ok(live, live.owner, general, content="x" * 10050)
    content = listed_one(live.owner, scheduled_id)["content"]
    assert len(content) == 10000 and content.endswith("\n[message truncated]")


def test_content_is_stored_as_sent_would_be_and_rendered(live, general):
    scheduled_id = schedule_ok(live, live.owner, general, content="**bold** @**Full Name**\n\n")
    obj = listed_one(live.owner, scheduled_id)
    assert obj["content"] == "**bold** @**Full Name**"
    assert obj["rendered_content"].startswith("<p><strong>bold</strong>")


# -- topics ---------------------------------------------------------------------------------------


def test_channel_message_needs_a_topic(live, general):
    response = schedule(live.owner, general, topic=None, scheduled_delivery_timestamp=later(live))
    assert_error(response, "Missing topic")


@pytest.mark.parametrize(("given", "stored"), [("  plans  ", "plans"), ("(no topic)", ""), ("general chat", ""),
                                               ("", ""), ("t" * 70, "t" * 57 + "...")])  # fmt: skip
def test_topic_normalisation(live, general, given, stored):
    scheduled_id = schedule_ok(live, live.owner, general, topic=given)
    assert listed_one(live.owner, scheduled_id)["topic"] == stored


def test_subject_is_an_alias_of_topic(live, general):
    scheduled_id = schedule_ok(live, live.owner, general, topic=None, subject="old name")
    assert listed_one(live.owner, scheduled_id)["topic"] == "old name"


def test_topic_and_subject_together(live, general):
    response = schedule(live.owner, general, subject="b", scheduled_delivery_timestamp=later(live))
    assert_error(response, "Can't decide between 'topic' and 'subject' arguments", "REQUEST_CONFUSING_VAR")


def test_invalid_character_in_topic(live, general):
    response = schedule(live.owner, general, topic="a\x01b", scheduled_delivery_timestamp=later(live))
    assert_error(response, "Invalid character in topic, at position 2!")


def test_topics_policy_applies(live, general):
    set_topics_policy(live, "disable_empty_topic", general)
    assert_error(schedule(live.owner, general, topic="", scheduled_delivery_timestamp=later(live)), NO_GENERAL_CHAT)


def test_topic_is_ignored_for_direct_messages(live):
    other = live.make_user()
    scheduled_id = schedule_ok(live, live.owner, [other.id], type="direct", topic="ignored")
    assert "topic" not in listed_one(live.owner, scheduled_id)
    assert stored_row(live, scheduled_id)["topic"] == ""


# -- read_by_sender and the delivered message ------------------------------------------------------


def sender_flags(live, message_id: int) -> list[str]:
    bits = live.read(lambda tx: tx.value("SELECT flags FROM user_messages WHERE message_id = ? AND user_id = ?",
                                         (message_id, live.owner.id)))  # fmt: skip
    return flags.flag_names(bits)


@pytest.mark.parametrize(("params", "read"), [
    ({"read_by_sender": True}, True),
    ({"read_by_sender": False, "client": "website"}, False),
    ({"client": "website"}, True),  # an interactive client: read by default
    ({}, False),  # an API script (python-requests): unread by default
])  # fmt: skip
def test_read_by_sender(live, general, params, read):
    schedule_ok(live, live.owner, general, at=later(live, 10), **params)
    live.clock.advance(10)
    [message_id] = deliver(live)
    assert ("read" in sender_flags(live, message_id)) is read


def test_read_by_sender_default_is_unread_for_a_message_to_oneself(live):
    schedule_direct_ok(live, live.owner, [live.owner.id], at=later(live, 10), client="website")
    live.clock.advance(10)
    [message_id] = deliver(live)
    assert "read" not in sender_flags(live, message_id)


def test_read_by_sender_must_be_a_boolean(live, general):
    response = schedule(live.owner, general, read_by_sender="1", scheduled_delivery_timestamp=later(live))
    assert_error(response, "read_by_sender is not a boolean")


def test_scheduled_id_differs_from_the_delivered_message_id(live, general):
    send_ok(live.owner, general)
    send_ok(live.owner, general)
    scheduled_id = schedule_ok(live, live.owner, general, at=later(live, 10))
    live.clock.advance(10)
    [message_id] = deliver(live)
    assert scheduled_id == 1 and message_id == 3
    assert stored_row(live, scheduled_id)["delivered_message_id"] == message_id


def test_client_is_kept_for_delivery(live, general):
    schedule_ok(live, live.owner, general, at=later(live, 10), client="ZulipTerminal")
    live.clock.advance(10)
    [message_id] = deliver(live)
    assert live.read(lambda tx: tx.value("SELECT client FROM messages WHERE id = ?", (message_id,))) == "ZulipTerminal"


def test_errors_store_nothing(live, general):
    schedule(live.owner, general, content="", scheduled_delivery_timestamp=later(live))
    schedule(live.owner, 9999, scheduled_delivery_timestamp=later(live))
    assert count_rows(live, "scheduled_messages") == 0
    assert scheduled_events(live) == []


def test_unknown_parameters_are_reported(live, general):
    body = assert_success(schedule(live.owner, general, scheduled_delivery_timestamp=later(live), foo="1"))
    assert body["ignored_parameters_unsupported"] == ["foo"]


# -- GET /scheduled_messages ----------------------------------------------------------------------


def test_list_is_sorted_by_delivery_time_and_private_to_the_sender(live, general):
    other = live.make_user()
    third = schedule_ok(live, live.owner, general, at=later(live, 300))
    first = schedule_ok(live, live.owner, [other.id], at=later(live, 100), type="direct", topic=None)
    second = schedule_ok(live, live.owner, general, at=later(live, 200))
    also_second = schedule_ok(live, live.owner, general, at=later(live, 200))
    schedule_ok(live, other, [live.owner.id], at=later(live, 50), type="direct", topic=None)
    ids = [obj["scheduled_message_id"] for obj in listed(live.owner)]
    assert ids == [first, second, also_second, third]
    assert len(listed(other)) == 1


def test_list_is_empty_at_first(live):
    assert listed(live.owner) == []


def test_list_reports_parameters_as_ignored(live):
    body = assert_success(live.owner.get("/scheduled_messages", {"anchor": "newest"}))
    assert body["ignored_parameters_unsupported"] == ["anchor"]


def test_list_excludes_delivered_and_includes_failed(live, general):
    delivered = schedule_ok(live, live.owner, general, at=later(live, 10))
    failed = schedule_ok(live, live.owner, general, at=later(live, 20))
    waiting = schedule_ok(live, live.owner, general, at=later(live, 10_000))
    live.clock.advance(15)
    deliver(live)
    live.clock.advance(3600)  # `failed` is now over ten minutes late
    deliver(live)
    objects = listed(live.owner)
    assert [(obj["scheduled_message_id"], obj["failed"]) for obj in objects] == [(failed, True), (waiting, False)]
    assert delivered not in [obj["scheduled_message_id"] for obj in objects]


# -- events -------------------------------------------------------------------------------------


def test_add_event_to_the_sender_only(live, general):
    other = live.make_user()
    make_channel(live, "team", [live.owner.id, other.id])
    before = len(live.events())
    scheduled_id = schedule_ok(live, live.owner, general)
    [(event, user_ids)] = scheduled_events(live, before)
    assert user_ids == [live.owner.id]
    assert event == {"type": "scheduled_messages", "op": "add", "scheduled_messages": listed(live.owner)}
    assert event["scheduled_messages"][0]["scheduled_message_id"] == scheduled_id


def test_scheduling_sends_no_message_event(live, general):
    before = len(live.events())
    schedule_ok(live, live.owner, general)
    assert [e["type"] for e, _ in live.events()[before:]] == ["scheduled_messages"]


def test_official_client_schedules(live, general, zulip_client):
    """The zulip package (0.9.1) has no scheduled-message helpers; call_endpoint encodes as its helpers do."""
    request = {"type": "stream", "to": general, "topic": "plans", "content": "hi",
               "scheduled_delivery_timestamp": later(live)}  # fmt: skip
    result = zulip_client.call_endpoint(url="scheduled_messages", method="POST", request=request)
    assert result["result"] == "success", result
    listing = zulip_client.call_endpoint(url="scheduled_messages", method="GET")
    assert [obj["scheduled_message_id"] for obj in listing["scheduled_messages"]] == [result["scheduled_message_id"]]
    edit = {"content": "edited", "scheduled_delivery_timestamp": later(live, 7200)}
    path = f"scheduled_messages/{result['scheduled_message_id']}"
    assert zulip_client.call_endpoint(url=path, method="PATCH", request=edit)["result"] == "success"
    assert zulip_client.call_endpoint(url=path, method="DELETE")["result"] == "success"
    assert zulip_client.call_endpoint(url="scheduled_messages", method="GET")["scheduled_messages"] == []
