"""Alert words: GET/POST/DELETE /users/me/alert_words, their event and register state, and the
has_alert_word flag on new and edited messages (and so the is:alerted narrow)."""

from __future__ import annotations

import pytest

from storage.org import alert_words
from tests.support.channel_helpers import make_channel
from tests.support.events_helpers import register
from tests.support.get_messages_helpers import narrow_ids
from tests.support.helpers import assert_error, assert_success
from tests.support.send_helpers import send_direct_ok, send_ok, stored_flags

PATH = "/users/me/alert_words"


def words(client):
    return assert_success(client.get(PATH))["alert_words"]


def add(client, *new):
    return assert_success(client.post(PATH, {"alert_words": list(new)}))["alert_words"]


def alert_events(live, count):
    return [(e, ids) for e, ids in live.events()[count:] if e["type"] == "alert_words"]


def test_add_list_and_remove(live):
    assert words(live.owner) == []
    count = len(live.events())
    assert add(live.owner, " Lunch ", "\ncoffee break", "", "  ") == ["Lunch", "coffee break"]
    assert words(live.owner) == ["Lunch", "coffee break"]
    assert alert_events(live, count) == [
        ({"type": "alert_words", "alert_words": ["Lunch", "coffee break"]}, [live.owner.id])
    ]
    # A word already there in another case is not added twice; within a request the last spelling wins.
    assert add(live.owner, "LUNCH", "tea", "TEA") == ["Lunch", "coffee break", "TEA"]
    body = assert_success(live.owner.delete(PATH, {"alert_words": ["lunch", "nothing"]}))
    assert body["alert_words"] == ["coffee break", "TEA"]
    assert register(live.owner, fetch_event_types=["alert_words"])["alert_words"] == ["coffee break", "TEA"]


def test_words_are_per_user(live):
    alice = live.make_user()
    add(live.owner, "lunch")
    add(alice, "tea")
    assert words(live.owner) == ["lunch"]
    assert words(alice) == ["tea"]
    assert_success(alice.delete(PATH, {"alert_words": ["lunch"]}))
    assert words(live.owner) == ["lunch"]


def test_limits(live):
    assert add(live.owner, "w" * 100) == ["w" * 100]
    many = [f"word{i}" for i in range(alert_words.MAX_ALERT_WORDS - 1)]
    assert len(add(live.owner, *many)) == alert_words.MAX_ALERT_WORDS
    assert add(live.owner, "WORD1") == words(live.owner)  # already there: still within the limit
    count = len(live.events())
    too_many = f"Too many alert words (limit: {alert_words.MAX_ALERT_WORDS})"
    assert_error(live.owner.post(PATH, {"alert_words": ["one more"]}), too_many)
    assert alert_events(live, count) == []


@pytest.mark.parametrize(
    ("method", "params", "msg", "code"),
    [
        ("post", {}, "Missing 'alert_words' argument", "REQUEST_VARIABLE_MISSING"),
        ("delete", {}, "Missing 'alert_words' argument", "REQUEST_VARIABLE_MISSING"),
        ("post", {"alert_words": "lunch"}, "alert_words is not valid JSON", "BAD_REQUEST"),
        ("post", {"alert_words": {"a": 1}}, "alert_words is not a list", "BAD_REQUEST"),
        ("post", {"alert_words": ["ok", 5]}, "alert_words[1] is not a string", "BAD_REQUEST"),
        ("post", {"alert_words": ["w" * 101]}, "alert_words[0] is too long (limit: 100 characters)", "BAD_REQUEST"),
        ("delete", {"alert_words": [None]}, "alert_words[0] is not a string", "BAD_REQUEST"),
    ],
)
def test_errors(live, method, params, msg, code):
    add(live.owner, "kept")
    count = len(live.events())
    assert_error(live.owner.request(method.upper(), PATH, params), msg, code)
    assert words(live.owner) == ["kept"]
    assert alert_events(live, count) == []


# -- the has_alert_word flag -----------------------------------------------------------------


