"""Channel folders: POST /channel_folders/create (and POST /channel_folders), GET /channel_folders."""

from __future__ import annotations

import pytest

from tests.storage.channels.test_streams import create_channel, events_after
from tests.support.helpers import assert_error, assert_success


def create_folder(client, name, **params):
    return assert_success(client.post("/channel_folders/create", {"name": name, **params}))["channel_folder_id"]


def folders(client, **params):
    return assert_success(client.get("/channel_folders", params))["channel_folders"]


def test_create_and_list(live):
    member = live.make_user()
    guest = live.make_user("guest")
    count = len(live.events())
    folder_id = create_folder(live.owner, "  Engineering ", description="Builds **things**")
    expected = {
        "id": folder_id,
        "name": "Engineering",
        "description": "Builds **things**",
        "rendered_description": "<p>Builds <strong>things</strong></p>",
        "creator_id": live.owner.id,
        "date_created": int(live.clock.now),
        "is_archived": False,
    }
    for client in (live.owner, member, guest):
        assert folders(client) == [expected]
    [(event, audience)] = events_after(live, count, "channel_folder")
    assert event == {"type": "channel_folder", "op": "add", "channel_folder": expected}
    assert audience == {live.owner.id, member.id, guest.id}


def test_both_paths_create(live):
    first = create_folder(live.owner, "One")
    second = assert_success(live.owner.post("/channel_folders", {"name": "Two"}))["channel_folder_id"]
    assert [(f["id"], f["name"], f["description"], f["rendered_description"]) for f in folders(live.owner)] == [
        (first, "One", "", ""),
        (second, "Two", "", ""),
    ]


def test_archived_folders_only_when_asked(live):
    kept = create_folder(live.owner, "Kept")
    gone = create_folder(live.owner, "Gone")
    live.write(lambda tx: tx.execute("UPDATE channel_folders SET is_archived = 1 WHERE id = ?", (gone,)))
    assert [f["id"] for f in folders(live.owner)] == [kept]
    assert [(f["id"], f["is_archived"]) for f in folders(live.owner, include_archived=True)] == [
        (kept, False),
        (gone, True),
    ]
    assert_error(live.owner.get("/channel_folders", {"include_archived": "yes"}), "include_archived is not valid JSON")


@pytest.mark.parametrize("role", ["moderator", "member", "guest"])
def test_only_administrators_create(live, role):
    client = live.make_user(role)
    for path in ("/channel_folders/create", "/channel_folders"):
        # Refused before the parameters are read: a missing name makes no difference.
        for params in ({"name": "Mine"}, {}):
            assert_error(client.post(path, params), "Must be an organization administrator", "UNAUTHORIZED_PRINCIPAL")
    assert folders(client) == []


def test_administrators_create(live):
    admin = live.make_user("admin")
    folder_id = create_folder(admin, "Admins'")
    assert folders(admin)[0]["creator_id"] == admin.id and folders(admin)[0]["id"] == folder_id


def test_name_errors(live):
    create_folder(live.owner, "Sales")
    assert_error(live.owner.post("/channel_folders/create"), "Missing 'name' argument", "REQUEST_VARIABLE_MISSING")
    for name, msg in (
        ("sales", "Channel folder name already in use"),
        (" SALES ", "Channel folder name already in use"),
        ("   ", "Channel folder name can't be empty."),
        ("a\x07b", "Invalid character in channel folder name, at position 2."),
        ("x" * 61, "name is too long (limit: 60 characters)"),
    ):
        assert_error(live.owner.post("/channel_folders/create", {"name": name}), msg)
    assert_error(
        live.owner.post("/channel_folders/create", {"name": "Long", "description": "d" * 1025}),
        "description is too long (limit: 1024 characters)",
    )
    assert [f["name"] for f in folders(live.owner)] == ["Sales"]


def test_channels_go_into_folders(live):
    folder_id = create_folder(live.owner, "Teams")
    channel_id = create_channel(live.owner, "backend", folder_id=folder_id)
    assert assert_success(live.owner.get(f"/streams/{channel_id}"))["stream"]["folder_id"] == folder_id


def test_methods(live):
    assert live.owner.get("/channel_folders/create").status_code == 405
    assert live.owner.patch("/channel_folders").status_code == 405
