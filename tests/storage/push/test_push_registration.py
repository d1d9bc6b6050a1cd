"""POST /mobile_push/register: registration through the push bouncer, key and token rotation,
every validation error, the bouncer's refusals, and the removal of legacy registrations."""

from __future__ import annotations

import base64

import nacl.public
import pytest

from storage.model.realm import get_realm
from tests.support.events_helpers import register
from tests.support.helpers import assert_error, assert_success, make_bot
from tests.support.push_helpers import PushClient, device_row, new_device, outbox, register_device, send_due

MISSING = "Missing parameters: must provide either all push key fields, all token fields, or both."
APNS = "/users/me/apns_device_token"
HEX = "c0ffeec0ffee"
BAD_KEY_ID = "Invalid push_key_id: Value error, Not a valid unsigned 32-bit integer"


def device_events(live, since):
    return [event for event, ids in live.events()[since:] if event["type"] == "device"]


def post_register(live, client, params):
    return client.post("/mobile_push/register", params)


def test_push_bouncer_not_configured_by_default(live):
    device_id = new_device(live.owner)
    some_key = base64.b64encode(bytes(nacl.public.PrivateKey.generate().public_key)).decode()
    params = PushClient(some_key).params(device_id, int(live.clock()))
    resp = post_register(live, live.owner, params)
    assert_error(resp, "Server is not configured to use push notification service.", "PUSH_SERVICE_NOT_CONFIGURED")
    assert device_row(live, device_id)["push_key"] is None
    assert outbox(live) == []


def test_server_settings_reports_push_notifications_enabled(push_live):
    assert assert_success(push_live.anonymous().get("/server_settings"))["push_notifications_enabled"] is True


def test_registration_is_forwarded_and_confirmed_by_events(push_live, bouncer):
    live = push_live
    device_id = new_device(live.owner)
    client = PushClient(bouncer.public_key, "apns")
    count = len(live.events())
    now = int(live.clock())
    sent = client.params(device_id, now)
    assert_success(post_register(live, live.owner, sent))
    pending = {
        "type": "device",
        "op": "update",
        "device_id": device_id,
        "push_key_id": client.push_key_id,
        "pending_push_token_id": client.token_id,
        "push_token_last_updated_timestamp": now,
        "push_registration_error_code": None,
    }
    send_due(live)
    confirmed = {
        "type": "device",
        "op": "update",
        "device_id": device_id,
        "push_token_id": client.token_id,
        "pending_push_token_id": None,
    }
    assert [(e, ids) for e, ids in live.events()[count:]] == [(pending, [live.owner.id]), (confirmed, [live.owner.id])]
    realm_uuid = live.read(get_realm).uuid
    [forwarded] = [body for endpoint, body in bouncer.requests if endpoint == "push/e2ee/register"]
    assert forwarded == {
        "realm_uuid": realm_uuid,
        "token_id": client.token_id,
        "bouncer_public_key": bouncer.public_key,
        "encrypted_push_registration": sent["encrypted_push_registration"],  # forwarded as the app sent it
    }
    [registration] = bouncer.registrations
    assert registration == {
        "token": client.token,
        "token_kind": "apns",
        "timestamp": now,
        "ios_app_id": "org.zulip.Zulip",
        "realm_uuid": realm_uuid,
        "token_id": client.token_id,
    }
    row = device_row(live, device_id)
    assert (bytes(row["push_key"]), row["push_token_kind"], row["pending_push_token_id"]) == (
        base64.b64decode(client.push_key),
        "apns",
        None,
    )
    assert register(live.owner, fetch_event_types=["device"])["devices"] == {
        str(device_id): {
            "push_key_id": client.push_key_id,
            "push_token_id": client.token_id,
            "pending_push_token_id": None,
            "push_token_last_updated_timestamp": now,
            "push_registration_error_code": None,
        }
    }


def test_unknown_parameters_are_reported(push_live, bouncer):
    live = push_live
    device_id = new_device(live.owner)
    params = {**PushClient(bouncer.public_key).params(device_id, int(live.clock())), "os": "android"}
    body = assert_success(post_register(live, live.owner, params))
    assert body["ignored_parameters_unsupported"] == ["os"]


def test_registering_the_same_token_again_changes_nothing(push_live, bouncer):
    live = push_live
    device_id, client = register_device(live, live.owner)
    count = len(live.events())
    assert_success(post_register(live, live.owner, client.params(device_id, int(live.clock()))))
    assert outbox(live) == [] and device_events(live, count) == []


