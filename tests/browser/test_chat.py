"""The web client as two people use it, in two browser contexts: live messages, unread counts, reactions,
drafts across tabs, send-later, a long history loaded page by page, and message HTML that never runs."""

from __future__ import annotations

import json
import time
import urllib.parse
from dataclasses import dataclass
from typing import Any

import pytest

from storage.model import flags
from tests.browser.helpers import Browser, wait_until
from tests.support.channel_helpers import make_channel
from tests.support.helpers import Client, LiveServer, assert_success
from tests.support.scheduled_helpers import deliver
from tests.support.send_helpers import insert_messages, send_ok

pytestmark = pytest.mark.client

HISTORY = 2000


@dataclass
class Team:
    live: LiveServer
    browser: Browser
    bob: Client
    general: int
    history: int
    alice_page: Any  # the owner ("Alice" here), signed in
    bob_page: Any

    def channel_item(self, page: Any, stream_id: int) -> Any:
        return page.locator(f'[data-testid="channel-item"][data-stream-id="{stream_id}"]')

    def unread(self, page: Any, stream_id: int) -> str:
        counts = self.channel_item(page, stream_id).get_by_test_id("unread-count")
        return counts.first.inner_text().strip() if counts.count() else ""

    def open_channel(self, page: Any, stream_id: int) -> None:
        self.channel_item(page, stream_id).locator("a, button").first.click()
        page.get_by_test_id("message-list").wait_for()

    def message(self, page: Any, message_id: int) -> Any:
        return page.locator(f'[data-testid="message"][data-message-id="{message_id}"]')


@pytest.fixture(scope="module")
def chat_team(server: LiveServer, browser: Browser) -> Team:
    bob = server.make_user(email="bob@example.com", full_name="Bob Builder")
    general = make_channel(server, "general", [server.owner.id, bob.id])
    history = make_channel(server, "history", [server.owner.id])
    send_ok(server.owner, "history", "the first of many", topic="bulk")
    insert_messages(server, server.owner.id, history, HISTORY - 1, flag_bits=flags.READ)
    alice = browser.sign_in("owner@example.com")
    bob_page = browser.sign_in("bob@example.com")
    return Team(server, browser, bob, general, history, alice, bob_page)


def compose_to_channel(page: Any, stream_id: int, topic: str) -> None:
    page.get_by_test_id("compose-type").select_option("stream")
    page.get_by_test_id("compose-channel").select_option(str(stream_id))
    page.get_by_test_id("compose-topic").fill(topic)


def newest_id(client: Client) -> int:
    body = assert_success(client.get("/messages", {"anchor": "newest", "num_before": 1, "num_after": 0}))
    return body["messages"][-1]["id"]


def test_a_message_appears_live_for_the_other_person_with_its_unread_count(chat_team):
    bob_page = chat_team.bob_page
    bob_page.get_by_test_id("view-starred").click()
    compose_to_channel(chat_team.alice_page, chat_team.general, "lunch")
    chat_team.alice_page.get_by_test_id("compose-content").fill("lunch at noon?")
    chat_team.alice_page.get_by_test_id("compose-content").press("Enter")
    wait_until(
        lambda: chat_team.unread(bob_page, chat_team.general) == "1", "Bob's unread count of #general to become 1"
    )
    sent = newest_id(chat_team.bob)
    chat_team.open_channel(bob_page, chat_team.general)
    chat_team.message(bob_page, sent).get_by_test_id("message-content").wait_for()
    assert chat_team.message(bob_page, sent).get_by_test_id("message-content").inner_text().strip() == "lunch at noon?"
    assert "Owner" in chat_team.message(bob_page, sent).get_by_test_id("message-sender").inner_text()
    # Seen, so read: the count goes, on the server too.
    wait_until(lambda: chat_team.unread(bob_page, chat_team.general) == "", "Bob's unread count of #general to clear")
    wait_until(lambda: "read" in _flags(chat_team.bob, sent), "the message to be marked read on the server")
    # While Bob looks at #general, the next message appears without a reload.
    chat_team.alice_page.get_by_test_id("compose-content").fill("or at one")
    chat_team.alice_page.get_by_test_id("compose-send").click()
    bob_page.get_by_text("or at one").wait_for()
    assert chat_team.alice_page.get_by_test_id("compose-content").input_value() == ""


def _flags(client: Client, message_id: int) -> list[str]:
    body = assert_success(client.get("/messages", {"anchor": message_id, "num_before": 0, "num_after": 0}))
    return body["messages"][0]["flags"]


