"""Upgrades: a database written in the era of migration 0001 (then 0002 to 0005) is served whole by
today's server; a database newer than this build is refused before anything is written. And the
systemd units docs/self-hosting.md installs pass `systemd-analyze verify`."""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import shutil
import sqlite3
import subprocess
import threading

import pytest

from storage.db.database import Database, connect
from storage.db.migrate import DatabaseTooNew, migrate, migration_scripts
from storage.model import flags
from storage.org import groups, realm
from storage.org.passwords import generate_api_key, hash_password
from tests.support.helpers import PASSWORD, Client, FakeClock, LiveServer, assert_success, data_dir_for
from tests.support.paths import REPO
from tornchat import cli
from tornchat.bootstrap import bootstrap
from tornchat.settings import Settings

# The old server's clock: every row below was written before the FakeClock's start (1_800_000_000).
T = 1_790_000_000
EMAIL_HOST = "zulip.testserver"


def _fold(a: str, b: str) -> int:
    """The TOPIC collation the server registered while 0003 to 0007 were current."""
    a, b = a.casefold(), b.casefold()
    return (a > b) - (a < b)


def _insert(conn: sqlite3.Connection, table: str, **row: object) -> int:
    columns = ", ".join(f'"{c}"' for c in row)
    sql = f"INSERT INTO {table} ({columns}) VALUES ({', '.join('?' * len(row))})"
    return int(conn.execute(sql, tuple(row.values())).lastrowid or 0)


def _era_0001(conn: sqlite3.Connection) -> dict[str, int]:
    """The realm, its system groups (as storage/org/groups.py made them), an owner, a member, a guest."""
    _insert(conn, "realm", id=1, name="Old Org", url="http://127.0.0.1:9991", email_host=EMAIL_HOST, date_created=T)
    ids = {
        name: _insert(conn, "user_groups", name=name, description=d, is_system_group=1)
        for name, d in groups.SYSTEM_GROUPS
    }
    settings = ("can_add_members_group", "can_join_group", "can_leave_group", "can_manage_group")
    settings += ("can_mention_group", "can_remove_members_group")
    conn.execute("UPDATE user_groups SET " + ", ".join(f"{s} = ?" for s in settings), (ids["role:nobody"],) * 6)
    chain = [name for name, _ in groups.SYSTEM_GROUPS][1:]
    for inner, outer in itertools.pairwise(chain):
        _insert(conn, "user_group_subgroups", supergroup_id=ids[outer], subgroup_id=ids[inner])
    for setting, group in realm.REALM_GROUP_DEFAULTS.items():
        if setting != "can_add_custom_emoji_group":  # a column since 0012
            conn.execute(f"UPDATE realm SET {setting} = ?", (ids[group],))
    people = {}
    for key, name, role in (("owner", "Olga Owner", 100), ("member", "Max Member", 400), ("guest", "Gus Guest", 600)):
        people[key] = _insert(
            conn, "users", delivery_email=f"{key}@example.com", full_name=name, role=role, date_joined=T,
            password_hash=hash_password(PASSWORD) if key == "owner" else None, api_key=generate_api_key(),
            can_create_users=int(key == "owner"), timezone="Europe/Berlin" if key == "member" else "",
        )  # fmt: skip
        for group in groups.ROLE_GROUPS[role]:
            _insert(conn, "user_group_members", group_id=ids[group], user_id=people[key])
    field = _insert(conn, "custom_profile_fields", name="Team", hint="Where you work", field_type=1, order=1)
    _insert(conn, "custom_profile_field_values", user_id=people["member"], field_id=field, value="Kitchen")
    return people | {f"group:{name}": group_id for name, group_id in ids.items()} | {"field": field}