@pytest.fixture
def alerted(live):
    """alice has the alert words one, two, three and "coffee break"; owner sends to general."""
    alice = live.make_user()
    make_channel(live, "general", [live.owner.id, alice.id])
    add(alice, "one", "two", "three", "Coffee Break")

    def check(content):
        message_id = send_ok(live.owner, "general", content)
        return "has_alert_word" in stored_flags(live, message_id)[alice.id]

    check.alice = alice
    return check


@pytest.mark.parametrize(
    "content",
    ["Normal alert one time", "Normal alert one", "two normal alerts", "This one? should alert",
     "Definitely time for three.", "One two three o'clock", "Case of ONE, won't stop me", "(one)", "*one*",
     "`one`", "> one", "time for a coffee break!", "[one]", "x\none\ny"],
)  # fmt: skip
def test_matches_as_zulip_does(alerted, content):
    assert alerted(content)


@pytest.mark.parametrize(
    "content",
    ["Don't alert on http://t.co/one/ URLs", "Don't alert on http://t.co/one URLs",
     "Don't alert on clone, twofold or seventytwofold", "someone", "one-off", '"one"', "coffee breaks",
     "```\none\n```", "~~~ python\nthree = 3\n~~~", "```\nunclosed one"],
)  # fmt: skip
def test_does_not_match(alerted, content):
    assert not alerted(content)


def test_text_after_a_code_block_still_matches(alerted):
    assert alerted("```\ncode\n```\nthree")


def test_not_for_the_senders_own_message(live, alerted):
    message_id = send_ok(alerted.alice, "general", "one for me")
    assert "has_alert_word" not in stored_flags(live, message_id)[alerted.alice.id]
    assert alerted("one for me")  # the same text from someone else alerts her


def test_direct_messages_and_the_message_event(live):
    alice, bob = live.make_user(), live.make_user()
    add(alice, "lunch")
    count = len(live.events())
    message_id = send_direct_ok(live.owner, [alice.id, bob.id], "Lunch?")
    flags_by_user = stored_flags(live, message_id)
    assert "has_alert_word" in flags_by_user[alice.id]
    assert "has_alert_word" not in flags_by_user[bob.id]
    [alice_event] = [e for e, ids in live.events()[count:] if e["type"] == "message" and alice.id in ids]
    assert "has_alert_word" in alice_event["flags"]


def test_is_alerted_narrow(live, alerted):
    alerted("nothing here")
    hit = send_ok(live.owner, "general", "two o'clock")
    assert narrow_ids(alerted.alice, [["is", "alerted"]]) == [hit]
    assert narrow_ids(live.owner, [["is", "alerted"]]) == []


def test_edits_set_and_clear_the_flag(live, alerted):
    message_id = send_ok(live.owner, "general", "nothing yet")
    assert "has_alert_word" not in stored_flags(live, message_id)[alerted.alice.id]
    assert_success(live.owner.patch(f"/messages/{message_id}", {"content": "now three"}))
    assert "has_alert_word" in stored_flags(live, message_id)[alerted.alice.id]
    assert narrow_ids(alerted.alice, [["is", "alerted"]]) == [message_id]
    assert_success(live.owner.patch(f"/messages/{message_id}", {"content": "sorry false alarm"}))
    assert "has_alert_word" not in stored_flags(live, message_id)[alerted.alice.id]


def test_new_words_do_not_flag_old_messages(live, alerted):
    message_id = send_ok(live.owner, "general", "four")
    add(alerted.alice, "four")
    assert "has_alert_word" not in stored_flags(live, message_id)[alerted.alice.id]


def test_receiver_words_query_uses_the_index(live):
    plan = live.read(
        lambda tx: " ".join(
            row["detail"] for row in tx.all("EXPLAIN QUERY PLAN " + alert_words.RECEIVER_WORDS_SQL, ("[1, 2]",))
        )
    )
    assert "alert_words_by_user" in plan
    assert "SCAN alert_words" not in plan


def test_the_zulip_package(live, zulip_client):
    assert zulip_client.add_alert_words(["Lunch", "tea"])["alert_words"] == ["Lunch", "tea"]
    assert zulip_client.get_alert_words()["alert_words"] == ["Lunch", "tea"]
    assert zulip_client.remove_alert_words(["LUNCH"])["alert_words"] == ["tea"]
    assert words(live.owner) == ["tea"]
