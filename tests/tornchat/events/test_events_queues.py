"""tornchat.events on its own: per-queue formatting of the private keys, delivery rules, save/load."""

from __future__ import annotations

import json
import os

import pytest

from storage.messages.messages import LOCAL, PUBLIC_CHANNEL, RAW_CONTENT, SENDER_INFO
from storage.model.roles import ROLE_ADMINISTRATOR, ROLE_GUEST, ROLE_MEMBER
from storage.model.user import ADMINS, EVERYONE, MEMBERS, NOBODY
from tests.support.helpers import FakeClock
from tornchat.events.forms import USER_FLAGS, format_for
from tornchat.events.registry import EventQueues

SENDER = 7


def message_event(**extra):
    message = {
        "id": 100,
        "sender_id": SENDER,
        "sender_email": "sender@example.com",
        "content": "<p><b>hi</b></p>",
        "content_type": "text/html",
        "avatar_url": "https://secure.gravatar.com/avatar/x?v=1",
        "type": "stream",
        "display_recipient": "general",
        "stream_id": 1,
        "subject": "",
    }
    return {"type": "message", "message": message, "flags": [], **extra}


def sender_info(visibility=EVERYONE, gravatar=True, is_bot=False):
    return {"user_id": SENDER, "visibility": visibility, "is_bot": is_bot, "gravatar": gravatar}


@pytest.fixture
def queues():
    return EventQueues(FakeClock())


def only_event(queues, queue):
    assert len(queue.events) == 1, list(queue.events)
    return queue.events[0]


def test_raw_content_for_markdown_clients(queues):
    raw, html = queues.create(1), queues.create(1, apply_markdown=True)
    queues.publish(message_event(**{RAW_CONTENT: "**hi**"}), [1])
    assert only_event(queues, raw)["message"]["content"] == "**hi**"
    assert only_event(queues, raw)["message"]["content_type"] == "text/x-markdown"
    assert only_event(queues, html)["message"]["content"] == "<p><b>hi</b></p>"
    assert RAW_CONTENT not in only_event(queues, raw)


@pytest.mark.parametrize(
    ("role", "visibility", "gravatar", "is_bot", "left_to_client"),
    [
        (ROLE_MEMBER, EVERYONE, True, False, True),
        (ROLE_MEMBER, EVERYONE, False, False, False),  # an uploaded avatar: the client cannot compute it
        (ROLE_MEMBER, ADMINS, True, False, False),  # the member may not see the email
        (ROLE_ADMINISTRATOR, ADMINS, True, False, True),
        (ROLE_GUEST, MEMBERS, True, False, False),
        (ROLE_GUEST, NOBODY, True, True, True),  # bots' emails are always visible
    ],
)
def test_client_gravatar(queues, role, visibility, gravatar, is_bot, left_to_client):
    queue = queues.create(1, role=role)
    queues.publish(message_event(**{SENDER_INFO: sender_info(visibility, gravatar, is_bot)}), [1])
    assert (only_event(queues, queue)["message"]["avatar_url"] is None) == left_to_client


def test_own_messages_leave_the_gravatar_to_the_client(queues):
    queue = queues.create(SENDER, role=ROLE_GUEST)
    queues.publish(message_event(**{SENDER_INFO: sender_info(NOBODY)}), [SENDER])
    assert only_event(queues, queue)["message"]["avatar_url"] is None


def test_client_gravatar_false(queues):
    queue = queues.create(1, client_gravatar=False)
    queues.publish(message_event(**{SENDER_INFO: sender_info()}), [1])
    assert only_event(queues, queue)["message"]["avatar_url"]


def test_local_message_id_only_for_the_sending_queue(queues):
    sending, other = queues.create(1), queues.create(1)
    queues.publish(message_event(**{LOCAL: {"queue_id": sending.id, "local_id": "5.01"}}), [1])
    assert only_event(queues, sending)["local_message_id"] == "5.01"
    assert "local_message_id" not in only_event(queues, other)


def test_empty_topic(queues):
    legacy, modern = queues.create(1), queues.create(1, empty_topic_name=True)
    queues.publish(message_event(), [1])
    assert only_event(queues, legacy)["message"]["subject"] == "general chat"
    assert only_event(queues, modern)["message"]["subject"] == ""


def test_formatting_never_changes_the_published_event(queues):
    queues.create(1)
    event = message_event(**{RAW_CONTENT: "**hi**", SENDER_INFO: sender_info()})
    before = json.dumps(event, sort_keys=True)
    queues.publish(event, [1])
    assert json.dumps(event, sort_keys=True) == before


def test_per_user_flags_in_one_event(queues):
    mentioned, other, onlooker = queues.create(1), queues.create(2), queues.create(3, all_public_streams=True)
    event = message_event(**{USER_FLAGS: {1: ["mentioned"], 2: ["read"]}, PUBLIC_CHANNEL: True})
    queues.publish(event, [1, 2])
    assert only_event(queues, mentioned)["flags"] == ["mentioned"]
    assert only_event(queues, other)["flags"] == ["read"]
    assert only_event(queues, onlooker)["flags"] == [], "a public-channel onlooker has no flags"