def _era_0002(conn: sqlite3.Connection, ids: dict[str, int]) -> None:
    """A public channel (default for new users) everybody is in, and a private one without the guest."""
    admin, everyone, nobody = ids["group:role:administrators"], ids["group:role:everyone"], ids["group:role:nobody"]
    for name, private in (("general", 0), ("secret", 1)):
        creator_group = _insert(conn, "user_groups", is_system_group=0, date_created=T)
        _insert(conn, "user_group_members", group_id=creator_group, user_id=ids["owner"])
        rules = dict.fromkeys(
            ("can_add_subscribers_group", "can_delete_any_message_group", "can_delete_own_message_group",
             "can_move_messages_out_of_channel_group", "can_move_messages_within_channel_group",
             "can_resolve_topics_group", "can_subscribe_group"), nobody,
        )  # fmt: skip
        ids[name] = _insert(
            conn, "channels", name=name, description=f"The {name} channel", rendered_description=f"<p>The {name}</p>",
            date_created=T, creator_id=ids["owner"], invite_only=private, can_administer_channel_group=creator_group,
            can_create_topic_group=everyone, can_remove_subscribers_group=admin, can_send_message_group=everyone,
            **rules,
        )  # fmt: skip
    _insert(conn, "default_channels", channel_id=ids["general"])
    for user, channel, color, muted in (
        ("owner", "general", "#76ce90", 0),
        ("member", "general", "#fae589", 0),
        ("guest", "general", "#a6c7e5", 1),
        ("owner", "secret", "#e79ab5", 0),
        ("member", "secret", "#b0a5fd", 0),
    ):
        _insert(conn, "subscriptions", user_id=ids[user], channel_id=ids[channel], color=color, is_muted=muted)


def _message(conn, ids, sender, recipient, channel, topic, content, date, readers):  # type: ignore[no-untyped-def]
    message_id = _insert(
        conn, "messages", sender_id=ids[sender], recipient_id=recipient, channel_id=channel, topic=topic,
        content=content, rendered_content=f"<p>{content}</p>", date_sent=date, client="website",
    )  # fmt: skip
    for user, bits in readers.items():
        _insert(conn, "user_messages", user_id=ids[user], message_id=message_id, flags=bits)
    return message_id


def _era_0003(conn: sqlite3.Connection, ids: dict[str, int]) -> None:
    """Channel messages (a mixed-case topic), a direct message, flags, reactions and a muted topic."""
    conn.create_collation("TOPIC", _fold)
    general = _insert(conn, "recipients", type=2, type_id=ids["general"])
    pair = sorted((ids["owner"], ids["member"]))
    dm_group = _insert(conn, "direct_message_groups", member_key=",".join(map(str, pair)))
    for user_id in pair:
        _insert(conn, "direct_message_group_members", group_id=dm_group, user_id=user_id)
    dm = _insert(conn, "recipients", type=3, type_id=dm_group)
    read, starred, private = flags.READ, flags.STARRED, flags.IS_PRIVATE
    everyone_reads = {"owner": read, "member": starred, "guest": 0}
    ids["m1"] = _message(conn, ids, "owner", general, ids["general"], "Lunch Plans", "pizza?", T + 10, everyone_reads)
    ids["m2"] = _message(conn, ids, "member", general, ids["general"], "lunch plans", "yes", T + 20, {
        "owner": 0, "member": read, "guest": read})  # fmt: skip
    ids["m3"] = _message(conn, ids, "member", dm, None, "", "just us", T + 30, {
        "owner": private, "member": read | private})  # fmt: skip
    for user, emoji, code in (("member", "thumbs_up", "1f44d"), ("guest", "heart", "2764")):
        _insert(
            conn, "reactions", message_id=ids["m1"], user_id=ids[user], emoji_name=emoji, emoji_code=code,
            reaction_type="unicode_emoji",
        )  # fmt: skip
    ids["emoji"] = _insert(conn, "realm_emoji", name="octo", author_id=ids["owner"])  # before emoji had images
    _insert(
        conn, "user_topics", user_id=ids["guest"], channel_id=ids["general"], topic="LUNCH plans",
        visibility_policy=1, last_updated=T + 40,
    )  # fmt: skip


def _era_0004(conn: sqlite3.Connection, ids: dict[str, int]) -> None:
    to = json.dumps([ids["owner"]])
    _insert(
        conn, "drafts", user_id=ids["member"], type="private", to_user_ids=to, content="draft dm", last_edit_time=T + 50
    )
    _insert(
        conn, "drafts", user_id=ids["member"], type="stream", channel_id=ids["general"], topic="Lunch Plans",
        content="draft reply", last_edit_time=T + 60,
    )  # fmt: skip
    _insert(conn, "saved_snippets", user_id=ids["member"], title="Greeting", content="Hello!", date_created=T + 70)