def test_a_second_registration_waits_for_the_first(push_live, bouncer):
    live = push_live
    bouncer.set_mode("unavailable")
    device_id, client = register_device(live, live.owner)
    resp = post_register(live, live.owner, client.params(device_id, int(live.clock())))
    assert_error(resp, "A registration for the device already in progress.")
    assert len(outbox(live)) == 1


def test_push_key_rotation(push_live, bouncer):
    live = push_live
    device_id = new_device(live.owner)
    client = PushClient(bouncer.public_key)
    resp = post_register(live, live.owner, {"device_id": device_id, **client.key_params()})
    assert_error(resp, "No push registration exists to rotate key for.")
    assert_success(post_register(live, live.owner, client.params(device_id, int(live.clock()))))
    send_due(live)
    rotated = PushClient(bouncer.public_key, token=client.token)
    count = len(live.events())
    assert_success(post_register(live, live.owner, {"device_id": device_id, **rotated.key_params()}))
    assert device_events(live, count) == [
        {"type": "device", "op": "update", "device_id": device_id, "push_key_id": rotated.push_key_id}
    ]
    row = device_row(live, device_id)
    assert (bytes(row["push_key"]), row["push_key_id"]) == (base64.b64decode(rotated.push_key), rotated.push_key_id)
    assert outbox(live) == [], "the bouncer is not involved"
    count = len(live.events())
    assert_success(post_register(live, live.owner, {"device_id": device_id, **rotated.key_params()}))
    assert device_events(live, count) == [], "the same key again: nothing changes"
    # A full registration of the token the bouncer already holds rotates just the key.
    again = PushClient(bouncer.public_key, token=client.token)
    assert_success(post_register(live, live.owner, again.params(device_id, int(live.clock()))))
    assert device_events(live, count) == [
        {"type": "device", "op": "update", "device_id": device_id, "push_key_id": again.push_key_id}
    ]
    assert outbox(live) == []


def test_token_rotation(push_live, bouncer):
    live = push_live
    device_id = new_device(live.owner)
    client = PushClient(bouncer.public_key)
    now = int(live.clock())
    resp = post_register(live, live.owner, {"device_id": device_id, **client.token_params(now)})
    assert_error(resp, "No push registration exists to rotate token for.")
    assert_success(post_register(live, live.owner, client.params(device_id, now)))
    send_due(live)
    new_token = PushClient(bouncer.public_key)
    live.clock.advance(60)
    count = len(live.events())
    assert_success(post_register(live, live.owner, {"device_id": device_id, **new_token.token_params(now + 60)}))
    send_due(live)
    assert device_events(live, count) == [
        {
            "type": "device",
            "op": "update",
            "device_id": device_id,
            "pending_push_token_id": new_token.token_id,
            "push_token_last_updated_timestamp": now + 60,
            "push_registration_error_code": None,
        },
        {
            "type": "device",
            "op": "update",
            "device_id": device_id,
            "push_token_id": new_token.token_id,
            "pending_push_token_id": None,
        },
    ]
    row = device_row(live, device_id)
    assert (row["push_token_id"], row["push_key_id"]) == (new_token.token_id, client.push_key_id), "key kept"
    assert bouncer.registered_token_ids() == [client.token_id, new_token.token_id]


def test_bots_are_refused_before_their_parameters(push_live):
    bot = push_live.client_for(push_live.user(make_bot(push_live, push_live.owner.id)))
    assert_error(bot.post("/mobile_push/register"), "This endpoint does not accept bot requests.")


def test_bots_are_refused_without_a_push_bouncer_too(live):
    bot = live.client_for(live.user(make_bot(live, live.owner.id)))
    assert_error(bot.post("/mobile_push/register", {"device_id": "1"}), "This endpoint does not accept bot requests.")


def test_unknown_and_other_users_devices_are_refused_alike(push_live, bouncer):
    live = push_live
    alice = live.make_user()
    hers = new_device(alice)
    client = PushClient(bouncer.public_key)
    for device_id in (hers, hers + 100):
        resp = post_register(live, live.owner, client.params(device_id, int(live.clock())))
        assert_error(resp, "Invalid `device_id`")
    assert device_row(live, hers)["push_key"] is None and outbox(live) == []


