"""Ids are never reused (issue 10): an id a client keeps names one thing forever, across deletes
and restarts (AUTOINCREMENT; migration 0008)."""

from __future__ import annotations

import sqlite3

import pytest

from storage.text import emoji
from tests.support.helpers import assert_success
from tests.support.scheduled_helpers import schedule_direct_ok
from tests.support.send_helpers import send_direct_ok


def _message(live, client):
    return send_direct_ok(client, [client.id], "hello")


def _draft(live, client):
    draft = {"type": "", "to": [], "topic": "", "content": "later", "timestamp": 1}
    return assert_success(client.post("/drafts", {"drafts": [draft]}))["ids"][0]


def _scheduled(live, client):
    return schedule_direct_ok(live, client, [client.id])


def _snippet(live, client):
    return assert_success(client.post("/saved_snippets", {"title": "t", "content": "c"}))["saved_snippet_id"]


# resource: (create(live, client) -> id, the path deleting one)
DELETABLE = {
    "message": (_message, "/messages/{}"),
    "draft": (_draft, "/drafts/{}"),
    "scheduled message": (_scheduled, "/scheduled_messages/{}"),
    "saved snippet": (_snippet, "/saved_snippets/{}"),
}


@pytest.mark.parametrize("resource", DELETABLE)
def test_deleting_the_newest_does_not_free_its_id(live, restart, resource):
    create, path = DELETABLE[resource]
    first, newest = create(live, live.owner), create(live, live.owner)
    assert first < newest
    assert_success(live.owner.delete(path.format(newest)))
    again = create(live, live.owner)
    assert again > newest
    assert_success(live.owner.delete(path.format(again)))
    later = restart()
    assert create(later, later.owner) > again


# Resources the API never deletes (deactivated or archived instead) keep the same guarantee: the
# newest row is removed by hand from the file (as a repair or an old bug might), then created anew.
def _channel(client):
    return assert_success(client.post("/channels/create", {"name": f"c{_count()}", "subscribers": []}))["id"]


def _group(client):
    params = {"name": f"g{_count()}", "members": [], "description": "d"}
    return assert_success(client.post("/user_groups/create", params))["group_id"]


def _folder(client):
    return assert_success(client.post("/channel_folders/create", {"name": f"f{_count()}"}))["channel_folder_id"]


def _field(client):
    return assert_success(client.post("/realm/profile_fields", {"name": f"p{_count()}", "field_type": 1}))["id"]


def _user(client):
    n = _count()
    params = {"email": f"u{n}@example.com", "password": "pa55word!", "full_name": f"U {n}"}
    return assert_success(client.post("/users", params))["user_id"]


_counter = iter(range(10**6))


def _count():
    return next(_counter)


KEPT = {
    "channels": _channel,
    "user_groups": _group,
    "channel_folders": _folder,
    "custom_profile_fields": _field,
    "users": _user,
}


@pytest.mark.parametrize("table", KEPT)
def test_a_removed_newest_row_does_not_free_its_id(live, restart, table):
    create = KEPT[table]
    first, newest = create(live.owner), create(live.owner)
    assert first < newest
    # A plain connection (foreign keys off by default) removes the row, whatever points at it.
    conn = sqlite3.connect(live.settings.database_path, isolation_level=None)
    conn.execute(f"DELETE FROM {table} WHERE id = ?", (newest,))
    assert conn.execute(f"SELECT max(id) FROM {table}").fetchone()[0] < newest
    conn.close()
    later = restart()
    assert create(later.owner) > newest


def test_realm_emoji_ids_are_not_reused(live, restart):
    first = live.write(emoji.create_realm_emoji, "one", live.owner.id)
    newest = live.write(emoji.create_realm_emoji, "two", live.owner.id)
    live.write(lambda tx: tx.execute("DELETE FROM realm_emoji WHERE id = ?", (newest,)))
    assert first < newest < live.write(emoji.create_realm_emoji, "three", live.owner.id)
    later = restart()
    assert later.write(emoji.create_realm_emoji, "four", live.owner.id) > newest + 1


def test_every_kept_id_is_autoincrement(live):
    """The schema itself: each table whose ids clients keep declares AUTOINCREMENT."""
    kept = {*KEPT, "messages", "drafts", "scheduled_messages", "saved_snippets", "realm_emoji", "devices", "linkifiers"}
    conn = sqlite3.connect(live.settings.database_path)
    rows = dict(conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table'").fetchall())
    conn.close()
    assert sorted(name for name in kept if "AUTOINCREMENT" not in rows[name]) == []
