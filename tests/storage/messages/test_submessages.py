"""Widgets over HTTP: `/poll` and `/todo` messages and POST /submessage (storage/messages/submessages.py)."""

from __future__ import annotations

import json

import pytest

from storage.cache.directory import directory
from tests.support.channel_helpers import make_channel
from tests.support.events_helpers import events_now, of_type, register
from tests.support.helpers import assert_error, assert_success
from tests.support.send_helpers import count_rows, message_events, send, send_direct_ok, send_ok

INVALID_MESSAGE = "Invalid message(s)"
CANNOT_ATTACH = "You cannot attach a submessage to this message."
POLL = "/poll Lunch?\npizza\ntacos"


def post_submessage(client, message_id, content, msg_type="widget", **params):
    body = {"message_id": message_id, "msg_type": msg_type, "content": content, **params}
    return client.post("/submessage", body)


def fetch(client, message_id):
    [message] = assert_success(client.get("/messages", {"message_ids": [message_id]}))["messages"]
    return message


def submessage_events(live, before):
    return [(event, ids) for event, ids in live.events()[before:] if event["type"] == "submessage"]


@pytest.fixture
def voter(live):
    """A member subscribed with the owner to the public channel "general" (voting in its polls)."""
    voter = live.make_user(full_name="Member")
    make_channel(live, "general", [live.owner.id, voter.id])
    return voter


@pytest.fixture
def poll_id(live, voter):
    """A poll the owner sent to "general": its message id."""
    return send_ok(live.owner, "general", POLL)


# -- the widget a message starts ------------------------------------------------------------------


def test_sending_a_poll_stores_its_widget_submessage(live, voter, poll_id):
    widget = {"widget_type": "poll", "extra_data": {"question": "Lunch?", "options": ["pizza", "tacos"]}}
    [submessage] = fetch(voter, poll_id)["submessages"]
    assert list(submessage) == ["id", "message_id", "sender_id", "msg_type", "content"]  # Zulip's order
    assert submessage["message_id"] == poll_id and submessage["sender_id"] == live.owner.id
    assert submessage["msg_type"] == "widget" and json.loads(submessage["content"]) == widget
    # The message event carries it too: the widget was stored in the message's transaction.
    [(event, _)] = message_events(live, poll_id)
    assert event["message"]["submessages"] == [submessage]


def test_sending_a_todo_list_stores_its_widget_submessage(live, voter):
    message_id = send_ok(voter, "general", "/todo Launch\n- write notes: for users\n- tag")
    [submessage] = fetch(live.owner, message_id)["submessages"]
    assert submessage["sender_id"] == voter.id
    assert json.loads(submessage["content"]) == {
        "widget_type": "todo",
        "extra_data": {
            "task_list_title": "Launch",
            "tasks": [{"task": "write notes", "desc": "for users"}, {"task": "tag", "desc": ""}],
        },
    }


def test_direct_messages_start_widgets_too(live, voter):
    message_id = send_direct_ok(live.owner, [voter.id], "/poll")
    [submessage] = fetch(voter, message_id)["submessages"]
    assert json.loads(submessage["content"]) == {"widget_type": "poll", "extra_data": {"question": "", "options": []}}


def test_other_messages_have_no_submessages(live, voter):
    message_id = send_ok(live.owner, "general", "a /poll in the middle")
    assert fetch(voter, message_id)["submessages"] == []
    assert count_rows(live, "submessages") == 0


def test_a_send_may_give_its_own_widget(live, voter):
    """widget_content (zform buttons, as Zulip's bots send them) takes the place of the content's command."""
    zform = {"type": "choices", "heading": "Pick", "choices": [{"short_name": "A", "long_name": "Ant", "reply": "a"}]}
    widget = json.dumps({"widget_type": "zform", "extra_data": zform})
    message_id = send_ok(voter, "general", "/poll ignored", widget_content=widget)
    [submessage] = fetch(live.owner, message_id)["submessages"]
    assert json.loads(submessage["content"]) == {"widget_type": "zform", "extra_data": zform}


def test_bad_widget_content_sends_nothing(live, voter):
    before = count_rows(live, "messages")
    invalid = "Widgets: API programmer sent invalid JSON content"
    assert_error(send(voter, "general", "hi", widget_content="{{{"), invalid)
    bogus = json.dumps({"color": "red"})
    assert_error(send(voter, "general", "hi", widget_content=bogus), "Widgets: widget_type is not in widget_content")
    assert count_rows(live, "messages") == before and count_rows(live, "submessages") == 0


# -- POST /submessage ------------------------------------------------------------------------------