def test_narrow_uses_the_queue_users_own_flags(queues):
    mentions = queues.create(1, narrow=[["is", "mentioned"]])
    queues.create(2, narrow=[["is", "mentioned"]])
    queues.publish(message_event(**{USER_FLAGS: {1: ["mentioned"], 2: []}}), [1, 2])
    assert only_event(queues, mentions)["message"]["id"] == 100
    assert [len(q.events) for q in queues.queues.values()] == [1, 0]


def test_private_channel_messages_skip_public_listeners(queues):
    onlooker = queues.create(3, all_public_streams=True)
    queues.publish(message_event(**{PUBLIC_CHANNEL: False}), [1])
    queues.publish(message_event(), [1])
    assert list(onlooker.events) == []


def test_one_message_in_several_events_reaches_a_queue_once(queues):
    """The per-flag-set form (one event per distinct flag set) never duplicates a public message,
    and a listener first reached as an onlooker still ends up with its own flags."""
    onlooker = queues.create(3, all_public_streams=True)
    sender = queues.create(1, all_public_streams=True)
    mentioned = queues.create(4, all_public_streams=True)
    unread_only = queues.create(1, all_public_streams=True, narrow=[["is", "unread"]])
    for flags, user_ids in (([], [2]), (["read"], [1]), (["mentioned"], [4])):
        queues.publish(message_event(flags=flags, **{PUBLIC_CHANNEL: True}), user_ids)
    assert [(e["message"]["id"], e["flags"]) for e in onlooker.events] == [(100, [])]
    assert [(e["message"]["id"], e["flags"]) for e in sender.events] == [(100, ["read"])]
    assert [(e["message"]["id"], e["flags"]) for e in mentioned.events] == [(100, ["mentioned"])]
    assert list(unread_only.events) == [], "read for its user: outside the narrow after all"


def test_duplicate_user_ids_deliver_once(queues):
    queue = queues.create(1)
    queues.publish({"type": "test"}, [1, 1])
    assert len(queue.events) == 1


def test_format_for_strips_private_keys_of_any_event(queues):
    queue = queues.create(1)
    assert format_for(queue, {"type": "test", "_secret": 1, "x": 2}) == {"type": "test", "x": 2}


# -- save and load ------------------------------------------------------------------------------


def test_save_and_load_restore_queues_exactly(tmp_path):
    clock = FakeClock()
    before = EventQueues(clock)
    options = {"narrow": [["is", "dm"]], "apply_markdown": True, "client_gravatar": False, "empty_topic_name": True}
    queue = before.create(1, event_types={"message", "test"}, lifespan=900, role=ROLE_ADMINISTRATOR, **options)
    before.create(2, all_public_streams=True)
    for n in range(3):
        before.publish({"type": "test", "n": n}, [1])
    queue.acknowledge(0)
    path = os.path.join(str(tmp_path), "queues.json")
    before.save(path)
    after = EventQueues(clock)
    assert after.load(path) == 2
    assert not os.path.exists(path), "a saved file is used once"
    restored = after.queues[queue.id]
    for name in (
        "event_types",
        "narrow",
        "apply_markdown",
        "client_gravatar",
        "empty_topic_name",
        "lifespan",
        "role",
        "next_id",
        "newest_pruned_id",
        "last_access",
        "user_id",
    ):
        assert getattr(restored, name) == getattr(queue, name), name
    assert list(restored.events) == list(queue.events)
    assert after.by_user == before.by_user and after.public_listeners == before.public_listeners
    after.publish({"type": "test", "n": 3}, [1])
    assert [e["id"] for e in restored.events] == [1, 2, 3]


def test_load_drops_queues_that_expired_while_stopped(tmp_path):
    clock = FakeClock()
    before = EventQueues(clock)
    short, long = before.create(1, lifespan=60), before.create(1, lifespan=3600)
    path = os.path.join(str(tmp_path), "queues.json")
    before.save(path)
    clock.advance(61)
    after = EventQueues(clock)
    assert after.load(path) == 1
    assert list(after.queues) == [long.id] and short.id not in after.queues


def test_load_without_a_file(tmp_path):
    assert EventQueues(FakeClock()).load(os.path.join(str(tmp_path), "missing.json")) == 0


def test_load_ignores_a_damaged_file(tmp_path, caplog):
    path = os.path.join(str(tmp_path), "queues.json")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write("[{not json")
    queues = EventQueues(FakeClock())
    assert queues.load(path) == 0
    assert not os.path.exists(path)
    assert "Ignoring unreadable saved event queues" in caplog.text


def test_overflowed_queues_are_not_saved(tmp_path, monkeypatch):
    from tornchat.events import queue as event_queue

    monkeypatch.setattr(event_queue, "MAX_EVENTS", 1)
    queues = EventQueues(FakeClock())
    queues.create(1)
    queues.publish({"type": "test"}, [1])
    queues.publish({"type": "test"}, [1])
    path = os.path.join(str(tmp_path), "queues.json")
    queues.save(path)
    assert EventQueues(FakeClock()).load(path) == 0
    assert queues.collect_garbage() == 1 and queues.queues == {}
