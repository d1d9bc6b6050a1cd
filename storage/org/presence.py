"""Presence: who is online, in Zulip's model (POST /users/me/presence, GET .../presence, POST /register).

Clients report every minute whether their user is "active" (using it) or "idle" (it is open). A
user's user_presences row keeps the last time any client reported them connected and the last
time one reported them active; clients derive online/idle/offline from those two times
(OFFLINE_THRESHOLD_SECS). As in Zulip:
- a row is written at most once per PRESENCE_UPDATE_MIN_FREQ_SECONDS per time it keeps, so ten
  open windows polling every minute cost one write a minute, not ten;
- a `presence` event goes out only when it matters before the next poll: the user's first report
  ever, or an "active" report after long enough without one that others may show them offline
  (and none in realms over USER_LIMIT_FOR_SENDING_PRESENCE_UPDATE_EVENTS active users);
- bots have no presence, and deactivated users drop out of every presence listing.
"""

from __future__ import annotations

from typing import Any

from storage.db.tx import Tx
from storage.model.errors import ApiError, no_such_user
from storage.model.realm import Realm
from storage.model.user import EVERYONE, User
from storage.org import groups
from storage.org.user_settings_definitions import check_human, get_user_settings
from storage.org.users import access_user_by_email, dummy_email, get_user_by_id

ACTIVE, IDLE = "active", "idle"
# Zulip's settings: clients ping every PRESENCE_PING_INTERVAL_SECS and show a user offline after
# OFFLINE_THRESHOLD_SECS without a report.
PRESENCE_PING_INTERVAL_SECS = 60
OFFLINE_THRESHOLD_SECS = 140
PRESENCE_UPDATE_MIN_FREQ_SECONDS = 55
# The legacy format calls a user "active" when active within this long of their last connection.
PRESENCE_LEGACY_EVENT_OFFSET_FOR_ACTIVITY_SECONDS = 70
# Past this many active users, immediate presence events cost more than they help (Zulip's limit).
USER_LIMIT_FOR_SENDING_PRESENCE_UPDATE_EVENTS = 100
# Without history_limit_days, listings hold users connected in the last two weeks (Zulip).
DEFAULT_HISTORY_DAYS = 14
# A bound on history_limit_days that keeps the arithmetic in range (about 270 years).
MAX_HISTORY_DAYS = 100_000
# A presence event's modern form, kept beside the legacy fields for queues that ask for it.
MODERN_PRESENCES = "_presences"

PRESENCE_ROWS_SQL = (
    "SELECT p.user_id, p.last_connected_time, p.last_active_time, p.last_update_id, u.delivery_email,"
    " u.email_address_visibility, u.date_joined FROM user_presences AS p JOIN users AS u ON u.id = p.user_id"
    " WHERE u.is_active AND NOT u.is_bot"
)


def legacy_presence(active: int, connected: int) -> dict[str, Any]:
    """The legacy per-client presence dict ("website", as Zulip reports every client now)."""
    if active + PRESENCE_LEGACY_EVENT_OFFSET_FOR_ACTIVITY_SECONDS >= connected:
        status, timestamp = ACTIVE, active
    else:
        status, timestamp = IDLE, connected
    return {"client": "website", "status": status, "timestamp": timestamp, "pushable": False}


def _times(row: Any) -> tuple[int, int]:
    """(active, connected) of a presence row; a time never reported is the user's date_joined (Zulip)."""
    active = row["last_active_time"] if row["last_active_time"] is not None else row["date_joined"]
    return active, row["last_connected_time"]


def _modern(row: Any) -> dict[str, int]:
    active, connected = _times(row)
    return {"active_timestamp": active, "idle_timestamp": connected}


def _legacy(row: Any) -> dict[str, Any]:
    latest = legacy_presence(*_times(row))
    aggregated = {"client": latest["client"], "status": latest["status"], "timestamp": latest["timestamp"]}
    return {"aggregated": aggregated, "website": latest}


def _email(row: Any, realm: Realm) -> str:
    """The API email of a presence row's user (humans only: bots have no presence)."""
    if row["email_address_visibility"] == EVERYONE:
        return str(row["delivery_email"])
    return dummy_email(row["user_id"], realm)