def valid_params(live, bouncer):
    device_id = new_device(live.owner)
    return PushClient(bouncer.public_key).params(device_id, int(live.clock()))


@pytest.mark.parametrize(
    "change, msg, code",
    [
        ({"device_id": None}, "Missing 'device_id' argument", "REQUEST_VARIABLE_MISSING"),
        ({"device_id": "one"}, "device_id is not valid JSON", "BAD_REQUEST"),
        ({"push_key_id": None, "token_id": None}, MISSING, "BAD_REQUEST"),
        ({"push_key_id": None}, MISSING, "BAD_REQUEST"),
        ({"bouncer_public_key": None}, MISSING, "BAD_REQUEST"),
        (
            {
                "push_key": None,
                "push_key_id": None,
                "token_kind": None,
                "token_id": None,
                "bouncer_public_key": None,
                "encrypted_push_registration": None,
            },
            MISSING,
            "BAD_REQUEST",
        ),
        ({"push_key": "@abcdefg"}, "Invalid `push_key`", "BAD_REQUEST"),
        ({"push_key": "abcd"}, "Invalid `push_key`", "BAD_REQUEST"),
        ({"push_key": base64.b64encode(b"\x32" + bytes(32)).decode()}, "Invalid `push_key`", "BAD_REQUEST"),
        ({"push_key": base64.b64encode(b"\x31" + bytes(33)).decode()}, "Invalid `push_key`", "BAD_REQUEST"),
        ({"push_key_id": -1}, BAD_KEY_ID, "BAD_REQUEST"),
        ({"push_key_id": 2**32}, BAD_KEY_ID, "BAD_REQUEST"),
        ({"push_key_id": "1.5"}, "push_key_id is not an integer", "BAD_REQUEST"),
        ({"token_kind": "gcm"}, "Invalid token_kind", "BAD_REQUEST"),
        ({"token_id": "@abcdefg"}, "`token_id` is not Base64 encoded", "BAD_REQUEST"),
        ({"token_id": base64.b64encode(bytes(4)).decode()}, "Invalid `token_id`", "BAD_REQUEST"),
        ({"encrypted_push_registration": "not base64!"}, "Invalid encrypted_push_registration", "BAD_REQUEST"),
        ({"encrypted_push_registration": ""}, "Invalid encrypted_push_registration", "BAD_REQUEST"),
    ],
)
def test_validation_errors(push_live, bouncer, change, msg, code):
    live = push_live
    params = valid_params(live, bouncer)
    for name, value in change.items():
        if value is None:
            del params[name]
        else:
            params[name] = value if isinstance(value, str) else str(value)
    count = len(live.events())
    resp = post_register(live, live.owner, params)
    assert_error(resp, msg, code)
    assert outbox(live) == [] and device_events(live, count) == []


@pytest.mark.parametrize(
    "override, timestamp_offset, error_code",
    [
        ({"token": "someone else's token"}, 0, "INVALID_ENCRYPTED_PUSH_REGISTRATION"),
        ({"token_kind": "apns"}, 0, "INVALID_ENCRYPTED_PUSH_REGISTRATION"),
        ({"ios_app_id": "org.zulip.Zulip"}, 0, "INVALID_ENCRYPTED_PUSH_REGISTRATION"),
        ({}, -2 * 24 * 3600, "REQUEST_EXPIRED"),
        ("another bouncer's key", 0, "INVALID_BOUNCER_PUBLIC_KEY"),
    ],
)
def test_the_bouncers_refusal_reaches_the_device(push_live, bouncer, override, timestamp_offset, error_code):
    live = push_live
    device_id = new_device(live.owner)
    client = PushClient(bouncer.public_key)
    params = {"device_id": device_id, **client.key_params()}
    if isinstance(override, str):
        other = PushClient(base64.b64encode(bytes(nacl.public.PrivateKey.generate().public_key)).decode())
        other.token = client.token
        params.update(other.token_params(int(live.clock())))
    else:
        params.update(client.token_params(int(live.clock()) + timestamp_offset, **override))
    assert_success(post_register(live, live.owner, params))
    count = len(live.events())
    send_due(live)
    assert device_events(live, count) == [
        {"type": "device", "op": "update", "device_id": device_id, "push_registration_error_code": error_code}
    ]
    row = device_row(live, device_id)
    assert (row["push_registration_error_code"], row["push_token_id"], row["pending_push_token_id"]) == (
        error_code,
        None,
        client.token_id,
    )
    assert outbox(live) == [] and bouncer.registered_token_ids() == []
    # The client may try again at once; a good registration clears the error.
    assert_success(post_register(live, live.owner, client.params(device_id, int(live.clock()))))
    send_due(live)
    row = device_row(live, device_id)
    assert (row["push_registration_error_code"], row["push_token_id"]) == (None, client.token_id)


