"""PATCH /realm: the message-editing settings, their events, and their enforcement on edits and deletions."""

from __future__ import annotations

import pytest

from storage.org.realm_settings import RealmSettings, get_realm_settings
from tests.support.channel_helpers import make_channel, set_channel_group
from tests.support.events_helpers import events_now, register, send_stream
from tests.support.helpers import assert_error, assert_success

DEFAULTS = {
    "realm_allow_message_editing": True,
    "realm_message_content_edit_limit_seconds": 600,
    "realm_allow_edit_history": True,
    "realm_message_content_delete_limit_seconds": None,
    "realm_move_messages_within_stream_limit_seconds": 604800,
    "realm_move_messages_between_streams_limit_seconds": 604800,
    "realm_message_edit_history_visibility_policy": "all",
}


def realm_state(client):
    body = register(client, fetch_event_types=["realm"])
    return {k: body[k] for k in DEFAULTS}


def team(live):
    member = live.make_user()
    make_channel(live, "general", [live.owner.id, member.id])
    return member


def test_defaults_are_zulips(live):
    assert realm_state(live.owner) == DEFAULTS
    assert live.read(get_realm_settings) == RealmSettings(True, 600, True, None, 604800, 604800)


def test_administrators_change_them_and_everyone_hears(live):
    member = team(live)
    queue = register(member)["queue_id"]
    changes = {
        "allow_message_editing": False, "message_content_edit_limit_seconds": "unlimited", "allow_edit_history": False,
        "message_content_delete_limit_seconds": 3600, "move_messages_within_stream_limit_seconds": "unlimited",
        "move_messages_between_streams_limit_seconds": 60,
    }  # fmt: skip
    body = assert_success(live.owner.patch("/realm", changes))
    assert {k: body[k] for k in changes} == {**changes, "message_content_edit_limit_seconds": None,
                                              "move_messages_within_stream_limit_seconds": None}  # fmt: skip
    assert realm_state(member) == {
        "realm_allow_message_editing": False, "realm_message_content_edit_limit_seconds": None,
        "realm_allow_edit_history": False, "realm_message_content_delete_limit_seconds": 3600,
        "realm_move_messages_within_stream_limit_seconds": None,
        "realm_move_messages_between_streams_limit_seconds": 60, "realm_message_edit_history_visibility_policy": "none",
    }  # fmt: skip
    raw = events_now(member, queue)
    events = [{k: v for k, v in e.items() if k != "id"} for e in raw]
    assert events == [
        {"type": "realm", "op": "update_dict", "property": "default", "data": {"allow_message_editing": False}},
        {"type": "realm", "op": "update_dict", "property": "default",
         "data": {"message_content_edit_limit_seconds": None}},
        {"type": "realm", "op": "update", "property": "allow_edit_history", "value": False},
        {"type": "realm", "op": "update", "property": "message_edit_history_visibility_policy", "value": "none"},
        {"type": "realm", "op": "update", "property": "message_content_delete_limit_seconds", "value": 3600},
        {"type": "realm", "op": "update", "property": "move_messages_within_stream_limit_seconds", "value": None},
        {"type": "realm", "op": "update", "property": "move_messages_between_streams_limit_seconds", "value": 60},
    ]  # fmt: skip
    # The same values again change nothing and send nothing.
    body = assert_success(live.owner.patch("/realm", changes))
    assert set(body) == {"result", "msg"}
    assert events_now(member, queue, raw[-1]["id"]) == []


@pytest.mark.parametrize("role", ["member", "moderator"])
def test_only_administrators(live, role):
    client = live.make_user(role=role)
    response = client.patch("/realm", {"allow_message_editing": False})
    assert_error(response, "Must be an organization administrator", "UNAUTHORIZED_PRINCIPAL")
    assert realm_state(live.owner) == DEFAULTS


@pytest.mark.parametrize(
    ("params", "msg", "code"),
    [
        ({"message_content_edit_limit_seconds": 0}, "Bad value for 'message_content_edit_limit_seconds': 0",
         "REQUEST_VARIABLE_INVALID"),
        ({"message_content_delete_limit_seconds": -5}, "Bad value for 'message_content_delete_limit_seconds': -5",
         "REQUEST_VARIABLE_INVALID"),
        ({"move_messages_within_stream_limit_seconds": '"forever"'},
         "Bad value for 'move_messages_within_stream_limit_seconds': forever", "REQUEST_VARIABLE_INVALID"),
        ({"message_content_edit_limit_seconds": True}, "Bad value for 'message_content_edit_limit_seconds': true",
         "REQUEST_VARIABLE_INVALID"),
        ({"message_content_delete_limit_seconds": 2**31},
         "Bad value for 'message_content_delete_limit_seconds': 2147483648", "REQUEST_VARIABLE_INVALID"),
        ({"allow_message_editing": "nope"}, "allow_message_editing is not valid JSON", "BAD_REQUEST"),
        ({"allow_edit_history": 1}, "allow_edit_history is not a boolean", "BAD_REQUEST"),
    ],
)  # fmt: skip
def test_invalid_values(live, params, msg, code):
    assert_error(live.owner.patch("/realm", {"allow_edit_history": False, **params}), msg, code)
    assert realm_state(live.owner) == DEFAULTS, "nothing written"