def fetch_presences(
    tx: Tx, realm: Realm, slim: bool, last_update_id: int | None, history_limit_days: int | None
) -> tuple[dict[str, dict[str, Any]], int]:
    """Return (presences by user id string if slim, else by email in the legacy format, presence_last_update_id).

    With last_update_id, only rows changed since; without it (or with 0 or less), only users connected
    within history_limit_days (default 14). presence_last_update_id is the newest id returned, else
    the client's own, else -1 (Zulip's convention).
    """
    sql, params = PRESENCE_ROWS_SQL, []
    if last_update_id is not None:
        sql += " AND p.last_update_id > ?"
        params.append(last_update_id)
    if last_update_id is None or last_update_id <= 0:
        days = DEFAULT_HISTORY_DAYS if history_limit_days is None else min(history_limit_days, MAX_HISTORY_DAYS)
        sql += " AND p.last_connected_time >= ?"
        params.append(tx.timestamp - days * 86400)
    rows = [] if history_limit_days == 0 else tx.all(sql + " ORDER BY p.user_id", params)
    if slim:
        presences = {str(row["user_id"]): _modern(row) for row in rows}
    else:
        presences = {_email(row, realm): _legacy(row) for row in rows}
    if rows:
        newest = max(row["last_update_id"] for row in rows)
    else:
        newest = last_update_id if last_update_id is not None else -1
    return presences, newest


def presence_state(
    tx: Tx, realm: Realm, slim: bool, last_update_id: int | None, history_limit_days: int | None
) -> dict[str, Any]:
    """POST /register's presences, presence_last_update_id and server_timestamp."""
    presences, newest = fetch_presences(tx, realm, slim, last_update_id, history_limit_days)
    return {"presences": presences, "presence_last_update_id": newest, "server_timestamp": tx.now}


def realm_presence(tx: Tx, realm: Realm) -> dict[str, Any]:
    """GET /realm/presence: every user's presence in the legacy format, keyed by email."""
    presences, _ = fetch_presences(tx, realm, False, None, None)
    return {"presences": presences, "server_timestamp": tx.now}


def update_presence(
    tx: Tx,
    realm: Realm,
    user: User,
    status: str,
    *,
    ping_only: bool,
    slim: bool,
    last_update_id: int | None,
    history_limit_days: int | None,
) -> dict[str, Any]:
    """POST /users/me/presence: record the report, then return the realm's presence (nothing if ping_only).

    Raises "Invalid status: ..." for a status other than active or idle, and refuses bots. Users who
    turned presence_enabled off are not recorded (Zulip's invisible mode).
    """
    check_human(user)
    if status not in (ACTIVE, IDLE):
        raise ApiError(f"Invalid status: {status}")
    # Invisible mode (presence_enabled off): the report is not recorded, so others see the user go offline.
    if get_user_settings(tx, user)["presence_enabled"]:
        record_presence(tx, realm, user, status == ACTIVE)
    if ping_only:
        return {}
    if last_update_id is not None:
        slim = True  # the last_update_id protocol is the modern API (Zulip)
    presences, newest = fetch_presences(tx, realm, slim, last_update_id, history_limit_days)
    return {"presences": presences, "server_timestamp": tx.now, "presence_last_update_id": newest}


def presence_enabled_changed(tx: Tx, realm: Realm, user: User, enabled: bool) -> None:
    """After the user turns presence_enabled on or off: tell everyone at once (Zulip's invisible mode).

    Turning it off replaces the user's presence with one idle report old enough for every client to
    show the user offline; turning it on reports the user active now.
    """
    if enabled:
        record_presence(tx, realm, user, True, force=True)
        return
    tx.execute("DELETE FROM user_presences WHERE user_id = ?", (user.id,))
    long_ago = tx.timestamp - (OFFLINE_THRESHOLD_SECS + PRESENCE_PING_INTERVAL_SECS + 10)
    record_presence(tx, realm, user, False, when=long_ago, force=True)


