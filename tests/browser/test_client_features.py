"""The web client's reading and writing features beyond the two-person tests: opening at the first unread
message and marking what is seen as read, topics with unread counts, editing, starring, searching,
deleting, snippets, managing scheduled messages, direct messages, and a lost event queue."""

from __future__ import annotations

import json
import time
import urllib.parse
from dataclasses import dataclass
from typing import Any

import pytest

from tests.browser.helpers import Browser, wait_until
from tests.support.channel_helpers import make_channel
from tests.support.helpers import Client, LiveServer, assert_success
from tests.support.send_helpers import send_ok

pytestmark = pytest.mark.client


@dataclass
class Setup:
    live: LiveServer
    browser: Browser
    carol: Client
    town: int  # carol and the owner
    page: Any  # carol, signed in


@pytest.fixture(scope="module")
def carol_in_town(server: LiveServer, browser: Browser) -> Setup:
    carol = server.make_user(email="carol@example.com", full_name="Carol Castle")
    town = make_channel(server, "town", [server.owner.id, carol.id])
    return Setup(server, browser, carol, town, browser.sign_in("carol@example.com"))


def channel_link(page: Any, stream_id: int) -> Any:
    return page.locator(f'[data-testid="channel-item"][data-stream-id="{stream_id}"] button').first


def message(page: Any, message_id: int) -> Any:
    return page.locator(f'[data-testid="message"][data-message-id="{message_id}"]')


def write_in_topic(page: Any, stream_id: int, topic: str, content: str) -> None:
    """Opens the channel and writes content under topic in the compose box, unsent."""
    channel_link(page, stream_id).click()
    page.get_by_test_id("compose-topic").fill(topic)
    page.get_by_test_id("compose-content").fill(content)


def send_in_topic(page: Any, stream_id: int, topic: str, content: str) -> int:
    """Sends content with Enter and returns the id of the message once the page shows it."""
    write_in_topic(page, stream_id, topic, content)
    page.get_by_test_id("compose-content").press("Enter")
    shown = page.locator('[data-testid="message"]', has_text=content)
    shown.wait_for()
    return int(shown.get_attribute("data-message-id"))


def flags_of(client: Client, message_id: int) -> list[str]:
    body = assert_success(client.get("/messages", {"anchor": message_id, "num_before": 0, "num_after": 0}))
    return body["messages"][0]["flags"]


def api_requests(page: Any, path: str) -> list[tuple[str, dict[str, str]]]:
    """Record (method, params) of the page's requests to /api/v1<path> from now on."""
    seen: list[tuple[str, dict[str, str]]] = []

    def record(request: Any) -> None:
        url = urllib.parse.urlsplit(request.url)
        if url.path == "/api/v1" + path:
            params = dict(urllib.parse.parse_qsl(url.query or (request.post_data or "")))
            seen.append((request.method, params))

    page.on("request", record)
    return seen


def test_opens_at_the_first_unread_message_and_marks_what_is_seen_as_read(carol_in_town):
    page, carol = carol_in_town.page, carol_in_town.carol
    page.get_by_test_id("view-starred").click()  # out of the way: a view showing them would read them
    channel = make_channel(carol_in_town.live, "long", [carol_in_town.live.owner.id, carol.id])
    ids = [send_ok(carol_in_town.live.owner, "long", f"line {n}", topic="counting") for n in range(130)]
    assert_success(carol.post("/messages/flags", {"messages": ids[:100], "op": "add", "flag": "read"}))
    fetches = api_requests(page, "/messages")
    marks = api_requests(page, "/messages/flags")
    channel_link(page, channel).click()
    first_unread = message(page, ids[100])
    first_unread.wait_for()
    assert fetches[0][1]["anchor"] == "first_unread"
    assert int(fetches[0][1]["num_before"]) <= 100 and int(fetches[0][1]["num_after"]) <= 100
    # The first unread message is on screen, with read history above it to scroll back to.
    assert first_unread.is_visible() and message(page, ids[99]).count() == 1
    box, area = first_unread.bounding_box(), page.get_by_test_id("message-list").bounding_box()
    assert area["y"] <= box["y"] < area["y"] + area["height"]
    wait_until(lambda: "read" in flags_of(carol, ids[100]), "the first unread message to be marked read")
    assert first_unread.get_attribute("data-read") == "true"
    # Seen messages go in batches, never one request per message; the last ones are below the fold.
    batches = [json.loads(p["messages"]) for method, p in marks if p.get("flag") == "read" and p.get("op") == "add"]
    assert batches and max(len(b) for b in batches) > 1
    assert "read" not in flags_of(carol, ids[-1])