def _era_0005(conn: sqlite3.Connection, ids: dict[str, int]) -> None:
    ids["s1"] = _insert(
        conn, "scheduled_messages", sender_id=ids["member"], type="stream", channel_id=ids["general"], topic="later",
        content="see you", rendered_content="<p>see you</p>", scheduled_timestamp=1_800_086_400, client="website",
        date_created=T + 80,
    )  # fmt: skip


def build_old_database(path: str) -> dict[str, int]:
    """Write the database migration by migration, each era's rows in that era's schema; return the ids."""
    conn = sqlite3.connect(path, isolation_level=None)
    migrate(conn, T, until=1)
    ids = _era_0001(conn)
    for number, fill in ((2, _era_0002), (3, _era_0003), (4, _era_0004), (5, _era_0005)):
        migrate(conn, T, until=number)
        fill(conn, ids)
    assert [row[0] for row in conn.execute("SELECT id FROM migrations")] == [1, 2, 3, 4, 5]
    conn.close()
    return ids


class UpgradedServer(LiveServer):
    """Today's server started on a data directory an older tornchat left (no bootstrap: it exists)."""

    def __init__(self, data_dir: str) -> None:
        self.clock = FakeClock()
        self.settings = Settings(data_dir=data_dir, site="http://127.0.0.1:9991", email_host=EMAIL_HOST)
        self._emails = itertools.count(1)
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        assert self._ready.wait(10)


@pytest.fixture
def upgraded(tmp_path):  # type: ignore[no-untyped-def]
    data_dir = data_dir_for(tmp_path)
    os.makedirs(data_dir)
    ids = build_old_database(Settings(data_dir=data_dir).database_path)
    server = UpgradedServer(data_dir)
    yield server, ids
    server.stop()


def _client(server: UpgradedServer, ids: dict[str, int], who: str) -> Client:
    return server.client_for(server.user(ids[who]))


def _messages(client: Client, **params: object) -> list[dict]:
    body = assert_success(client.get("/messages", {"anchor": "oldest", "num_before": 0, "num_after": 100, **params}))
    return body["messages"]


def _client(server: UpgradedServer, ids: dict[str, int], who: str) -> Client:
    return server.client_for(server.user(ids[who]))


def _messages(client: Client, **params: object) -> list[dict]:
    body = assert_success(client.get("/messages", {"anchor": "oldest", "num_before": 0, "num_after": 100, **params}))
    return body["messages"]


def _summary(messages: list[dict]) -> list[tuple]:
    return [
        (m["id"], m["sender_id"], m["subject"], m["content"], m["flags"],
         [(r["user_id"], r["emoji_name"], r["emoji_code"]) for r in m["reactions"]])
        for m in messages
    ]  # fmt: skip


def test_groups_profile_fields_and_imageless_emoji_are_served(upgraded):
    server, ids = upgraded
    member = _client(server, ids, "member")
    listed = assert_success(member.get("/user_groups"))["user_groups"]
    names = [name for name, _ in groups.SYSTEM_GROUPS]
    assert [(g["name"], g["is_system_group"]) for g in listed] == [(name, True) for name in names]
    by_name = {g["name"]: g for g in listed}
    assert by_name["role:owners"]["members"] == [ids["owner"]]
    assert by_name["role:members"]["members"] == [ids["member"]]
    assert by_name["role:members"]["direct_subgroup_ids"] == [by_name["role:fullmembers"]["id"]]
    assert by_name["role:everyone"]["members"] == [ids["guest"]]
    fields = assert_success(member.get("/realm/profile_fields"))["custom_fields"]
    assert [(f["id"], f["name"], f["hint"], f["type"]) for f in fields] == [(ids["field"], "Team", "Where you work", 1)]
    user = assert_success(member.get(f"/users/{ids['member']}", {"include_custom_profile_fields": "true"}))["user"]
    assert user["profile_data"] == {str(ids["field"]): {"value": "Kitchen"}}
    # A custom emoji row from before 0012 gave emoji images: kept, with no image to show.
    emoji = assert_success(member.get("/realm/emoji"))["emoji"]
    assert emoji == {
        str(ids["emoji"]): {"id": str(ids["emoji"]), "name": "octo", "author_id": ids["owner"], "deactivated": False,
                            "source_url": "", "still_url": None}
    }  # fmt: skip