def record_presence(
    tx: Tx, realm: Realm, user: User, active: bool, *, when: int | None = None, force: bool = False
) -> None:
    """Write the user's presence row if it is due, and publish a presence event when the user comes online.

    when: the report's time (default now); force: publish an event whatever changed, in any realm.
    """
    now = tx.timestamp if when is None else when
    row = tx.one("SELECT last_connected_time, last_active_time FROM user_presences WHERE user_id = ?", (user.id,))
    if row is None:
        tx.execute(
            "INSERT INTO user_presences (user_id, last_connected_time, last_active_time, last_update_id)"
            " VALUES (?, ?, ?, ?)",
            (user.id, now, now if active else None, _next_update_id(tx)),
        )
        _publish_presence(tx, realm, user, force)
        return
    # A time never reported counts as a day ago: the user is then newly online.
    since_active = now - row["last_active_time"] if row["last_active_time"] is not None else 86400
    connected = row["last_connected_time"]
    changes: dict[str, int] = {}
    if now - connected > PRESENCE_UPDATE_MIN_FREQ_SECONDS:
        changes["last_connected_time"] = now
    if active and since_active > PRESENCE_UPDATE_MIN_FREQ_SECONDS:
        changes["last_active_time"] = now
        if now > connected:  # keeps last_connected_time >= last_active_time
            changes["last_connected_time"] = now
    if changes:
        assignments = ", ".join(f"{column} = ?" for column in sorted(changes))
        tx.execute(
            f"UPDATE user_presences SET {assignments}, last_update_id = ? WHERE user_id = ?",
            (*(changes[column] for column in sorted(changes)), _next_update_id(tx), user.id),
        )
    # Newly online: long enough without an active report that others may soon show the user offline.
    if force or (active and since_active > OFFLINE_THRESHOLD_SECS - PRESENCE_PING_INTERVAL_SECS - 10):
        _publish_presence(tx, realm, user, force)


def _next_update_id(tx: Tx) -> int:
    tx.execute("UPDATE presence_sequence SET last_update_id = last_update_id + 1 WHERE id = 1")
    return int(tx.value("SELECT last_update_id FROM presence_sequence WHERE id = 1"))


def _publish_presence(tx: Tx, realm: Realm, user: User, force: bool) -> None:
    audience = groups.active_user_ids(tx)
    if len(audience) > USER_LIMIT_FOR_SENDING_PRESENCE_UPDATE_EVENTS and not force:
        return
    row = tx.one(f"{PRESENCE_ROWS_SQL} AND p.user_id = ?", (user.id,))
    assert row is not None
    event = {
        "type": "presence",
        "user_id": user.id,
        "email": _email(row, realm),
        "server_timestamp": tx.now,
        "presence": {"website": legacy_presence(*_times(row))},
        MODERN_PRESENCES: {str(user.id): _modern(row)},
    }
    tx.publish(event, audience)


def presence_event_form(event: dict[str, Any], simplified: bool, slim: bool) -> dict[str, Any]:
    """A presence event as one queue receives it (Zulip's three forms).

    simplified_presence_events clients get the modern `presences` map only; slim_presence ones the
    legacy fields without `email`; the others the legacy fields.
    """
    if simplified:
        return {"type": "presence", "presences": event[MODERN_PRESENCES]}
    body = {key: value for key, value in event.items() if not key.startswith("_")}
    if slim:
        body.pop("email", None)
    return body


def user_presence(tx: Tx, realm: Realm, viewer: User, user_id_or_email: str) -> dict[str, Any]:
    """GET /users/{user_id_or_email}/presence: the user's legacy presence, "offline" when stale.

    "No such user" for unknown and deactivated users; bots have no presence.
    """
    if user_id_or_email.isdigit():
        target = get_user_by_id(tx, int(user_id_or_email)) if len(user_id_or_email) <= 18 else None
    else:
        target = access_user_by_email(tx, viewer, user_id_or_email, realm)
    if target is None or not target.is_active:
        raise no_such_user()
    if target.is_bot:
        raise ApiError("Presence is not supported for bot users.")
    row = tx.one(f"{PRESENCE_ROWS_SQL} AND p.user_id = ?", (target.id,))
    if row is None:
        raise ApiError(f"No presence data for {user_id_or_email}")
    presence = _legacy(row)
    aggregated = presence["aggregated"]
    if tx.timestamp - aggregated["timestamp"] > OFFLINE_THRESHOLD_SECS:
        aggregated["status"] = "offline"
    # As Zulip: only status and timestamp in this endpoint.
    return {"presence": {key: {"status": v["status"], "timestamp": v["timestamp"]} for key, v in presence.items()}}
