"""POST /messages/render: the Markdown preview, rendered exactly as sending would, storing nothing."""

from __future__ import annotations

from tests.support.channel_helpers import make_channel
from tests.support.helpers import assert_error, assert_success
from tests.support.send_helpers import send_ok


def render(client, content):
    return assert_success(client.post("/messages/render", {"content": content}))["rendered"]


def test_renders_like_sending(live):
    alice = live.make_user(full_name="Alice Smith")
    channel_id = make_channel(live, "design", [live.owner.id])
    content = "**Hi** @**Alice Smith** in #**design** see https://example.com\n\n```py\nx = 1\n```"
    rendered = render(live.owner, content)
    assert f'data-user-id="{alice.id}"' in rendered and f'data-stream-id="{channel_id}"' in rendered
    message_id = send_ok(live.owner, channel_id, content)
    stored = live.read(lambda tx: tx.value("SELECT rendered_content FROM messages WHERE id = ?", (message_id,)))
    assert rendered == stored


def test_stores_and_sends_nothing(live):
    alice = live.make_user(full_name="Alice Smith")
    render(live.owner, "warm up")
    before = live.call(lambda: live.server.db.conn.total_changes)
    count = len(live.events())
    render(live.owner, "@**Alice Smith** look")
    assert live.call(lambda: live.server.db.conn.total_changes) == before
    assert live.events()[count:] == []
    assert alice.id  # mentioned, yet told nothing


def test_private_channel_links_only_for_those_who_see_it(live):
    alice = live.make_user()
    make_channel(live, "secret", [live.owner.id], invite_only=True)
    assert "data-stream-id" in render(live.owner, "#**secret**")
    assert render(alice, "#**secret**") == "<p>#<strong>secret</strong></p>"


def test_empty_and_longest_content(live):
    assert render(live.owner, "") == ""
    assert render(live.owner, "x" * 10_000) == "<p>" + "x" * 10_000 + "</p>"


def test_errors(live):
    assert_error(live.owner.post("/messages/render", {}), "Missing 'content' argument", "REQUEST_VARIABLE_MISSING")
    response = live.owner.post("/messages/render", {"content": "x" * 10_001})
    assert_error(response, "content is too long (limit: 10000 characters)")
    assert live.owner.get("/messages/render").status_code == 405


def test_zulip_client_renders(live, zulip_client):
    assert zulip_client.render_message({"content": "**bold**"})["rendered"] == "<p><strong>bold</strong></p>"
