"""Helpers shared by the event tests (no tests here): registering, polling, long-polls in threads."""

from __future__ import annotations

import threading
from typing import Any

import requests

from tests.support.helpers import assert_success

# Long enough for anything the server does at once; a test waiting this long has failed.
WAIT = 10.0


def register(client, **params: Any) -> dict[str, Any]:
    return assert_success(client.post("/register", params))


def poll(client, queue_id: str, last_event_id: int = -1, **params: Any) -> requests.Response:
    """One GET /events; blocks like a real client unless dont_block is given."""
    return client.get("/events", {"queue_id": queue_id, "last_event_id": last_event_id, **params}, timeout=WAIT)


def events_now(client, queue_id: str, last_event_id: int = -1) -> list[dict[str, Any]]:
    """The queued events, without waiting (dont_block)."""
    body = assert_success(poll(client, queue_id, last_event_id, dont_block=True))
    assert body["queue_id"] == queue_id
    return body["events"]


def of_type(events: list[dict[str, Any]], event_type: str) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == event_type]


def low_heartbeat(live, seconds: float = 0.2) -> None:
    """Make parked polls answer with a heartbeat after `seconds` instead of 50."""
    live.call(lambda: setattr(live.server, "heartbeat_seconds", seconds))


class Poll:
    """A GET /events running in a thread, as a long-polling client would run it."""

    def __init__(self, client, queue_id: str, last_event_id: int = -1, **params: Any) -> None:
        self.response: requests.Response | None = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, args=(client, queue_id, last_event_id, params), daemon=True)
        self.thread.start()

    def _run(self, client, queue_id: str, last_event_id: int, params: dict[str, Any]) -> None:
        try:
            self.response = poll(client, queue_id, last_event_id, **params)
        except BaseException as error:  # noqa: BLE001 - re-raised in the test thread by result()
            self.error = error

    def done(self) -> bool:
        return not self.thread.is_alive()

    def result(self, timeout: float = WAIT) -> requests.Response:
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "the long-poll did not answer"
        if self.error is not None:
            raise self.error
        assert self.response is not None
        return self.response


def wait_on_server(live, condition, what: str) -> None:
    """Wait until condition() holds, checking it on the server's loop (never sleeping in the test)."""
    done = threading.Event()

    def check() -> None:
        if condition():
            done.set()
        else:
            live.loop.call_later(0.005, check)

    live.loop.call_soon_threadsafe(check)
    assert done.wait(WAIT), f"timed out waiting: {what}"


def queue_of(live, queue_id: str):
    return live.server.queues.queues.get(queue_id)


def wait_until_parked(live, queue_id: str) -> None:
    wait_on_server(live, lambda: queue_of(live, queue_id) is not None and queue_of(live, queue_id).parked, "parked")


def wait_until_unparked(live, queue_id: str) -> None:
    wait_on_server(live, lambda: queue_of(live, queue_id) is None or not queue_of(live, queue_id).parked, "unparked")


def send_stream(client, channel: str, content: str = "hello", topic: str = "greetings", **params: Any) -> int:
    body = {"type": "stream", "to": channel, "topic": topic, "content": content, **params}
    return assert_success(client.post("/messages", body))["id"]


def send_direct(client, user_ids: list[int], content: str = "hello", **params: Any) -> int:
    body = {"type": "direct", "to": user_ids, "content": content, **params}
    return assert_success(client.post("/messages", body))["id"]
