"""POST /messages: the topic rules (spec's topic rule, api-notes 1.6) and the content rules (limits, §8)."""

from __future__ import annotations

import pytest

from tests.support.channel_helpers import make_channel
from tests.support.helpers import assert_error
from tests.support.send_helpers import (
    NO_GENERAL_CHAT,
    ONLY_GENERAL_CHAT,
    message_events,
    send,
    send_ok,
    set_topics_policy,
    stored,
)


def topic_of(live, message_id):
    return stored(live, message_id)["topic"]


# -- topics ----------------------------------------------------------------------------------------


def test_missing_topic(live, general):
    assert_error(send(live.owner, general, topic=None), "Missing topic")


def test_subject_is_an_alias_of_topic(live, general):
    assert topic_of(live, send_ok(live.owner, general, topic=None, subject="old style")) == "old style"


def test_topic_and_subject_together(live, general):
    body = assert_error(
        send(live.owner, general, topic="a", subject="b"),
        "Can't decide between 'topic' and 'subject' arguments",
        "REQUEST_CONFUSING_VAR",
    )
    assert (body["var_name1"], body["var_name2"]) == ("topic", "subject")


def test_topic_is_stripped(live, general):
    assert topic_of(live, send_ok(live.owner, general, topic="  spaced out \n")) == "spaced out"


@pytest.mark.parametrize("topic", ["", "   ", "(no topic)", "general chat", " general chat "])
def test_empty_topic_forms_are_stored_as_empty(live, general, topic):
    assert topic_of(live, send_ok(live.owner, general, topic=topic)) == ""


def test_display_name_match_is_exact(live, general):
    assert topic_of(live, send_ok(live.owner, general, topic="General Chat")) == "General Chat"


@pytest.mark.parametrize(("topic", "position"), [("bad\x00topic", 4), ("a\nb", 2), ("\x07", 1), ("ok\ufffe", 3)])
def test_unprintable_topic(live, general, topic, position):
    assert_error(send(live.owner, general, topic=topic), f"Invalid character in topic, at position {position}!")


def test_long_topic_is_truncated(live, general):
    assert topic_of(live, send_ok(live.owner, general, topic="x" * 60)) == "x" * 60
    assert topic_of(live, send_ok(live.owner, general, topic="y" * 61)) == "y" * 57 + "..."
    assert topic_of(live, send_ok(live.owner, general, topic="é" * 100)) == "é" * 57 + "..."


def test_topic_is_ignored_for_direct_messages(live):
    other = live.make_user()
    message_id = send_ok(live.owner, [other.id], topic="ignored\x00", type="direct")
    assert topic_of(live, message_id) == ""


def test_channel_disable_empty_topic(live, general):
    set_topics_policy(live, "disable_empty_topic", general)
    for topic in ("", "(no topic)", "general chat"):
        assert_error(send(live.owner, general, topic=topic), NO_GENERAL_CHAT)
    send_ok(live.owner, general, topic="named")


def test_channel_empty_topic_only(live, general):
    set_topics_policy(live, "empty_topic_only", general)
    assert_error(send(live.owner, general, topic="named"), ONLY_GENERAL_CHAT)
    assert topic_of(live, send_ok(live.owner, general, topic="general chat")) == ""


def test_channel_allow_empty_topic_overrides_the_realm(live, general):
    set_topics_policy(live, "disable_empty_topic")
    set_topics_policy(live, "allow_empty_topic", general)
    send_ok(live.owner, general, topic="")


@pytest.mark.parametrize(
    ("policy", "topic", "error"),
    [("disable_empty_topic", "", NO_GENERAL_CHAT), ("empty_topic_only", "named", ONLY_GENERAL_CHAT)],
)
def test_inherit_uses_the_realm_policy(live, general, policy, topic, error):
    set_topics_policy(live, policy)
    assert_error(send(live.owner, general, topic=topic), error)


def test_topics_policy_through_channel_creation(live):
    channel = make_channel(live, "named only", [live.owner.id], topics_policy='"disable_empty_topic"')
    assert_error(send(live.owner, channel, topic=""), NO_GENERAL_CHAT)


# -- content ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("content", ["", " ", "\n\n", " \t \n "])
def test_empty_content(live, general, content):
    assert_error(send(live.owner, general, content=content), "Message must not be empty")


def test_null_byte(live, general):
    assert_error(send(live.owner, general, content="a\x00b"), "Message must not contain null bytes")


def test_content_trailing_whitespace_and_leading_blank_lines_are_dropped(live, general):
    row = stored(live, send_ok(live.owner, general, content="\n\n    code\n  \n"))
    assert row["content"] == "    code"
    assert "<pre>" in row["rendered_content"]


def test_content_at_the_limit_is_kept(live, general):
    content = "a" * 10000
    assert stored(live, send_ok(live.owner, general, content=content))["content"] == content


def test_long_content_is_truncated(live, general):
    row = stored(live, send_ok(live.owner, general, content="b" * 10001))
    suffix = "\n[message truncated]"
    assert row["content"] == "b" * (10000 - len(suffix)) + suffix
    assert len(row["content"]) == 10000


def test_me_message(live, general):
    assert stored(live, send_ok(live.owner, general, content="/me waves"))["is_me_message"] == 1
    assert stored(live, send_ok(live.owner, general, content="/mentions"))["is_me_message"] == 0
    assert stored(live, send_ok(live.owner, general, content="say /me hi"))["is_me_message"] == 0


def test_me_message_in_the_event(live, general):
    message_id = send_ok(live.owner, general, content="/me waves")
    [(event, _)] = message_events(live, message_id)
    assert event["message"]["is_me_message"] is True
