"""The `zulip` package (the Python API client) and its `zulip-send` command, for every endpoint clients call.

Each test calls the package's own method (or `call_endpoint` where it has none), as a user's script
would, and checks the answer and what the server then holds.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys

import pytest
import zulip

from tests.support.helpers import assert_success
from tornchat.bootstrap import write_zuliprc

pytestmark = pytest.mark.client
# A 1x1 transparent PNG.
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da63f8ffff3f0005fe02fe"
    "a7d605c20000000049454e44ae426082"
)


def ok(response):  # type: ignore[no-untyped-def]
    assert response["result"] == "success", response
    return response


@pytest.fixture
def bob_with_client(live, tmp_path, general):
    """A second user, subscribed to #general, with a zulip client of his own."""
    client = live.make_user(email="bob@example.com", full_name="Bob")
    assert_success(client.post("/users/me/subscriptions", {"subscriptions": [{"name": "general"}]}))
    path = str(tmp_path / "bob-zuliprc")
    write_zuliprc(path, "bob@example.com", client.api_key, live.base_url)
    return client, zulip.Client(config_file=path)


def send(client, topic="lunch", content="hello"):  # type: ignore[no-untyped-def]
    return ok(client.send_message({"type": "stream", "to": "general", "topic": topic, "content": content}))["id"]


# -- presence and typing ------------------------------------------------------------------------


def test_presence_update_user_and_realm(zulip_client, live, bob_with_client):
    _, bob_client = bob_with_client
    answer = ok(zulip_client.update_presence({"status": "active", "new_user_input": "true"}))
    assert "presences" in answer
    ok(bob_client.update_presence({"status": "idle"}))
    # Zulip counts a user's first report as activity, whatever its status: later idle reports are idle.
    live.clock.advance(10 * 60)
    ok(bob_client.update_presence({"status": "idle"}))
    ok(zulip_client.update_presence({"status": "active", "new_user_input": "true"}))
    owner = ok(bob_client.get_user_presence("owner@example.com"))["presence"]
    assert owner["aggregated"]["status"] == "active"
    realm = ok(zulip_client.get_realm_presence())["presences"]
    assert realm["owner@example.com"]["aggregated"]["status"] == "active"
    assert realm["bob@example.com"]["aggregated"]["status"] == "idle"


def test_typing_reaches_the_other_person(zulip_client, live, bob_with_client):
    bob_http, _ = bob_with_client
    count = len(live.events())
    ok(zulip_client.set_typing_status({"op": "start", "to": [bob_http.id]}))
    typing = [(e, ids) for e, ids in live.events()[count:] if e["type"] == "typing"]
    assert [(e["op"], e["sender"]["user_id"]) for e, _ in typing] == [("start", live.owner.id)]
    assert bob_http.id in typing[0][1]
    ok(zulip_client.set_typing_status({"op": "stop", "to": [bob_http.id]}))


def test_typing_in_a_topic(zulip_client, live, general, bob_with_client):
    request = {"type": "stream", "op": "start", "stream_id": general, "topic": "lunch"}
    ok(zulip_client.set_typing_status(request))


# -- topics, history, preview ---------------------------------------------------------------------


def test_stream_topics(zulip_client, general):
    first = send(zulip_client, "lunch")
    latest = send(zulip_client, "design")
    topics = ok(zulip_client.get_stream_topics(general))["topics"]
    assert [(t["name"], t["max_id"]) for t in topics] == [("design", latest), ("lunch", first)]


def test_message_history(zulip_client, general):
    message_id = send(zulip_client, content="first words")
    ok(zulip_client.update_message({"message_id": message_id, "content": "second words"}))
    history = ok(zulip_client.get_message_history(message_id))["message_history"]
    assert [h["content"] for h in history] == ["first words", "second words"]
    assert history[1]["prev_content"] == "first words"


def test_render_message(zulip_client):
    rendered = ok(zulip_client.render_message({"content": "**bold** :wave:"}))["rendered"]
    assert rendered.startswith("<p><strong>bold</strong> <span")
    assert ":wave:</span>" in rendered


# -- alert words, emoji, topic visibility -------------------------------------------------------


def test_alert_words(zulip_client):
    assert ok(zulip_client.get_alert_words())["alert_words"] == []
    # Zulip keeps a word as first written and matches it ignoring case.
    assert sorted(ok(zulip_client.add_alert_words(["lunch", "Deploy"]))["alert_words"]) == ["Deploy", "lunch"]
    assert ok(zulip_client.remove_alert_words(["lunch"]))["alert_words"] == ["Deploy"]
    assert ok(zulip_client.get_alert_words())["alert_words"] == ["Deploy"]


