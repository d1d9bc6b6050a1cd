"""PATCH and DELETE /scheduled_messages/{id}: the checks in api-notes' order, re-validation, events."""

from __future__ import annotations

import pytest

from tests.support.channel_helpers import archive, make_channel, set_channel_group
from tests.support.helpers import assert_error, assert_success
from tests.support.scheduled_helpers import (
    deliver,
    listed,
    listed_one,
    schedule_direct_ok,
    schedule_ok,
    scheduled_events,
    stored_row,
)
from tests.support.send_helpers import NO_GENERAL_CHAT, NO_PERMISSION, set_topics_policy

FUTURE = "Scheduled delivery time must be in the future."
NOT_FOUND = "Scheduled message does not exist"
NEEDS_TO = "Recipient required when updating type of scheduled message."
NEEDS_TOPIC = "Topic required when updating scheduled message type to channel."
NO_CHANNEL = "Channel with ID '9999' does not exist"


def later(live, seconds: int = 3600) -> int:
    return int(live.clock.now) + seconds


def edit(client, scheduled_id, **params):
    return client.patch(f"/scheduled_messages/{scheduled_id}", params)


def edit_ok(client, scheduled_id, **params):
    body = assert_success(edit(client, scheduled_id, **params))
    assert set(body) == {"result", "msg"}, body


def make_failed(live, general) -> int:
    """A channel message that failed: more than ten minutes late when delivery ran."""
    scheduled_id = schedule_ok(live, live.owner, general, at=later(live, 10))
    live.clock.advance(10 + 601)
    assert deliver(live) == [None]
    assert listed_one(live.owner, scheduled_id)["failed"] is True
    return scheduled_id


# -- checks in order ------------------------------------------------------------------------------


def test_nothing_to_change(live, general):
    scheduled_id = schedule_ok(live, live.owner, general)
    assert_error(edit(live.owner, scheduled_id), "Nothing to change")
    # Checked before the id is looked up, and unknown parameters change nothing.
    assert_error(edit(live.owner, 9999, foo="bar"), "Nothing to change")


def test_type_needs_to(live, general):
    scheduled_id = schedule_ok(live, live.owner, general)
    assert_error(edit(live.owner, scheduled_id, type="direct"), NEEDS_TO)
    assert_error(edit(live.owner, 9999, type="stream", topic="t"), NEEDS_TO)


@pytest.mark.parametrize("kind", ["stream", "channel"])
def test_channel_type_needs_topic(live, general, kind):
    other = live.make_user()
    scheduled_id = schedule_direct_ok(live, live.owner, [other.id])
    response = edit(live.owner, scheduled_id, type=kind, to=general)
    assert_error(response, NEEDS_TOPIC)


def test_invalid_type(live, general):
    scheduled_id = schedule_ok(live, live.owner, general)
    assert_error(edit(live.owner, scheduled_id, type="dm", to=general), "Invalid type")


@pytest.mark.parametrize("offset", [0, -60])
def test_time_must_be_in_the_future(live, general, offset):
    scheduled_id = schedule_ok(live, live.owner, general)
    assert_error(edit(live.owner, scheduled_id, scheduled_delivery_timestamp=later(live, offset)), FUTURE)
    # Before the lookup: an unknown id with a past time reports the time.
    assert_error(edit(live.owner, 9999, scheduled_delivery_timestamp=later(live, offset)), FUTURE)


def test_unknown_id(live):
    assert_error(edit(live.owner, 9999, content="x"), NOT_FOUND, status=404)
    assert_error(edit(live.owner, 10**18 - 1, content="x"), NOT_FOUND, status=404)


def test_someone_elses_message_does_not_exist(live, general):
    member = live.make_user()
    scheduled_id = schedule_ok(live, live.owner, general)
    assert_error(edit(member, scheduled_id, content="mine now"), NOT_FOUND, status=404)
    assert listed_one(live.owner, scheduled_id)["content"] == "later"


