"""POST /messages to channels: addressing, types, who may post, and the response."""

from __future__ import annotations

import pytest

from tests.support.channel_helpers import archive, make_channel, set_channel_group
from tests.support.helpers import assert_error, assert_success, make_bot
from tests.support.send_helpers import NO_NEW_TOPICS, NO_PERMISSION, send, send_ok, stored

# -- addressing --------------------------------------------------------------------------------


def test_by_id_as_json_int(live, general):
    message_id = send_ok(live.owner, general, "hi", "greetings")
    row = stored(live, message_id)
    assert (row["channel_id"], row["topic"], row["content"], row["sender_id"]) == (general, "greetings", "hi", 1)
    assert row["rendered_content"] == "<p>hi</p>"
    assert row["date_sent"] == int(live.clock.now)


@pytest.mark.parametrize("to", ["general", '"general"', ["general"], " general ", "GENERAL"])
def test_by_name_plain_json_or_list_of_one(live, general, to):
    assert stored(live, send_ok(live.owner, to))["channel_id"] == general


def test_by_id_in_list_of_one(live, general):
    assert stored(live, send_ok(live.owner, [general]))["channel_id"] == general


def test_every_message_of_a_channel_shares_its_recipient_id(live, general):
    first = stored(live, send_ok(live.owner, general, topic="a"))
    second = stored(live, send_ok(live.owner, "general", topic="b"))
    assert first["recipient_id"] == second["recipient_id"]


@pytest.mark.parametrize("kind", ["stream", "channel"])
def test_channel_types(live, general, kind):
    assert stored(live, send_ok(live.owner, general, type=kind))["channel_id"] == general


@pytest.mark.parametrize("kind", ["private", "direct"])
def test_direct_types(live, kind):
    other = live.make_user()
    row = stored(live, send_ok(live.owner, [other.id], topic=None, type=kind))
    assert row["channel_id"] is None


@pytest.mark.parametrize("kind", ["", "Stream", "dm", "huddle"])
def test_invalid_type(live, general, kind):
    assert_error(send(live.owner, general, type=kind), "Invalid type")


def test_missing_arguments(live, general):
    response = live.owner.post("/messages", {"to": general, "topic": "x", "content": "x"})
    body = assert_error(response, "Missing 'type' argument", "REQUEST_VARIABLE_MISSING")
    assert body["var_name"] == "type"
    response = live.owner.post("/messages", {"type": "stream", "to": general, "topic": "x"})
    assert_error(response, "Missing 'content' argument", "REQUEST_VARIABLE_MISSING")


def test_missing_channel(live, general):
    response = live.owner.post("/messages", {"type": "stream", "topic": "x", "content": "x"})
    assert_error(response, "Missing channel")


def test_multiple_channels(live, general):
    other = make_channel(live, "other", [live.owner.id])
    assert_error(send(live.owner, [general, other]), "Cannot send to multiple channels")
    assert_error(send(live.owner, ["general", "other"]), "Cannot send to multiple channels")


def test_empty_list_of_channels(live, general):
    assert_error(send(live.owner, []), "Expected exactly one channel")


@pytest.mark.parametrize("to", ["1.5", "true", '{"id": 1}', "null", "[[1]]"])
def test_invalid_data_type_for_channel(live, general, to):
    expected = "Missing channel" if to == "null" else "Invalid data type for channel"
    assert_error(send(live.owner, to), expected)


def test_unknown_channel_by_id(live):
    body = assert_error(send(live.owner, 9999), "Channel with ID '9999' does not exist", "STREAM_DOES_NOT_EXIST")
    assert body["stream_id"] == 9999
    body = assert_error(send(live.owner, [77]), "Channel with ID '77' does not exist", "STREAM_DOES_NOT_EXIST")
    assert body["stream_id"] == 77


def test_unknown_channel_by_name(live):
    body = assert_error(send(live.owner, "nowhere"), "Channel 'nowhere' does not exist", "STREAM_DOES_NOT_EXIST")
    assert body["stream"] == "nowhere"
    body = assert_error(send(live.owner, '"no where"'), "Channel 'no where' does not exist", "STREAM_DOES_NOT_EXIST")
    assert body["stream"] == "no where"


def test_response_is_the_id_and_ids_increase(live, general):
    first = send_ok(live.owner, general)
    assert send_ok(live.owner, general) == first + 1


def test_queue_id_and_local_id_are_accepted(live, general):
    body = assert_success(send(live.owner, general, queue_id="1234:5", local_id="0.01"))
    assert "ignored_parameters_unsupported" not in body


def test_unknown_parameters_are_reported(live, general):
    body = assert_success(send(live.owner, general, bogus="x"))
    assert body["ignored_parameters_unsupported"] == ["bogus"]


def test_client_parameter_is_consumed_and_stored(live, general):
    body = assert_success(send(live.owner, general, client="website"))
    assert "ignored_parameters_unsupported" not in body
    assert stored(live, body["id"])["client"] == "website"


