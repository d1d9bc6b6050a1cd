"""`tornchat register-push-bouncer` against the stand-in bouncer, and the round trip it enables: the
server registered and its realm uploaded, `serve`'s settings read from what the command kept, a
device registered, a message notified and a read withdrawn, each payload opened as the app does."""

from __future__ import annotations

import json
import logging
import os
import stat

import pytest

from storage.db.database import Database
from storage.model.realm import get_realm
from tests.support.helpers import LiveServer, NextServer, assert_success, data_dir_for
from tests.support.push_helpers import CONTACT_EMAIL, delivered, register_device, send_due
from tests.support.send_helpers import make_team, send_direct_ok
from tornchat import cli
from tornchat.bootstrap import bootstrap
from tornchat.settings import PUSH_BOUNCER_FILE, Settings, load_settings


@pytest.fixture(autouse=True)
def quiet_logging(monkeypatch):
    monkeypatch.setattr(logging, "basicConfig", lambda **kwargs: None)  # keep the test run's logging as it is


@pytest.fixture
def init_dir(tmp_path):
    path = data_dir_for(tmp_path)
    bootstrap(Settings(data_dir=path, site="https://chat.tornchat.test"), "owner@tornchat.test", "secret-pass")
    return path


def register(data_dir, bouncer_url, *extra):
    argv = ["register-push-bouncer", "--data-dir", data_dir, "--bouncer-url", bouncer_url]
    return cli.main([*argv, "--contact-email", CONTACT_EMAIL, "--agree-to-terms-of-service", *extra])


def stored(data_dir):
    with open(os.path.join(data_dir, PUSH_BOUNCER_FILE)) as handle:
        return json.load(handle)


def realm_of(data_dir):
    db = Database(os.path.join(data_dir, "tornchat.sqlite3"))
    try:
        return db.read(get_realm)
    finally:
        db.close()


def test_registers_the_server_keeps_its_credentials_and_uploads_the_realm(init_dir, bouncer, capsys):
    assert register(init_dir, bouncer.url) == 0
    kept = stored(init_dir)
    assert (
        set(kept) == {"push_bouncer_url", "zulip_org_id", "zulip_org_key"} and kept["push_bouncer_url"] == bouncer.url
    )
    assert stat.S_IMODE(os.stat(os.path.join(init_dir, PUSH_BOUNCER_FILE)).st_mode) == 0o600
    server = {"key": kept["zulip_org_key"], "hostname": "chat.tornchat.test", "contact_email": CONTACT_EMAIL}
    assert bouncer.servers == {kept["zulip_org_id"]: server}
    realm = realm_of(init_dir)
    assert list(bouncer.realms) == [realm.uuid]
    assert (bouncer.realms[realm.uuid]["url"], bouncer.realms[realm.uuid]["server"]) == (
        realm.url,
        kept["zulip_org_id"],
    )
    assert bouncer.endpoints() == ["server/register", "server/analytics/status", "server/analytics"]
    out = capsys.readouterr().out
    assert out.startswith(f"Registered chat.tornchat.test at {bouncer.url}\n")
    assert kept["zulip_org_id"] in out
    # What serve reads: the three settings, from the file.
    settings = load_settings({"data_dir": init_dir}, {})
    assert (settings.push_bouncer_url, settings.zulip_org_id, settings.zulip_org_key) == tuple(
        kept[k] for k in ("push_bouncer_url", "zulip_org_id", "zulip_org_key")
    )
    assert settings.push_configured


def test_registering_again_updates_with_the_same_credentials(init_dir, bouncer, capsys):
    assert register(init_dir, bouncer.url) == 0
    first = stored(init_dir)
    assert register(init_dir, bouncer.url, "--hostname", "chat.tornchat.test:8443") == 0
    assert stored(init_dir) == first
    assert bouncer.servers[first["zulip_org_id"]]["hostname"] == "chat.tornchat.test:8443"
    assert (
        capsys.readouterr().out.splitlines()[3]
        == f"Updated the registration of chat.tornchat.test:8443 at {bouncer.url}"
    )