def test_topics_of_the_selected_channel_show_their_unread_counts(carol_in_town):
    page = carol_in_town.page
    send_ok(carol_in_town.live.owner, "town", "about the fair", topic="fair")
    send_ok(carol_in_town.live.owner, "town", "about the fair again", topic="fair")
    channel_link(page, carol_in_town.town).click()
    topic = page.locator(f'[data-testid="topic-item"][data-stream-id="{carol_in_town.town}"][data-topic="fair"]')
    topic.wait_for()
    # Opening the channel shows (and so reads) its messages: the counts go to zero as they are seen.
    wait_until(lambda: topic.get_by_test_id("unread-count").inner_text() == "", "the topic's count to clear")
    topic.locator("button").click()
    wait_until(lambda: page.get_by_test_id("narrow-title").inner_text().endswith("fair"), "the topic narrow")
    assert page.get_by_test_id("compose-topic").input_value() == "fair"


def test_edit_star_search_and_delete_an_own_message(carol_in_town):
    page, carol = carol_in_town.page, carol_in_town.carol
    message_id = send_in_topic(page, carol_in_town.town, "edits", "first wording")
    mine = message(page, message_id)
    mine.hover()
    mine.get_by_test_id("edit-button").click()
    page.get_by_test_id("edit-content").fill("second wording")
    page.get_by_test_id("edit-save").click()
    mine.get_by_test_id("message-edited").wait_for()
    assert mine.get_by_test_id("message-content").inner_text().strip() == "second wording"
    assert assert_success(carol.get(f"/messages/{message_id}"))["raw_content"] == "second wording"
    mine.get_by_test_id("star-button").click()
    wait_until(lambda: mine.get_by_test_id("star-button").get_attribute("aria-pressed") == "true", "the star")
    assert "starred" in flags_of(carol, message_id)
    page.get_by_test_id("view-starred").click()
    message(page, message_id).wait_for()
    searches = api_requests(page, "/messages")
    page.get_by_test_id("search-input").fill("second wording")
    page.get_by_test_id("search-input").press("Enter")
    wait_until(lambda: searches, "the search request")
    assert json.loads(searches[0][1]["narrow"]) == [{"operator": "search", "operand": "second wording"}]
    message(page, message_id).wait_for()
    message(page, message_id).hover()
    message(page, message_id).get_by_test_id("delete-button").click()
    page.get_by_test_id("delete-confirm").click()
    message(page, message_id).wait_for(state="detached")
    assert carol.get(f"/messages/{message_id}").status_code == 400


def test_a_snippet_goes_into_the_box_and_shift_enter_makes_a_newline(carol_in_town):
    page, carol = carol_in_town.page, carol_in_town.carol
    channel_link(page, carol_in_town.town).click()
    page.get_by_test_id("compose-topic").fill("snippets")
    page.get_by_test_id("snippet-open").click()
    page.get_by_test_id("snippet-title").fill("Greeting")
    page.get_by_test_id("snippet-content").fill("Good morning, town")
    page.get_by_test_id("snippet-new").click()
    [saved] = assert_success(carol.get("/saved_snippets"))["saved_snippets"]
    assert (saved["title"], saved["content"]) == ("Greeting", "Good morning, town")
    page.locator(f'[data-testid="snippet-item"][data-snippet-id="{saved["id"]}"]').click()
    box = page.get_by_test_id("compose-content")
    assert box.input_value() == "Good morning, town"
    box.press("End")
    box.press("Shift+Enter")
    box.type("and good night")
    assert box.input_value() == "Good morning, town\nand good night"
    box.press("Enter")
    sent = page.locator('[data-testid="message"]', has_text="and good night")
    sent.wait_for()
    last = assert_success(carol.get("/messages", {"anchor": "newest", "num_before": 1, "num_after": 0}))
    assert last["messages"][-1]["content"] == "<p>Good morning, town<br>\nand good night</p>"