def test_users_channels_and_subscriptions_are_served(upgraded):
    server, ids = upgraded
    assert server.read(lambda tx: tx.column("SELECT id FROM migrations ORDER BY id")) == [
        number for number, _, _ in migration_scripts()
    ]
    member = _client(server, ids, "member")
    people = assert_success(member.get("/users"))["members"]
    assert [(u["user_id"], u["email"], u["full_name"], u["role"], u["timezone"]) for u in people] == [
        (ids["owner"], "owner@example.com", "Olga Owner", 100, ""),
        (ids["member"], "member@example.com", "Max Member", 400, "Europe/Berlin"),
        (ids["guest"], "guest@example.com", "Gus Guest", 600, ""),
    ]
    subscriptions = assert_success(member.get("/users/me/subscriptions", {"include_subscribers": True}))
    assert [
        (s["stream_id"], s["name"], s["invite_only"], s["color"], s["is_muted"], s["subscribers"], s["description"])
        for s in subscriptions["subscriptions"]
    ] == [
        (ids["general"], "general", False, "#fae589", False, [ids["owner"], ids["member"], ids["guest"]],
         "The general channel"),
        (ids["secret"], "secret", True, "#b0a5fd", False, [ids["owner"], ids["member"]], "The secret channel"),
    ]  # fmt: skip
    guest = assert_success(_client(server, ids, "guest").get("/users/me/subscriptions"))["subscriptions"]
    assert [(s["name"], s["is_muted"]) for s in guest] == [("general", True)]
    # The anonymous group 0002's rows gave the creator, and realm settings, including 0012's new column.
    assert subscriptions["subscriptions"][0]["can_administer_channel_group"] == {
        "direct_members": [ids["owner"]], "direct_subgroups": []
    }  # fmt: skip
    state = assert_success(member.post("/register", {"fetch_event_types": ["realm"]}))
    assert state["realm_name"] == "Old Org"
    assert state["realm_can_add_custom_emoji_group"] == ids["group:role:members"]
    assert state["realm_can_create_web_public_channel_group"] == ids["group:role:owners"]
    # The password hashed in 0001's era still logs in.
    login = server.anonymous().post("/fetch_api_key", {"username": "owner@example.com", "password": PASSWORD})
    assert assert_success(login)["api_key"] == server.user(ids["owner"]).api_key


def test_messages_flags_reactions_and_user_topics_are_served(upgraded):
    server, ids = upgraded
    m1, m2, m3 = ids["m1"], ids["m2"], ids["m3"]
    reactions = [(ids["member"], "thumbs_up", "1f44d"), (ids["guest"], "heart", "2764")]
    assert _summary(_messages(_client(server, ids, "member"))) == [
        (m1, ids["owner"], "Lunch Plans", "<p>pizza?</p>", ["starred"], reactions),
        (m2, ids["member"], "lunch plans", "<p>yes</p>", ["read"], []),
        (m3, ids["member"], "", "<p>just us</p>", ["read"], []),
    ]
    owner = _client(server, ids, "owner")
    assert [(m["id"], m["flags"]) for m in _messages(owner)] == [(m1, ["read"]), (m2, []), (m3, [])]
    assert [m["id"] for m in _messages(_client(server, ids, "guest"))] == [m1, m2]
    # 0008 keyed topics by casefold(): one topic in any case; the full-text index still finds words.
    topic = [{"operator": "channel", "operand": ids["general"]}, {"operator": "topic", "operand": "LUNCH PLANS"}]
    assert [m["id"] for m in _messages(owner, narrow=topic)] == [m1, m2]
    assert [m["id"] for m in _messages(owner, narrow=[{"operator": "search", "operand": "pizza"}])] == [m1]
    assert [m["id"] for m in _messages(owner, narrow=[{"operator": "is", "operand": "unread"}])] == [m2, m3]
    dm = [{"operator": "dm", "operand": [ids["member"]]}]
    assert [m["id"] for m in _messages(owner, narrow=dm)] == [m3]
    state = assert_success(_client(server, ids, "guest").post("/register", {"fetch_event_types": ["user_topic"]}))
    assert state["user_topics"] == [
        {"stream_id": ids["general"], "topic_name": "LUNCH plans", "last_updated": T + 40, "visibility_policy": 1}
    ]
    muted = [{"operator": "is", "operand": "muted"}]
    assert [m["id"] for m in _messages(_client(server, ids, "guest"), narrow=muted)] == [m1, m2]