def test_vote_is_stored_shown_and_sent(live, voter, poll_id):
    before = len(live.events())
    vote = '{"type":"vote","key":"canned,0","vote":1}'
    assert set(assert_success(post_submessage(voter, poll_id, vote))) == {"result", "msg"}
    widget, stored = fetch(live.owner, poll_id)["submessages"]
    assert stored["id"] > widget["id"]  # oldest first
    assert stored == {"id": stored["id"], "message_id": poll_id, "sender_id": voter.id, "msg_type": "widget",
                      "content": vote}  # fmt: skip
    [(event, audience)] = submessage_events(live, before)
    assert event == {"type": "submessage", "msg_type": "widget", "message_id": poll_id, "submessage_id": stored["id"],
                     "sender_id": voter.id, "content": vote}  # fmt: skip
    assert sorted(audience) == sorted([live.owner.id, voter.id])


def test_new_options_and_questions(live, voter, poll_id):
    assert_success(post_submessage(voter, poll_id, '{"type":"new_option","idx":1,"option":"soup"}'))
    assert_success(post_submessage(live.owner, poll_id, '{"type":"question","question":"Dinner?"}'))
    error = "You can't edit a question unless you are the author."
    assert_error(post_submessage(voter, poll_id, '{"type":"question","question":"Mine?"}'), error)
    assert len(fetch(voter, poll_id)["submessages"]) == 3


def test_todo_tasks_strikes_and_title(live, voter):
    message_id = send_ok(live.owner, "general", "/todo Chores")
    task = {"type": "new_task", "key": 1, "task": "dishes", "desc": "", "completed": False}
    assert_success(post_submessage(voter, message_id, json.dumps(task)))
    assert_success(post_submessage(voter, message_id, json.dumps({"type": "strike", "key": f"1,{voter.id}"})))
    assert_success(post_submessage(live.owner, message_id, '{"type":"new_task_list_title","title":"Weekend"}'))
    error = "You can't edit the task list title unless you are the author."
    assert_error(post_submessage(voter, message_id, '{"type":"new_task_list_title","title":"Mine"}'), error)
    bad_strike = '{"type":"strike","key":1}'
    assert_error(post_submessage(voter, message_id, bad_strike), 'todo data["key"] is not a string')
    contents = [json.loads(s["content"]) for s in fetch(voter, message_id)["submessages"]]
    kinds = [c.get("type", c.get("widget_type")) for c in contents]
    assert kinds == ["todo", "new_task", "strike", "new_task_list_title"]


def test_queues_get_the_event_with_the_keys_clients_read(live, voter, poll_id):
    queue = register(voter, event_types=["submessage"])
    assert_success(post_submessage(live.owner, poll_id, '{"type":"new_option","idx":2,"option":"soup"}'))
    [event] = of_type(events_now(voter, queue["queue_id"]), "submessage")
    # zulip-flutter's SubmessageEvent reads each of these without a default.
    assert set(event) == {"id", "type", "msg_type", "content", "message_id", "sender_id", "submessage_id"}
    assert event["sender_id"] == live.owner.id and event["message_id"] == poll_id


def test_subscribers_without_a_row_see_votes_on_shared_history(live, voter, poll_id):
    later = live.make_user(full_name="Later")
    assert_success(later.post("/users/me/subscriptions", {"subscriptions": [{"name": "general"}]}))
    before = len(live.events())
    assert_success(post_submessage(later, poll_id, '{"type":"vote","key":"canned,1","vote":1}'))
    [(_, audience)] = submessage_events(live, before)
    assert sorted(audience) == sorted([live.owner.id, voter.id, later.id])


def test_zulip_lets_the_sender_attach_any_msg_type_to_any_message(live, voter):
    """Zulip checks widget data only on widget messages, and takes any msg_type; others follow the sender."""
    message_id = send_ok(live.owner, "general", "plain")
    assert_error(post_submessage(voter, message_id, "{}"), CANNOT_ATTACH)
    assert_success(post_submessage(live.owner, message_id, '{"name": "alice"}', msg_type="whatever"))
    assert_success(post_submessage(voter, message_id, "[1, 2]", msg_type="whatever"))
    assert [s["msg_type"] for s in fetch(voter, message_id)["submessages"]] == ["whatever", "whatever"]


# -- errors: each changes nothing ------------------------------------------------------------------


BAD, MISSING = "BAD_REQUEST", "REQUEST_VARIABLE_MISSING"


