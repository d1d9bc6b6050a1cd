"""PATCH /messages/{id} content edits, the payload rules, and GET /messages/{id}."""

from __future__ import annotations

import hashlib

import pytest

from tests.support.channel_helpers import archive, make_channel
from tests.support.helpers import assert_error, assert_success
from tests.support.send_helpers import send_direct_ok, send_ok, stored, stored_flags

NO_EDIT = "You don't have permission to edit this message"
INVALID = "Invalid message(s)"


@pytest.fixture
def lunch_message(live):
    """A member (sender) and another member, both in the public channel "lunch" with one message."""
    sender = live.make_user(full_name="Sam Sender")
    other = live.make_user(full_name="Otto Other")
    channel_id = make_channel(live, "lunch", [live.owner.id, sender.id, other.id])
    message_id = send_ok(sender, "lunch", "hello **world**", "food")
    return live, sender, other, channel_id, message_id


def edit(client, message_id, **params):
    return client.patch(f"/messages/{message_id}", params)


def fetch(client, message_id, **params):
    return assert_success(client.get(f"/messages/{message_id}", params))


def test_sender_edits_content(lunch_message):
    live, sender, _, _, message_id = lunch_message
    sent_at = live.clock.now
    live.clock.advance(60)
    body = assert_success(edit(sender, message_id, content="goodbye *moon*"))
    assert body["detached_uploads"] == []
    got = fetch(sender, message_id)
    assert got["raw_content"] == "goodbye *moon*"
    message = got["message"]
    assert message["content"] == "<p>goodbye <em>moon</em></p>"
    assert message["last_edit_timestamp"] == int(sent_at) + 60
    assert "last_moved_timestamp" not in message
    assert message["edit_history"] == [
        {
            "user_id": sender.id,
            "timestamp": int(sent_at) + 60,
            "prev_content": "hello **world**",
            "prev_rendered_content": "<p>hello <strong>world</strong></p>",
        }
    ]
    row = stored(live, message_id)
    assert (row["content"], row["rendered_content"]) == ("goodbye *moon*", "<p>goodbye <em>moon</em></p>")


def test_edit_history_is_newest_first_in_get_messages(lunch_message):
    live, sender, other, channel_id, message_id = lunch_message
    assert_success(edit(sender, message_id, content="second"))
    live.clock.advance(10)
    assert_success(edit(sender, message_id, content="third"))
    body = assert_success(other.get("/messages", {"message_ids": [message_id]}))
    [message] = body["messages"]
    history = message["edit_history"]
    assert [entry["prev_content"] for entry in history] == ["second", "hello **world**"]
    assert history[0]["timestamp"] == history[1]["timestamp"] + 10
    assert message["last_edit_timestamp"] == history[0]["timestamp"]
    assert message["content"] == "<p>third</p>"


def test_only_the_sender_edits_content(lunch_message):
    live, _, other, _, message_id = lunch_message
    admin = live.make_user(role="admin")
    for client in (other, admin, live.owner):
        assert_error(edit(client, message_id, content="mine now"), NO_EDIT)
    # Even unchanged content: the permission is checked before anything else.
    assert_error(edit(other, message_id, content="hello **world**"), NO_EDIT)
    assert stored(live, message_id)["edit_history"] is None


def test_nothing_to_change(lunch_message):
    _, sender, _, channel_id, message_id = lunch_message
    same = [
        {}, {"content": "hello **world**"}, {"content": "hello **world**  \n"}, {"topic": "food"}, {"topic": "  food "},
        {"stream_id": channel_id}, {"content": "hello **world**", "topic": "food"},
    ]  # fmt: skip
    for params in same:
        assert_error(edit(sender, message_id, **params), "Nothing to change")


def test_emptied_content_becomes_deleted(lunch_message):
    live, sender, _, _, message_id = lunch_message
    assert_success(edit(sender, message_id, content="   \n "))
    assert stored(live, message_id)["content"] == "(deleted)"


