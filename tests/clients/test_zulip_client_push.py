"""The official `zulip` package against devices, push registration and linkifiers, as a script or a
mobile client built on it would call them (call_endpoint for what the package has no method for)."""

from __future__ import annotations

import os

import zulip

from tests.support.push_helpers import PushClient, delivered, send_due
from tests.support.send_helpers import make_team, send_direct_ok
from tornchat.bootstrap import write_zuliprc


def client_for(live, client, tmp_path, name):
    path = os.path.join(str(tmp_path), f"zuliprc-{name}")
    write_zuliprc(path, client.email, client.api_key, live.base_url)
    return zulip.Client(config_file=path)


def test_device_and_push_registration_without_a_push_bouncer(zulip_client):
    device_id = zulip_client.call_endpoint("register_client_device", method="POST")["device_id"]
    body = zulip_client.call_endpoint("mobile_push/register", method="POST", request={"device_id": device_id})
    assert (body["result"], body["code"]) == ("error", "PUSH_SERVICE_NOT_CONFIGURED")
    removed = zulip_client.call_endpoint("remove_client_device", method="POST", request={"device_id": device_id})
    assert removed["result"] == "success"
    again = zulip_client.call_endpoint("remove_client_device", method="POST", request={"device_id": device_id})
    assert (again["result"], again["msg"]) == ("error", "Invalid `device_id`")


def test_a_mobile_client_registers_and_gets_an_encrypted_notification(push_live, bouncer, tmp_path):
    alice, bob, _, _ = make_team(push_live)
    phone = client_for(push_live, bob, tmp_path, "bob")
    state = phone.register(event_types=["device"])
    assert state["devices"] == {}
    device_id = phone.call_endpoint("register_client_device", method="POST")["device_id"]
    keys = PushClient(bouncer.public_key)
    request = keys.params(device_id, int(push_live.clock()))
    assert phone.call_endpoint("mobile_push/register", method="POST", request=request)["result"] == "success"
    send_due(push_live)
    events = phone.get_events(queue_id=state["queue_id"], last_event_id=-1)["events"]
    assert [(e["type"], e["op"]) for e in events] == [("device", "add"), ("device", "update"), ("device", "update")]
    assert events[-1]["push_token_id"] == keys.token_id
    message_id = send_direct_ok(alice, [bob.id], "lunch?")
    send_due(push_live)
    [payload] = delivered(bouncer, keys)
    assert (payload["message_id"], payload["sender_full_name"], payload["content"]) == (message_id, "Alice", "lunch?")
