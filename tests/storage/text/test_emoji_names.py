"""Zulip's emoji names: the data file, reactions with every name, and emoji in rendered messages."""

from __future__ import annotations

import importlib.util
import json

import pytest

from storage.text import emoji
from storage.text.emoji_data_build import main as build_main
from tests.support.channel_helpers import make_channel
from tests.support.helpers import assert_error, assert_success

# Names Zulip's clients offer that the `emoji` package's names lacked (issue 11).
ZULIP_ONLY = {"heart_box": "1f49f", "big_smile": "1f604", "call_me": "1f919", "lol": "1f606", "done_deal": "1f91d"}


def span(code, name):
    title = name.replace("_", " ")
    return f'<span aria-label="{title}" class="emoji emoji-{code}" role="img" title="{title}">:{name}:</span>'


@pytest.fixture
def general_member(live):
    member = live.make_user()
    make_channel(live, "general", [live.owner.id, member.id])
    return member


def send(client, content):
    body = {"type": "stream", "to": "general", "topic": "emoji", "content": content}
    message_id = assert_success(client.post("/messages", body))["id"]
    return assert_success(client.get("/messages", {"message_ids": [message_id]}))["messages"][0]


def rendered(client, content):
    html = send(client, content)["content"]
    assert html.startswith("<p>") and html.endswith("</p>"), html
    return html[3:-4]


# -- the data --------------------------------------------------------------------------------


def test_data_file_names_its_source():
    with open(emoji.DATA_FILE, encoding="utf-8") as data_file:
        data = json.load(data_file)
    assert "zulip" in data["source"] and data["version"] and data["license"] == "Apache-2.0"
    assert len(data["emoji"]) == len(emoji.CODE_TO_NAME)


@pytest.mark.skipif(importlib.util.find_spec("zulip_emoji_mapping") is None, reason="build-time package")
def test_data_file_is_what_the_generator_writes(capsys):
    assert build_main(["--check"]) == 0


def test_every_name_reacts_with_its_code(live, general_member):
    """Each of Zulip's 2,960 names and aliases maps to its emoji, as check_emoji_request wants."""

    def check_all(tx):
        for name, code in emoji.NAME_TO_CODE.items():
            if tx.value("SELECT 1 FROM realm_emoji WHERE name = ?", (name,)) is None:
                assert emoji.emoji_for_name(tx, name) == (code, emoji.UNICODE_EMOJI)
                emoji.check_emoji(tx, name, code, emoji.UNICODE_EMOJI)

    live.read(check_all)


def test_zulip_only_names_over_http(live, general_member):
    message_id = send(live.owner, "react to me")["id"]
    for name in ZULIP_ONLY:
        assert_success(general_member.post(f"/messages/{message_id}/reactions", {"emoji_name": name}))
    body = assert_success(general_member.get("/messages", {"message_ids": [message_id]}))
    assert {(r["emoji_name"], r["emoji_code"]) for r in body["messages"][0]["reactions"]} == set(ZULIP_ONLY.items())
    response = general_member.post(f"/messages/{message_id}/reactions", {"emoji_name": "grinning_face_with_big_eyes"})
    assert_error(response, "Emoji 'grinning_face_with_big_eyes' does not exist")  # a CLDR name, not Zulip's


# -- :name: and typed emoji in messages ---------------------------------------------------------


def test_names_become_emoji_spans(live, general_member):
    assert rendered(general_member, "hi :wave:") == "hi " + span("1f44b", "wave")
    assert rendered(general_member, ":big_smile::+1:") == span("1f604", "big_smile") + span("1f44d", "+1")
    # An alias keeps the name typed; the code is the emoji's.
    assert rendered(general_member, ":thumbs_up:") == span("1f44d", "thumbs_up")
    assert rendered(general_member, "*:smile:*") == "<em>" + span("1f642", "smile") + "</em>"
    assert rendered(general_member, ":zulip:") == (
        '<img alt=":zulip:" class="emoji" src="/static/generated/emoji/images/emoji/unicode/zulip.png" title="zulip">'
    )


def test_unknown_names_and_other_colons_stay_text(live, general_member):
    assert rendered(general_member, ":no_such_emoji: at 10:30:45") == ":no_such_emoji: at 10:30:45"
    assert rendered(general_member, ":nah_x:wave:") == ":nah_x:wave:"  # the first pair is taken, as in Zulip
    assert rendered(general_member, ":Wave: : wave:") == ":Wave: : wave:"


def test_no_emoji_in_code_or_links(live, general_member):
    assert rendered(general_member, "`:wave:` 👋") == "<code>:wave:</code> " + span("1f44b", "wave")
    assert send(general_member, "```\n:wave: 👋\n```")["content"] == (
        '<div class="codehilite"><pre><span></span><code>:wave: 👋\n</code></pre></div>'
    )
    html = rendered(general_member, "https://example.com/:wave:/x and <https://example.com/:smile:>")
    assert "emoji" not in html and 'href="https://example.com/:wave:/x"' in html


def test_emoji_in_the_text_of_a_written_link(live, general_member):
    # Zulip runs its inline patterns over a [text](url) link's text, emoji among them.
    html = rendered(general_member, "[:wave: hi](https://example.com/:smile:)")
    assert html == '<a href="https://example.com/:smile:">' + span("1f44b", "wave") + " hi</a>"


def test_typed_emoji_are_wrapped_with_their_name(live, general_member):
    assert rendered(general_member, "bye 👋") == "bye " + span("1f44b", "wave")
    assert rendered(general_member, "🙂❤️") == span("1f642", "smile") + span("2764", "heart")
    assert rendered(general_member, "👨‍👩‍👧") == span("1f468-200d-1f469-200d-1f467", "family_man_woman_girl")
    assert rendered(general_member, "#️⃣") == span("0023-20e3", "hash")
    # Text-style characters stay text unless FE0F asks for the emoji; unnamed sequences stay whole.
    assert rendered(general_member, "© ↔ ❤ # 1") == "© ↔ ❤ # 1"
    assert rendered(general_member, "👍🏽") == "👍🏽"


def test_markup_is_what_zulip_terminal_reads(live, general_member):
    """zulip-terminal shows an emoji span's text and an image's alt: `:name:` either way."""
    message = send(general_member, ":octopus: :heart_box:")
    assert message["content"] == "<p>" + span("1f419", "octopus") + " " + span("1f49f", "heart_box") + "</p>"
