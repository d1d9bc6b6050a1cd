"""POST /register: the response fields, each fetch_event_types state against its GET endpoint, errors."""

from __future__ import annotations

import threading

import pytest

from storage.register.register import UNREAD_SQL
from tests.support.channel_helpers import make_channel, unsubscribe
from tests.support.events_helpers import events_now, of_type, register, send_direct, send_stream
from tests.support.helpers import assert_error, assert_success
from tornchat import FEATURE_LEVEL, ZULIP_VERSION

LIMITS = {
    "max_message_length": 10000,
    "max_topic_length": 60,
    "max_stream_name_length": 60,
    "max_stream_description_length": 1024,
    "realm_empty_topic_display_name": "general chat",
    "event_queue_longpoll_timeout_seconds": 90,
}
STATE_KEYS = {
    "message": {"max_message_id", "unread_msgs"},
    "update_message_flags": {"unread_msgs"},
    "subscription": {"subscriptions", "unsubscribed", "never_subscribed"},
    "realm_user": {"realm_users", "realm_non_active_users"},
    "realm_user_groups": {"realm_user_groups"},
    "realm_linkifiers": {"realm_linkifiers"},
    "scheduled_messages": {"scheduled_messages"},
    "drafts": {"drafts"},
    "saved_snippets": {"saved_snippets"},
}
ALL_STATE_KEYS = set().union(*STATE_KEYS.values())


def test_fresh_queue_fields(live):
    body = register(live.owner)
    assert isinstance(body["queue_id"], str) and body["queue_id"]
    assert body["last_event_id"] == -1
    assert body["zulip_version"] == ZULIP_VERSION
    assert body["zulip_merge_base"] == ZULIP_VERSION
    assert body["zulip_feature_level"] == FEATURE_LEVEL
    assert {k: body[k] for k in LIMITS} == LIMITS
    assert isinstance(body["server_generation"], int)
    assert body["realm_name"] and body["realm_url"] == "http://127.0.0.1:9991"
    assert ALL_STATE_KEYS <= set(body), "without fetch_event_types every state is sent"
    assert events_now(live.owner, body["queue_id"]) == []


def test_realm_limits_are_always_sent(live):
    body = register(live.owner, fetch_event_types=[])
    assert {k: body[k] for k in LIMITS} == LIMITS
    assert not ALL_STATE_KEYS & set(body)


@pytest.mark.parametrize("kind", sorted(STATE_KEYS))
def test_each_fetch_event_type_sends_its_state_only(live, kind):
    body = register(live.owner, fetch_event_types=[kind])
    present = ALL_STATE_KEYS & set(body)
    expected = STATE_KEYS[kind] | (STATE_KEYS["update_message_flags"] if kind == "message" else set())
    assert present == expected


def test_event_types_decide_the_state_without_fetch_event_types(live):
    body = register(live.owner, event_types=["realm_user"])
    assert ALL_STATE_KEYS & set(body) == STATE_KEYS["realm_user"]
    body = register(live.owner, event_types=["realm_user"], fetch_event_types=["drafts"])
    assert ALL_STATE_KEYS & set(body) == {"drafts"}


def test_two_queues_get_different_ids(live):
    assert register(live.owner)["queue_id"] != register(live.owner)["queue_id"]


# -- each state equals what its GET endpoint answers ------------------------------------------------


def test_max_message_id(live):
    other = live.make_user()
    assert register(live.owner, fetch_event_types=["message"])["max_message_id"] == -1
    make_channel(live, "general", [live.owner.id, other.id])
    first = send_stream(live.owner, "general")
    send_direct(other, [other.id])  # not the owner's: does not count for the owner
    assert register(live.owner, fetch_event_types=["message"])["max_message_id"] == first
    newest = assert_success(live.owner.get("/messages", {"anchor": "newest", "num_before": 1, "num_after": 0}))
    assert newest["messages"][-1]["id"] == first


