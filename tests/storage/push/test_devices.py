"""Client devices: POST /register_client_device, POST /remove_client_device, the `devices` state,
`device` events, and the push bouncer settings."""

from __future__ import annotations

import json
import logging

import pytest

from storage.push import push_outbox
from tests.support.events_helpers import events_now, register
from tests.support.helpers import assert_error, assert_success, make_bot
from tornchat import cli
from tornchat.settings import load_settings

EMPTY_STATE = {
    "push_key_id": None,
    "push_token_id": None,
    "pending_push_token_id": None,
    "push_token_last_updated_timestamp": None,
    "push_registration_error_code": None,
}


def device_events(live, since=0):
    return [(event, ids) for event, ids in live.events()[since:] if event["type"] == "device"]


def new_device(client):
    return assert_success(client.post("/register_client_device"))["device_id"]


def test_register_client_device_returns_new_ids_and_tells_the_users_clients(live):
    alice = live.make_user()
    first = new_device(live.owner)
    second = new_device(alice)
    assert second > first
    assert device_events(live) == [
        ({"type": "device", "op": "add", "device_id": first}, [live.owner.id]),
        ({"type": "device", "op": "add", "device_id": second}, [alice.id]),
    ]


def test_register_client_device_takes_no_parameters(live):
    body = assert_success(live.owner.post("/register_client_device", {"name": "phone"}))
    assert body["ignored_parameters_unsupported"] == ["name"]


def test_devices_state_lists_only_the_users_own_devices(live):
    alice = live.make_user()
    mine = [new_device(live.owner), new_device(live.owner)]
    new_device(alice)
    state = register(live.owner, fetch_event_types=["device"])
    assert state["devices"] == {str(mine[0]): EMPTY_STATE, str(mine[1]): EMPTY_STATE}
    assert register(live.make_user(), fetch_event_types=["device"])["devices"] == {}
    assert "devices" not in register(live.owner, fetch_event_types=["drafts"])


def test_device_events_reach_the_owners_queues_only(live):
    alice = live.make_user()
    mine = register(live.owner, event_types=["device"])["queue_id"]
    hers = register(alice, event_types=["device"])["queue_id"]
    device_id = new_device(live.owner)
    assert_success(live.owner.post("/remove_client_device", {"device_id": device_id}))
    assert [(e["op"], e["device_id"]) for e in events_now(live.owner, mine)] == [
        ("add", device_id),
        ("remove", device_id),
    ]
    assert events_now(alice, hers) == []


def test_remove_client_device(live):
    keep = new_device(live.owner)
    device_id = new_device(live.owner)
    count = len(live.events())
    assert_success(live.owner.post("/remove_client_device", {"device_id": device_id}))
    assert device_events(live, count) == [({"type": "device", "op": "remove", "device_id": device_id}, [live.owner.id])]
    assert list(register(live.owner, fetch_event_types=["device"])["devices"]) == [str(keep)]
    # Gone for good: removing it again is an error, and its id is never given out again.
    resp = live.owner.post("/remove_client_device", {"device_id": device_id})
    assert_error(resp, "Invalid `device_id`")
    assert new_device(live.owner) == device_id + 1


def test_remove_client_device_refuses_other_users_and_unknown_devices_alike(live):
    alice = live.make_user()
    hers = new_device(alice)
    count = len(live.events())
    for device_id in (hers, hers + 100, 0):
        resp = live.owner.post("/remove_client_device", {"device_id": device_id})
        assert_error(resp, "Invalid `device_id`")
    assert device_events(live, count) == []
    assert list(register(alice, fetch_event_types=["device"])["devices"]) == [str(hers)]


def test_remove_client_device_parameter_errors(live):
    resp = live.owner.post("/remove_client_device")
    assert_error(resp, "Missing 'device_id' argument", "REQUEST_VARIABLE_MISSING")
    resp = live.owner.post("/remove_client_device", {"device_id": "abc"})
    assert_error(resp, "device_id is not valid JSON")
    resp = live.owner.post("/remove_client_device", {"device_id": '"1"'})
    assert_error(resp, "device_id is not an integer")


def test_removing_a_device_drops_its_waiting_push_requests(live):
    device_id = new_device(live.owner)
    other = new_device(live.owner)
    for target in (device_id, other):
        live.write(push_outbox.enqueue, target, "notify", {"n": target}, user_id=live.owner.id, message_id=1)
    assert_success(live.owner.post("/remove_client_device", {"device_id": device_id}))
    rows = live.read(lambda tx: tx.column("SELECT device_id FROM push_outbox"))
    assert rows == [other]