@pytest.mark.parametrize(
    ("params", "msg", "code"),
    [
        ({"content": "not json"}, "Invalid json for submessage", BAD),
        ({"content": '{"type": "vote", "key": "1,1", "vote": NaN}'}, "Invalid json for submessage", BAD),
        ({"content": "{} trailing"}, "Invalid json for submessage", BAD),
        ({"content": "[]"}, "poll data is not a dict", BAD),
        ({"content": '{"type": "bogus"}'}, "Unknown type for poll data: bogus", BAD),
        ({"content": '{"type": "vote"}'}, "key key is missing from poll data", BAD),
        ({"content": '{"type": "vote", "key": "1,1,", "vote": 99}'}, 'Invalid poll data["vote"]', BAD),
        ({"content": '{"type": "new_option", "idx": 1001, "option": "pizza"}'}, 'poll data["idx"] is too large', BAD),
        ({"msg_type": None}, "Missing 'msg_type' argument", MISSING),
        ({"content": None}, "Missing 'content' argument", MISSING),
        ({"message_id": None}, "Missing 'message_id' argument", MISSING),
        ({"message_id": "first"}, "message_id is not valid JSON", BAD),
        ({"message_id": "1.5"}, "message_id is not an integer", BAD),
        ({"message_id": str(2**63)}, "message_id is too large", BAD),
    ],
)
def test_bad_requests(live, voter, poll_id, params, msg, code):
    body = {"message_id": poll_id, "msg_type": "widget", "content": '{"type":"vote","key":"canned,0","vote":1}'}
    body.update(params)
    before = len(live.events())
    assert_error(voter.post("/submessage", {k: v for k, v in body.items() if v is not None}), msg, code)
    assert count_rows(live, "submessages") == 1 and submessage_events(live, before) == []


@pytest.mark.parametrize("message_id", [0, -1, 10**6, 2**63 - 1])
def test_unknown_messages(live, voter, poll_id, message_id):
    assert_error(post_submessage(voter, message_id, "{}"), INVALID_MESSAGE)
    assert count_rows(live, "submessages") == 1


def test_messages_the_user_may_not_read(live, voter):
    outsider = live.make_user(full_name="Outsider")
    make_channel(live, "secret", [live.owner.id], invite_only=True)
    secret = send_ok(live.owner, "secret", POLL)
    direct = send_direct_ok(live.owner, [voter.id], POLL)
    vote = '{"type":"vote","key":"canned,0","vote":1}'
    for message_id in (secret, direct):
        assert_error(post_submessage(outsider, message_id, vote), INVALID_MESSAGE)
    assert count_rows(live, "submessages") == 2


def test_no_credentials(live, poll_id):
    response = post_submessage(live.anonymous(), poll_id, "{}")
    assert response.status_code == 401 and response.json()["result"] == "error"


# -- the encoded-message cache ---------------------------------------------------------------------


def cached_ids(live):
    return live.read(lambda tx: {key for entries in directory(tx).messages.entries for key in entries})


def test_pages_show_new_submessages_through_the_cache(live, voter, poll_id):
    first = fetch(voter, poll_id)
    assert poll_id in cached_ids(live)
    assert fetch(voter, poll_id) == first  # served from the cache
    assert_success(post_submessage(voter, poll_id, '{"type":"vote","key":"canned,0","vote":1}'))
    assert poll_id not in cached_ids(live)  # the journal dropped it with the submessage's write
    after = fetch(voter, poll_id)
    assert [s["content"] for s in after["submessages"]][1] == '{"type":"vote","key":"canned,0","vote":1}'
    assert poll_id in cached_ids(live) and fetch(voter, poll_id) == after
    assert_error(post_submessage(voter, poll_id, "[]"), "poll data is not a dict")
    assert fetch(voter, poll_id) == after


def test_single_message_fetch_shows_submessages(live, voter, poll_id):
    body = assert_success(voter.get(f"/messages/{poll_id}"))
    assert [s["msg_type"] for s in body["message"]["submessages"]] == ["widget"]


# -- deleting and editing --------------------------------------------------------------------------


def test_deleting_a_message_deletes_its_submessages(live, voter, poll_id):
    assert_success(post_submessage(voter, poll_id, '{"type":"vote","key":"canned,0","vote":1}'))
    assert_success(live.owner.delete(f"/messages/{poll_id}"))
    assert count_rows(live, "submessages") == 0
    assert_error(post_submessage(voter, poll_id, "{}"), INVALID_MESSAGE)


def test_widget_content_cannot_be_edited_but_moves(live, voter, poll_id):
    assert_error(live.owner.patch(f"/messages/{poll_id}", {"content": "/poll Dinner?"}), "Widgets cannot be edited.")
    assert_error(live.owner.patch(f"/messages/{poll_id}", {"content": "plain now"}), "Widgets cannot be edited.")
    assert fetch(voter, poll_id)["content"] == "<p>/poll Lunch?<br>\npizza<br>\ntacos</p>"
    assert_success(live.owner.patch(f"/messages/{poll_id}", {"topic": "food"}))
    message = fetch(voter, poll_id)
    assert message["subject"] == "food" and len(message["submessages"]) == 1


def test_editing_a_plain_message_into_a_command_makes_no_widget(live, voter):
    """Zulip makes widgets on sending only: an edit to "/poll ..." stays text."""
    message_id = send_ok(live.owner, "general", "plain")
    assert_success(live.owner.patch(f"/messages/{message_id}", {"content": POLL}))
    assert fetch(voter, message_id)["submessages"] == []