def test_unread_msgs(live):
    alice, bob = live.make_user(full_name="Alice"), live.make_user(full_name="Bob")
    general = make_channel(live, "general", [live.owner.id, alice.id, bob.id])
    make_channel(live, "left", [live.owner.id, alice.id])
    in_topic = send_stream(alice, "general", "hi", "lunch")
    mention = send_stream(alice, "general", "@**Owner** look", "lunch")
    empty_topic = send_stream(alice, "general", "no topic", "")
    one_to_one = send_direct(alice, [live.owner.id])
    group = send_direct(alice, [live.owner.id, bob.id])
    send_stream(alice, "left", "gone", "x")
    send_stream(live.owner, "general", "mine", "lunch", read_by_sender=True)
    assert_success(unsubscribe(live.owner, ["left"]))
    unread = register(live.owner, fetch_event_types=["message"])["unread_msgs"]
    assert unread == {
        "count": 5,
        "pms": [{"other_user_id": alice.id, "sender_id": alice.id, "unread_message_ids": [one_to_one]}],
        "streams": [
            {"stream_id": general, "topic": "general chat", "unread_message_ids": [empty_topic]},
            {"stream_id": general, "topic": "lunch", "unread_message_ids": [in_topic, mention]},
        ],
        "huddles": [
            {
                "user_ids_string": ",".join(map(str, sorted([live.owner.id, alice.id, bob.id]))),
                "unread_message_ids": [group],
            }
        ],
        "mentions": [mention],
        "old_unreads_missing": False,
    }
    # The same unread messages GET /messages finds in the owner's subscribed channels and DMs.
    query = {"anchor": "oldest", "num_before": 0, "num_after": 100, "narrow": [["is", "unread"]]}
    found = [m["id"] for m in assert_success(live.owner.get("/messages", query))["messages"]]
    listed = [i for entry in unread["pms"] + unread["streams"] + unread["huddles"] for i in entry["unread_message_ids"]]
    assert sorted(listed) == [i for i in found if i in listed] and set(listed) <= set(found)


def test_unread_topics_with_empty_topic_name_capability(live):
    general = make_channel(live, "general", [live.owner.id])
    other = live.make_user()
    assert_success(other.post("/users/me/subscriptions", {"subscriptions": [{"name": "general"}]}))
    message_id = send_stream(other, "general", "x", "")
    body = register(live.owner, fetch_event_types=["message"], client_capabilities={"empty_topic_name": True})
    assert body["unread_msgs"]["streams"] == [{"stream_id": general, "topic": "", "unread_message_ids": [message_id]}]


@pytest.mark.parametrize("include", ["false", "true", "partial"])
def test_subscriptions_match_get_subscriptions(live, include):
    member = live.make_user()
    make_channel(live, "joined", [live.owner.id, member.id])
    make_channel(live, "secret", [live.owner.id, member.id], invite_only=True)
    body = register(member, fetch_event_types=["subscription"], include_subscribers=include)
    listed = assert_success(member.get("/users/me/subscriptions", {"include_subscribers": include}))
    assert body["subscriptions"] == listed["subscriptions"]


def test_unsubscribed_and_never_subscribed(live):
    member = live.make_user()
    make_channel(live, "left", [member.id])
    make_channel(live, "public", [live.owner.id])
    make_channel(live, "secret", [live.owner.id], invite_only=True)
    assert_success(unsubscribe(member, ["left"]))
    body = register(member, fetch_event_types=["subscription"], include_subscribers="true")
    assert body["subscriptions"] == []
    assert [s["name"] for s in body["unsubscribed"]] == ["left"]
    never = body["never_subscribed"]
    assert [s["name"] for s in never] == ["public"], "a private channel's existence is not revealed"
    assert never[0]["subscribers"] == [live.owner.id]
    streams = assert_success(member.get("/streams"))["streams"]
    assert {s["stream_id"] for s in streams} == {s["stream_id"] for s in body["unsubscribed"] + never}