def test_drafts_snippets_and_scheduled_messages_are_served(upgraded):
    server, ids = upgraded
    member = _client(server, ids, "member")
    assert assert_success(member.get("/drafts"))["drafts"] == [
        {"id": 1, "type": "private", "to": [ids["owner"]], "topic": "", "content": "draft dm", "timestamp": T + 50},
        {"id": 2, "type": "stream", "to": [ids["general"]], "topic": "Lunch Plans", "content": "draft reply",
         "timestamp": T + 60},
    ]  # fmt: skip
    assert assert_success(member.get("/saved_snippets"))["saved_snippets"] == [
        {"id": 1, "title": "Greeting", "content": "Hello!", "date_created": T + 70}
    ]
    assert assert_success(member.get("/scheduled_messages"))["scheduled_messages"] == [
        {"scheduled_message_id": ids["s1"], "type": "stream", "to": ids["general"], "topic": "later",
         "content": "see you", "rendered_content": "<p>see you</p>", "scheduled_delivery_timestamp": 1_800_086_400,
         "failed": False},
    ]  # fmt: skip
    assert assert_success(_client(server, ids, "owner").get("/drafts"))["drafts"] == []


def test_new_writes_work_on_the_upgraded_database(upgraded):
    server, ids = upgraded
    owner, member = _client(server, ids, "owner"), _client(server, ids, "member")
    sent = member.post("/messages", {"type": "stream", "to": ids["general"], "topic": "LUNCH PLANS", "content": "at 1"})
    new_id = assert_success(sent)["id"]
    assert new_id > ids["m3"]
    assert_success(owner.post(f"/messages/{ids['m2']}/reactions", {"emoji_name": "tada"}))
    assert_success(member.post("/messages/flags", {"messages": [ids["m1"]], "op": "add", "flag": "read"}))
    assert_success(member.post("/saved_snippets", {"title": "Bye", "content": "See you"}))
    assert_success(member.delete(f"/scheduled_messages/{ids['s1']}"))
    messages = _messages(member)
    assert [(m["id"], m["subject"], m["flags"]) for m in messages] == [
        (ids["m1"], "Lunch Plans", ["read", "starred"]),
        (ids["m2"], "lunch plans", ["read"]),
        (ids["m3"], "", ["read"]),
        (new_id, "LUNCH PLANS", []),  # not read by the sender: an API client, not an interactive one
    ]
    assert [r["emoji_name"] for r in messages[1]["reactions"]] == ["tada"]
    assert [s["title"] for s in assert_success(member.get("/saved_snippets"))["saved_snippets"]] == ["Greeting", "Bye"]
    assert assert_success(member.get("/scheduled_messages"))["scheduled_messages"] == []
    # A new account joins the old channel (the default one 0002 recorded) and sees its history.
    created = owner.post("/users", {"email": "new@example.com", "password": PASSWORD, "full_name": "Nina New"})
    newcomer = server.client_for(server.user(assert_success(created)["user_id"]))
    state = assert_success(newcomer.post("/register", {"fetch_event_types": ["default_streams"]}))
    assert [s["stream_id"] for s in state["realm_default_streams"]] == [ids["general"]]
    assert_success(newcomer.post("/users/me/subscriptions", {"subscriptions": [{"name": "general"}]}))
    in_general = [{"operator": "channel", "operand": ids["general"]}]
    assert [m["id"] for m in _messages(newcomer, narrow=in_general)] == [ids["m1"], ids["m2"], new_id]


# -- a database newer than this build ------------------------------------------------------------


def _newer_database(tmp_path) -> tuple[Settings, int, int]:  # type: ignore[no-untyped-def]
    """A data directory whose database records a migration this build does not have."""
    settings = Settings(data_dir=data_dir_for(tmp_path), site="http://127.0.0.1:9991")
    bootstrap(settings, "owner@example.com", PASSWORD)
    known = max(number for number, _, _ in migration_scripts())
    conn = connect(settings.database_path)
    conn.execute("INSERT INTO migrations (id, name, applied_at) VALUES (?, ?, ?)", (known + 4, "future.sql", T))
    conn.close()
    return settings, known + 4, known


