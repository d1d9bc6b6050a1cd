"""GET /users/me/{stream_id}/topics: a channel's topics newest first, only what the user may read."""

from __future__ import annotations

import pytest

from storage.channels import channel_topics
from tests.support.channel_helpers import archive, make_channel, subscribe
from tests.support.helpers import assert_error, assert_success
from tests.support.send_helpers import send_ok


def topics(client, channel_id, **params):
    return assert_success(client.get(f"/users/me/{channel_id}/topics", params))["topics"]


def test_newest_first_with_max_id(live):
    general = make_channel(live, "general", [live.owner.id])
    assert topics(live.owner, general) == []
    first = send_ok(live.owner, "general", "a", "lunch")
    news = send_ok(live.owner, "general", "b", "news")
    lunch = send_ok(live.owner, "general", "c", "lunch")
    send_ok(live.owner, [live.owner.id], "a DM", None, type="direct")
    assert first < news < lunch
    assert topics(live.owner, general) == [{"name": "lunch", "max_id": lunch}, {"name": "news", "max_id": news}]


def test_topics_differing_in_case_are_one_named_as_the_newest(live):
    general = make_channel(live, "general", [live.owner.id])
    send_ok(live.owner, "general", "a", "Lunch")
    newest = send_ok(live.owner, "general", "b", "LUNCH")
    assert topics(live.owner, general) == [{"name": "LUNCH", "max_id": newest}]


def test_only_this_channels_topics(live):
    general = make_channel(live, "general", [live.owner.id])
    random = make_channel(live, "random", [live.owner.id])
    in_general = send_ok(live.owner, "general", "a", "lunch")
    in_random = send_ok(live.owner, "random", "b", "lunch")
    assert topics(live.owner, general) == [{"name": "lunch", "max_id": in_general}]
    assert topics(live.owner, random) == [{"name": "lunch", "max_id": in_random}]


def test_empty_topic(live):
    general = make_channel(live, "general", [live.owner.id])
    message_id = send_ok(live.owner, "general", "a", "")
    assert topics(live.owner, general) == [{"name": "general chat", "max_id": message_id}]
    assert topics(live.owner, general, allow_empty_topic_name=True) == [{"name": "", "max_id": message_id}]


def test_public_channel_without_subscribing(live):
    alice = live.make_user()
    general = make_channel(live, "general", [live.owner.id])
    message_id = send_ok(live.owner, "general", "a", "lunch")
    assert topics(alice, general) == [{"name": "lunch", "max_id": message_id}]


def test_protected_history_shows_only_what_the_user_received(live):
    alice = live.make_user()
    secret = make_channel(live, "secret", [live.owner.id], invite_only=True, history_public_to_subscribers=False)
    send_ok(live.owner, "secret", "before alice", "old")
    lunch_before = send_ok(live.owner, "secret", "before alice", "lunch")
    assert_success(live.owner.post("/users/me/subscriptions", {"subscriptions": [{"name": "secret"}],
                                                              "principals": [alice.id]}))  # fmt: skip
    lunch_after = send_ok(live.owner, "secret", "after", "lunch")
    new = send_ok(live.owner, "secret", "after", "new")
    assert topics(alice, secret) == [{"name": "new", "max_id": new}, {"name": "lunch", "max_id": lunch_after}]
    assert [t["name"] for t in topics(live.owner, secret)] == ["new", "lunch", "old"]
    assert lunch_before < lunch_after


def test_shared_history_private_channel_shows_everything_to_subscribers(live):
    alice = live.make_user()
    shared = make_channel(live, "shared", [live.owner.id], invite_only=True, history_public_to_subscribers=True)
    old = send_ok(live.owner, "shared", "before alice", "old")
    assert_error(alice.get(f"/users/me/{shared}/topics"), "Invalid channel ID")
    assert_success(live.owner.post("/users/me/subscriptions", {"subscriptions": [{"name": "shared"}],
                                                              "principals": [alice.id]}))  # fmt: skip
    assert topics(alice, shared) == [{"name": "old", "max_id": old}]


def test_channels_the_user_cannot_read(live):
    alice = live.make_user()
    guest = live.make_user(role="guest")
    secret = make_channel(live, "secret", [live.owner.id], invite_only=True)
    public = make_channel(live, "public", [live.owner.id])
    archived = make_channel(live, "old", [live.owner.id])
    send_ok(live.owner, "secret", "x", "hidden topic")
    archive(live, archived)
    assert_error(alice.get(f"/users/me/{secret}/topics"), "Invalid channel ID")
    assert_error(guest.get(f"/users/me/{public}/topics"), "Invalid channel ID")
    assert_error(live.owner.get(f"/users/me/{archived}/topics"), "Invalid channel ID")
    assert_error(live.owner.get("/users/me/999999/topics"), "Invalid channel ID")
    # A guest subscribed to the channel may list its topics.
    assert_success(subscribe(live.owner, ["public"], principals=[guest.id]))
    assert topics(guest, public) == []


def test_bad_parameter(live):
    general = make_channel(live, "general", [live.owner.id])
    resp = live.owner.get(f"/users/me/{general}/topics", {"allow_empty_topic_name": "maybe"})
    assert_error(resp, "allow_empty_topic_name is not valid JSON")


@pytest.mark.parametrize("query", [channel_topics.PUBLIC_TOPICS_SQL, channel_topics.RECEIVED_TOPICS_SQL])
def test_queries_walk_the_topic_index(live, query):
    params = (1,) if query == channel_topics.PUBLIC_TOPICS_SQL else (1, 1)
    plan = live.read(lambda tx: [row["detail"] for row in tx.all("EXPLAIN QUERY PLAN " + query, params)])
    assert any("COVERING INDEX messages_by_topic (recipient_id=?)" in step for step in plan), plan
    # No table is scanned (`t` is the materialized list of topics); the per-user check is a key lookup.
    assert [step for step in plan if step.startswith("SCAN")] == ["SCAN t"], plan
    if query == channel_topics.RECEIVED_TOPICS_SQL:
        assert "SEARCH um USING PRIMARY KEY (user_id=? AND message_id=?)" in plan


def test_the_zulip_package(live, zulip_client):
    general = make_channel(live, "general", [live.owner.id])
    message_id = send_ok(live.owner, "general", "a", "lunch")
    result = zulip_client.get_stream_topics(general)
    assert result["topics"] == [{"name": "lunch", "max_id": message_id}], result
    assert zulip_client.get_stream_topics(999999)["msg"] == "Invalid channel ID"
