"""Custom emoji: GET /realm/emoji, POST and DELETE /realm/emoji/{name}, the images, events, messages."""

from __future__ import annotations

import os
import sqlite3
import tarfile

import pytest
import requests

from storage.db.backup import create_backup
from storage.db.migrate import migrate
from storage.org import groups, realm_emoji
from storage.org.realm_emoji import MAX_EMOJI_FILE_SIZE_MIB
from tests.support.channel_helpers import make_channel
from tests.support.events_helpers import register
from tests.support.helpers import assert_error, assert_success
from tests.support.send_helpers import send_ok

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + bytes(40)
GIF = b"GIF89a" + bytes(40)
JPEG = b"\xff\xd8\xff\xe0" + bytes(40)
WEBP = b"RIFF\x20\x00\x00\x00WEBPVP8 " + bytes(40)


def upload(client, name, data=PNG, claimed="image/png", files=None):
    url = f"{client.base_url}/api/v1/realm/emoji/{name}"
    return client.session.post(url, files=files if files is not None else {"file": ("x.png", data, claimed)})


def listing(client):
    return assert_success(client.get("/realm/emoji"))["emoji"]


def by_name(client, name):
    [found] = [e for e in listing(client).values() if e["name"] == name and not e["deactivated"]]
    return found


def content_of(client, message_id):
    return assert_success(client.get("/messages", {"message_ids": [message_id]}))["messages"][0]["content"]


def emoji_events(live, before):
    return [(event, ids) for event, ids in live.events()[before:] if event["type"] == "realm_emoji"]


def image_path(live, source_url):
    return os.path.join(live.settings.data_dir, "uploads", "emoji", source_url.rsplit("/", 1)[1])


def test_upload_lists_serves_and_announces(live):
    member = live.make_user()
    before = len(live.events())
    assert_success(upload(member, "party_parrot"))
    emoji = by_name(live.owner, "party_parrot")
    assert emoji == {
        "id": emoji["id"],
        "name": "party_parrot",
        "source_url": emoji["source_url"],
        "still_url": None,
        "deactivated": False,
        "author_id": member.id,
    }
    assert emoji["source_url"].startswith("/user_avatars/1/emoji/images/") and emoji["source_url"].endswith(".png")
    [(event, user_ids)] = emoji_events(live, before)
    assert event == {"type": "realm_emoji", "op": "update", "realm_emoji": listing(member)}
    assert sorted(user_ids) == sorted([live.owner.id, member.id])
    # Served without API credentials (an <img> fetches it), typed by its bytes, never sniffed.
    image = requests.get(live.base_url + emoji["source_url"])
    assert image.status_code == 200 and image.content == PNG
    assert image.headers["Content-Type"] == "image/png"
    assert image.headers["X-Content-Type-Options"] == "nosniff"
    assert os.path.isfile(image_path(live, emoji["source_url"]))


@pytest.mark.parametrize(
    ("data", "claimed", "content_type", "extension"),
    [(PNG, "text/html", "image/png", ".png"), (GIF, "image/png", "image/gif", ".gif"), (JPEG, "", "image/jpeg", ".jpg")]
    + [(WEBP, "application/octet-stream", "image/webp", ".webp")],
)
def test_type_comes_from_the_bytes_not_the_claim(live, data, claimed, content_type, extension):
    assert_success(upload(live.owner, "pic", data, claimed))
    source_url = by_name(live.owner, "pic")["source_url"]
    assert source_url.endswith(extension)
    assert requests.get(live.base_url + source_url).headers["Content-Type"] == content_type


def test_not_an_image_is_refused_and_nothing_is_stored(live):
    for data in (b"<html><script>alert(1)</script></html>", b"", b"GIF8"):
        assert_error(upload(live.owner, "fake", data), "Invalid image format")
    assert listing(live.owner) == {}
    folder = os.path.join(live.settings.data_dir, "uploads", "emoji")
    assert not os.path.isdir(folder) or os.listdir(folder) == []


@pytest.mark.parametrize(
    ("name", "msg"),
    [
        ("Party", "Emoji names must contain only lowercase English letters, digits, spaces, dashes, and underscores."),
        (
            "caf%C3%A9",
            "Emoji names must contain only lowercase English letters, digits, spaces, dashes, and underscores.",
        ),
        (
            "dot.dot",
            "Emoji names must contain only lowercase English letters, digits, spaces, dashes, and underscores.",
        ),
        ("trailing_", "Emoji names must end with either a letter or digit."),
        ("dash-", "Emoji names must end with either a letter or digit."),
        ("%20", "Emoji name is missing"),
    ],
)
def test_name_rules(live, name, msg):
    assert_error(upload(live.owner, name), msg)