def test_a_scheduled_message_is_edited_rescheduled_and_cancelled(carol_in_town):
    page, carol = carol_in_town.page, carol_in_town.carol
    at = int(carol_in_town.live.clock.now) // 60 * 60 + 24 * 3600
    params = {"type": "stream", "to": carol_in_town.town, "topic": "later", "content": "tomorrow"}
    body = carol.post("/scheduled_messages", {**params, "scheduled_delivery_timestamp": at})
    scheduled_id = assert_success(body)["scheduled_message_id"]
    page.get_by_test_id("scheduled-open").click()
    item = page.locator(f'[data-testid="scheduled-item"][data-scheduled-id="{scheduled_id}"]')
    item.get_by_test_id("scheduled-edit").click()
    page.get_by_test_id("scheduled-edit-content").fill("the day after")
    page.get_by_test_id("scheduled-edit-save").click()
    wait_until(lambda: "the day after" in item.inner_text(), "the edited text in the list")
    item.get_by_test_id("scheduled-reschedule").click()
    later = at + 3600
    page.get_by_test_id("scheduled-time").fill(time.strftime("%Y-%m-%dT%H:%M", time.gmtime(later)))
    page.get_by_test_id("scheduled-reschedule-save").click()

    def stored() -> dict[str, Any]:
        [one] = assert_success(carol.get("/scheduled_messages"))["scheduled_messages"]
        return one

    wait_until(lambda: stored()["scheduled_delivery_timestamp"] == later, "the new time to be stored")
    assert stored()["content"] == "the day after"
    item.get_by_test_id("scheduled-cancel").click()
    item.wait_for(state="detached")
    assert assert_success(carol.get("/scheduled_messages"))["scheduled_messages"] == []
    page.keyboard.press("Escape")
    page.get_by_test_id("scheduled-list").wait_for(state="detached")


def test_a_direct_message_to_an_email_gets_its_conversation_in_the_sidebar(carol_in_town):
    page, carol, owner = carol_in_town.page, carol_in_town.carol, carol_in_town.live.owner
    page.get_by_test_id("compose-type").select_option("private")
    page.get_by_test_id("compose-to").fill("owner@example.com")
    page.get_by_test_id("compose-content").fill("a word in private")
    page.get_by_test_id("compose-send").click()
    item = page.locator(f'[data-testid="dm-item"][data-user-ids="{owner.id}"]')
    item.wait_for()
    last = assert_success(owner.get("/messages", {"anchor": "newest", "num_before": 1, "num_after": 0}))
    assert last["messages"][-1]["content"] == "<p>a word in private</p>"
    assert [r["id"] for r in last["messages"][-1]["display_recipient"]] == sorted([carol.id, owner.id])
    item.locator("button").click()
    page.locator('[data-testid="message"]', has_text="a word in private").wait_for()
    assert page.get_by_test_id("compose-to").input_value() == "owner@example.com"