def test_already_sent(live, general):
    scheduled_id = schedule_ok(live, live.owner, general, at=later(live, 10))
    live.clock.advance(10)
    deliver(live)
    assert_error(edit(live.owner, scheduled_id, content="too late"), "Scheduled message was already sent")


def test_failed_needs_a_new_time(live, general):
    scheduled_id = make_failed(live, general)
    assert_error(edit(live.owner, scheduled_id, content="retry"), FUTURE)
    assert listed_one(live.owner, scheduled_id)["failed"] is True


def test_edit_with_a_new_time_resets_failed(live, general):
    scheduled_id = make_failed(live, general)
    before = len(live.events())
    edit_ok(live.owner, scheduled_id, scheduled_delivery_timestamp=later(live, 60))
    obj = listed_one(live.owner, scheduled_id)
    assert (obj["failed"], obj["scheduled_delivery_timestamp"]) == (False, later(live, 60))
    assert stored_row(live, scheduled_id)["failure_message"] is None
    [(event, user_ids)] = scheduled_events(live, before)
    assert event == {"type": "scheduled_messages", "op": "update", "scheduled_message": obj}
    assert user_ids == [live.owner.id]
    # And it is delivered at its new time.
    live.clock.advance(60)
    [message_id] = deliver(live)
    assert message_id is not None


def test_checks_run_in_order(live, general):
    """Each rule wins over the ones after it (api-notes 4.2)."""
    member = live.make_user()
    theirs = schedule_ok(live, member, general)
    past = later(live, -1)
    assert_error(edit(live.owner, theirs, type="stream", scheduled_delivery_timestamp=past), NEEDS_TO)
    assert_error(edit(live.owner, theirs, type="stream", to=general, scheduled_delivery_timestamp=past), NEEDS_TOPIC)
    assert_error(edit(live.owner, theirs, to=9999, scheduled_delivery_timestamp=past), FUTURE)
    assert_error(edit(live.owner, theirs, to=9999), NOT_FOUND, status=404)


# -- what an edit changes ---------------------------------------------------------------------


def test_edit_content(live, general):
    scheduled_id = schedule_ok(live, live.owner, general)
    edit_ok(live.owner, scheduled_id, content="*new*")
    obj = listed_one(live.owner, scheduled_id)
    assert (obj["content"], obj["rendered_content"]) == ("*new*", "<p><em>new</em></p>")
    assert (obj["topic"], obj["to"]) == ("plans", general)


def test_edit_topic_of_a_channel_message(live, general):
    scheduled_id = schedule_ok(live, live.owner, general)
    edit_ok(live.owner, scheduled_id, topic="  moved  ")
    assert listed_one(live.owner, scheduled_id)["topic"] == "moved"
    edit_ok(live.owner, scheduled_id, subject="t" * 70)
    assert listed_one(live.owner, scheduled_id)["topic"] == "t" * 57 + "..."
    edit_ok(live.owner, scheduled_id, topic="(no topic)")
    assert listed_one(live.owner, scheduled_id)["topic"] == ""


def test_edit_topic_with_an_invalid_character(live, general):
    scheduled_id = schedule_ok(live, live.owner, general)
    assert_error(edit(live.owner, scheduled_id, topic="a\x00"), "Invalid character in topic, at position 2!")


def test_topic_is_ignored_for_direct_messages(live):
    other = live.make_user()
    scheduled_id = schedule_direct_ok(live, live.owner, [other.id])
    edit_ok(live.owner, scheduled_id, topic="ignored")
    assert "topic" not in listed_one(live.owner, scheduled_id)
    assert stored_row(live, scheduled_id)["topic"] == ""
    edit_ok(live.owner, scheduled_id, topic="still ignored", content="new")
    assert stored_row(live, scheduled_id)["topic"] == ""


def test_edit_channel(live, general):
    other = make_channel(live, "other", [live.owner.id])
    scheduled_id = schedule_ok(live, live.owner, general)
    edit_ok(live.owner, scheduled_id, to=other)
    obj = listed_one(live.owner, scheduled_id)
    assert (obj["to"], obj["topic"]) == (other, "plans")


