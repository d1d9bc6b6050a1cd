"""Drive zulip-terminal's Model against a live tornchat; run with zulip-terminal's own Python.

Not a test module: tests/clients/test_zulip_terminal_events.py starts it as a subprocess with the zuliprc
of a user. It builds zulip-terminal's real Model (its own POST /register, GET /messages and event
handlers) with a stand-in for the user interface (a MagicMock, so every `controller.view...` call
succeeds), prints one JSON line {"queue_id", "user_id"} once registered, and then answers each
line "poll" on stdin with one JSON line: every queued event, as zulip-terminal's poll loop would
dispatch it, with the exception its handler raised (None if it ran); "state" with what the model
keeps of them (settings, muted and pinned streams, subscribers, flags, messages); "narrow <json>"
sets the model's narrow as the interface does; "presence" runs one turn of its presence loop and
answers each user's status in its user list; "quit" ends it.
"""

from __future__ import annotations

import json
import sys
import traceback
from typing import Any
from unittest import mock

import zulip
from zulipterminal.model import Model


def make_model(zuliprc: str) -> Model:
    controller = mock.MagicMock()
    controller.client = zulip.Client(config_file=zuliprc, client="ZulipTerminal/0.7.0 test-driver")
    controller.active_conversation_info = {}
    controller.is_typing_notification_in_progress = False
    # The presence loop never returns (a thread in the real client); the tests report presence themselves.
    with mock.patch.object(Model, "_start_presence_updates"):
        return Model(controller)


def dispatch(model: Model, event: dict[str, Any]) -> dict[str, Any]:
    """Hand one event to its handler as Model.poll_for_events does; the exception it raised, if any."""
    result: dict[str, Any] = {"id": event["id"], "type": event["type"], "handled": False, "error": None}
    action = model.event_actions.get(event["type"])
    if action is None:
        return result
    result["handled"] = True
    try:
        action(event)
    except Exception:  # what zulip-terminal shows in its "An exception occurred" popup
        result["error"] = traceback.format_exc()
    return result


def poll(model: Model, state: dict[str, Any]) -> list[dict[str, Any]]:
    response = model.client.get_events(queue_id=state["queue_id"], last_event_id=state["last"], dont_block=True)
    if response["result"] != "success":
        return [{"id": -1, "type": "poll_error", "handled": False, "error": response["msg"]}]
    results = []
    for event in response["events"]:
        state["last"] = max(state["last"], int(event["id"]))
        results.append({**dispatch(model, event), "event": event})
    return results


def state_of(model: Model) -> dict[str, Any]:
    """What the handlers keep of the events: the model's settings, streams, flags, messages, emoji."""
    index = model.index
    messages = {
        message_id: {
            "content": message["content"],
            "subject": message.get("subject"),
            "stream_id": message.get("stream_id"),
            "flags": sorted(message.get("flags", [])),
            "reactions": sorted((r["emoji_name"], r["user"]["user_id"]) for r in message["reactions"]),
        }
        for message_id, message in index["messages"].items()
    }
    return {
        "user_settings": dict(model._user_settings),
        "muted_streams": sorted(model.muted_streams),
        "pinned_streams": sorted(stream["id"] for stream in model.pinned_streams),
        "visual_notified_streams": sorted(model.visual_notified_streams),
        "subscribers": {stream_id: sorted(s["subscribers"]) for stream_id, s in model.stream_dict.items()},
        "starred": sorted(index["starred_msg_ids"]),
        "edited": sorted(index["edited_messages"]),
        "messages": messages,
        "custom_emoji": sorted(n for n, data in model.active_emoji_data.items() if data["type"] == "realm_emoji"),
        "typing": dict(model.controller.active_conversation_info),
        "muted_topics": sorted(list(key) for key in model._muted_topics),
    }


def presence_round(model: Model) -> dict[str, Any]:
    """One turn of zulip-terminal's presence loop (_start_presence_updates): report, then list users."""
    response = model._notify_server_of_presence()
    if response["result"] != "success":
        return {"error": response["msg"]}
    model.initial_data["presences"] = response["presences"]
    model.users = model.get_all_users()
    return {"statuses": {user["email"]: user["status"] for user in model.users}}


def main() -> None:
    model = make_model(sys.argv[1])
    state = {"queue_id": model.queue_id, "last": model.last_event_id}
    print(json.dumps({"queue_id": model.queue_id, "user_id": model.user_id}), flush=True)
    for line in sys.stdin:
        if line.strip() == "quit":
            break
        if line.startswith("narrow "):  # what narrowing in the interface sets, e.g. [["pm_with", "b@x.com"]]
            model.narrow = json.loads(line[len("narrow ") :])
            print("[]", flush=True)
            continue
        if line.strip() == "presence":
            print(json.dumps(presence_round(model)), flush=True)
            continue
        if line.strip() == "state":
            print(json.dumps(state_of(model), default=repr), flush=True)
            continue
        print(json.dumps(poll(model, state), default=repr), flush=True)


if __name__ == "__main__":
    main()