def test_confirmed_registration_removes_legacy_registrations_of_the_same_token(push_live, bouncer):
    live = push_live
    alice = live.make_user()
    client = PushClient(bouncer.public_key)
    assert_success(live.owner.post("/users/me/android_gcm_reg_id", {"token": client.token}))
    assert_success(live.owner.post("/users/me/android_gcm_reg_id", {"token": "another-token"}))
    assert_success(live.owner.post("/users/me/apns_device_token", {"token": client.token, "appid": "org.zulip.Zulip"}))
    assert_success(alice.post("/users/me/android_gcm_reg_id", {"token": client.token}))
    bouncer.set_mode("unavailable")
    register_device(live, live.owner, client)
    assert len(legacy_tokens(live)) == 4, "kept until the bouncer confirms"
    bouncer.set_mode("ok")
    live.clock.advance(2)
    send_due(live)
    assert legacy_tokens(live) == [
        (live.owner.id, "fcm", "another-token"),
        (live.owner.id, "apns", client.token),
        (alice.id, "fcm", client.token),
    ]


def legacy_tokens(live):
    rows = live.read(lambda tx: tx.all("SELECT user_id, kind, token FROM legacy_push_tokens ORDER BY id"))
    return [tuple(row) for row in rows]


def test_legacy_token_endpoints(live):
    assert_success(live.owner.post("/users/me/android_gcm_reg_id", {"token": "fcm-token"}))
    assert_success(live.owner.post("/users/me/android_gcm_reg_id", {"token": "fcm-token"}))
    assert_success(live.owner.post(APNS, {"token": HEX, "appid": "org.zulip.Zulip"}))
    assert legacy_tokens(live) == [(live.owner.id, "fcm", "fcm-token"), (live.owner.id, "apns", HEX)]
    assert_success(live.owner.delete("/users/me/android_gcm_reg_id", {"token": "fcm-token"}))
    assert_success(live.owner.delete(APNS, {"token": HEX}))
    assert legacy_tokens(live) == []
    resp = live.owner.delete("/users/me/android_gcm_reg_id", {"token": "fcm-token"})
    assert_error(resp, "Device not recognized", "INVALID_PUSH_DEVICE_TOKEN")


@pytest.mark.parametrize(
    "method, path, params, msg, code",
    [
        ("POST", "/users/me/android_gcm_reg_id", {}, "Missing 'token' argument", "REQUEST_VARIABLE_MISSING"),
        ("POST", "/users/me/android_gcm_reg_id", {"token": ""}, "Empty or invalid length token", "BAD_REQUEST"),
        ("POST", "/users/me/android_gcm_reg_id", {"token": "x" * 4097}, "Empty or invalid length token", "BAD_REQUEST"),
        ("POST", APNS, {"token": HEX}, "Missing 'appid' argument", "REQUEST_VARIABLE_MISSING"),
        ("POST", APNS, {"token": "abc", "appid": "a.b"}, "Invalid APNS token", "BAD_REQUEST"),
        ("POST", APNS, {"token": HEX, "appid": "* -- +"}, "appid has invalid format", "BAD_REQUEST"),
        ("DELETE", APNS, {"token": ""}, "Empty or invalid length token", "BAD_REQUEST"),
        ("DELETE", APNS, {"token": HEX}, "Device not recognized", "INVALID_PUSH_DEVICE_TOKEN"),
    ],
)  # fmt: skip
def test_legacy_token_errors(live, method, path, params, msg, code):
    assert_error(live.owner.request(method, path, params), msg, code)


def test_legacy_token_endpoints_refuse_bots(live):
    bot = live.client_for(live.user(make_bot(live, live.owner.id)))
    for method, path in [("POST", "/users/me/android_gcm_reg_id"), ("DELETE", "/users/me/apns_device_token")]:
        assert_error(bot.request(method, path, {"token": "t"}), "This endpoint does not accept bot requests.")
