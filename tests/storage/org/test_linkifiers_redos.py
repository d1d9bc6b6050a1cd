"""Hostile linkifier patterns cannot stall the server: RE2 runs them in linear time on capped text, and a
pattern that is slow on its test inputs is refused when saved."""

from __future__ import annotations

from storage.messages.message_render import render_message
from storage.org import linkifiers
from tests.storage.org.test_linkifiers import create, listed
from tests.support.channel_helpers import make_channel
from tests.support.get_messages_helpers import message_by_id
from tests.support.helpers import assert_error
from tests.support.send_helpers import send_ok, stored

# Catastrophic backtracking in Python's re (exponential on "aaa…a!"): the classic ReDoS patterns.
NESTED_PLUS = "(?P<id>(a+)+)b"
ALTERNATION = "(?P<x>(a|aa)+)$"


def test_redos_patterns_are_contained(live):
    make_channel(live, "linked", [live.owner.id])
    create(live.owner, NESTED_PLUS, "https://example.com/nested/{id}")
    create(live.owner, ALTERNATION, "https://example.com/alternation/{x}")
    # The longest message and topic a client may send, shaped to backtrack forever in Python's re.
    message_id = send_ok(live.owner, "linked", "a" * 9_999 + "!", "a" * 59 + "!")
    assert stored(live, message_id)["rendered_content"] == "<p>" + "a" * 9_999 + "!</p>"
    assert message_by_id(live.owner, message_id)["topic_links"] == []
    # The patterns do work where they match.
    message_id = send_ok(live.owner, "linked", "aaab and aa", "aab")
    assert stored(live, message_id)["rendered_content"] == (
        '<p><a href="https://example.com/nested/aaa">aaab</a> and <a href="https://example.com/alternation/aa">aa</a></p>'
    )
    assert message_by_id(live.owner, message_id)["topic_links"] == [
        {"text": "aab", "url": "https://example.com/nested/aa"}
    ]


def test_text_beyond_the_scan_cap_is_never_scanned(live):
    create(live.owner, NESTED_PLUS, "https://example.com/nested/{id}")
    create(live.owner, ALTERNATION, "https://example.com/alternation/{x}")
    create(live.owner, "#(?P<id>[0-9]+)", "https://example.com/ticket/{id}")
    # Longer than any message: rendering stays linear and "end of text" at the cut is no match.
    html = live.read(lambda tx: render_message(tx, "a" * 50_000).html)
    assert html == "<p>" + "a" * 50_000 + "</p>"
    # Only the first 10,000 characters hold links: 2,500 of the 5,000 "#12 ".
    html = live.read(lambda tx: render_message(tx, "#12 " * 5_000).html)
    assert html.count('<a href="https://example.com/ticket/12">#12</a>') == 2_500


def test_slow_pattern_is_refused(live, monkeypatch):
    # Every pattern is slow against a budget of nothing: the save-time check refuses it.
    monkeypatch.setattr(linkifiers, "PATTERN_TIME_BUDGET", 0.0)
    body = assert_error(
        live.owner.post("/realm/filters", {"pattern": NESTED_PLUS, "url_template": "https://x/{id}"}),
        linkifiers.TOO_SLOW,
    )
    assert body["errors"] == {"__all__": [linkifiers.TOO_SLOW]}
    assert listed(live.owner) == []


def test_pattern_too_large_for_re2_is_refused(live):
    body = assert_error(
        live.owner.post("/realm/filters", {"pattern": "(?P<id>a{1000}){1000}", "url_template": "https://x/{id}"}),
        "Bad regular expression: invalid repetition size: {1000}",
    )
    assert body["errors"] == {"__all__": ["Bad regular expression: invalid repetition size: {1000}"]}
