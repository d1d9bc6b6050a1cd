"""GET /messages/{message_id}/history: a message's snapshots, oldest first, and the HTML diff of each edit."""

from __future__ import annotations

from storage.messages.message_history import highlight_html_differences
from tests.support.channel_helpers import make_channel
from tests.support.helpers import assert_error, assert_success
from tests.support.send_helpers import send_direct_ok, send_ok


def history(client, message_id, **params):
    return assert_success(client.get(f"/messages/{message_id}/history", params))["message_history"]


def edit(client, message_id, **params):
    return assert_success(client.patch(f"/messages/{message_id}", params))


def test_never_edited_message_has_one_snapshot(live):
    channel_id = make_channel(live, "design", [live.owner.id])
    message_id = send_ok(live.owner, channel_id, "Hello **world**", topic="plans")
    assert history(live.owner, message_id) == [
        {"content": "Hello **world**", "rendered_content": "<p>Hello <strong>world</strong></p>",
         "timestamp": int(live.clock.now), "topic": "plans", "user_id": live.owner.id}
    ]  # fmt: skip


def test_content_topic_and_channel_edits(live):
    alice = live.make_user()
    design = make_channel(live, "design", [live.owner.id, alice.id])
    other = make_channel(live, "other", [live.owner.id, alice.id])
    sent_at = int(live.clock.now)
    message_id = send_ok(live.owner, design, "one two three", topic="plans")
    live.clock.advance(10)
    edit(live.owner, message_id, content="one 2 three four")
    live.clock.advance(10)
    edit(live.owner, message_id, topic="ideas")
    live.clock.advance(10)
    edit(live.owner, message_id, stream_id=other)
    snapshots = history(alice, message_id)
    assert snapshots == [
        {"content": "one two three", "rendered_content": "<p>one two three</p>", "timestamp": sent_at,
         "topic": "plans", "user_id": live.owner.id},
        {"content": "one 2 three four", "rendered_content": "<p>one 2 three four</p>", "timestamp": sent_at + 10,
         "topic": "plans", "user_id": live.owner.id, "prev_content": "one two three",
         "prev_rendered_content": "<p>one two three</p>",
         "content_html_diff": '<div><p>one <span class="highlight_text_deleted">two</span>'
                              '<span class="highlight_text_inserted">2</span> three'
                              '<span class="highlight_text_inserted"> four</span></p></div>'},
        {"content": "one 2 three four", "rendered_content": "<p>one 2 three four</p>", "timestamp": sent_at + 20,
         "topic": "ideas", "prev_topic": "plans", "user_id": live.owner.id},
        {"content": "one 2 three four", "rendered_content": "<p>one 2 three four</p>", "timestamp": sent_at + 30,
         "topic": "ideas", "user_id": live.owner.id, "prev_stream": design, "stream": other},
    ]  # fmt: skip


def test_empty_topic_is_shown_by_its_display_name_unless_allowed(live):
    channel_id = make_channel(live, "design", [live.owner.id])
    message_id = send_ok(live.owner, channel_id, "hi", topic="")
    edit(live.owner, message_id, topic="named")
    assert [(s["topic"], s.get("prev_topic")) for s in history(live.owner, message_id)] == [
        ("general chat", None), ("named", "general chat"),
    ]  # fmt: skip
    snapshots = history(live.owner, message_id, allow_empty_topic_name=True)
    assert [(s["topic"], s.get("prev_topic")) for s in snapshots] == [("", None), ("named", "")]


def test_direct_message_history(live):
    alice = live.make_user()
    message_id = send_direct_ok(live.owner, [alice.id], "first")
    edit(live.owner, message_id, content="second")
    snapshots = history(alice, message_id)
    assert [(s["content"], s["topic"]) for s in snapshots] == [("first", ""), ("second", "")]


def test_only_readers_see_the_history(live):
    alice, outsider = live.make_user(), live.make_user()
    direct_id = send_direct_ok(live.owner, [alice.id], "between us")
    secret = make_channel(live, "secret", [live.owner.id], invite_only=True)
    private_id = send_ok(live.owner, secret, "hidden")
    for message_id in (direct_id, private_id, 99999):
        assert_error(outsider.get(f"/messages/{message_id}/history"), "Invalid message(s)")
    assert_error(live.owner.get("/messages/99999999999999999999/history"), "Not Found", status=404)


def test_refused_while_the_realm_hides_edit_history(live):
    message_id = send_direct_ok(live.owner, [live.owner.id], "me")
    assert_success(live.owner.patch("/realm", {"allow_edit_history": "false"}))
    for message in (message_id, 99999):  # checked before the message: nothing is revealed
        assert_error(
            live.owner.get(f"/messages/{message}/history"), "Message edit history is disabled in this organization"
        )
    assert_success(live.owner.patch("/realm", {"allow_edit_history": "true"}))
    assert len(history(live.owner, message_id)) == 1


def test_bad_parameter(live):
    message_id = send_direct_ok(live.owner, [live.owner.id], "me")
    response = live.owner.get(f"/messages/{message_id}/history", {"allow_empty_topic_name": "perhaps"})
    assert_error(response, "allow_empty_topic_name is not valid JSON")


def test_html_diff_keeps_tags_of_the_new_version():
    before = "<p>a <strong>b</strong> c</p>"
    after = "<p>a <em>b</em> d</p><p>new</p>"
    assert highlight_html_differences(before, after) == (
        '<div><p>a <em>b</em> <span class="highlight_text_deleted">c</span>'
        '<span class="highlight_text_inserted">d</span></p>'
        '<p><span class="highlight_text_inserted">new</span></p></div>'
    )
    assert highlight_html_differences("<p>same</p>", "<p>same</p>") == "<div><p>same</p></div>"


def test_zulip_client_reads_history(live, zulip_client):
    message_id = send_direct_ok(live.owner, [live.owner.id], "draft")
    edit(live.owner, message_id, content="final")
    result = zulip_client.get_message_history(message_id)
    assert [s["content"] for s in result["message_history"]] == ["draft", "final"]