def test_a_reaction_appears_for_the_author(chat_team):
    message_id = send_ok(chat_team.live.owner, "general", "react to this", topic="reactions")
    chat_team.open_channel(chat_team.alice_page, chat_team.general)
    chat_team.message(chat_team.alice_page, message_id).wait_for()
    bob_message = chat_team.message(chat_team.bob_page, message_id)
    bob_message.wait_for()
    bob_message.hover()
    bob_message.get_by_test_id("react-button").click()
    picker = chat_team.bob_page.get_by_test_id("emoji-picker")
    picker.get_by_test_id("emoji-filter").fill("thumbs_up")
    picker.locator('[data-testid="emoji-option"][data-emoji-name="thumbs_up"]').click()
    thumbs_up = '[data-testid="reaction"][data-emoji-name="thumbs_up"]'
    reaction = chat_team.message(chat_team.alice_page, message_id).locator(thumbs_up)
    reaction.wait_for()
    assert "1" in reaction.inner_text()
    mine = chat_team.message(chat_team.bob_page, message_id).locator(thumbs_up)
    wait_until(lambda: mine.get_attribute("aria-pressed") == "true", "Bob's reaction to show as his")
    body = assert_success(chat_team.live.owner.get(f"/messages/{message_id}"))
    assert [(r["emoji_name"], r["user_id"]) for r in body["message"]["reactions"]] == [("thumbs_up", chat_team.bob.id)]


def test_a_draft_typed_in_one_tab_appears_in_the_other(chat_team):
    first = chat_team.alice_page
    second = chat_team.browser.sign_in("owner@example.com", page=chat_team.browser.new_page(context=first.context))
    for page in (first, second):
        chat_team.open_channel(page, chat_team.general)
        compose_to_channel(page, chat_team.general, "plans")
    first.get_by_test_id("compose-content").fill("a draft for later")
    wait_until(
        lambda: any(d["content"] == "a draft for later" for d in _drafts(chat_team.live.owner)), "the draft to be saved"
    )
    wait_until(
        lambda: second.get_by_test_id("compose-content").input_value() == "a draft for later",
        "the draft to appear in the other tab",
    )
    first.get_by_test_id("compose-content").fill("")
    wait_until(lambda: not _drafts(chat_team.live.owner), "the emptied draft to be deleted")
    second.close()


def _drafts(client: Client) -> list[dict[str, Any]]:
    return assert_success(client.get("/drafts"))["drafts"]


def test_send_later_delivers_at_the_scheduled_time(chat_team):
    page = chat_team.alice_page
    chat_team.open_channel(page, chat_team.general)
    compose_to_channel(page, chat_team.general, "later")
    page.get_by_test_id("compose-content").fill("sent from the past")
    page.get_by_test_id("compose-send-later").click()
    at = int(chat_team.live.clock.now) // 60 * 60 + 2 * 3600
    page.get_by_test_id("schedule-time").fill(time.strftime("%Y-%m-%dT%H:%M", time.gmtime(at)))
    page.get_by_test_id("schedule-confirm").click()
    wait_until(lambda: _scheduled(chat_team.live.owner), "the message to be scheduled")
    [scheduled] = _scheduled(chat_team.live.owner)
    assert scheduled["scheduled_delivery_timestamp"] == at and scheduled["content"] == "sent from the past"
    assert page.get_by_test_id("compose-content").input_value() == ""
    page.get_by_test_id("scheduled-open").click()
    page.locator(f'[data-testid="scheduled-item"][data-scheduled-id="{scheduled["scheduled_message_id"]}"]').wait_for()
    page.keyboard.press("Escape")
    chat_team.open_channel(chat_team.bob_page, chat_team.general)
    chat_team.live.clock.advance(2 * 3600 + 60)
    [delivered] = deliver(chat_team.live)
    chat_team.message(chat_team.bob_page, delivered).get_by_text("sent from the past").wait_for()
    wait_until(lambda: not _scheduled(chat_team.live.owner), "the scheduled message to leave the list")


def _scheduled(client: Client) -> list[dict[str, Any]]:
    return assert_success(client.get("/scheduled_messages"))["scheduled_messages"]


def test_scrolling_up_loads_older_pages_never_the_whole_history(chat_team):
    page = chat_team.alice_page
    requests: list[dict[str, str]] = []

    def record(request: Any) -> None:
        url = urllib.parse.urlsplit(request.url)
        if request.method == "GET" and url.path == "/api/v1/messages":
            requests.append(dict(urllib.parse.parse_qsl(url.query)))

    page.on("request", record)
    try:
        chat_team.open_channel(page, chat_team.history)
        messages = page.get_by_test_id("message")
        wait_until(lambda: messages.count() > 0, "the newest page of #history")
        first_page = messages.count()
        oldest = int(messages.first.get_attribute("data-message-id"))
        for _ in range(3):
            page.get_by_test_id("message-list").evaluate("list => { list.scrollTop = 0; }")
            wait_until(
                lambda: int(messages.first.get_attribute("data-message-id")) < oldest,  # noqa: B023
                "an older page to load",
            )
            oldest = int(messages.first.get_attribute("data-message-id"))
    finally:
        page.remove_listener("request", record)
    shown = messages.count()
    assert first_page < shown < HISTORY
    history = [r for r in requests if _channel_of(r.get("narrow", "[]")) in (chat_team.history, "history")]
    assert len(history) >= 4, requests
    for request in history:
        assert int(request["num_before"]) + int(request["num_after"]) <= 1000, request
    assert sum(int(r["num_before"]) + int(r["num_after"]) for r in history) < HISTORY, history
    assert history[0]["anchor"] in ("first_unread", "newest"), history[0]
    assert all(r["anchor"].isdigit() for r in history[1:]), history