def test_content_rules(lunch_message):
    live, sender, _, _, message_id = lunch_message
    assert_error(edit(sender, message_id, content="a\x00b"), "Message must not contain null bytes")
    assert_success(edit(sender, message_id, content="x" * 10050))
    content = stored(live, message_id)["content"]
    assert len(content) == 10000 and content.endswith("\n[message truncated]")


def test_unknown_or_unreadable_messages(lunch_message):
    live, sender, other, _, message_id = lunch_message
    assert_error(edit(sender, 999999, content="x"), INVALID)
    assert_error(edit(sender, 0, content="x"), INVALID)
    secret = make_channel(live, "secret", [live.owner.id], invite_only=True)
    hidden = send_ok(live.owner, secret, "private words", "plans")
    dm = send_direct_ok(live.owner, [sender.id], "just us")
    for message in (hidden, dm):
        assert_error(edit(other, message, topic="x"), INVALID)
        assert_error(other.get(f"/messages/{message}"), INVALID)
        assert_error(other.delete(f"/messages/{message}"), INVALID)


def test_archived_channel_messages_cannot_be_edited(lunch_message):
    live, sender, _, channel_id, message_id = lunch_message
    archive(live, channel_id)
    assert_error(edit(sender, message_id, content="x"), INVALID)
    # ... but can still be read.
    assert fetch(sender, message_id)["raw_content"] == "hello **world**"


def test_parameter_errors(lunch_message):
    _, sender, _, _, message_id = lunch_message
    assert_error(edit(sender, message_id, topic="x", propagate_mode="change_some"), "Invalid propagate_mode")
    assert_error(edit(sender, message_id, content="x", propagate_mode="change_all"),
                 "Invalid propagate_mode without topic edit")  # fmt: skip
    assert_error(edit(sender, message_id, stream_id="abc"), "stream_id is not valid JSON")
    assert_error(edit(sender, message_id, stream_id=-1), "stream_id is too small")
    assert_error(edit(sender, message_id, send_notification_to_old_thread="yes"),
                 "send_notification_to_old_thread is not valid JSON")  # fmt: skip
    body = assert_error(
        edit(sender, message_id, topic="a", subject="b"), "Can't decide between 'topic' and 'subject' arguments",
        "REQUEST_CONFUSING_VAR",
    )  # fmt: skip
    assert (body["var_name1"], body["var_name2"]) == ("topic", "subject")
    assert_error(
        edit(sender, message_id, content="x", stream_id=999), "Cannot change message content while changing channel"
    )


def sha256(text):
    return hashlib.sha256(text.encode()).hexdigest()


def test_prev_content_sha256_guards_against_a_concurrent_edit(lunch_message):
    # Zulip's feature level 379; the Zulip mobile app sends it with every edit.
    live, sender, _, _, message_id = lunch_message
    matching = sha256("hello **world**")
    assert_success(edit(sender, message_id, content="first", prev_content_sha256=matching))
    mismatch = ("'content' value does not match the expected value.", "EXPECTATION_MISMATCH")
    # A second editor still holding the old text is refused; nothing changes.
    assert_error(edit(sender, message_id, content="second", prev_content_sha256=matching), *mismatch)
    assert stored(live, message_id)["content"] == "first"
    # Any edit is checked, a topic move too (Zulip's rule).
    assert_error(edit(sender, message_id, topic="drinks", prev_content_sha256=matching), *mismatch)
    assert stored(live, message_id)["topic"] == "food"
    assert_success(edit(sender, message_id, content="second", prev_content_sha256=sha256("first")))
    assert stored(live, message_id)["content"] == "second"


def test_unknown_parameters_are_reported(lunch_message):
    _, sender, _, _, message_id = lunch_message
    body = assert_success(
        sender.patch(f"/messages/{message_id}", {"content": "new", "message_id": message_id, "color": "red"})
    )
    assert body["ignored_parameters_unsupported"] == ["color", "message_id"]


