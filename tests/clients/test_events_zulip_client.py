"""The official zulip client's event loop against tornchat: register, get_events, call_on_each_event."""

from __future__ import annotations

import threading
from typing import Any

from tests.support.events_helpers import WAIT, low_heartbeat, send_direct, wait_on_server


class StopListening(Exception):
    """Raised by a callback to leave call_on_each_event (callback errors are not caught by the client)."""


def owner_parked(live) -> bool:
    queues = live.server.queues
    return any(queues.queues[q].parked for q in queues.by_user.get(live.owner.id, ()))


def test_register_and_get_events_loop(live, zulip_client):
    """The loop call_on_each_event runs, written out: heartbeats are skipped, ids acknowledged."""
    low_heartbeat(live)
    registered = zulip_client.register(event_types=["message"])
    assert registered["result"] == "success", registered
    queue_id, last_event_id = registered["queue_id"], registered["last_event_id"]
    found: list[dict[str, Any]] = []

    def listen() -> None:
        nonlocal last_event_id
        heartbeats = 0
        while not found:
            response = zulip_client.get_events(queue_id=queue_id, last_event_id=last_event_id)
            assert response["result"] == "success", response
            for event in response["events"]:
                last_event_id = max(last_event_id, event["id"])
                if event["type"] == "heartbeat":
                    heartbeats += 1
                elif event["type"] == "message":
                    found.append(event)
            if heartbeats >= 2 and not found:
                done.set()  # quiet polls came back with heartbeats: now send the message

    done = threading.Event()
    thread = threading.Thread(target=listen, daemon=True)
    thread.start()
    assert done.wait(WAIT)
    message_id = send_direct(live.owner, [live.owner.id], "ping")
    thread.join(WAIT)
    assert not thread.is_alive()
    assert [e["message"]["id"] for e in found] == [message_id]
    assert zulip_client.deregister(queue_id)["result"] == "success"


def test_call_on_each_event(live, zulip_client):
    received: list[dict[str, Any]] = []
    errors: list[BaseException] = []

    def callback(event: dict[str, Any]) -> None:
        received.append(event)
        raise StopListening

    def run() -> None:
        try:
            zulip_client.call_on_each_event(callback, event_types=["message"])
        except StopListening:
            pass
        except BaseException as error:  # noqa: BLE001 - reported by the test thread
            errors.append(error)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    wait_on_server(live, lambda: owner_parked(live), "the client's first long-poll")
    message_id = send_direct(live.owner, [live.owner.id], "hello loop")
    thread.join(WAIT)
    assert not thread.is_alive() and errors == []
    assert [(e["type"], e["message"]["id"], e["message"]["content"]) for e in received] == [
        ("message", message_id, "hello loop")  # the client registers without apply_markdown: raw Markdown
    ]


def test_call_on_each_message_registers_again_after_a_lost_queue(live, zulip_client):
    """A BAD_EVENT_QUEUE_ID makes the client register a new queue and carry on."""
    received: list[dict[str, Any]] = []

    def callback(message: dict[str, Any]) -> None:
        received.append(message)
        raise StopListening

    def run() -> None:
        try:
            zulip_client.call_on_each_message(callback)
        except StopListening:
            pass

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    wait_on_server(live, lambda: owner_parked(live), "the client's first long-poll")
    first_queue = live.call(lambda: next(iter(live.server.queues.by_user[live.owner.id])))
    # The queue disappears under the parked poll (as if expired): the poll answers BAD_EVENT_QUEUE_ID.
    live.call(lambda: live.server.queues.remove(first_queue))
    wait_on_server(live, lambda: owner_parked(live), "the client's poll on its new queue")
    message_id = send_direct(live.owner, [live.owner.id], "second queue")
    thread.join(WAIT + 2)  # the client pauses one second after an error
    assert not thread.is_alive()
    assert [m["id"] for m in received] == [message_id]


def test_call_on_each_event_receives_a_message_and_a_drafts_event(live, zulip_client):
    received: list[dict[str, Any]] = []
    errors: list[BaseException] = []

    def callback(event: dict[str, Any]) -> None:
        received.append(event)
        if len(received) == 2:
            raise StopListening

    def run() -> None:
        try:
            zulip_client.call_on_each_event(callback, event_types=["message", "drafts"])
        except StopListening:
            pass
        except BaseException as error:  # noqa: BLE001 - reported by the test thread
            errors.append(error)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    wait_on_server(live, lambda: owner_parked(live), "the client's first long-poll")
    message_id = send_direct(live.owner, [live.owner.id], "note to self")
    draft = {"type": "", "to": [], "topic": "", "content": "half a thought"}
    created = live.owner.post("/drafts", {"drafts": [draft]}).json()
    thread.join(WAIT)
    assert not thread.is_alive() and errors == []
    assert [e["type"] for e in received] == ["message", "drafts"]
    assert received[0]["message"]["id"] == message_id
    assert received[1]["op"] == "add" and received[1]["drafts"][0]["id"] == created["ids"][0]
    assert received[1]["drafts"][0]["content"] == "half a thought"