def test_edit_direct_recipients(live):
    alice, bob = live.make_user(), live.make_user()
    scheduled_id = schedule_direct_ok(live, live.owner, [alice.id])
    edit_ok(live.owner, scheduled_id, to=[bob.id, alice.id, bob.id])
    assert listed_one(live.owner, scheduled_id)["to"] == [alice.id, bob.id]


@pytest.mark.parametrize("kind", ["direct", "private"])
def test_channel_to_direct(live, general, kind):
    other = live.make_user()
    scheduled_id = schedule_ok(live, live.owner, general)
    edit_ok(live.owner, scheduled_id, type=kind, to=[other.id])
    obj = listed_one(live.owner, scheduled_id)
    assert (obj["type"], obj["to"], "topic" in obj) == ("private", [other.id], False)
    assert stored_row(live, scheduled_id)["channel_id"] is None


@pytest.mark.parametrize("kind", ["stream", "channel"])
def test_direct_to_channel(live, general, kind):
    other = live.make_user()
    scheduled_id = schedule_direct_ok(live, live.owner, [other.id])
    edit_ok(live.owner, scheduled_id, type=kind, to=general, topic="now public")
    obj = listed_one(live.owner, scheduled_id)
    assert (obj["type"], obj["to"], obj["topic"]) == ("stream", general, "now public")
    assert stored_row(live, scheduled_id)["to_user_ids"] is None


def test_shape_of_to_follows_the_resulting_type(live, general):
    other = live.make_user()
    channel_message = schedule_ok(live, live.owner, general)
    direct_message = schedule_direct_ok(live, live.owner, [other.id])
    assert_error(edit(live.owner, channel_message, to=[general]), "Invalid data type for channel ID")
    assert_error(edit(live.owner, direct_message, to=other.id), "Invalid data type for recipients")
    assert_error(edit(live.owner, channel_message, type="direct", to=other.id), "Invalid data type for recipients")
    assert_error(edit(live.owner, channel_message, to="[true]"), 'to["int"] is not an integer')


def test_edit_time(live, general):
    first = schedule_ok(live, live.owner, general, at=later(live, 100))
    second = schedule_ok(live, live.owner, general, at=later(live, 200))
    edit_ok(live.owner, first, scheduled_delivery_timestamp=later(live, 300))
    assert [obj["scheduled_message_id"] for obj in listed(live.owner)] == [second, first]


# -- re-validation ------------------------------------------------------------------------------


def test_new_recipient_is_validated(live, general):
    scheduled_id = schedule_ok(live, live.owner, general)
    body = assert_error(edit(live.owner, scheduled_id, to=9999), NO_CHANNEL, "STREAM_DOES_NOT_EXIST")
    assert body["stream_id"] == 9999
    assert_error(edit(live.owner, scheduled_id, type="direct", to=[9999]), "Invalid user ID 9999")
    assert_error(edit(live.owner, scheduled_id, type="direct", to=[]), "Message must have recipients")


def test_new_content_is_validated(live, general):
    scheduled_id = schedule_ok(live, live.owner, general)
    assert_error(edit(live.owner, scheduled_id, content="  "), "Message must not be empty")
    assert_error(edit(live.owner, scheduled_id, content="\x00"), "Message must not contain null bytes")
    assert listed_one(live.owner, scheduled_id)["content"] == "later"


def test_content_edit_rechecks_the_current_permissions(live, general):
    scheduled_id = schedule_ok(live, live.owner, general)
    set_channel_group(live, general, "can_send_message_group", "role:nobody")
    assert_error(edit(live.owner, scheduled_id, content="again"), NO_PERMISSION)
    archive(live, general)
    assert_error(edit(live.owner, scheduled_id, content="again"), NO_PERMISSION)


def test_new_channel_topic_follows_its_topics_policy(live, general):
    other = live.make_user()
    set_topics_policy(live, "disable_empty_topic", general)
    scheduled_id = schedule_direct_ok(live, live.owner, [other.id])
    assert_error(edit(live.owner, scheduled_id, type="stream", to=general, topic=""), NO_GENERAL_CHAT)