def _channel_of(narrow: str) -> object:
    terms = json.loads(narrow)
    return next((t["operand"] for t in terms if t["operator"] in ("channel", "stream")), None)


def test_message_html_never_runs(chat_team):
    page = chat_team.bob_page
    chat_team.open_channel(page, chat_team.general)
    hostile = [
        "<script>window.__pwned = 'script'</script>",
        "<img src=x onerror=\"window.__pwned = 'img'\">",
        "[click](javascript:window.__pwned='link')",
        "<svg onload=\"window.__pwned = 'svg'\"></svg>",
    ]
    ids = [send_ok(chat_team.live.owner, "general", content, topic="hostile") for content in hostile]
    for message_id in ids:
        chat_team.message(page, message_id).get_by_test_id("message-content").wait_for()
    contents = page.get_by_test_id("message-content")
    assert page.locator('[data-testid="message-content"] :is(script, svg, [onerror], [onload])').count() == 0
    assert page.locator('[data-testid="message-content"] a[href^="javascript:"]').count() == 0
    shown = chat_team.message(page, ids[0]).get_by_test_id("message-content").inner_text()
    assert "<script>" in shown
    time.sleep(0.3)  # the browser is another process: an image's error handler would have run by now
    assert page.evaluate("window.__pwned") is None
    assert contents.count() >= len(hostile)


def test_an_empty_channels_first_message_ends_no_messages_yet(chat_team):
    quiet = make_channel(chat_team.live, "quiet", [chat_team.live.owner.id, chat_team.bob.id])
    bob_page = chat_team.bob_page
    chat_team.channel_item(bob_page, quiet).wait_for()
    chat_team.open_channel(bob_page, quiet)
    status = bob_page.get_by_test_id("list-status")
    status.get_by_text("No messages here yet.").wait_for()
    send_ok(chat_team.live.owner, "quiet", "the first words here", topic="hello")
    bob_page.get_by_text("the first words here").wait_for()
    assert status.inner_text().strip() == "Beginning of this conversation"


def test_a_message_deleted_as_it_is_marked_read_shows_no_error(chat_team):
    """The message is deleted between the page's read-flag request and the server's answer: the server
    refuses the batch ("Invalid message(s)"), the delete event follows, and the page says nothing."""
    bob_page = chat_team.bob_page
    chat_team.open_channel(bob_page, chat_team.general)
    deleted: list[int] = []

    def delete_then_continue(route: Any) -> None:
        ids = json.loads(urllib.parse.parse_qs(route.request.post_data or "").get("messages", ["[]"])[0])
        if not deleted and ids:
            for message_id in ids:
                assert_success(chat_team.live.owner.delete(f"/messages/{message_id}"))
            deleted.extend(ids)
        route.continue_()

    bob_page.route("**/api/v1/messages/flags", delete_then_continue)
    try:
        sent = send_ok(chat_team.live.owner, "general", "gone in a moment", topic="race")
        for _ in range(100):
            if deleted:
                break
            bob_page.wait_for_timeout(100)
        assert deleted == [sent]
        bob_page.wait_for_timeout(3000)  # past the page's grace for the delete event, and its retry
        assert bob_page.get_by_text("Could not mark messages as read").count() == 0
        assert chat_team.message(bob_page, sent).count() == 0
    finally:
        bob_page.unroute("**/api/v1/messages/flags")


def test_moving_to_another_channel_leaves_the_message_being_written_where_it_was(chat_team):
    alice = chat_team.alice_page
    chat_team.open_channel(alice, chat_team.general)
    compose_to_channel(alice, chat_team.general, "roadmap")
    alice.get_by_test_id("compose-content").fill("the plan for next week")
    chat_team.open_channel(alice, chat_team.history)
    assert alice.get_by_test_id("compose-channel").input_value() == str(chat_team.general)
    assert alice.get_by_test_id("compose-topic").input_value() == "roadmap"
    assert alice.get_by_test_id("compose-content").input_value() == "the plan for next week"
    alice.get_by_test_id("compose-send").click()

    def newest() -> tuple[str, str, int]:
        body = assert_success(chat_team.bob.get("/messages", {"anchor": "newest", "num_before": 1, "num_after": 0}))
        message = body["messages"][-1]
        return message["content"], message["subject"], message["stream_id"]

    wait_until(lambda: "the plan" in newest()[0], "the message to arrive")
    assert newest() == ("<p>the plan for next week</p>", "roadmap", chat_team.general)


def test_no_page_broke_the_content_security_policy(chat_team):
    assert chat_team.browser.console.csp_violations() == []
    assert [line for line in chat_team.browser.console.lines if line.startswith("pageerror")] == []