def test_spaces_become_underscores(live):
    assert_success(upload(live.owner, "green%20tick"))
    assert by_name(live.owner, "green_tick")["name"] == "green_tick"


def test_an_upload_that_loses_the_race_for_its_name_leaves_no_image(live, monkeypatch):
    # The check before the image is written passes; another upload of the name is recorded before
    # this one's transaction, which then refuses: the image already written must be removed.
    record = realm_emoji.upload_realm_emoji

    def record_after_a_rival(tx, user, name, *args):
        tx.execute("INSERT INTO realm_emoji (name, author_id) VALUES (?, ?)", (name, user.id))
        return record(tx, user, name, *args)

    monkeypatch.setattr(realm_emoji, "upload_realm_emoji", record_after_a_rival)
    assert_error(upload(live.owner, "contested"), "A custom emoji with this name already exists.")
    folder = os.path.join(live.settings.data_dir, "uploads", "emoji")
    assert os.listdir(folder) == []


def test_upload_errors(live):
    member = live.make_user()
    assert_success(upload(member, "logo"))
    assert_error(upload(live.owner, "logo"), "A custom emoji with this name already exists.")
    url = f"{member.base_url}/api/v1/realm/emoji/other"
    assert_error(member.session.post(url, data={"x": "1"}), "You must upload exactly one file.")
    two = [("a", ("a.png", PNG, "image/png")), ("b", ("b.png", PNG, "image/png"))]
    assert_error(upload(member, "other", files=two), "You must upload exactly one file.")
    assert_error(upload(member, "smile"), "Only administrators can override built-in emoji.")
    assert_success(upload(live.owner, "smile"))  # an administrator may
    big = PNG + bytes(MAX_EMOJI_FILE_SIZE_MIB * 1024 * 1024)
    assert_error(upload(member, "huge", big), "Uploaded file is larger than the allowed limit of 5 MiB")
    assert set(e["name"] for e in listing(member).values()) == {"logo", "smile"}


def test_who_may_upload(live):
    guest = live.make_user("guest")
    assert_error(upload(guest, "mine"), "Not allowed for guest users")
    moderator, member = live.make_user("moderator"), live.make_user()

    def admins_only(tx):
        tx.execute(
            "UPDATE realm SET can_add_custom_emoji_group = ?", (groups.system_group_id(tx, "role:administrators"),)
        )

    live.write(admins_only)
    assert_error(upload(member, "mine"), "Insufficient permission")
    assert_error(upload(moderator, "mine"), "Insufficient permission")
    assert_success(upload(live.owner, "mine"))


def test_delete_deactivates(live):
    author, other, admin = live.make_user(), live.make_user(), live.make_user("admin")
    assert_success(upload(author, "wave_cat"))
    assert_success(upload(author, "dance"))
    emoji = by_name(author, "wave_cat")
    assert_error(other.delete("/realm/emoji/wave_cat"), "Must be an organization administrator or emoji author")
    before = len(live.events())
    assert_success(author.delete("/realm/emoji/wave_cat"))
    assert listing(other)[emoji["id"]]["deactivated"] is True
    [(event, _)] = emoji_events(live, before)
    assert event["realm_emoji"][emoji["id"]]["deactivated"] is True
    assert_success(admin.delete("/realm/emoji/dance"))
    assert_error(author.delete("/realm/emoji/wave_cat"), "Emoji 'wave_cat' does not exist", status=404)
    assert_error(author.delete("/realm/emoji/nothing"), "Emoji 'nothing' does not exist", status=404)
    # Old messages keep their image; the name is free again.
    assert requests.get(live.base_url + emoji["source_url"]).status_code == 200
    assert_success(upload(other, "wave_cat", GIF))
    assert by_name(other, "wave_cat")["id"] != emoji["id"]


def test_image_not_found(live):
    assert_success(upload(live.owner, "logo"))
    source_url = by_name(live.owner, "logo")["source_url"]
    file_name = source_url.rsplit("/", 1)[1]
    for path in (
        f"/user_avatars/2/emoji/images/{file_name}",
        "/user_avatars/1/emoji/images/0123456789abcdef0123456789abcdef.png",
        "/user_avatars/1/emoji/images/..%2F..%2Ftornchat.sqlite3",
        "/user_avatars/1/emoji/images/" + file_name.replace(".png", ".gif"),
    ):
        response = requests.get(live.base_url + path)
        assert (response.status_code, response.json()["msg"]) == (404, "Not Found"), path


