"""The official Zulip mobile app (zulip/zulip-flutter) against tornchat, replayed request by request.

The app signs in (GET /server_settings, POST /fetch_api_key), registers a queue with the exact
parameters of its lib/api/route/events.dart, long-polls GET /events, fetches messages with the
narrows it builds, sends, marks read, and decodes every event it receives. Each answer and each
event is checked against the app's decoders: the keys they read without a default and their JSON
types, from tests/clients/zulip_flutter_contract.json (generated from the app's source by
tests/clients/zulip_flutter_contract.py; the commit is in the file). A failure lists what would
make the app's decoder throw.
"""

from __future__ import annotations

import os

import pytest

from tests.clients.zulip_flutter_contract import generate
from tests.support.events_helpers import Poll, events_now, low_heartbeat, wait_until_parked
from tests.support.flutter_app_helpers import NARROWS, SCENARIOS, app_register, get_messages, narrow_param
from tests.support.flutter_app_routes import APP_ROUTES, route_answers
from tests.support.flutter_contract import Checker, load_contract
from tests.support.helpers import PASSWORD, assert_success

CONTRACT = load_contract()
APP_REPO = os.environ.get("ZULIP_FLUTTER_REPO", "/work/.mirror/zulip+zulip-flutter/repo")


@pytest.fixture
def checker() -> Checker:
    return Checker(CONTRACT)


@pytest.fixture
def town(people):  # type: ignore[no-untyped-def]
    """people (owner, Alice, Bob in "general"), with a channel message (with a reaction and an edit),
    a message in the empty topic, and a direct message to Alice that mentions her."""
    live = people
    live.stream_message = assert_success(
        live.alice.post("/messages", {"type": "channel", "to": live.channel_id, "topic": "lunch", "content": "soup?"})
    )["id"]
    assert_success(live.owner.post(f"/messages/{live.stream_message}/reactions", {"emoji_name": "octopus"}))
    assert_success(live.alice.patch(f"/messages/{live.stream_message}", {"content": "soup!"}))
    live.empty_topic_message = assert_success(
        live.owner.post("/messages", {"type": "channel", "to": live.channel_id, "topic": "", "content": "general chat"})
    )["id"]
    live.direct_message = assert_success(
        live.owner.post("/messages", {"type": "direct", "to": [live.alice.id], "content": "hi @**Alice**"})
    )["id"]
    assert_success(
        live.alice.post("/messages/flags", {"messages": [live.direct_message], "op": "add", "flag": "starred"})
    )
    return live


# -- the checker itself ------------------------------------------------------------------------


def test_the_contract_holds_the_decoders_the_app_reads():
    assert len(CONTRACT["commit"]) == 40 and CONTRACT["feature_level"] == 483
    for name in ("InitialSnapshot", "StreamMessage", "DmMessage", "User", "Subscription", "GetMessagesResult"):
        assert CONTRACT["types"][name]["fields"], name
    assert CONTRACT["events"]["message"] == "MessageEvent"
    assert CONTRACT["events"]["stream"]["delete"] == "ChannelDeleteEvent"
    snapshot = CONTRACT["types"]["InitialSnapshot"]["fields"]
    assert snapshot["realm_users"] == {
        "type": {"list": {"ref": "User"}},
        "optional": False,
        "fills": {"is_active": True},
    }
    assert snapshot["queue_id"] == {"type": "string", "optional": True}


@pytest.mark.skipif(not os.path.isdir(APP_REPO), reason="no clone of zulip-flutter (set ZULIP_FLUTTER_REPO)")
def test_the_contract_is_what_the_generator_reads_from_the_app():
    """Regenerated from the app's commit the file names, the contract comes out the same."""
    assert generate(APP_REPO, CONTRACT["commit"]) == CONTRACT


