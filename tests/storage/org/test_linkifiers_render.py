"""Linkifiers applied: links in rendered content (send, edit) and `topic_links` on message objects and events."""

from __future__ import annotations

from storage.text import linkify
from tests.storage.org.test_linkifiers import create
from tests.support.channel_helpers import make_channel
from tests.support.events_helpers import events_now, register
from tests.support.get_messages_helpers import message_by_id
from tests.support.helpers import assert_success
from tests.support.send_helpers import message_events, send_ok, stored

TRAC = "https://trac.example.com/ticket/{id}"


def trac_link(number: int | str, text: str | None = None) -> str:
    return f'<a href="https://trac.example.com/ticket/{number}">{text or f"#{number}"}</a>'


def rendered(live, content, topic="greetings"):
    """Send to the channel "linked" and return (message id, rendered HTML)."""
    message_id = send_ok(live.owner, "linked", content, topic)
    return message_id, stored(live, message_id)["rendered_content"]


def setup_channel(live):
    make_channel(live, "linked", [live.owner.id])


def test_content_links_follow_zulips_boundaries(live):
    setup_channel(live)
    create(live.owner, "#(?P<id>[0-9]{2,8})", TRAC)
    content = (
        "We should fix #224 #336 #446 and #115, but not issue#124 or #1124z or "
        "[trac #15](https://trac.example.com/ticket/16) today."
    )
    message_id, html = rendered(live, content)
    assert html == (
        f"<p>We should fix {trac_link(224)} {trac_link(336)} {trac_link(446)} and {trac_link(115)}, but not"
        f" issue#124 or #1124z or {trac_link(16, 'trac #15')} today.</p>"
    )
    assert stored(live, message_id)["has_link"] == 1
    for text, linked in [
        ("Hello #123 World", True),
        ("Hello\u00a0#123\u00a0World", True),
        ("(#123)", True),
        ('"#123"', True),
        ("#123@", True),
        ("チケットは #123 です", True),
        ("Hello #123World", False),
        ("Hello#123 World", False),
        (")#123(", False),
        ("##123", False),
    ]:
        _, html = rendered(live, text)
        assert (trac_link(123) in html) is linked, (text, html)


def test_no_links_inside_code_links_urls_or_mentions(live):
    setup_channel(live)
    live.make_user(full_name="Ticket ABC-12")
    create(live.owner, "(?P<id>ABC-[0-9]+)", TRAC)
    content = (
        "`ABC-1` and\n```\nABC-2\n```\n"
        "[see ABC-3](https://example.com/x) https://example.com/x:ABC-4 @**Ticket ABC-12** ABC-5"
    )
    message_id, html = rendered(live, content)
    assert html.count("<a ") == 3  # the Markdown link, the autolinked URL and ABC-5
    assert trac_link("ABC-5", "ABC-5") in html
    for number in (1, 2, 3, 4, 12):
        assert f"ticket/ABC-{number}" not in html, html
    # Quote blocks are message text: linked.
    _, html = rendered(live, "```quote\nABC-6\n```")
    assert trac_link("ABC-6", "ABC-6") in html
    # Not a link: no has_link.
    message_id, html = rendered(live, "`ABC-7`")
    assert stored(live, message_id)["has_link"] == 0


def test_first_listed_linkifier_wins_and_order_changes_it(live):
    setup_channel(live)
    first = create(live.owner, "(?P<id>ABC-[0-9]+)", "https://first.example.com/{id}")
    second = create(live.owner, "(?P<id>[A-Z][A-Z0-9]*-[0-9]+)", "https://second.example.com/{id}")
    _, html = rendered(live, "ABC-123 and XYZ-9")
    assert html == (
        '<p><a href="https://first.example.com/ABC-123">ABC-123</a> and'
        ' <a href="https://second.example.com/XYZ-9">XYZ-9</a></p>'
    )
    assert_success(live.owner.patch("/realm/linkifiers", {"ordered_linkifier_ids": [second, first]}))
    _, html = rendered(live, "ABC-123")
    assert html == '<p><a href="https://second.example.com/ABC-123">ABC-123</a></p>'