def test_alert_word_flags_a_new_message(zulip_client, live, bob_with_client):
    _, bob_client = bob_with_client
    ok(zulip_client.add_alert_words(["deploy"]))
    message_id = send(bob_client, content="time to deploy")
    messages = ok(zulip_client.get_messages({"anchor": message_id, "num_before": 0, "num_after": 0}))["messages"]
    assert "has_alert_word" in messages[0]["flags"]


def test_realm_emoji_upload_and_list(zulip_client):
    assert ok(zulip_client.get_realm_emoji())["emoji"] == {}
    image = io.BytesIO(PNG)
    image.name = "parrot.png"
    ok(zulip_client.upload_custom_emoji("party_parrot", image))
    emoji = ok(zulip_client.get_realm_emoji())["emoji"]
    [entry] = emoji.values()
    assert (entry["name"], entry["deactivated"]) == ("party_parrot", False)


def test_mute_topic_legacy_and_user_topics(zulip_client, live, general):
    send(zulip_client, "lunch")
    ok(zulip_client.mute_topic({"op": "add", "stream": "general", "topic": "lunch"}))
    state = ok(zulip_client.register(fetch_event_types=["user_topic"]))
    assert [(t["stream_id"], t["topic_name"], t["visibility_policy"]) for t in state["user_topics"]] == [
        (general, "lunch", 1)
    ]
    request = {"stream_id": general, "topic": "lunch", "visibility_policy": 3}
    ok(zulip_client.call_endpoint("user_topics", method="POST", request=request))
    state = ok(zulip_client.register(fetch_event_types=["user_topic"]))
    assert [t["visibility_policy"] for t in state["user_topics"]] == [3]


# -- uploads ------------------------------------------------------------------------------------


def test_upload_fetch_list_and_remove_a_file(zulip_client, live, general):
    upload = io.BytesIO(b"meeting notes\n")
    upload.name = "notes.txt"
    uploaded = ok(zulip_client.upload_file(upload))
    url = uploaded["url"]
    assert url.startswith("/user_uploads/") and url.endswith("/notes.txt")
    fetched = live.owner.session.get(live.base_url + url)
    assert (fetched.status_code, fetched.content) == (200, b"meeting notes\n")
    send(zulip_client, content=f"[notes.txt]({url})")
    attachments = ok(zulip_client.get_attachments())["attachments"]
    assert [a["name"] for a in attachments] == ["notes.txt"]
    ok(zulip_client.call_endpoint(f"attachments/{attachments[0]['id']}", method="DELETE"))
    assert ok(zulip_client.get_attachments())["attachments"] == []


# -- zulip-send ---------------------------------------------------------------------------------


def zulip_send(config_file: str, *args: str) -> subprocess.CompletedProcess[str]:
    command = os.path.join(os.path.dirname(sys.executable), "zulip-send")
    return subprocess.run([command, "--config-file", config_file, *args], capture_output=True, text=True, timeout=60)


def test_zulip_send_to_a_channel_and_a_person(zulip_client, live, tmp_path, bob_with_client):
    path = str(tmp_path / "zuliprc")
    write_zuliprc(path, "owner@example.com", live.owner.api_key, live.base_url)
    to_channel = zulip_send(path, "--stream", "general", "--subject", "cli", "--message", "sent by zulip-send")
    assert to_channel.returncode == 0, to_channel.stderr
    to_person = zulip_send(path, "bob@example.com", "--message", "psst from zulip-send")
    assert to_person.returncode == 0, to_person.stderr
    messages = ok(zulip_client.get_messages({"anchor": "newest", "num_before": 2, "num_after": 0}))["messages"]
    assert [(m["type"], m["content"]) for m in messages] == [
        ("stream", "<p>sent by zulip-send</p>"),
        ("private", "<p>psst from zulip-send</p>"),
    ]
    assert (messages[0]["display_recipient"], messages[0]["subject"]) == ("general", "cli")


def test_zulip_send_reports_an_unknown_channel(live, tmp_path):
    path = str(tmp_path / "zuliprc")
    write_zuliprc(path, "owner@example.com", live.owner.api_key, live.base_url)
    result = zulip_send(path, "--stream", "nowhere", "--subject", "cli", "--message", "lost")
    assert result.returncode != 0
    assert "Channel 'nowhere' does not exist" in result.stdout + result.stderr