def test_realm_users_match_get_users(live):
    gone = live.make_user(full_name="Gone")
    assert_success(live.owner.delete(f"/users/{gone.id}"))
    body = register(live.owner, fetch_event_types=["realm_user"])
    # With profile data, as Zulip sends it to logged-in users (GET /users only when asked).
    members = assert_success(live.owner.get("/users", {"include_custom_profile_fields": True}))["members"]
    assert body["realm_users"] == [m for m in members if m["is_active"]]
    assert body["realm_non_active_users"] == [m for m in members if not m["is_active"]]
    assert [u["user_id"] for u in body["realm_non_active_users"]] == [gone.id]


def test_realm_users_follow_client_gravatar(live):
    body = register(live.owner, fetch_event_types=["realm_user"], client_gravatar=False)
    params = {"client_gravatar": False, "include_custom_profile_fields": True}
    members = assert_success(live.owner.get("/users", params))["members"]
    assert body["realm_users"] == [m for m in members if m["is_active"]]
    assert all(u["avatar_url"] for u in body["realm_users"])


def test_realm_users_carry_their_profile_data(live):
    member = live.make_user(full_name="Member")
    field = assert_success(live.owner.post("/realm/profile_fields", {"name": "Desk", "field_type": 1}))["id"]
    assert_success(live.owner.patch(f"/users/{member.id}", {"profile_data": [{"id": field, "value": "B4"}]}))
    users = {u["user_id"]: u for u in register(live.owner, fetch_event_types=["realm_user"])["realm_users"]}
    assert users[member.id]["profile_data"] == {str(field): {"value": "B4", "rendered_value": "<p>B4</p>"}}
    assert users[live.owner.id]["profile_data"] == {}


def test_realm_user_groups_match_get_user_groups(live):
    assert_success(live.owner.post("/user_groups/create", {"name": "team", "description": "d", "members": []}))
    body = register(live.owner, fetch_event_types=["realm_user_groups"])
    assert body["realm_user_groups"] == assert_success(live.owner.get("/user_groups"))["user_groups"]
    assert "team" in [g["name"] for g in body["realm_user_groups"]]


def test_linkifiers_and_scheduled_messages(live):
    body = register(live.owner, fetch_event_types=["realm_linkifiers", "scheduled_messages"])
    assert body["realm_linkifiers"] == []
    assert body["scheduled_messages"] == assert_success(live.owner.get("/scheduled_messages"))["scheduled_messages"]


def test_scheduled_messages_state(live):
    general = make_channel(live, "general", [live.owner.id])
    when = int(live.clock.now) + 3600
    params = {"type": "stream", "to": general, "topic": "t", "content": "later", "scheduled_delivery_timestamp": when}
    assert_success(live.owner.post("/scheduled_messages", params))
    body = register(live.owner, fetch_event_types=["scheduled_messages"])
    listed = assert_success(live.owner.get("/scheduled_messages"))["scheduled_messages"]
    assert body["scheduled_messages"] == listed and len(listed) == 1


def test_drafts_and_saved_snippets_states(live):
    draft = {"type": "", "to": [], "topic": "", "content": "draft", "timestamp": 1_700_000_000}
    assert_success(live.owner.post("/drafts", {"drafts": [draft]}))
    assert_success(live.owner.post("/saved_snippets", {"title": "t", "content": "c"}))
    body = register(live.owner, fetch_event_types=["drafts", "saved_snippets"])
    assert body["drafts"] == assert_success(live.owner.get("/drafts"))["drafts"]
    assert body["saved_snippets"] == assert_success(live.owner.get("/saved_snippets"))["saved_snippets"]
    assert len(body["drafts"]) == len(body["saved_snippets"]) == 1


# -- the snapshot and the queue fit together ----------------------------------------------------


def test_no_message_falls_between_the_state_and_the_queue(live):
    """Messages sent while clients register land in exactly one place: the state or the queue."""
    sender = live.make_user()
    make_channel(live, "busy", [live.owner.id, sender.id])
    sent: list[int] = []

    def send_many() -> None:
        for n in range(40):
            sent.append(send_stream(sender, "busy", f"message {n}"))

    thread = threading.Thread(target=send_many, daemon=True)
    thread.start()
    registrations = []
    while thread.is_alive() and len(registrations) < 30:
        registrations.append(register(live.owner, event_types=["message"]))
    thread.join(30)
    assert not thread.is_alive()
    assert len({body["max_message_id"] for body in registrations}) > 1, "registrations interleaved with sends"
    for body in registrations:
        queued = [e["message"]["id"] for e in of_type(events_now(live.owner, body["queue_id"]), "message")]
        assert queued == [i for i in sent if i > body["max_message_id"]]