def test_direct_message_rules(live):
    alice, bob = live.make_user(), live.make_user()
    message_id = send_direct_ok(alice, [bob.id], "hi bob")
    channel_id = make_channel(live, "general", [alice.id])
    assert_error(edit(alice, message_id, topic="news"), "Direct messages cannot have topics.")
    assert_error(edit(alice, message_id, stream_id=channel_id), "Direct messages cannot be moved to channels.")
    assert_error(edit(bob, message_id, content="hi alice"), NO_EDIT)
    # An empty or "(no topic)" topic is no change for a direct message.
    assert_error(edit(alice, message_id, topic="(no topic)"), "Nothing to change")
    before = len(live.events())
    assert_success(edit(alice, message_id, content="hi **bob**"))
    [(event, audience)] = [(e, ids) for e, ids in live.events()[before:] if e["type"] == "update_message"]
    assert audience == sorted([alice.id, bob.id])
    assert "stream_id" not in event and "propagate_mode" not in event and "subject" not in event
    assert event["rendered_content"] == "<p>hi <strong>bob</strong></p>"
    assert fetch(bob, message_id)["message"]["edit_history"][0]["prev_content"] == "hi bob"


def test_content_edit_event(lunch_message):
    live, sender, other, channel_id, message_id = lunch_message
    outsider = live.make_user()  # not subscribed: the channel's history is public, but not to them
    live.write(lambda tx: tx.execute("UPDATE user_messages SET flags = 3 WHERE user_id = ?", (other.id,)))
    before = len(live.events())
    live.clock.advance(5)
    assert_success(edit(sender, message_id, content="updated"))
    events = [(e, ids) for e, ids in live.events()[before:] if e["type"] == "update_message"]
    by_flags = {tuple(e["flags"]): ids for e, ids in events}
    assert by_flags == {("read", "starred"): [other.id], (): sorted([live.owner.id, sender.id])}
    event = events[0][0]
    expected = {
        "type": "update_message", "user_id": sender.id, "edit_timestamp": int(live.clock.now),
        "message_id": message_id, "message_ids": [message_id], "rendering_only": False,
        "stream_name": "lunch", "stream_id": channel_id, "orig_content": "hello **world**",
        "orig_rendered_content": "<p>hello <strong>world</strong></p>", "content": "updated",
        "rendered_content": "<p>updated</p>", "is_me_message": False,
    }  # fmt: skip
    assert {k: v for k, v in event.items() if k != "flags"} == expected
    assert all(outsider.id not in ids for _, ids in events)


def test_shared_history_subscribers_hear_of_edits(lunch_message):
    live, sender, _, channel_id, message_id = lunch_message
    late = live.make_user()
    assert_success(late.post("/users/me/subscriptions", {"subscriptions": [{"name": "lunch"}]}))
    before = len(live.events())
    assert_success(edit(sender, message_id, content="updated"))
    events = {tuple(e["flags"]): ids for e, ids in live.events()[before:] if e["type"] == "update_message"}
    assert events[("read",)] == [late.id]


def test_mention_flags_follow_the_content(lunch_message):
    live, sender, other, _, message_id = lunch_message
    assert "mentioned" not in stored_flags(live, message_id)[other.id]
    assert_success(edit(sender, message_id, content="hey @**Otto Other**"))
    assert "mentioned" in stored_flags(live, message_id)[other.id]
    assert "mentioned" in fetch(other, message_id)["message"]["flags"]
    assert_success(edit(sender, message_id, content="hey @**all**"))
    assert stored_flags(live, message_id)[other.id] == ["stream_wildcard_mentioned", "wildcard_mentioned"]
    assert_success(edit(sender, message_id, content="hey nobody"))
    assert stored_flags(live, message_id)[other.id] == []


def test_edit_keeps_personal_flags(lunch_message):
    live, sender, other, _, message_id = lunch_message
    live.write(lambda tx: tx.execute("UPDATE user_messages SET flags = 3 WHERE user_id = ?", (other.id,)))
    assert_success(edit(sender, message_id, content="@**Otto Other** look"))
    assert stored_flags(live, message_id)[other.id] == ["read", "starred", "mentioned"]