def test_url_templates_expand_and_unsafe_schemes_stay_text(live):
    setup_channel(live)
    create(live.owner, "url-(?P<id>[0-9]+)", "https://example.com/A%20Test/%%%ba/{id}")
    create(live.owner, "js-(?P<id>[0-9]+)", "javascript:alert({id})")
    create(live.owner, "local-(?P<id>[0-9]+)", "http://127.0.0.1:9991/#narrow/id/{id}")
    create(live.owner, "phrase (?P<word>[a-z]+)", "https://example.com/search{?word}")
    _, html = rendered(live, "url-123 js-1 local-5 phrase hello")
    assert html == (
        '<p><a href="https://example.com/A%20Test/%25%25%ba/123">url-123</a> js-1'
        ' <a href="#narrow/id/5">local-5</a> <a href="https://example.com/search?word=hello">phrase hello</a></p>'
    )


def test_edit_re_renders_with_links_and_delete_stops_new_links(live):
    setup_channel(live)
    linkifier_id = create(live.owner, "#(?P<id>[0-9]+)", TRAC)
    message_id, html = rendered(live, "nothing yet")
    assert_success(live.owner.patch(f"/messages/{message_id}", {"content": "now #77"}))
    assert stored(live, message_id)["rendered_content"] == f"<p>now {trac_link(77)}</p>"
    assert stored(live, message_id)["has_link"] == 1
    assert_success(live.owner.delete(f"/realm/filters/{linkifier_id}"))
    _, html = rendered(live, "later #77")
    assert html == "<p>later #77</p>"


def test_topic_links_in_messages_and_events(live):
    setup_channel(live)
    create(live.owner, "#(?P<id>[0-9]{2,8})", TRAC)
    message_id = send_ok(live.owner, "linked", "hi", "#444 https://google.com and github.com/zulip?")
    links = [
        {"text": "#444", "url": "https://trac.example.com/ticket/444"},
        {"text": "https://google.com", "url": "https://google.com"},
        {"text": "github.com/zulip", "url": "https://github.com/zulip"},
    ]
    assert message_by_id(live.owner, message_id)["topic_links"] == links
    [(event, _)] = message_events(live, message_id)
    assert event["message"]["topic_links"] == links
    # A direct message has no topic and no topic links.
    direct_id = send_ok(live.owner, [live.owner.id], "#555", None, type="direct")
    assert message_by_id(live.owner, direct_id)["topic_links"] == []
    # Moving to another topic: the update_message event carries the new topic's links.
    assert_success(live.owner.patch(f"/messages/{message_id}", {"topic": "now #12 only"}))
    [update] = [e for e, _ in live.events() if e["type"] == "update_message" and e["message_id"] == message_id]
    assert update["topic_links"] == [{"text": "#12", "url": "https://trac.example.com/ticket/12"}]
    assert message_by_id(live.owner, message_id)["topic_links"] == update["topic_links"]


def test_topic_links_overlaps_go_to_the_first_listed(live):
    setup_channel(live)
    create(live.owner, "(?P<id>ABC-[0-9]+)", "https://trac.example.com/ticket/{id}")
    create(live.owner, "(?P<id>[A-Z][A-Z0-9]*-[0-9]+)", "https://other.example.com/ticket/{id}")
    create(live.owner, "(?P<id>[A-Z][A-Z0-9]+)", "https://yet.example.com/ticket/{id}")
    message_id = send_ok(live.owner, "linked", "hi", "ASD-123 ABC-123 QWE")
    assert message_by_id(live.owner, message_id)["topic_links"] == [
        {"url": "https://other.example.com/ticket/ASD-123", "text": "ASD-123"},
        {"url": "https://trac.example.com/ticket/ABC-123", "text": "ABC-123"},
        {"url": "https://yet.example.com/ticket/QWE", "text": "QWE"},
    ]