def test_the_terms_of_service_must_be_agreed_to(init_dir, bouncer, capsys):
    code = cli.main(["register-push-bouncer", "--data-dir", init_dir, "--contact-email", CONTACT_EMAIL])
    assert code == 1
    assert capsys.readouterr().err == (
        "tornchat: the push notification service is governed by the Zulip Terms of Service"
        " (https://zulip.com/policies/terms): pass --agree-to-terms-of-service to agree\n"
    )
    assert bouncer.requests == [] and not os.path.exists(os.path.join(init_dir, PUSH_BOUNCER_FILE))


def test_the_bouncers_refusal_is_one_line_and_keeps_nothing(init_dir, bouncer, capsys):
    argv = [
        "register-push-bouncer",
        "--data-dir",
        init_dir,
        "--bouncer-url",
        bouncer.url,
        "--agree-to-terms-of-service",
    ]
    assert cli.main([*argv, "--contact-email", "admin@example.com"]) == 1
    err = capsys.readouterr().err
    assert err == f"tornchat: the push notification service at {bouncer.url} refused: Invalid email address.\n"
    assert bouncer.servers == {} and not os.path.exists(os.path.join(init_dir, PUSH_BOUNCER_FILE))


def test_an_unreachable_bouncer_is_one_line(init_dir, bouncer, capsys):
    bouncer.stop_listening()
    assert register(init_dir, bouncer.url) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"tornchat: network error connecting to the push bouncer at {bouncer.url}: ")
    assert err.count("\n") == 1 and not os.path.exists(os.path.join(init_dir, PUSH_BOUNCER_FILE))


@pytest.mark.parametrize(
    "argv, reason",
    [
        (
            ["--bouncer-url", "push.example"],
            "invalid --bouncer-url 'push.example': it must start with http:// or https://",
        ),
        (["--data-dir", "{missing}"], "no tornchat database in {missing}: run `tornchat init` first"),
    ],
)
def test_bad_arguments_are_one_line(init_dir, tmp_path, capsys, argv, reason):
    missing = str(tmp_path / "missing")
    argv = [a.format(missing=missing) for a in argv]
    base = ["register-push-bouncer", "--data-dir", init_dir, "--contact-email", CONTACT_EMAIL]
    assert cli.main([*base, "--agree-to-terms-of-service", *argv]) == 1
    assert capsys.readouterr().err == f"tornchat: {reason.format(missing=missing)}\n"


def test_round_trip_from_registration_to_a_withdrawn_notification(tmp_path, bouncer):
    # A server running without push, registered while it runs, then restarted as `serve` would be.
    first = LiveServer(data_dir_for(tmp_path))
    alice, bob, _, _ = make_team(first)
    assert register(first.settings.data_dir, bouncer.url) == 0
    first.stop()
    first.settings = load_settings(
        {"data_dir": first.settings.data_dir, "site": first.settings.site, "email_host": first.settings.email_host}, {}
    )
    assert first.settings.push_bouncer_url == bouncer.url
    server = NextServer(first)
    bouncer.clock = server.clock
    alice, bob = (server.client_for(server.user(client.id)) for client in (alice, bob))
    try:
        device_id, phone = register_device(server, bob)
        assert server.read(lambda tx: tx.value("SELECT push_token_id FROM devices WHERE id = ?", (device_id,))) == (
            phone.token_id
        )
        message_id = send_direct_ok(alice, [bob.id], "Lunch at **noon**?")
        send_due(server)
        assert_success(bob.post("/messages/flags", {"messages": [message_id], "op": "add", "flag": "read"}))
        send_due(server)
        [notification, removal] = delivered(bouncer, phone)
        realm = server.read(get_realm)
        assert notification == {
            "realm_url": realm.url, "realm_name": realm.name, "user_id": bob.id, "type": "message",
            "message_id": message_id, "time": int(server.clock()), "content": "Lunch at noon?",
            "sender_id": alice.id, "sender_full_name": "Alice",
            # Absolute, as the phone has no page to resolve it against: the default avatar the server draws.
            "sender_avatar_url": f"{realm.url}/user_avatars/default/{alice.id}.png?v=1",
            "recipient_type": "direct", "recipient_user_ids": sorted([alice.id, bob.id]),
        }  # fmt: skip
        assert removal == {
            "realm_url": realm.url, "realm_name": realm.name, "user_id": bob.id, "type": "remove",
            "message_ids": [message_id],
        }  # fmt: skip
        assert [d["priority"] for d in bouncer.delivered] == ["high", "normal"]
    finally:
        bouncer.set_mode("ok")
        server.stop()