def test_search_finds_edited_content(lunch_message):
    _, sender, other, _, message_id = lunch_message
    assert_success(edit(sender, message_id, content="bananas are yellow"))

    def search(words):
        narrow = [{"operator": "search", "operand": words}]
        body = assert_success(
            other.get("/messages", {"anchor": "newest", "num_before": 10, "num_after": 0, "narrow": narrow})
        )
        return [m["id"] for m in body["messages"]]

    assert search("bananas") == [message_id]
    assert search("world") == []


def test_get_message(lunch_message):
    live, sender, other, channel_id, message_id = lunch_message
    body = fetch(other, message_id)
    assert set(body) == {"result", "msg", "message", "raw_content"}
    message = body["message"]
    assert (message["id"], message["content"], message["content_type"]) == (
        message_id, "<p>hello <strong>world</strong></p>", "text/html",
    )  # fmt: skip
    assert message["flags"] == [] and message["stream_id"] == channel_id and message["subject"] == "food"
    raw = fetch(other, message_id, apply_markdown=False)["message"]
    assert (raw["content"], raw["content_type"]) == ("hello **world**", "text/x-markdown")
    # A public channel's history, read without a row: historical.
    outsider = live.make_user()
    assert fetch(outsider, message_id)["message"]["flags"] == ["read", "historical"]
    guest = live.make_user(role="guest")
    assert_error(guest.get(f"/messages/{message_id}"), INVALID)
    assert_error(other.get("/messages/999999"), INVALID)
    assert_error(other.get(f"/messages/{message_id}", {"apply_markdown": "yes"}), "apply_markdown is not valid JSON")


def test_general_chat_in_edit_history(lunch_message):
    live, sender, other, channel_id, _ = lunch_message
    message_id = send_ok(sender, "lunch", "chat", "")
    assert_success(edit(sender, message_id, topic="Menus"))
    assert_success(edit(sender, message_id, topic="general chat"))
    assert stored(live, message_id)["topic"] == ""
    shown = fetch(other, message_id)["message"]
    assert shown["subject"] == "general chat"
    assert [(e["prev_topic"], e["topic"]) for e in shown["edit_history"]] == [
        ("Menus", "general chat"), ("general chat", "Menus"),
    ]  # fmt: skip
    raw = fetch(other, message_id, allow_empty_topic_name=True)["message"]
    assert raw["subject"] == "" and [(e["prev_topic"], e["topic"]) for e in raw["edit_history"]] == [
        ("Menus", ""),
        ("", "Menus"),
    ]
    for allow, shown_topics in ((False, ("Menus", "general chat")), (True, ("Menus", ""))):
        params = {"message_ids": [message_id], "allow_empty_topic_name": allow}
        [message] = assert_success(other.get("/messages", params))["messages"]
        assert (message["edit_history"][0]["prev_topic"], message["edit_history"][0]["topic"]) == shown_topics


def test_zulip_client_edits_and_deletes(zulip_client, live):
    channel_id = make_channel(live, "client-edits", [live.owner.id])
    message_id = send_ok(live.owner, channel_id, "typo here", "tests")
    result = zulip_client.update_message({"message_id": message_id, "content": "no typo"})
    assert result["result"] == "success", result
    raw = zulip_client.get_raw_message(message_id)
    assert raw["raw_content"] == "no typo" and raw["message"]["edit_history"][0]["prev_content"] == "typo here"
    result = zulip_client.update_message({"message_id": message_id, "topic": "renamed", "propagate_mode": "change_all"})
    assert result["result"] == "success", result
    assert zulip_client.get_raw_message(message_id)["message"]["subject"] == "renamed"
    assert zulip_client.delete_message(message_id)["result"] == "success"
    assert zulip_client.get_raw_message(message_id) == {"result": "error", "msg": INVALID, "code": "BAD_REQUEST"}