def test_topic_links_are_cached_per_topic_and_version(live):
    setup_channel(live)
    linkifier_id = create(live.owner, "#(?P<id>[0-9]+)", TRAC)
    ids = [send_ok(live.owner, "linked", f"message {n}", "cached #1") for n in range(5)]
    scans = linkify.stats["topic_link_scans"]
    params = {"anchor": "newest", "num_before": 10, "num_after": 0}
    for _ in range(3):
        messages = assert_success(live.owner.get("/messages", params))["messages"]
        assert [m["topic_links"] for m in messages if m["id"] in ids] == [
            [{"text": "#1", "url": TRAC.format(id=1)}]
        ] * 5
    assert linkify.stats["topic_link_scans"] == scans  # every fetch was served from the cache
    # A change of the linkifiers is a new version: the topic is scanned again, once.
    assert_success(
        live.owner.patch(f"/realm/filters/{linkifier_id}", {"pattern": "#(?P<id>[0-9]+)", "url_template": TRAC + "/x"})
    )
    for _ in range(2):
        messages = assert_success(live.owner.get("/messages", params))["messages"]
        assert messages[-1]["topic_links"] == [{"text": "#1", "url": TRAC.format(id=1) + "/x"}]
    assert linkify.stats["topic_link_scans"] == scans + 1


CAPABLE = {"notification_settings_null": True, "linkifier_url_template": True}


def test_register_state(live):
    fetch = {"fetch_event_types": ["realm_linkifiers"], "client_capabilities": CAPABLE}
    assert assert_success(live.owner.post("/register", fetch))["realm_linkifiers"] == []
    linkifier_id = create(live.owner, example_input="#12")
    member = live.make_user()
    state = assert_success(member.post("/register", fetch))
    assert state["realm_linkifiers"] == assert_success(member.get("/realm/linkifiers"))["linkifiers"]
    assert state["realm_linkifiers"][0]["id"] == linkifier_id
    assert state["realm_linkifiers"][0]["example_input"] == "#12"


def test_clients_without_the_url_template_capability_get_none(live):
    # Zulip (FL 176): realm_linkifiers state and events only for clients that read url_template;
    # the old realm_filters state is always empty.
    create(live.owner)
    member = live.make_user()
    queue = register(member, event_types=["realm_linkifiers", "realm_filters"])
    assert (queue["realm_linkifiers"], queue["realm_filters"]) == ([], [])
    capable = register(member, event_types=["realm_linkifiers"], client_capabilities=CAPABLE)
    assert len(capable["realm_linkifiers"]) == 1
    create(live.owner, "other(?P<id>[0-9]+)")
    assert events_now(member, queue["queue_id"]) == []
    assert [len(event["realm_linkifiers"]) for event in events_now(member, capable["queue_id"])] == [2]


def test_events_reach_every_active_users_queue(live):
    member = live.make_user()
    leaver = live.make_user()
    queue = register(member, event_types=["realm_linkifiers"], client_capabilities=CAPABLE)
    assert queue["realm_linkifiers"] == []
    assert_success(live.owner.delete(f"/users/{leaver.id}"))
    count = len(live.events())
    first = create(live.owner)
    second = create(live.owner, "other(?P<id>[0-9]+)")
    assert_success(live.owner.patch("/realm/linkifiers", {"ordered_linkifier_ids": [second, first]}))
    assert_success(live.owner.delete(f"/realm/filters/{second}"))
    published = [(e, ids) for e, ids in live.events()[count:] if e["type"] == "realm_linkifiers"]
    assert [ids for _, ids in published] == [sorted([live.owner.id, member.id])] * 4  # not the deactivated user
    received = [event["realm_linkifiers"] for event in events_now(member, queue["queue_id"])]
    assert [[linkifier["id"] for linkifier in full] for full in received] == [
        [first],
        [first, second],
        [second, first],
        [first],
    ]
