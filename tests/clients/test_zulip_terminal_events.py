"""The events tornchat sends zulip-terminal 0.7.0, through zulip-terminal's own event handlers.

zulip-terminal registers for ten event types (model.py `event_actions`) and hands each event to a
handler that asserts its type and reads keys without defaults; an exception there shows in its
"An exception occurred" popup. tests/support/zt_model_driver.py runs zulip-terminal's real Model (its own
POST /register with its own parameters) in zulip-terminal's virtualenv; these tests cause every
kind of event it handles over HTTP, dispatch what its queue receives, and assert that no handler
raised and that the model took the change in (its settings, muted streams, stars, reactions...).
Those tests are marked `client`; the unmarked ones assert, without zulip-terminal, the event forms
the audit found tornchat sending unlike Zulip (the empty topic in moves and deletions, muted_topics
beside user_topic).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.storage.org.test_realm_emoji import upload as upload_emoji
from tests.support.channel_helpers import make_channel, subscribe, unsubscribe
from tests.support.client_helpers import Driver
from tests.support.events_helpers import events_now, of_type, register, send_direct, send_stream
from tests.support.helpers import Client, assert_success
from tests.support.zulip_terminal_helpers import assert_no_errors

# model.py's event_actions: the event_types zulip-terminal registers for.
HANDLED = {
    "message", "update_message", "reaction", "subscription", "typing", "update_message_flags",
    "update_global_notifications", "update_display_settings", "user_settings", "realm_emoji",
}  # fmt: skip


@pytest.fixture
def bob_builder(live) -> Client:
    return live.make_user(email="bob@example.com", full_name="Bob Builder")


@pytest.fixture
def general_with_bob(live, bob_builder) -> int:
    channel_id = make_channel(live, "general", [live.owner.id, bob_builder.id])
    send_stream(bob_builder, "general", "lunch at noon", topic="lunch")
    return channel_id


@pytest.fixture
def model(live, general_with_bob, tmp_path) -> Iterator[Driver]:
    driver = Driver(live, tmp_path)
    try:
        yield driver
    finally:
        driver.close()


def types_of(results: list[dict[str, Any]]) -> list[str]:
    return [result["type"] for result in results]


# -- messages and edits ---------------------------------------------------------------------------


@pytest.mark.client
def test_new_messages_of_every_kind_are_indexed(model, live, bob_builder):
    content = (
        "hi @**Owner** :wave: **bold** `code` [a link](https://example.com) <time:2026-01-01T10:00:00Z>\n"
        "> quoted\n\n```spoiler Hidden\nsecret\n```\n\n```python\nprint(1)\n```"
    )
    rich = send_stream(bob_builder, "general", content, topic="lunch")
    direct = send_direct(bob_builder, [live.owner.id], "psst")
    results = model.poll()
    assert types_of(results) == ["message", "message"]
    messages = model.state()["messages"]
    assert "mentioned" in messages[str(rich)]["flags"] and messages[str(direct)]["content"] == "<p>psst</p>"


@pytest.mark.client
def test_edits_and_moves_reach_its_index(model, live, bob_builder, general_with_bob):
    message_id = send_stream(bob_builder, "general", "at noon", topic="lunch")
    other = make_channel(live, "design", [live.owner.id, bob_builder.id])
    assert_success(bob_builder.patch(f"/messages/{message_id}", {"content": "at one"}))
    assert_success(live.owner.patch(f"/messages/{message_id}", {"topic": "dinner", "propagate_mode": "change_all"}))
    assert_success(live.owner.patch(f"/messages/{message_id}", {"stream_id": other, "propagate_mode": "change_one"}))
    results = model.poll()
    assert types_of(results).count("update_message") == 3
    state = model.state()
    assert message_id in state["edited"]
    moved = state["messages"][str(message_id)]
    assert (moved["content"], moved["subject"]) == ("<p>at one</p>", "dinner")


@pytest.mark.client
def test_moves_from_and_to_the_empty_topic_name_it_general_chat(model, live, bob_builder, general_with_bob):
    # zulip-terminal has no empty_topic_name capability: the empty topic is "general chat" in every
    # event, a move's orig_subject and subject too, as in its messages (Zulip's event_queue.py).
    message_id = send_stream(bob_builder, "general", "in general chat", topic="")
    assert_success(live.owner.patch(f"/messages/{message_id}", {"topic": "named", "propagate_mode": "change_one"}))
    assert_success(live.owner.patch(f"/messages/{message_id}", {"topic": "", "propagate_mode": "change_one"}))
    results = model.poll()
    assert results[0]["event"]["message"]["subject"] == "general chat"
    moves = [(r["event"]["orig_subject"], r["event"]["subject"]) for r in results[1:]]
    assert moves == [("general chat", "named"), ("named", "general chat")]
    assert model.state()["messages"][str(message_id)]["subject"] == "general chat"


@pytest.mark.parametrize(("capabilities", "topic"), [({}, "general chat"), ({"empty_topic_name": True}, "")])
def test_move_and_delete_events_name_the_empty_topic_by_capability(
    live, bob_builder, general_with_bob, capabilities, topic
):
    queue_id = register(live.owner, client_capabilities=capabilities)["queue_id"]
    message_id = send_stream(bob_builder, "general", "in general chat", topic="")
    assert_success(live.owner.patch(f"/messages/{message_id}", {"topic": "named", "propagate_mode": "change_one"}))
    assert_success(live.owner.patch(f"/messages/{message_id}", {"topic": "", "propagate_mode": "change_one"}))
    assert_success(live.owner.delete(f"/messages/{message_id}"))
    events = events_now(live.owner, queue_id)
    moves = [(e["orig_subject"], e["subject"]) for e in of_type(events, "update_message")]
    assert moves == [(topic, "named"), ("named", topic)]
    [deleted] = of_type(events, "delete_message")
    assert (deleted["message_ids"], deleted["topic"]) == ([message_id], topic)


@pytest.mark.parametrize(
    ("event_types", "received"),
    [(["muted_topics"], ["muted_topics"]), (["muted_topics", "user_topic"], ["user_topic"]),
     (None, ["muted_topics", "user_topic"])],
)  # fmt: skip
def test_muted_topics_events_only_to_queues_not_asking_for_user_topic(live, general_with_bob, event_types, received):
    params = {} if event_types is None else {"event_types": event_types}
    queue_id = register(live.owner, **params)["queue_id"]
    assert_success(
        live.owner.post("/user_topics", {"stream_id": general_with_bob, "topic": "lunch", "visibility_policy": 1})
    )
    assert [e["type"] for e in events_now(live.owner, queue_id)] == received


# -- reactions and flags --------------------------------------------------------------------------


@pytest.mark.client
def test_reactions_from_others_and_from_the_user(model, live, bob_builder, general_with_bob):
    message_id = send_stream(bob_builder, "general", "react to me", topic="lunch")
    model.poll()
    url = f"/messages/{message_id}/reactions"
    for client, name in ((bob_builder, "big_smile"), (live.owner, "heart_box"), (bob_builder, "octopus")):
        assert_success(client.post(url, {"emoji_name": name}))
    assert_success(bob_builder.delete(url, {"emoji_name": "octopus"}))
    assert types_of(model.poll()) == ["reaction"] * 4
    reactions = model.state()["messages"][str(message_id)]["reactions"]
    assert reactions == [["big_smile", bob_builder.id], ["heart_box", live.owner.id]]


@pytest.mark.client
def test_stars_and_read_flags(model, live, bob_builder, general_with_bob):
    first, second = (send_stream(bob_builder, "general", text, topic="lunch") for text in ("one", "two"))
    model.poll()
    assert_success(live.owner.post("/messages/flags", {"messages": [first], "op": "add", "flag": "starred"}))
    assert_success(live.owner.post("/messages/flags", {"messages": [first, second], "op": "add", "flag": "read"}))
    assert_success(live.owner.post("/messages/flags", {"messages": [second], "op": "remove", "flag": "read"}))
    assert_success(live.owner.post("/mark_all_as_read"))
    assert set(types_of(model.poll())) == {"update_message_flags"}
    state = model.state()
    assert state["starred"] == [first] and "starred" in state["messages"][str(first)]["flags"]
    assert_success(live.owner.post("/messages/flags", {"messages": [first], "op": "remove", "flag": "starred"}))
    model.poll()
    assert model.state()["starred"] == []


# -- subscriptions --------------------------------------------------------------------------------


def set_property(client: Client, stream_id: int, name: str, value: Any) -> None:
    change = {"stream_id": stream_id, "property": name, "value": value}
    assert_success(client.post("/users/me/subscriptions/properties", {"subscription_data": [change]}))


@pytest.mark.client
def test_subscription_changes(model, live, bob_builder, general_with_bob):
    for name, value in (("is_muted", True), ("pin_to_top", True), ("desktop_notifications", True)):
        set_property(live.owner, general_with_bob, name, value)
    set_property(live.owner, general_with_bob, "color", "#a0b0c0")
    results = model.poll()
    assert [r["event"]["property"] for r in results] == [
        "in_home_view", "is_muted", "pin_to_top", "desktop_notifications", "color",
    ]  # fmt: skip
    state = model.state()
    assert state["muted_streams"] == [general_with_bob] and state["pinned_streams"] == [general_with_bob]
    assert state["visual_notified_streams"] == [general_with_bob]
    set_property(live.owner, general_with_bob, "in_home_view", True)  # the legacy name unmutes
    set_property(live.owner, general_with_bob, "pin_to_top", False)
    model.poll()
    assert (model.state()["muted_streams"], model.state()["pinned_streams"]) == ([], [])


@pytest.mark.client
def test_others_joining_and_leaving_a_channel(model, live, bob_builder, general_with_bob):
    carol = live.make_user(email="carol@example.com", full_name="Carol")
    assert_success(subscribe(carol, ["general"]))
    assert model.state()["subscribers"][str(general_with_bob)] == sorted([live.owner.id, bob_builder.id])
    model.poll()
    assert model.state()["subscribers"][str(general_with_bob)] == sorted([live.owner.id, bob_builder.id, carol.id])
    assert_success(unsubscribe(carol, ["general"]))
    assert_success(unsubscribe(bob_builder, ["general"]))
    model.poll()
    assert model.state()["subscribers"][str(general_with_bob)] == [live.owner.id]


@pytest.mark.client
def test_joining_and_leaving_a_channel_oneself(model, live, bob_builder):
    random = make_channel(live, "random", [bob_builder.id])
    assert [r["event"]["op"] for r in model.poll()] == ["peer_add"]  # Bob joined a channel the owner may join
    assert_success(subscribe(live.owner, ["random"]))
    assert_success(unsubscribe(live.owner, ["random"]))
    # The owner's own changes come as add and remove, never as peer events about the owner (Zulip).
    assert [r["event"]["op"] for r in model.poll()] == ["add", "remove"]
    assert str(random) not in model.state()["subscribers"]


# -- typing, settings, custom emoji --------------------------------------------------------------


@pytest.mark.client
def test_typing_in_a_direct_conversation(model, live, bob_builder):
    model.ask('narrow [["pm_with", "bob@example.com"]]')
    assert_success(bob_builder.post("/typing", {"op": "start", "to": [live.owner.id]}))
    assert types_of(model.poll()) == ["typing"]
    assert model.state()["typing"] == {"sender_name": "Bob Builder"}
    assert_success(bob_builder.post("/typing", {"op": "stop", "to": [live.owner.id]}))
    model.poll()
    assert model.state()["typing"] == {}


@pytest.mark.client
def test_typing_from_someone_whose_email_is_hidden(live, bob_builder, tmp_path):
    # zulip-terminal finds the typist by the email in the event among realm_users' emails: both are
    # the same stand-in address when Bob hides his real one (EMAIL_ADDRESS_VISIBILITY_NOBODY).
    assert_success(bob_builder.patch("/settings", {"email_address_visibility": 4}))
    email = assert_success(live.owner.get(f"/users/{bob_builder.id}"))["user"]["email"]
    assert email != "bob@example.com"
    driver = Driver(live, tmp_path)
    try:
        driver.ask(f'narrow [["pm_with", "{email}"]]')
        assert_success(bob_builder.post("/typing", {"op": "start", "to": [live.owner.id]}))
        assert types_of(driver.poll()) == ["typing"]
        assert driver.state()["typing"] == {"sender_name": "Bob Builder"}
    finally:
        driver.close()


@pytest.mark.client
def test_only_muted_topics_are_in_its_muted_topics(live, bob_builder, general_with_bob, tmp_path):
    # POST /register's legacy muted_topics ([channel, topic, date_muted]) lists muted topics only,
    # not unmuted or followed ones, which zulip-terminal would otherwise hide.
    for topic, policy in (("noise", 1), ("lunch", 2), ("plans", 3)):
        body = {"stream_id": general_with_bob, "topic": topic, "visibility_policy": policy}
        assert_success(live.owner.post("/user_topics", body))
    driver = Driver(live, tmp_path)
    try:
        assert driver.state()["muted_topics"] == [["general", "noise"]]
    finally:
        driver.close()


@pytest.mark.client
def test_its_presence_loop_lists_who_is_active(model, live, bob_builder):
    # Presence comes to zulip-terminal in the answer to its own POST /users/me/presence, every minute.
    # (It ages reports by its own clock, not the server's fake one: not tested here.)
    assert model.ask("presence")["statuses"]["bob@example.com"] == "inactive"  # never reported
    # Idle only well after joining: the join time stands in for a never-reported activity (Zulip).
    live.clock.advance(100)
    assert_success(bob_builder.post("/users/me/presence", {"status": "idle", "new_user_input": "false"}))
    assert model.ask("presence")["statuses"]["bob@example.com"] == "idle"
    assert_success(bob_builder.post("/users/me/presence", {"status": "active", "new_user_input": "true"}))
    statuses = model.ask("presence")["statuses"]
    assert (statuses["bob@example.com"], statuses["owner@example.com"]) == ("active", "active")


@pytest.mark.client
def test_settings_changes_in_both_forms(model, live):
    changes = {
        "twenty_four_hour_time": True, "pm_content_in_desktop_notifications": False,
        "send_private_typing_notifications": False, "default_language": "de", "timezone": "Europe/Berlin",
        "enable_sounds": False,
    }  # fmt: skip
    assert_success(live.owner.patch("/settings", changes))
    results = model.poll()
    assert {r["type"] for r in results} == {"user_settings", "update_display_settings", "update_global_notifications"}
    assert model.state()["user_settings"] == {
        "twenty_four_hour_time": True, "pm_content_in_desktop_notifications": False,
        "send_private_typing_notifications": False,
    }  # fmt: skip


@pytest.mark.client
def test_custom_emoji_added_and_removed(model, live):
    assert upload_emoji(live.owner, "party_parrot").status_code == 200
    model.poll()
    assert model.state()["custom_emoji"] == ["party_parrot"]
    assert_success(live.owner.delete("/realm/emoji/party_parrot"))
    model.poll()
    assert model.state()["custom_emoji"] == []


@pytest.mark.client
def test_it_receives_only_the_event_types_it_registered_for(model, live, bob_builder, general_with_bob):
    # Presence, topic visibility, user and channel changes: none of them reach its queue.
    assert_success(bob_builder.post("/users/me/presence", {"status": "active"}))
    assert_success(
        live.owner.post("/user_topics", {"stream_id": general_with_bob, "topic": "lunch", "visibility_policy": 1})
    )
    assert_success(bob_builder.patch("/settings", {"full_name": "Robert Builder"}))
    assert_success(live.owner.patch(f"/streams/{general_with_bob}", {"description": "lunch plans"}))
    set_property(live.owner, general_with_bob, "pin_to_top", True)
    assert types_of(model.poll()) == ["subscription"]


# -- the same events while zulip-terminal runs ----------------------------------------------------


def left_column(screen: str, text: str) -> str:
    """The left-hand column (streams) of the line showing `text` there."""
    return next(line.split("\u2502", 1)[0] for line in screen.splitlines() if text in line.split("\u2502", 1)[0])


@pytest.mark.client
def test_it_takes_events_in_while_it_runs(terminal, access_log, tmp_path):
    """An edit, a reaction, subscription changes, a settings change: shown, and no exception anywhere."""
    live, bob, tmux = terminal.live, terminal.bob, terminal.tmux
    tmux.wait_for("# design")
    assert_success(bob.patch(f"/messages/{terminal.edited}", {"content": "lunch at two"}))
    tmux.wait_for("lunch at two")
    assert_success(bob.post(f"/messages/{terminal.edited}/reactions", {"emoji_name": "octopus"}))
    tmux.wait_for(":octopus: Bob Builder")
    assert "AM" in tmux.screen()  # 12-hour times
    assert_success(live.owner.patch("/settings", {"twenty_four_hour_time": True}))
    tmux.wait_for(lambda screen: "Jan 15 08:00" in screen and "AM" not in screen)
    # Muting comes after: zulip-terminal 0.7.0 fails to redraw the times of a channel muted while its
    # messages are shown in "All messages" (IndexError in _handle_update_display_settings_event,
    # as against Zulip: create_msg_box_list leaves muted messages out).
    design = assert_success(live.owner.get("/get_stream_id", {"stream": "design"}))["stream_id"]
    set_property(live.owner, design, "is_muted", True)
    tmux.wait_for(lambda screen: left_column(screen, "# design").rstrip().endswith("M"))
    set_property(live.owner, terminal.general, "pin_to_top", True)
    carol = live.make_user(email="carol@example.com", full_name="Carol")
    assert_success(subscribe(carol, ["general"]))
    send_stream(bob, "general", "done", topic="lunch")
    tmux.wait_for("done")
    assert_no_exception(terminal, access_log, tmp_path)


def assert_no_exception(terminal, log, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """No failed request, no error in the footer, no "An exception occurred" popup, no exception log."""
    assert_no_errors(terminal, log)
    assert "An exception occurred" not in terminal.tmux.screen()
    assert list(tmp_path.glob("zulip-terminal-*exceptions.log")) == []