def test_unlimited_as_json_or_bare_word(live):
    assert_success(live.owner.patch("/realm", {"message_content_edit_limit_seconds": '"unlimited"'}))
    assert realm_state(live.owner)["realm_message_content_edit_limit_seconds"] is None
    assert_success(live.owner.patch("/realm", {"message_content_edit_limit_seconds": "30"}))
    assert realm_state(live.owner)["realm_message_content_edit_limit_seconds"] == 30
    assert_success(live.owner.patch("/realm", {"message_content_edit_limit_seconds": "unlimited"}))
    assert realm_state(live.owner)["realm_message_content_edit_limit_seconds"] is None


# -- enforcement ------------------------------------------------------------------------------


def edit(client, message_id, **params):
    return client.patch(f"/messages/{message_id}", params)


def test_editing_turned_off(live):
    member = team(live)
    message_id = send_stream(member, "general", "first")
    assert_success(live.owner.patch("/realm", {"allow_message_editing": False}))
    assert_error(edit(member, message_id, content="second"), "Your organization has turned off message editing")
    # Moving is a different right: the topic can still change.
    assert_success(edit(member, message_id, topic="elsewhere"))
    assert_success(live.owner.patch("/realm", {"allow_message_editing": True}))
    assert_success(edit(member, message_id, content="second"))


def test_edit_time_limit(live):
    member = team(live)
    message_id = send_stream(member, "general", "first")
    live.clock.advance(600 + 19)  # Zulip's 20 seconds of grace
    assert_success(edit(member, message_id, content="second"))
    live.clock.advance(2)
    assert_error(edit(member, message_id, content="third"), "The time limit for editing this message has passed")
    assert_success(live.owner.patch("/realm", {"message_content_edit_limit_seconds": '"unlimited"'}))
    live.clock.advance(10**6)
    assert_success(edit(member, message_id, content="third"))


def test_others_messages_stay_uneditable(live):
    member = team(live)
    message_id = send_stream(member, "general", "first")
    assert_error(edit(live.owner, message_id, content="x"), "You don't have permission to edit this message")


def test_move_time_limits(live):
    member = team(live)
    moderator = live.make_user(role="moderator")
    channel_id = make_channel(live, "other", [live.owner.id, member.id, moderator.id])
    general_id = assert_success(member.get("/get_stream_id", {"stream": "general"}))["stream_id"]
    for channel in (general_id, channel_id):
        set_channel_group(live, channel, "can_move_messages_out_of_channel_group", "role:members")
    assert_success(moderator.post("/users/me/subscriptions", {"subscriptions": [{"name": "general"}]}))
    message_id = send_stream(member, "general", "first", "t1")
    assert_success(live.owner.patch("/realm", {"move_messages_within_stream_limit_seconds": 60,
                                               "move_messages_between_streams_limit_seconds": 120}))  # fmt: skip
    live.clock.advance(61)
    topic_passed = "The time limit for editing this message's topic has passed."
    assert_error(edit(member, message_id, topic="t2"), topic_passed)
    assert_success(edit(member, message_id, topic="✔ t1"))  # resolving is not moving
    assert_success(edit(member, message_id, stream_id=channel_id))
    live.clock.advance(60)
    assert_error(edit(member, message_id, stream_id=make_channel(live, "third", [member.id])),
                 "The time limit for editing this message's channel has passed.")  # fmt: skip
    assert_success(edit(moderator, message_id, topic="moved by a moderator"))  # moderators have no limit


def test_delete_time_limit(live):
    member = team(live)
    first, second = send_stream(member, "general", "a"), send_stream(member, "general", "b")
    assert_success(live.owner.patch("/realm", {"message_content_delete_limit_seconds": 60}))
    live.clock.advance(60)
    assert_success(member.delete(f"/messages/{first}"))
    live.clock.advance(1)
    response = member.delete(f"/messages/{second}")
    assert_error(response, "The time limit for deleting this message has passed")
    assert_success(live.owner.delete(f"/messages/{second}"))  # the right to delete any message has no limit


def test_edit_history_hidden_when_off(live):
    member = team(live)
    message_id = send_stream(member, "general", "first")
    assert_success(edit(member, message_id, content="second"))
    assert "edit_history" in assert_success(member.get(f"/messages/{message_id}"))["message"]
    assert_success(live.owner.patch("/realm", {"allow_edit_history": False}))
    assert "edit_history" not in assert_success(member.get(f"/messages/{message_id}"))["message"]
    query = {"anchor": message_id, "num_before": 0, "num_after": 0}
    [message] = assert_success(member.get("/messages", query))["messages"]
    assert "edit_history" not in message and message["content"] == "<p>second</p>"