def test_bots_may_keep_devices(live):
    bot_id = make_bot(live, live.owner.id)
    bot = live.client_for(live.user(bot_id))
    device_id = new_device(bot)
    assert_success(bot.post("/remove_client_device", {"device_id": device_id}))


def test_server_settings_reports_push_notifications_disabled_by_default(live):
    assert assert_success(live.anonymous().get("/server_settings"))["push_notifications_enabled"] is False


ORG_ID = "4a3c5c1e-4a2b-4f4e-9d1b-2f1f7b2c9a10"
ORG_KEY = "k" * 64


def test_push_settings_come_from_flags_or_environment(tmp_path):
    settings = load_settings(
        {"data_dir": str(tmp_path), "push_bouncer_url": "http://push.example:8080"},
        {"TORNCHAT_ZULIP_ORG_ID": ORG_ID, "TORNCHAT_ZULIP_ORG_KEY": ORG_KEY},
    )
    assert (settings.push_bouncer_url, settings.zulip_org_id, settings.zulip_org_key, settings.push_configured) == (
        "http://push.example:8080",
        ORG_ID,
        ORG_KEY,
        True,
    )
    assert load_settings({"data_dir": str(tmp_path)}, {}).push_configured is False


def test_push_settings_come_from_the_file_register_push_bouncer_writes(tmp_path):
    stored = {"push_bouncer_url": "https://push.example", "zulip_org_id": ORG_ID, "zulip_org_key": ORG_KEY}
    (tmp_path / "push-bouncer.json").write_text(json.dumps(stored))
    settings = load_settings({"data_dir": str(tmp_path)}, {})
    assert (settings.push_bouncer_url, settings.zulip_org_id, settings.zulip_org_key) == tuple(stored.values())
    # A flag or a variable overrides the file.
    flagged = load_settings({"data_dir": str(tmp_path), "push_bouncer_url": "http://other.example"}, {})
    assert (flagged.push_bouncer_url, flagged.zulip_org_key) == ("http://other.example", ORG_KEY)
    (tmp_path / "push-bouncer.json").write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        load_settings({"data_dir": str(tmp_path)}, {})
    (tmp_path / "push-bouncer.json").write_text(json.dumps({"zulip_org_id": ORG_ID}))
    with pytest.raises(ValueError, match="expected an object of strings"):
        load_settings({"data_dir": str(tmp_path)}, {})


@pytest.mark.parametrize(
    "flags, environ, error",
    [
        ({"push_bouncer_url": "http://push.example"}, {}, "needs zulip_org_id and zulip_org_key too"),
        ({}, {"TORNCHAT_ZULIP_ORG_ID": ORG_ID}, "needs push_bouncer_url and zulip_org_key too"),
        ({"push_bouncer_url": "push.example"}, {"TORNCHAT_ZULIP_ORG_ID": ORG_ID, "TORNCHAT_ZULIP_ORG_KEY": ORG_KEY},
         "must start with http"),
        ({"push_bouncer_url": "http://push.example"}, {"TORNCHAT_ZULIP_ORG_ID": "server-1",
         "TORNCHAT_ZULIP_ORG_KEY": ORG_KEY}, "expected a UUID"),
        ({"push_bouncer_url": "http://push.example"}, {"TORNCHAT_ZULIP_ORG_ID": ORG_ID,
         "TORNCHAT_ZULIP_ORG_KEY": "short"}, "expected 64 characters"),
    ],
)  # fmt: skip
def test_incomplete_or_invalid_push_settings_are_refused(tmp_path, flags, environ, error):
    with pytest.raises(ValueError, match=error):
        load_settings({"data_dir": str(tmp_path), **flags}, environ)


def test_serve_refuses_to_start_with_half_the_push_settings(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(logging, "basicConfig", lambda **kwargs: None)  # keep the test run's logging as it is
    monkeypatch.delenv("TORNCHAT_ZULIP_ORG_ID", raising=False)
    monkeypatch.delenv("TORNCHAT_ZULIP_ORG_KEY", raising=False)
    code = cli.main(["serve", "--data-dir", str(tmp_path / "data"), "--push-bouncer-url", "http://push.example"])
    assert code == 1
    err = capsys.readouterr().err
    assert err == (
        "tornchat: --push-bouncer-url needs zulip_org_id and zulip_org_key too: run `tornchat register-push-bouncer`,"
        " which stores all three in the data directory\n"
    )
    assert not (tmp_path / "data").exists(), "refused before creating anything"