def test_register_state(live):
    assert_success(upload(live.owner, "logo"))
    body = register(live.owner, fetch_event_types=["realm_emoji"])
    assert body["realm_emoji"] == listing(live.owner)
    assert "realm_emoji" not in register(live.owner, fetch_event_types=["drafts"])
    members = live.read(groups.system_group_id, "role:members")
    assert register(live.owner)["realm_can_add_custom_emoji_group"] == members


def test_messages_and_reactions_use_uploaded_emoji(live):
    member = live.make_user()
    make_channel(live, "general", [live.owner.id, member.id])
    assert_success(upload(live.owner, "octopus"))  # shadows the Unicode octopus, as in Zulip
    assert_success(upload(live.owner, "party_parrot"))
    src = by_name(live.owner, "party_parrot")["source_url"]
    message_id = send_ok(member, "general", "hi :party_parrot: and :octopus:", "emoji")
    octopus_src = by_name(live.owner, "octopus")["source_url"]
    assert content_of(member, message_id) == (
        f'<p>hi <img alt=":party_parrot:" class="emoji" src="{src}" title="party parrot"> and '
        f'<img alt=":octopus:" class="emoji" src="{octopus_src}" title="octopus"></p>'
    )
    assert_success(member.post(f"/messages/{message_id}/reactions", {"emoji_name": "party_parrot"}))
    [reaction] = assert_success(member.get("/messages", {"message_ids": [message_id]}))["messages"][0]["reactions"]
    assert (reaction["emoji_code"], reaction["reaction_type"]) == (by_name(member, "party_parrot")["id"], "realm_emoji")
    assert_success(live.owner.delete("/realm/emoji/party_parrot"))
    # A deactivated emoji is no longer rendered in new messages (the old one keeps its HTML).
    assert content_of(member, send_ok(member, "general", ":party_parrot:", "emoji")) == "<p>:party_parrot:</p>"
    assert "<img" in content_of(member, message_id)


def test_backup_holds_the_images(live, tmp_path):
    assert_success(upload(live.owner, "logo"))
    source_url = by_name(live.owner, "logo")["source_url"]
    archive = str(tmp_path / "backup.tar.gz")
    live.call(lambda: create_backup(live.settings.data_dir, archive, live.clock()))
    with tarfile.open(archive) as tar:
        assert "uploads/emoji/" + source_url.rsplit("/", 1)[1] in tar.getnames()


def test_zulip_package(live, zulip_client, tmp_path):
    """The `zulip` package's upload_custom_emoji, get_realm_emoji and add_reaction, as scripts call them."""
    path = tmp_path / "parrot.gif"
    path.write_bytes(GIF)
    with open(path, "rb") as file_obj:
        assert zulip_client.upload_custom_emoji("parrot", file_obj)["result"] == "success"
    emoji = zulip_client.get_realm_emoji()["emoji"]
    [(emoji_id, parrot)] = emoji.items()
    assert (parrot["name"], parrot["author_id"], parrot["source_url"][-4:]) == ("parrot", live.owner.id, ".gif")
    make_channel(live, "general", [live.owner.id])
    message_id = send_ok(live.owner, "general", "hi", "emoji")
    assert zulip_client.add_reaction({"message_id": message_id, "emoji_name": "parrot"})["result"] == "success"
    assert zulip_client.add_reaction({"message_id": message_id, "emoji_name": "heart_box"})["result"] == "success"
    reactions = assert_success(live.owner.get("/messages", {"message_ids": [message_id]}))["messages"][0]["reactions"]
    assert [(r["emoji_code"], r["reaction_type"]) for r in reactions] == [
        (emoji_id, "realm_emoji"),
        ("1f49f", "unicode_emoji"),
    ]


def test_migration_keeps_ids_and_frees_deactivated_names(tmp_path):
    """0012 rebuilds realm_emoji: the id high-water mark survives; only active names are unique."""
    connection = sqlite3.connect(str(tmp_path / "old.sqlite3"), isolation_level=None)
    migrate(connection, 0, until=11)
    for name in ("a", "b", "c"):
        connection.execute("INSERT INTO realm_emoji (name) VALUES (?)", (name,))
    connection.execute("DELETE FROM realm_emoji WHERE name = 'c'")
    assert "0012_realm_emoji.sql" in migrate(connection, 0)
    connection.execute("UPDATE realm_emoji SET deactivated = 1 WHERE name = 'a'")
    connection.execute("INSERT INTO realm_emoji (name) VALUES ('a')")
    rows = connection.execute("SELECT id, name, deactivated FROM realm_emoji ORDER BY id").fetchall()
    assert rows == [(1, "a", 1), (2, "b", 0), (4, "a", 0)]
    with pytest.raises(sqlite3.IntegrityError):
        connection.execute("INSERT INTO realm_emoji (name) VALUES ('b')")
    connection.close()
