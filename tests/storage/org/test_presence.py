"""Presence: POST /users/me/presence, GET /users/{user_id_or_email}/presence, GET /realm/presence, register, events."""

from __future__ import annotations

import pytest

from tests.support.events_helpers import events_now, of_type, register
from tests.support.helpers import assert_error, assert_success, dummy, events_since, make_bot, set_visibility

ADMINS = 3  # email_address_visibility: real emails shown to administrators only


def report(client, status="active", **params):
    return assert_success(client.post("/users/me/presence", {"status": status, **params}))


def presence_row(live, user_id):
    return live.read(
        lambda tx: tx.one("SELECT * FROM user_presences WHERE user_id = ?", (user_id,)),
    )


def legacy(status, timestamp):
    website = {"client": "website", "status": status, "timestamp": timestamp, "pushable": False}
    return {"aggregated": {"client": "website", "status": status, "timestamp": timestamp}, "website": website}


def test_report_active_answers_the_realm_in_the_legacy_format(live):
    now = int(live.clock.now)
    body = report(live.owner)
    assert body["presences"] == {live.owner.email: legacy("active", now)}
    assert body["server_timestamp"] == live.clock.now
    assert body["presence_last_update_id"] == 1
    assert "zephyr_mirror_active" not in body  # only in Zulip's Zephyr mirror realms
    alice = live.make_user()
    live.clock.advance(30)
    body = report(alice, "idle")
    # Never active: the active time is the date the user joined (Zulip's default), so "active" within 70 s.
    assert body["presences"][alice.email] == legacy("active", now)
    assert body["presence_last_update_id"] == 2


def test_idle_long_after_activity_is_idle(live):
    report(live.owner)
    live.clock.advance(600)
    body = report(live.owner, "idle")
    assert body["presences"][live.owner.email] == legacy("idle", int(live.clock.now))


def test_slim_presence_keys_by_user_id_in_the_modern_format(live):
    start = int(live.clock.now)
    report(live.owner)
    live.clock.advance(100)
    body = report(live.owner, "idle", slim_presence=True)
    assert body["presences"] == {str(live.owner.id): {"active_timestamp": start, "idle_timestamp": start + 100}}


def test_last_update_id_returns_only_what_changed(live):
    alice = live.make_user()
    first = report(live.owner, last_update_id=-1)
    assert first["presences"] == {str(live.owner.id): {"active_timestamp": int(live.clock.now),
                                                       "idle_timestamp": int(live.clock.now)}}  # fmt: skip
    seen = first["presence_last_update_id"]
    body = report(alice, last_update_id=seen)  # last_update_id implies the modern format
    assert list(body["presences"]) == [str(alice.id)]
    seen = body["presence_last_update_id"]
    assert seen == first["presence_last_update_id"] + 1
    live.clock.advance(10)
    unchanged = report(live.owner, last_update_id=seen)  # within 55 s: nothing written
    assert unchanged["presences"] == {}
    assert unchanged["presence_last_update_id"] == seen


def test_rows_are_written_at_most_once_per_55_seconds(live):
    start = int(live.clock.now)
    report(live.owner)
    for _ in range(5):
        live.clock.advance(10)
        report(live.owner)
        report(live.owner, "idle")
    row = presence_row(live, live.owner.id)
    assert (row["last_active_time"], row["last_connected_time"], row["last_update_id"]) == (start, start, 1)
    live.clock.advance(6)  # 56 s after the first report
    report(live.owner, "idle")
    row = presence_row(live, live.owner.id)
    assert (row["last_active_time"], row["last_connected_time"], row["last_update_id"]) == (start, start + 56, 2)
    live.clock.advance(1)
    report(live.owner)  # active again, 57 s after the last active report: written at once
    row = presence_row(live, live.owner.id)
    assert (row["last_active_time"], row["last_connected_time"], row["last_update_id"]) == (start + 57,) * 2 + (3,)


def test_events_only_when_a_user_comes_online(live):
    alice = live.make_user()
    count = len(live.events())
    report(alice, "idle")  # first report ever
    live.clock.advance(60)
    report(alice)  # first active report: newly online (never active before)
    live.clock.advance(60)
    report(alice)  # active again within 70 s: others still show the user online
    live.clock.advance(71)
    report(alice, "idle")  # idle: never announced
    live.clock.advance(1)
    report(alice)  # active 72 s after the last active report: back online
    events = events_since(live, count, "presence")
    now = live.clock.now
    assert [event["server_timestamp"] for event, _ in events] == [now - 192, now - 132, now]
    event, user_ids = events[-1]
    assert user_ids == sorted([live.owner.id, alice.id])
    assert {key: value for key, value in event.items() if not key.startswith("_")} == {
        "type": "presence", "user_id": alice.id, "email": alice.email, "server_timestamp": live.clock.now,
        "presence": {"website": {"client": "website", "status": "active", "timestamp": int(live.clock.now),
                                 "pushable": False}},
    }  # fmt: skip