def test_client_from_user_agent(live, general):
    response = live.owner.post(
        "/messages",
        {"type": "stream", "to": general, "topic": "t", "content": "x"},
        headers={"User-Agent": "ZulipMobile/27.1 (Android 14)"},
    )
    assert stored(live, assert_success(response)["id"])["client"] == "ZulipMobile"


# -- who may post --------------------------------------------------------------------------------


def test_private_channel_subscriber_may_post(live):
    member = live.make_user()
    secret = make_channel(live, "secret", [live.owner.id, member.id], invite_only=True)
    assert stored(live, send_ok(member, secret))["channel_id"] == secret


def test_private_channel_hidden_from_the_sender_does_not_exist(live):
    member = live.make_user()
    secret = make_channel(live, "secret", [live.owner.id], invite_only=True)
    body = assert_error(send(member, secret), f"Channel with ID '{secret}' does not exist", "STREAM_DOES_NOT_EXIST")
    assert body["stream_id"] == secret
    body = assert_error(send(member, "secret"), "Channel 'secret' does not exist", "STREAM_DOES_NOT_EXIST")
    assert body["stream"] == "secret"


def test_public_channel_hidden_from_a_guest_does_not_exist(live, general):
    guest = live.make_user("guest")
    assert_error(send(guest, "general"), "Channel 'general' does not exist", "STREAM_DOES_NOT_EXIST")


def test_guest_subscriber_may_post(live):
    guest = live.make_user("guest")
    channel = make_channel(live, "guests", [guest.id])
    assert stored(live, send_ok(guest, channel))["sender_id"] == guest.id


def test_member_may_post_to_a_public_channel_without_subscribing(live, general):
    member = live.make_user()
    message_id = send_ok(member, general)
    assert stored(live, message_id)["channel_id"] == general


def test_admin_without_content_access_is_not_authorized(live):
    admin = live.make_user("admin")
    make_channel(live, "secret", [live.owner.id], invite_only=True)
    # An administrator may see the channel exists, but not post in it.
    assert_error(send(admin, "secret"), "Not authorized to send to channel 'secret'")


def test_archived_channel(live, general):
    archive(live, general)
    assert_error(send(live.owner, general), "Not authorized to send to channel 'general'")
    assert_error(send(live.owner, "general"), "Not authorized to send to channel 'general'")


def test_can_send_message_group(live, general):
    member = live.make_user()
    moderator = live.make_user("moderator")
    set_channel_group(live, general, "can_send_message_group", "role:moderators")
    assert_error(send(member, general), NO_PERMISSION)
    send_ok(moderator, general)
    send_ok(live.owner, general)


def test_can_send_message_group_nobody(live, general):
    set_channel_group(live, general, "can_send_message_group", "role:nobody")
    assert_error(send(live.owner, general), NO_PERMISSION)


def test_bots_post_with_their_owners_access_and_permissions(live, general):
    moderator = live.make_user("moderator")
    bot = live.client_for(live.user(make_bot(live, moderator.id)))
    make_channel(live, "secret", [moderator.id], invite_only=True)
    assert stored(live, send_ok(bot, "secret"))["sender_id"] == bot.id
    set_channel_group(live, general, "can_send_message_group", "role:moderators")
    set_channel_group(live, general, "can_create_topic_group", "role:moderators")
    send_ok(bot, general, topic="a new one")
    member_bot = live.client_for(live.user(make_bot(live, live.make_user().id, "member-bot@example.com")))
    assert_error(send(member_bot, general), NO_PERMISSION)
    assert_error(send(member_bot, "secret"), "Channel 'secret' does not exist", "STREAM_DOES_NOT_EXIST")


def test_can_create_topic_group_applies_to_new_topics_only(live, general):
    member = live.make_user()
    send_ok(live.owner, general, topic="Existing Topic")
    set_channel_group(live, general, "can_create_topic_group", "role:administrators")
    assert_error(send(member, general, topic="brand new"), NO_NEW_TOPICS)
    # Existing topics compare case-insensitively, Unicode included.
    send_ok(member, general, topic="existing TOPIC")
    send_ok(live.owner, general, topic="Über uns")
    send_ok(member, general, topic="über UNS")
    # Administrators may still start topics.
    send_ok(live.owner, general, topic="brand new")
    send_ok(member, general, topic="Brand New")


def test_can_create_topic_group_covers_the_empty_topic(live, general):
    member = live.make_user()
    set_channel_group(live, general, "can_create_topic_group", "role:administrators")
    assert_error(send(member, general, topic=""), NO_NEW_TOPICS)
    send_ok(live.owner, general, topic="")
    send_ok(member, general, topic="general chat")


def test_errors_create_nothing(live, general):
    before = live.read(lambda tx: tx.value("SELECT count(*) FROM messages"))
    assert_error(send(live.owner, general, content=" "), "Message must not be empty")
    assert_error(send(live.owner, 9999), "Channel with ID '9999' does not exist", "STREAM_DOES_NOT_EXIST")
    assert live.read(lambda tx: tx.value("SELECT count(*) FROM messages")) == before