def test_the_checker_finds_what_the_app_would_reject(checker):
    dm = {
        "type": "private",
        "id": 1,
        "sender_id": 2,
        "timestamp": 3,
        "client": "c",
        "content": "x",
        "content_type": "text/html",
        "is_me_message": False,
        "reactions": [],
        "sender_email": "a@b",
        "sender_full_name": "A",
        "sender_realm_str": "",
        "flags": ["read"],
        "display_recipient": [{"id": 2}],
    }
    assert checker.message(dm) == []
    assert checker.message({**dm, "sender_id": "2"}) == ["message.sender_id: '2' is not num"]
    assert checker.message({k: v for k, v in dm.items() if k != "flags"}) == [
        "message.flags: missing or null (DmMessage)"
    ]
    assert checker.message({**dm, "type": "stream"}) == [
        "message.conversation.display_recipient: [{'id': 2}] is not string",
        "message.conversation.stream_id: missing or null (StreamConversation)",
        "message.conversation.subject: missing or null (StreamConversation)",
    ]
    typing = {"type": "typing", "id": 4, "op": "start", "message_type": "stream", "sender": {"user_id": 2}}
    assert checker.event(typing) == [
        "event.stream_id: missing or null when message_type is 'stream'",
        "event.topic: missing or null when message_type is 'stream'",
    ]
    assert checker.event({"type": "restart", "id": 5}) == []  # UnexpectedEvent: only id and type
    assert checker.event({"type": "restart"}) == ["event.id: missing or null (UnexpectedEvent)"]
    update = {"type": "subscription", "op": "update", "id": 6, "stream_id": 1, "property": "color", "value": 3}
    assert checker.event(update) == ["event.value (color): 3 is not string"]


# -- signing in and the session -----------------------------------------------------------------


def test_server_settings_and_fetch_api_key(live, checker):
    settings = assert_success(live.anonymous().get("/server_settings"))
    assert checker.typed("GetServerSettingsResult", settings, "server_settings") == []
    answer = live.anonymous().post("/fetch_api_key", {"username": "owner@example.com", "password": PASSWORD})
    key = assert_success(answer)
    assert checker.typed("FetchApiKeyResult", key, "fetch_api_key") == []
    assert key["api_key"] == live.owner.api_key


def test_register_with_the_apps_parameters(town, checker):
    snapshot = app_register(town.alice)
    assert snapshot.get("ignored_parameters_unsupported", []) == []
    assert checker.typed("InitialSnapshot", snapshot, "register") == []
    assert [s["name"] for s in snapshot["subscriptions"]] == ["general"]


def test_register_after_every_kind_of_change(town, checker):
    """The snapshot with something in most parts the app decodes: emoji, profile fields and data, groups,
    folders, topics, presence, a deactivated user (each scenario's changes)."""
    for scenario in SCENARIOS.values():
        scenario(town)
    snapshot = app_register(town.alice)
    for key in ("realm_emoji", "custom_profile_fields", "channel_folders", "user_topics", "presences",
                "realm_non_active_users", "alert_words"):  # fmt: skip
        assert snapshot.get(key), key
    assert checker.typed("InitialSnapshot", snapshot, "register") == []


def test_a_long_poll_receives_a_message(town, checker):
    snapshot = app_register(town.alice)
    low_heartbeat(town, 5)
    poll = Poll(town.alice, snapshot["queue_id"], snapshot["last_event_id"])
    wait_until_parked(town, snapshot["queue_id"])
    sent = assert_success(
        town.owner.post("/messages", {"type": "channel", "to": town.channel_id, "topic": "lunch", "content": "yes"})
    )["id"]
    body = assert_success(poll.result())
    assert checker.typed("GetEventsResult", body, "events") == []
    assert [(e["type"], e["message"]["id"]) for e in body["events"]] == [("message", sent)]


@pytest.mark.parametrize("name", list(NARROWS))
def test_get_messages_with_the_apps_narrows(town, checker, name):
    narrow, expected = NARROWS[name]
    body = get_messages(town.alice, narrow_param(town, narrow))
    assert checker.typed("GetMessagesResult", body, "messages") == []
    assert [m["id"] for m in body["messages"]] == [getattr(town, attribute) for attribute in expected]