def test_no_events_past_100_users(live):
    for _ in range(100):
        live.make_user(password=None)
    count = len(live.events())
    report(live.owner)
    assert events_since(live, count, "presence") == []
    assert presence_row(live, live.owner.id) is not None


def test_ping_only_answers_nothing_but_records(live):
    body = report(live.owner, ping_only=True)
    assert set(body) == {"result", "msg"}
    assert presence_row(live, live.owner.id)["last_active_time"] == int(live.clock.now)


@pytest.mark.parametrize(
    ("params", "msg", "code"),
    [
        ({}, "Missing 'status' argument", "REQUEST_VARIABLE_MISSING"),
        ({"status": "busy"}, "Invalid status: busy", "BAD_REQUEST"),
        ({"status": "active", "ping_only": "maybe"}, "ping_only is not valid JSON", "BAD_REQUEST"),
        ({"status": "active", "last_update_id": "x"}, "last_update_id is not valid JSON", "BAD_REQUEST"),
        ({"status": "active", "history_limit_days": 1.5}, "history_limit_days is not an integer", "BAD_REQUEST"),
    ],
)
def test_update_errors(live, params, msg, code):
    assert_error(live.owner.post("/users/me/presence", params), msg, code)
    assert presence_row(live, live.owner.id) is None


def test_invisible_mode(live):
    alice = live.make_user()
    live.clock.advance(86400)
    report(alice)
    count = len(live.events())
    assert_success(alice.patch("/settings", {"presence_enabled": False}))
    # Replaced by an idle report old enough for every client to show alice offline, told at once.
    long_ago = int(live.clock.now) - 210
    [(event, user_ids)] = events_since(live, count, "presence")
    website = {"client": "website", "status": "idle", "timestamp": long_ago, "pushable": False}
    assert (event["user_id"], event["presence"], user_ids) == (
        alice.id,
        {"website": website},
        [live.owner.id, alice.id],
    )
    live.clock.advance(30)
    count = len(live.events())
    report(alice)  # not recorded while invisible
    row = presence_row(live, alice.id)
    assert (row["last_connected_time"], row["last_active_time"]) == (long_ago, None)
    assert events_since(live, count, "presence") == []
    presence = assert_success(live.owner.get(f"/users/{alice.id}/presence"))["presence"]
    assert presence["aggregated"]["status"] == "offline"
    assert_success(alice.patch("/settings", {"presence_enabled": True}))
    [(event, _)] = events_since(live, count, "presence")
    assert event["presence"]["website"]["status"] == "active"
    assert event["presence"]["website"]["timestamp"] == int(live.clock.now)


def test_bots_have_no_presence(live):
    bot = live.client_for(live.user(make_bot(live, live.owner.id)))
    assert_error(bot.post("/users/me/presence", {"status": "active"}), "This endpoint does not accept bot requests.")
    assert_error(live.owner.get(f"/users/{bot.id}/presence"), "Presence is not supported for bot users.")


def test_get_user_presence_by_id_and_email(live):
    alice = live.make_user()
    set_visibility(live, alice.id, ADMINS)  # the API email is then user{id}@...; the owner still sees the real one
    report(alice)
    body = assert_success(live.owner.get(f"/users/{alice.id}/presence"))
    now = int(live.clock.now)
    expected = {"aggregated": {"status": "active", "timestamp": now}, "website": {"status": "active", "timestamp": now}}
    assert body["presence"] == expected
    assert assert_success(live.owner.get(f"/users/{alice.email}/presence"))["presence"] == expected
    assert assert_success(live.owner.get(f"/users/{dummy(alice.id)}/presence"))["presence"] == expected
    live.clock.advance(141)  # past the offline threshold: the aggregate says so
    body = assert_success(live.owner.get(f"/users/{alice.id}/presence"))
    assert body["presence"]["aggregated"] == {"status": "offline", "timestamp": now}
    assert body["presence"]["website"] == {"status": "active", "timestamp": now}


def test_get_user_presence_errors(live):
    alice = live.make_user()
    assert_error(live.owner.get(f"/users/{alice.id}/presence"), f"No presence data for {alice.id}")
    assert_error(live.owner.get("/users/999999/presence"), "No such user")
    assert_error(live.owner.get("/users/9999999999999999999999/presence"), "No such user")
    assert_error(live.owner.get("/users/nobody@example.com/presence"), "No such user")
    # A real email the viewer may not see names nobody, like an unknown one.
    set_visibility(live, live.owner.id, ADMINS)
    assert_error(alice.get(f"/users/{live.owner_user.delivery_email}/presence"), "No such user")
    report(alice)
    assert_success(live.owner.delete(f"/users/{alice.id}"))
    assert_error(live.owner.get(f"/users/{alice.id}/presence"), "No such user")