def test_a_lost_event_queue_is_replaced_and_the_compose_box_keeps_its_text(carol_in_town):
    page, carol = carol_in_town.page, carol_in_town.carol
    write_in_topic(page, carol_in_town.town, "queues", "half a thought")
    state_module = page.evaluate("document.querySelector('script[type=module]').src.replace(/app\\.js$/, 'state.js')")
    queue_id = page.evaluate(f"import('{state_module}').then(m => m.state.queueId)")
    assert_success(carol.delete("/events", {"queue_id": queue_id}))
    # The next poll answers BAD_EVENT_QUEUE_ID: the page registers again and still shows new messages.
    wait_until(
        lambda: page.evaluate(f"import('{state_module}').then(m => m.state.queueId)") not in (queue_id, None),
        "a new event queue",
    )
    message_id = send_ok(carol_in_town.live.owner, "town", "after the queue", topic="queues")
    message(page, message_id).wait_for()
    assert page.get_by_test_id("compose-content").input_value() == "half a thought"
    page.get_by_test_id("compose-content").fill("")


def test_a_message_moved_elsewhere_and_marked_unread_elsewhere_updates_live(carol_in_town):
    page, carol = carol_in_town.page, carol_in_town.carol
    channel_link(page, carol_in_town.town).click()
    message_id = send_ok(carol_in_town.live.owner, "town", "moving soon", topic="old place")
    shown = message(page, message_id)
    shown.wait_for()
    wait_until(lambda: shown.get_attribute("data-read") == "true", "the message to be read")
    assert_success(carol.post("/messages/flags", {"messages": [message_id], "op": "remove", "flag": "read"}))
    wait_until(lambda: shown.get_attribute("data-read") == "false", "the message to show as unread again")
    assert_success(carol_in_town.live.owner.patch(f"/messages/{message_id}", {"topic": "new place"}))
    shown.get_by_test_id("message-moved").wait_for()


def test_a_message_moved_into_the_open_topic_appears_there(carol_in_town):
    page, carol = carol_in_town.page, carol_in_town.carol
    make_channel(carol_in_town.live, "yard", [carol_in_town.live.owner.id, carol.id])
    before = send_ok(carol_in_town.live.owner, "town", "already here", topic="arrivals")
    elsewhere = send_ok(carol_in_town.live.owner, "yard", "coming over", topic="gate")
    after = send_ok(carol_in_town.live.owner, "town", "also here", topic="arrivals")
    channel_link(page, carol_in_town.town).click()
    page.locator('[data-testid="topic-item"][data-topic="arrivals"] button').click()
    message(page, after).wait_for()
    params = {"stream_id": carol_in_town.town, "topic": "arrivals", "propagate_mode": "change_one"}
    assert_success(carol_in_town.live.owner.patch(f"/messages/{elsewhere}", params))
    moved = message(page, elsewhere)
    moved.get_by_test_id("message-moved").wait_for()
    # At its place by id, between the two messages that were already there.
    shown = [int(i) for i in page.get_by_test_id("message").evaluate_all("ns => ns.map(n => n.dataset.messageId)")]
    assert shown.index(before) < shown.index(elsewhere) < shown.index(after)


def test_a_topic_renamed_in_the_open_channel_is_named_on_its_recipient_bar(carol_in_town):
    page = carol_in_town.page
    send_ok(carol_in_town.live.owner, "town", "a neighbour", topic="next door")
    renamed = send_ok(carol_in_town.live.owner, "town", "to be renamed", topic="old name")
    channel_link(page, carol_in_town.town).click()
    bar = page.locator(".message-row", has=message(page, renamed)).locator(".recipient-bar")
    wait_until(lambda: bar.count() == 1 and bar.inner_text().endswith("old name"), "the recipient bar")
    assert_success(carol_in_town.live.owner.patch(f"/messages/{renamed}", {"topic": "new name"}))
    message(page, renamed).get_by_test_id("message-moved").wait_for()
    wait_until(lambda: bar.inner_text().endswith("new name"), "the bar to name the new topic")