def _snapshot(data_dir: str) -> dict[str, str]:
    found = {}
    for name in sorted(os.listdir(data_dir)):
        with open(os.path.join(data_dir, name), "rb") as handle:
            found[name] = hashlib.sha256(handle.read()).hexdigest()
    return found


@pytest.mark.parametrize(
    "command",
    [
        ["serve", "--host", "192.0.2.1", "--port", "9991"],  # an address no test machine has: never serves
        ["init", "--owner-email", "x@example.com", "--owner-password", PASSWORD],
        ["create-user", "--email", "x@example.com", "--full-name", "X", "--password", PASSWORD],
    ],
    ids=["serve", "init", "create-user"],
)
def test_commands_refuse_a_newer_database_and_write_nothing(tmp_path, capsys, command):
    settings, newest, known = _newer_database(tmp_path)
    before = _snapshot(settings.data_dir)
    assert cli.main([command[0], "--data-dir", settings.data_dir, *command[1:]]) == 1
    out, err = capsys.readouterr()
    assert err == (
        f"tornchat: the database at {settings.database_path} was written by a newer tornchat"
        f" (migration {newest:04d}; this build knows up to {known:04d}): upgrade tornchat or restore a backup\n"
    )
    assert out == ""
    assert _snapshot(settings.data_dir) == before


def test_database_refuses_a_newer_file_and_still_opens_an_up_to_date_one(tmp_path):
    settings, newest, _ = _newer_database(tmp_path)
    with pytest.raises(DatabaseTooNew, match=f"migration {newest:04d};"):
        Database(settings.database_path)
    conn = connect(settings.database_path)
    conn.execute("DELETE FROM migrations WHERE id = ?", (newest,))
    conn.close()
    db = Database(settings.database_path)  # every migration it records is known: it opens
    db.close()


# -- the systemd units of docs/self-hosting.md ---------------------------------------------------

UNITS = ("tornchat.service", "tornchat-backup.service", "tornchat-backup.timer")
SYSTEMD_ANALYZE = shutil.which("systemd-analyze")


@pytest.mark.skipif(SYSTEMD_ANALYZE is None, reason="systemd-analyze is not installed")
def test_systemd_units_pass_systemd_analyze_verify(tmp_path):
    """Verified in a root holding the system's units, the units and the programs they start."""
    root = tmp_path / "root"
    packaging = os.path.join(REPO, "packaging")
    units = root / "etc/systemd/system"
    units.mkdir(parents=True)
    for name in UNITS:
        shutil.copy(os.path.join(packaging, name), units)
    for system in sorted({os.path.realpath(d) for d in ("/lib/systemd/system", "/usr/lib/systemd/system")}):
        if os.path.isdir(system):
            shutil.copytree(system, root / system.lstrip("/"), symlinks=True, dirs_exist_ok=True)
    for program in ("/usr/local/bin/tornchat", "/bin/sh"):
        (root / program.lstrip("/")).parent.mkdir(parents=True, exist_ok=True)
        (root / program.lstrip("/")).write_text("#!/bin/sh\n")
        (root / program.lstrip("/")).chmod(0o755)
    result = subprocess.run(
        [SYSTEMD_ANALYZE, "verify", f"--root={root}", *UNITS], cwd=units, capture_output=True, text=True, timeout=60
    )
    # verify exits 0 on an unknown key or system call group, but says so: any output is a failure.
    assert (result.returncode, result.stdout + result.stderr) == (0, "")


def test_0015_forgets_the_removed_dense_mode_setting(tmp_path):
    conn = sqlite3.connect(str(tmp_path / "old.db"), isolation_level=None)
    migrate(conn, T, until=1)
    ids = _era_0001(conn)
    migrate(conn, T, until=14)
    for name, value in (("dense_mode", "true"), ("enter_sends", "true")):
        conn.execute("INSERT INTO user_settings VALUES (?, ?, ?)", (ids["owner"], name, value))
    migrate(conn, T)
    assert conn.execute("SELECT name FROM user_settings").fetchall() == [("enter_sends",)]
    conn.close()