def test_send_and_mark_read_as_the_app_does(town, checker):
    queue = app_register(town.alice)["queue_id"]
    to_channel = {"type": "channel", "to": town.channel_id, "topic": "lunch", "content": "on my way"}
    channel_sent = town.alice.post(
        "/messages", {**to_channel, "queue_id": queue, "local_id": "1", "read_by_sender": True}
    )
    sent = assert_success(channel_sent)
    assert checker.typed("SendMessageResult", sent, "send") == []
    to_bob = {"type": "direct", "to": [town.bob.id], "content": "hello", "read_by_sender": True}
    assert checker.typed("SendMessageResult", assert_success(town.alice.post("/messages", to_bob)), "send") == []
    flags = {"messages": [town.stream_message, town.direct_message], "op": "add", "flag": "read"}
    marked = assert_success(town.alice.post("/messages/flags", flags))
    assert checker.typed("UpdateMessageFlagsResult", marked, "flags") == []
    assert sorted(marked["messages"]) == sorted([town.stream_message, town.direct_message])
    by_narrow = {
        "anchor": "oldest",
        "num_before": 0,
        "num_after": 1000,
        "op": "add",
        "flag": "read",
        "narrow": [{"operator": "channel", "operand": town.channel_id}],
    }
    answer = assert_success(town.alice.post("/messages/flags/narrow", by_narrow))
    assert checker.typed("UpdateMessageFlagsForNarrowResult", answer, "flags/narrow") == []
    [event] = [e for e in events_now(town.alice, queue) if e["type"] == "message" and e["message"]["id"] == sent["id"]]
    assert event["local_message_id"] == "1" and "read" in event["flags"]  # read_by_sender


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_every_event_decodes(town, checker, scenario):
    """One kind of change, as another client makes it: every event the app's queue gets decodes."""
    snapshot = app_register(town.alice)
    expected = SCENARIOS[scenario](town)
    events = events_now(town.alice, snapshot["queue_id"], snapshot["last_event_id"])
    problems = [p for i, event in enumerate(events) for p in checker.event(event, f"{event['type']}[{i}]")]
    assert problems == [], events
    kinds = {(event["type"], event.get("op")) for event in events}
    assert set(expected) <= kinds, f"expected {expected}, got {sorted(kinds, key=str)}"


def test_event_kinds_the_app_does_not_decode(town, checker):
    """Event types tornchat sends that the app keeps as UnexpectedEvent (harmless: id and type only)."""
    snapshot = app_register(town.alice)
    for scenario in SCENARIOS.values():
        scenario(town)
    events = events_now(town.alice, snapshot["queue_id"], snapshot["last_event_id"])
    unexpected = sorted(
        {(e["type"], e.get("op")) for e in events if checker.event_decoder(e) == "UnexpectedEvent"}, key=str
    )
    assert all(checker.typed("UnexpectedEvent", e, "event") == [] for e in events)
    assert unexpected == [
        ("attachment", "add"),
        ("default_streams", None),
        ("drafts", "add"),
        ("muted_topics", None),  # beside user_topic, as Zulip sends both to a queue of every event type
        ("realm", "update"),
        ("realm", "update_dict"),
        ("scheduled_messages", "add"),
        ("typing_edit_message", "start"),
    ], unexpected


@pytest.mark.parametrize("route", APP_ROUTES, ids=[label for label, *_ in APP_ROUTES])
def test_routes_the_app_calls_are_answered(town, checker, route):
    label, request, decoder, must_succeed = route
    status, body = route_answers(request(town))
    assert status not in (404, 405) and "result" in body, (status, body)
    if must_succeed:
        assert (status, body["result"]) == (200, "success"), body
    if decoder is not None:
        assert checker.typed(decoder, body, label) == []


def test_a_quiet_poll_answers_with_a_heartbeat(town, checker):
    snapshot = app_register(town.alice)
    low_heartbeat(town)
    body = assert_success(Poll(town.alice, snapshot["queue_id"], snapshot["last_event_id"]).result())
    assert [e["type"] for e in body["events"]] == ["heartbeat"]
    assert checker.typed("GetEventsResult", body, "events") == []