def test_an_edit_whose_event_comes_before_its_answer_shows_the_new_text(carol_in_town):
    page = carol_in_town.page
    mine = message(page, send_in_topic(page, carol_in_town.town, "slow edits", "slow first wording"))

    def late_answer(route: Any) -> None:
        answer = route.fetch()
        time.sleep(1.0)  # the edit's event reaches the page first
        route.fulfill(response=answer)

    page.route(lambda url: urllib.parse.urlsplit(url).path.startswith("/api/v1/messages/"), late_answer)
    try:
        mine.hover()
        mine.get_by_test_id("edit-button").click()
        page.get_by_test_id("edit-content").fill("slow second wording")
        page.get_by_test_id("edit-save").click()
        page.get_by_test_id("edit-content").wait_for(state="detached")
    finally:
        page.unroute_all()
    wait_until(lambda: "second" in mine.get_by_test_id("message-content").inner_text(), "the new text", timeout=5)
    mine.get_by_test_id("message-edited").wait_for()


def test_channel_and_topic_links_in_messages_open_in_the_page_and_other_links_in_a_new_tab(carol_in_town):
    page = carol_in_town.page
    topic = "v1.0 plans/ideas"
    send_ok(carol_in_town.live.owner, "town", "the plan", topic=topic)
    text = f"see #**town>{topic}** or [the site](https://example.invalid/x)"
    linked = send_ok(carol_in_town.live.owner, "town", text, topic="links")
    channel_link(page, carol_in_town.town).click()
    link_message = message(page, linked)
    link_message.wait_for()
    link_message.locator("a.stream-topic").click()
    wait_until(lambda: page.get_by_test_id("narrow-title").inner_text().endswith(topic), "the linked topic")
    page.locator('[data-testid="message"]', has_text="the plan").wait_for()
    assert page.get_by_test_id("compose-topic").input_value() == topic
    # The address the page wrote for that topic is read back to the same topic (reload, back/forward).
    page.reload()
    wait_until(lambda: page.get_by_test_id("narrow-title").inner_text().endswith(topic), "the topic after a reload")
    page.get_by_test_id("compose-content").wait_for()
    channel_link(page, carol_in_town.town).click()
    address = page.url
    with page.context.expect_page() as opened:
        message(page, linked).locator('a[href^="https:"]').click()
    assert opened.value.url.startswith(("https://example.invalid", "chrome-error:", "about:blank"))
    opened.value.close()
    assert page.url == address


def test_the_compose_box_never_moves_to_a_channel_the_user_did_not_choose(carol_in_town):
    page, carol = carol_in_town.page, carol_in_town.carol
    porch = make_channel(carol_in_town.live, "porch", [carol_in_town.live.owner.id, carol.id])
    channel_link(page, porch).click()
    page.get_by_test_id("compose-topic").fill("steps")
    compose_channel = page.get_by_test_id("compose-channel")
    assert compose_channel.input_value() == str(porch)
    # Unsubscribed from the open (public) channel: the box still writes to it, as Zulip's does.
    assert_success(carol.delete("/users/me/subscriptions", {"subscriptions": json.dumps(["porch"])}))
    channel_link(page, porch).wait_for(state="detached")
    assert compose_channel.input_value() == str(porch)
    # The channel archived: no channel is chosen (not the first in the list), and nothing is sent.
    assert_success(carol_in_town.live.owner.delete(f"/streams/{porch}"))
    wait_until(lambda: compose_channel.input_value() == "", "the compose box to lose its channel")
    page.get_by_test_id("compose-content").fill("on the porch")
    page.get_by_test_id("compose-content").press("Enter")
    page.get_by_test_id("toast").filter(has_text="Choose a channel").wait_for()
    assert page.get_by_test_id("compose-content").input_value() == "on the porch"
    page.get_by_test_id("compose-content").fill("")


