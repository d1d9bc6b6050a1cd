"""GET /messages `search`: full-text search (FTS5 with stemming) over topic and content, quoted
phrases, and the match_content / match_subject highlights (api-notes 4.3)."""

from __future__ import annotations

import pytest

from tests.support.channel_helpers import make_channel
from tests.support.get_messages_helpers import fetch, narrow_ids, post, post_direct

MESSAGES = {
    "sending": ("deploy plans", "We are sending the release today"),
    "lunch": ("lunch", "Lunch at noon? The release can wait"),
    "hello": ("lunch", "hello world, hello again"),
    "apart": ("misc", "world peace and hello"),
    "party": ("Release party", "cake"),
    "syntax": ("misc", "C++ and foo* (bar) AND baz - NEAR"),
    "tag": ("a <b> tag", "markup & more"),
}


@pytest.fixture(scope="module", autouse=True)
def search_history(shared_live):
    server = shared_live
    server.alice = server.make_user(full_name="Alice")
    make_channel(server, "general", [server.owner.id, server.alice.id])
    server.m = {
        key: post(server, server.owner, "general", topic, content) for key, (topic, content) in MESSAGES.items()
    }
    server.m["dm"] = post_direct(server, server.owner, [server.alice.id], "release notes for you")


def search(live, *operands, narrow=(), client=None):
    terms = [*narrow, *(["search", operand] for operand in operands)]
    names = {v: k for k, v in live.m.items()}
    return [names[i] for i in narrow_ids(client or live.alice, terms)]


@pytest.mark.parametrize(
    ("operand", "expected"),
    [
        ("release", ["sending", "lunch", "party", "dm"]),
        ("RELEASE", ["sending", "lunch", "party", "dm"]),
        ("send", ["sending"]),  # stems on both sides
        ("sends", ["sending"]),
        ("release lunch", ["lunch"]),  # every word, in topic or content
        ("party cake", ["party"]),
        ('"hello world"', ["hello"]),  # a phrase: adjacent words
        ("hello world", ["hello", "apart"]),
        ('"hello again" world', ["hello"]),
        ('"world peace', ["apart"]),  # an unclosed quote is a word
        ("nothing-like-this", []),
        ("foo* AND (bar)", ["syntax"]),  # FTS syntax is text here
        ("NEAR", ["syntax"]),
        ("C++", ["syntax"]),
        ("-", []),
        ('"', []),
        ('""', []),
        ("!!!", []),
        ("tag", ["tag"]),
    ],
)
def test_search(shared_live, operand, expected):
    assert search(shared_live, operand) == expected


def test_search_terms_combine_with_other_terms(shared_live):
    assert search(shared_live, "release", narrow=[["is", "dm"]]) == ["dm"]
    assert search(shared_live, "release", narrow=[["topic", "lunch"]]) == ["lunch"]
    assert search(shared_live, "hello", "world") == ["hello", "apart"]
    assert search(shared_live, "hello", '"hello world"') == ["hello"]


def test_negated_search(shared_live):
    narrow = [{"operator": "search", "operand": "release", "negated": True}]
    names = {v: k for k, v in shared_live.m.items()}
    assert [names[i] for i in narrow_ids(shared_live.alice, narrow)] == ["hello", "apart", "syntax", "tag"]
    body = fetch(shared_live.alice, anchor="newest", num_before=10, num_after=0, narrow=narrow)
    assert not any("match_content" in m or "match_subject" in m for m in body["messages"])


def highlights(live, operand, key):
    body = fetch(live.alice, message_ids=[live.m[key]], narrow=[["search", operand]])
    [message] = body["messages"]
    return message["match_content"], message["match_subject"]


def test_highlights(shared_live):
    assert highlights(shared_live, "release", "sending") == (
        '<p>We are sending the <span class="highlight">release</span> today</p>', "deploy plans",
    )  # fmt: skip
    assert highlights(shared_live, "send", "sending") == (
        '<p>We are <span class="highlight">sending</span> the release today</p>', "deploy plans",
    )  # fmt: skip
    assert highlights(shared_live, "release", "party") == (
        "<p>cake</p>",
        '<span class="highlight">Release</span> party',
    )
    content, _ = highlights(shared_live, '"hello world"', "hello")
    assert content == '<p><span class="highlight">hello world</span>, hello again</p>'
    content, _ = highlights(shared_live, "hello", "hello")
    assert content == '<p><span class="highlight">hello</span> world, <span class="highlight">hello</span> again</p>'
    # Topics are escaped before they are marked; tags in content are never marked inside.
    assert highlights(shared_live, "tag", "tag") == (
        "<p>markup &amp; more</p>", 'a &lt;b&gt; <span class="highlight">tag</span>',
    )  # fmt: skip


def test_no_highlights_without_search(shared_live):
    body = fetch(shared_live.alice, message_ids=[shared_live.m["sending"]])
    assert "match_content" not in body["messages"][0] and "match_subject" not in body["messages"][0]


def test_search_in_a_range_and_apply_markdown_false(shared_live):
    body = fetch(shared_live.alice, anchor=str(shared_live.m["lunch"]), num_before=1, num_after=1,
                 narrow=[["search", "release"]], apply_markdown=False)  # fmt: skip
    assert [m["id"] for m in body["messages"]] == [
        shared_live.m["sending"],
        shared_live.m["lunch"],
        shared_live.m["party"],
    ]
    assert body["found_anchor"] is True
    sending = body["messages"][0]
    assert sending["content"] == "We are sending the release today"
    assert sending["match_content"] == '<p>We are sending the <span class="highlight">release</span> today</p>'