# -- errors -------------------------------------------------------------------------------------


def test_guests_cannot_listen_to_all_public_streams(live):
    guest = live.make_user(role="guest")
    assert_error(guest.post("/register", {"all_public_streams": True}), "User not authorized for this query")
    register(guest, all_public_streams=False)


@pytest.mark.parametrize(
    ("narrow", "msg"),
    [
        ([["search", "lunch"]], "Operator search not supported."),
        ([["bogus", "x"]], "Operator bogus not supported."),
        ([["stream"]], "Invalid narrow[0]: Value error, element is not a string pair"),
        ([["stream", "a", "b"]], "Invalid narrow[0]: Value error, element is not a string pair"),
        ([["stream", 1]], "narrow[0][1] is not a string"),
        ('"stream"', "narrow is not a list"),
    ],
)
def test_bad_narrows(live, narrow, msg):
    assert_error(live.owner.post("/register", {"narrow": narrow}), msg)


@pytest.mark.parametrize(
    ("params", "msg"),
    [
        ({"event_types": '"message"'}, "event_types is not a list"),
        ({"event_types": "message"}, "event_types is not valid JSON"),
        ({"fetch_event_types": [1]}, "fetch_event_types[0] is not a string"),
        ({"apply_markdown": "yes"}, "apply_markdown is not valid JSON"),
        ({"client_gravatar": 1}, "client_gravatar is not a boolean"),
        ({"queue_lifespan_secs": "soon"}, "queue_lifespan_secs is not valid JSON"),
        ({"client_capabilities": []}, "client_capabilities is not a dict"),
        ({"include_subscribers": "maybe"}, "Invalid include_subscribers"),
    ],
)
def test_bad_parameters(live, params, msg):
    assert_error(live.owner.post("/register", params), msg)


def test_include_subscribers_json_encoded_or_verbatim(live):
    make_channel(live, "general", [live.owner.id])
    for value in ("true", '"partial"', "partial"):
        body = register(live.owner, fetch_event_types=["subscription"], include_subscribers=value)
        assert "subscribers" in body["subscriptions"][0] or "partial_subscribers" in body["subscriptions"][0]


def test_unknown_parameters_are_reported(live):
    body = register(live.owner, fetch_event_types=[], bogus=1)
    assert body["ignored_parameters_unsupported"] == ["bogus"]


def test_register_requires_authentication(live):
    assert_error(
        live.anonymous().post("/register"),
        "Not logged in: API authentication or user session required",
        "UNAUTHORIZED",
        401,
    )


def test_unread_query_plan(live):
    """unread_msgs walks the user's unread index newest first: no sort, one lookup per row."""
    plan = live.read(lambda tx: [row["detail"] for row in tx.all("EXPLAIN QUERY PLAN " + UNREAD_SQL, (1, 10))])
    assert plan == [
        "SEARCH um USING INDEX user_messages_unread (user_id=?)",
        "SEARCH m USING INTEGER PRIMARY KEY (rowid=?)",
        "CORRELATED SCALAR SUBQUERY 1",
        "SEARCH s USING PRIMARY KEY (user_id=? AND channel_id=?)",
    ]


# -- settings events by capability --------------------------------------------------------------


def test_legacy_settings_events_follow_the_capability_across_a_restart(live, restart):
    modern = register(live.owner, client_capabilities={"user_settings_object": True})["queue_id"]
    legacy = register(live.owner)["queue_id"]
    after = restart()
    assert_success(after.owner.patch("/settings", {"enter_sends": True}))
    assert [e["type"] for e in events_now(after.owner, modern)] == ["user_settings"]
    assert [e["type"] for e in events_now(after.owner, legacy)] == ["user_settings", "update_display_settings"]