def test_get_own_presence_path_is_not_a_user(live):
    response = live.owner.get("/users/me/presence")
    assert response.status_code == 405


def test_realm_presence(live):
    alice, bob = live.make_user(), live.make_user()
    report(live.owner)
    report(alice, "idle")
    report(bob)
    assert_success(live.owner.delete(f"/users/{bob.id}"))
    body = assert_success(live.owner.get("/realm/presence"))
    assert set(body["presences"]) == {live.owner.email, alice.email}
    assert body["server_timestamp"] == live.clock.now
    assert "presence_last_update_id" not in body
    # Users last connected more than two weeks ago are left out.
    live.clock.advance(14 * 86400 + 1)
    report(alice)
    assert set(assert_success(live.owner.get("/realm/presence"))["presences"]) == {alice.email}


def test_history_limit_days(live):
    alice = live.make_user()
    report(alice)
    live.clock.advance(3 * 86400)
    body = report(live.owner, slim_presence=True, history_limit_days=2)
    assert list(body["presences"]) == [str(live.owner.id)]
    body = report(live.owner, slim_presence=True, history_limit_days=4)
    assert set(body["presences"]) == {str(live.owner.id), str(alice.id)}
    body = report(live.owner, slim_presence=True, history_limit_days=0)
    assert body["presences"] == {}
    assert body["presence_last_update_id"] == -1


def test_register_state(live):
    alice = live.make_user()
    report(alice)
    state = register(live.owner, fetch_event_types=["presence"])
    now = int(live.clock.now)
    assert state["presences"] == {alice.email: legacy("active", now)}
    assert state["presence_last_update_id"] == 1
    assert state["server_timestamp"] == live.clock.now
    slim = register(live.owner, fetch_event_types=["presence"], slim_presence=True)
    assert slim["presences"] == {str(alice.id): {"active_timestamp": now, "idle_timestamp": now}}
    newer = register(live.owner, fetch_event_types=["presence"], slim_presence=True, presence_last_update_id=1)
    assert (newer["presences"], newer["presence_last_update_id"]) == ({}, 1)
    other = register(live.owner, fetch_event_types=["message"])
    assert "presences" not in other and "presence_last_update_id" not in other


def test_each_queue_gets_the_presence_event_in_its_format(live):
    alice = live.make_user()
    queues = {
        "legacy": register(live.owner, event_types=["presence"])["queue_id"],
        "slim": register(live.owner, event_types=["presence"], slim_presence=True)["queue_id"],
        "modern": register(
            live.owner, event_types=["presence"], client_capabilities={"simplified_presence_events": True}
        )["queue_id"],
    }
    report(alice)
    now = int(live.clock.now)
    website = {"client": "website", "status": "active", "timestamp": now, "pushable": False}
    received = {name: of_type(events_now(live.owner, queue_id), "presence") for name, queue_id in queues.items()}
    assert received["legacy"] == [
        {
            "type": "presence",
            "user_id": alice.id,
            "email": alice.email,
            "server_timestamp": live.clock.now,
            "presence": {"website": website},
            "id": 0,
        }
    ]
    assert received["slim"] == [
        {
            "type": "presence",
            "user_id": alice.id,
            "server_timestamp": live.clock.now,
            "presence": {"website": website},
            "id": 0,
        }
    ]
    assert received["modern"] == [
        {"type": "presence", "id": 0, "presences": {str(alice.id): {"active_timestamp": now, "idle_timestamp": now}}}
    ]


def test_zulip_client_reports_presence(live, zulip_client):
    result = zulip_client.update_presence({"status": "active", "new_user_input": True, "ping_only": False})
    assert result["result"] == "success"
    assert result["presences"][live.owner.email]["aggregated"]["status"] == "active"
    assert zulip_client.get_realm_presence()["presences"][live.owner.email]["website"]["status"] == "active"
    assert zulip_client.get_user_presence(live.owner.email)["presence"]["aggregated"]["status"] == "active"


def test_register_advertises_the_intervals_the_server_keeps(live):
    body = register(live.owner, fetch_event_types=["realm"])
    ping, threshold = body["server_presence_ping_interval_seconds"], body["server_presence_offline_threshold_seconds"]
    assert (ping, threshold) == (60, 140), "Zulip's PRESENCE_PING_INTERVAL_SECS and OFFLINE_THRESHOLD_SECS"
    alice = live.make_user()
    report(alice)

    def status():
        return assert_success(live.owner.get(f"/users/{alice.id}/presence"))["presence"]["aggregated"]["status"]

    live.clock.advance(threshold)  # exactly the advertised threshold: still active
    assert status() == "active"
    live.clock.advance(1)  # one second past it: offline
    assert status() == "offline"