def test_a_channel_renamed_is_named_anew_in_the_title_and_on_the_recipient_bars(carol_in_town):
    page = carol_in_town.page
    send_ok(carol_in_town.live.owner, "town", "before the rename", topic="names")
    channel_link(page, carol_in_town.town).click()
    bar = page.locator(".message-row", has_text="before the rename").locator(".recipient-bar")
    wait_until(lambda: bar.count() == 1 and bar.inner_text().startswith("#town "), "the recipient bar")
    title = page.get_by_test_id("narrow-title")
    assert title.inner_text() == "#town"
    try:
        assert_success(carol_in_town.live.owner.patch(f"/streams/{carol_in_town.town}", {"new_name": "city"}))
        wait_until(lambda: title.inner_text() == "#city", "the title to name the channel anew")
        wait_until(lambda: bar.inner_text().startswith("#city "), "the bar to name the channel anew")
    finally:
        assert_success(carol_in_town.live.owner.patch(f"/streams/{carol_in_town.town}", {"new_name": "town"}))


def test_a_person_renamed_is_named_anew_on_their_messages(carol_in_town):
    page, owner = carol_in_town.page, carol_in_town.live.owner
    said = send_ok(owner, "town", "who am I", topic="names")
    channel_link(page, carol_in_town.town).click()
    sender = message(page, said).get_by_test_id("message-sender")
    sender.wait_for()
    old = sender.inner_text()
    try:
        assert_success(owner.patch(f"/users/{owner.id}", {"full_name": "Owner Renamed"}))
        wait_until(lambda: sender.inner_text() == "Owner Renamed", "the new name on the message")
    finally:
        assert_success(owner.patch(f"/users/{owner.id}", {"full_name": old}))


def test_a_message_starred_elsewhere_appears_in_the_open_starred_view(carol_in_town):
    page, carol = carol_in_town.page, carol_in_town.carol
    first = send_ok(carol_in_town.live.owner, "town", "star me first", topic="stars")
    second = send_ok(carol_in_town.live.owner, "town", "star me from afar", topic="stars")
    assert_success(carol.post("/messages/flags", {"messages": [first], "op": "add", "flag": "starred"}))
    page.get_by_test_id("view-starred").click()
    message(page, first).wait_for()
    assert_success(carol.post("/messages/flags", {"messages": [second], "op": "add", "flag": "starred"}))
    message(page, second).get_by_test_id("star-button").wait_for()
    assert message(page, second).get_by_test_id("star-button").get_attribute("aria-pressed") == "true"


def test_the_emoji_picker_asks_again_for_the_names_after_a_failed_load(carol_in_town):
    page = carol_in_town.page
    said = send_ok(carol_in_town.live.owner, "town", "react later", topic="emoji")
    channel_link(page, carol_in_town.town).click()
    shown = message(page, said)
    shown.wait_for()
    page.route("**/emoji-names.json", lambda route: route.abort())
    shown.get_by_test_id("react-button").click()
    page.get_by_test_id("emoji-filter").fill("octopus")
    page.get_by_test_id("emoji-picker").get_by_text("No emoji match.").wait_for()
    page.keyboard.press("Escape")
    page.unroute("**/emoji-names.json")
    shown.get_by_test_id("react-button").click()
    page.get_by_test_id("emoji-filter").fill("octopus")
    page.locator('[data-testid="emoji-option"][data-emoji-name="octopus"]').wait_for()
    page.keyboard.press("Escape")


def test_a_topic_whose_messages_are_all_deleted_leaves_the_sidebar(carol_in_town):
    page = carol_in_town.page
    send_ok(carol_in_town.live.owner, "town", "staying", topic="stays")
    doomed = send_ok(carol_in_town.live.owner, "town", "short-lived", topic="fleeting")
    channel_link(page, carol_in_town.town).click()
    topic = page.locator(f'[data-testid="topic-item"][data-stream-id="{carol_in_town.town}"][data-topic="fleeting"]')
    topic.wait_for()
    assert_success(carol_in_town.live.owner.delete(f"/messages/{doomed}"))
    topic.wait_for(state="detached")
    page.locator('[data-testid="topic-item"][data-topic="stays"]').wait_for()


def test_no_page_broke_the_content_security_policy(carol_in_town):
    assert carol_in_town.browser.console.csp_violations() == []
    assert [line for line in carol_in_town.browser.console.lines if line.startswith("pageerror")] == []