def test_time_only_edit_is_not_revalidated(live, general):
    """As in Zulip: only a new type, recipient or content runs the send checks again; delivery
    checks everything anyway."""
    scheduled_id = schedule_ok(live, live.owner, general)
    archive(live, general)
    edit_ok(live.owner, scheduled_id, scheduled_delivery_timestamp=later(live, 7200))


def test_failed_edit_changes_nothing_and_sends_no_event(live, general):
    scheduled_id = schedule_ok(live, live.owner, general)
    before_row, before_events = stored_row(live, scheduled_id), len(live.events())
    assert_error(edit(live.owner, scheduled_id, to=9999, content="new"), NO_CHANNEL, "STREAM_DOES_NOT_EXIST")
    assert stored_row(live, scheduled_id) == before_row
    assert scheduled_events(live, before_events) == []


def test_update_event_to_the_sender_only(live, general):
    make_channel(live, "team", [live.owner.id, live.make_user().id])
    scheduled_id = schedule_ok(live, live.owner, general)
    before = len(live.events())
    edit_ok(live.owner, scheduled_id, content="changed", scheduled_delivery_timestamp=later(live, 60))
    [(event, user_ids)] = scheduled_events(live, before)
    assert user_ids == [live.owner.id]
    obj = listed_one(live.owner, scheduled_id)
    assert event == {"type": "scheduled_messages", "op": "update", "scheduled_message": obj}


# -- DELETE ---------------------------------------------------------------------------------------


def test_delete(live, general):
    scheduled_id = schedule_ok(live, live.owner, general)
    keep = schedule_ok(live, live.owner, general)
    before = len(live.events())
    body = assert_success(live.owner.delete(f"/scheduled_messages/{scheduled_id}"))
    assert set(body) == {"result", "msg"}
    assert [obj["scheduled_message_id"] for obj in listed(live.owner)] == [keep]
    assert scheduled_events(live, before) == [
        ({"type": "scheduled_messages", "op": "remove", "scheduled_message_id": scheduled_id}, [live.owner.id])
    ]
    assert stored_row(live, scheduled_id) is None


def test_delete_unknown(live, general):
    assert_error(live.owner.delete("/scheduled_messages/9999"), NOT_FOUND, status=404)
    scheduled_id = schedule_ok(live, live.owner, general)
    assert_success(live.owner.delete(f"/scheduled_messages/{scheduled_id}"))
    assert_error(live.owner.delete(f"/scheduled_messages/{scheduled_id}"), NOT_FOUND, status=404)


def test_delete_someone_elses(live, general):
    scheduled_id = schedule_ok(live, live.owner, general)
    assert_error(live.make_user().delete(f"/scheduled_messages/{scheduled_id}"), NOT_FOUND, status=404)
    assert len(listed(live.owner)) == 1


def test_delete_failed(live, general):
    scheduled_id = make_failed(live, general)
    assert_success(live.owner.delete(f"/scheduled_messages/{scheduled_id}"))
    assert listed(live.owner) == []


def test_delete_delivered_does_not_exist(live, general):
    """A delivered message left the list when it was sent; its row is history, not the caller's to cancel."""
    scheduled_id = schedule_ok(live, live.owner, general, at=later(live, 10))
    live.clock.advance(10)
    [message_id] = deliver(live)
    assert_error(live.owner.delete(f"/scheduled_messages/{scheduled_id}"), NOT_FOUND, status=404)
    assert stored_row(live, scheduled_id)["delivered_message_id"] == message_id


def test_delete_reports_unknown_parameters(live, general):
    scheduled_id = schedule_ok(live, live.owner, general)
    body = assert_success(live.owner.delete(f"/scheduled_messages/{scheduled_id}", {"foo": "1"}))
    assert body["ignored_parameters_unsupported"] == ["foo"]


def test_non_numeric_id_is_not_a_route(live):
    response = live.owner.delete("/scheduled_messages/abc")
    assert response.status_code == 404
