"""Avatars over HTTP: POST and DELETE /users/me/avatar, their events and files, what messages show
after a change, GET /avatar/{email_or_id}[/medium], and the served images."""

from __future__ import annotations

import io
import os
import re

import pytest
import requests
from PIL import Image

from storage.org.user_avatars import MAX_AVATAR_FILE_SIZE_MIB
from tests.support.events_helpers import register
from tests.support.get_messages_helpers import message_by_id
from tests.support.helpers import assert_error, assert_success, dummy, events_since, set_visibility
from tests.support.image_helpers import bomb_png_bytes, png_bytes
from tests.support.send_helpers import send_ok

UPLOADED = re.compile(r"/user_avatars/1/([0-9a-f]{32})\.png\?v=(\d+)")
NOBODY = 4


def upload(client, *files):
    """POST /users/me/avatar with these (name, bytes) file parts."""
    parts = [("file", (name, data, "image/png")) for name, data in files]
    return client.session.post(client.base_url + "/api/v1/users/me/avatar", files=parts)


def get_site(live, path, **kwargs):
    """A GET of the site's own paths (not /api/v1), without credentials."""
    return requests.get(live.base_url + path, allow_redirects=False, timeout=10, **kwargs)


def served_size(live, url):
    response = get_site(live, url)
    assert response.status_code == 200 and response.headers["Content-Type"] == "image/png", response.text
    return Image.open(io.BytesIO(response.content)).size


def avatar_files(live):
    folder = os.path.join(live.settings.data_dir, "uploads", "avatars")
    return sorted(os.listdir(folder)) if os.path.isdir(folder) else []


def own(client):
    return assert_success(client.get("/users/me"))


def test_upload_replace_and_delete(people):
    live, alice = people, people.alice
    count = len(live.events())
    url = assert_success(upload(alice, ("me.png", png_bytes(64, 48))))["avatar_url"]
    stem, version = UPLOADED.fullmatch(url).groups()
    assert version == "2"
    medium = url.replace(".png?", "-medium.png?")  # what zulip-flutter asks for above 100 px
    assert (served_size(live, url), served_size(live, medium)) == ((100, 100), (500, 500))
    assert avatar_files(live) == [f"{stem}-medium.png", f"{stem}.png"]
    assert own(alice)["avatar_url"] == url and own(alice)["avatar_version"] == 2
    state = register(alice, fetch_event_types=["realm_user"])
    assert (state["avatar_url"], state["avatar_url_medium"], state["avatar_source"]) == (url, medium, "U")
    person = {"avatar_source": "U", "avatar_url": url, "avatar_url_medium": medium, "avatar_version": 2,
              "user_id": alice.id}  # fmt: skip
    active = sorted([live.owner.id, alice.id, live.bob.id])
    assert events_since(live, count) == [({"type": "realm_user", "op": "update", "person": person}, active)]

    # A new upload gets new files; the old ones are gone once it is committed.
    second = assert_success(upload(alice, ("again.jpg", png_bytes(80, 60))))["avatar_url"]
    new_stem, version = UPLOADED.fullmatch(second).groups()
    assert new_stem != stem and version == "3"
    assert get_site(live, url).status_code == 404
    assert avatar_files(live) == sorted([f"{new_stem}.png", f"{new_stem}-medium.png"])

    count = len(live.events())
    body = assert_success(alice.delete("/users/me/avatar"))
    assert body["avatar_url"] == f"/user_avatars/default/{alice.id}.png?v=4"
    assert avatar_files(live) == [] and get_site(live, second).status_code == 404
    [(event, audience)] = events_since(live, count)
    assert event["person"] == {
        "avatar_source": "G", "avatar_url": body["avatar_url"], "avatar_version": 4, "user_id": alice.id,
        "avatar_url_medium": f"/user_avatars/default/{alice.id}-medium.png?v=4",
    }  # fmt: skip
    assert audience == active
    assert served_size(live, body["avatar_url"]) == (100, 100)


def test_the_next_fetch_shows_the_new_avatar(people):
    """Encoded messages hold avatar URLs: a change reaches the very next GET /messages (the change journal)."""
    alice, bob = people.alice, people.bob
    message_id = send_ok(alice, "general")
    for _ in range(2):  # the second fetch is answered from the encoded-message cache
        assert message_by_id(bob, message_id)["avatar_url"] == f"/user_avatars/default/{alice.id}.png?v=1"
    url = assert_success(upload(alice, ("me.png", png_bytes(64, 48))))["avatar_url"]
    assert message_by_id(bob, message_id)["avatar_url"] == url
    assert message_by_id(bob, message_id, client_gravatar=True)["avatar_url"] == url
    assert_success(alice.delete("/users/me/avatar"))
    assert message_by_id(bob, message_id)["avatar_url"] == f"/user_avatars/default/{alice.id}.png?v=3"


def bad_requests():
    big = b"\x89PNG\r\n\x1a\n" + b"\0" * (MAX_AVATAR_FILE_SIZE_MIB * 1024 * 1024)
    bomb = bomb_png_bytes(6000, 6000)  # 36 million pixels in a few kilobytes
    too_large = f"Uploaded file is larger than the allowed limit of {MAX_AVATAR_FILE_SIZE_MIB} MiB"
    not_image = "Could not decode image; did you upload an image file?"
    return [
        ([], "BAD_REQUEST", "You must upload exactly one avatar."),
        (
            [("a.png", png_bytes(64, 48)), ("b.png", png_bytes(64, 48))],
            "BAD_REQUEST",
            "You must upload exactly one avatar.",
        ),
        ([("big.png", big)], "BAD_REQUEST", too_large),
        ([("x.svg", b"<svg xmlns='http://www.w3.org/2000/svg'/>")], "BAD_IMAGE", not_image),
        ([("bomb.png", bomb)], "BAD_IMAGE", "Image size exceeds limit."),
    ]


@pytest.mark.parametrize(("files", "code", "msg"), bad_requests())
def test_bad_uploads_change_nothing(live, files, code, msg):
    member = live.make_user()
    before, count = own(member), len(live.events())
    assert_error(upload(member, *files), msg, code)
    assert own(member) == before and len(live.events()) == count
    assert avatar_files(live) == []
    incoming = os.path.join(live.settings.data_dir, "uploads-incoming")
    assert not os.path.isdir(incoming) or os.listdir(incoming) == []


def test_avatar_changes_need_credentials(live):
    anonymous = live.anonymous()
    message = "Not logged in: API authentication or user session required"
    assert_error(upload(anonymous, ("me.png", png_bytes(64, 48))), message, "UNAUTHORIZED", 401)
    assert_error(anonymous.delete("/users/me/avatar"), message, "UNAUTHORIZED", 401)


def test_register_says_avatars_can_change(live):
    state = register(live.owner, fetch_event_types=["realm"])
    assert state["max_avatar_file_size_mib"] == MAX_AVATAR_FILE_SIZE_MIB
    assert (state["realm_avatar_changes_disabled"], state["server_avatar_changes_disabled"]) == (False, False)


# -- GET /avatar/{email_or_id} -----------------------------------------------------------------------


def redirect(client, path, **params):
    response = client.session.get(client.base_url + path, params=params, allow_redirects=False)
    assert response.status_code == 302, response.text
    return response.headers["Location"]


def test_avatar_redirects(live):
    alice = live.make_user(email="alice@example.com")
    set_visibility(live, alice.id, 1)  # everyone sees the real address
    url = assert_success(upload(alice, ("me.png", png_bytes(64, 48))))["avatar_url"]
    medium = url.replace(".png?", "-medium.png?")
    viewer = live.make_user()
    assert redirect(viewer, f"/avatar/{alice.id}") == url
    assert redirect(viewer, f"/avatar/{alice.id}/medium") == medium
    assert redirect(viewer, "/avatar/alice@example.com", foo="bar") == url + "&foo=bar"
    assert redirect(viewer, f"/avatar/{dummy(alice.id)}/medium") == medium
    assert redirect(viewer, f"/avatar/{viewer.id}") == f"/user_avatars/default/{viewer.id}.png?v=1"
    # Following the redirect gives the image.
    followed = viewer.session.get(f"{live.base_url}/avatar/{alice.id}/medium")
    assert Image.open(io.BytesIO(followed.content)).size == (500, 500)


def test_avatar_redirect_errors(live):
    hidden = live.make_user(email="hidden@example.com")
    set_visibility(live, hidden.id, NOBODY)
    viewer = live.make_user()
    for path in ("/avatar/999", "/avatar/99999999999999999999", "/avatar/nobody@example.com",
                 "/avatar/hidden@example.com/medium"):  # fmt: skip
        response = viewer.session.get(live.base_url + path, allow_redirects=False)
        assert_error(response, "No such user", status=404)
    assert redirect(viewer, f"/avatar/{dummy(hidden.id)}") == f"/user_avatars/default/{hidden.id}.png?v=1"
    anonymous = live.anonymous()
    response = anonymous.session.get(f"{live.base_url}/avatar/{hidden.id}", allow_redirects=False)
    assert_error(response, "Not logged in: API authentication or user session required", "UNAUTHORIZED", 401)


def test_spectators_name_users_by_id_only(live):
    def allow(tx):
        tx.execute("UPDATE realm SET enable_spectator_access = 1")

    live.write(allow)
    anonymous = live.anonymous()
    assert (
        redirect(anonymous, f"/avatar/{live.owner.id}/medium")
        == f"/user_avatars/default/{live.owner.id}-medium.png?v=1"
    )
    response = anonymous.session.get(live.base_url + "/avatar/owner@example.com", allow_redirects=False)
    assert_error(response, "Not logged in: API authentication or user session required", "UNAUTHORIZED", 401)


# -- the images ----------------------------------------------------------------------------------------


def test_default_avatars_are_served_for_any_id(live):
    response = get_site(live, "/user_avatars/default/123456.png")
    assert response.status_code == 200 and "immutable" in response.headers["Cache-Control"]
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert served_size(live, "/user_avatars/default/123456-medium.png?v=9") == (500, 500)
    head = requests.head(live.base_url + "/user_avatars/default/7-medium.png", timeout=10)
    assert (head.status_code, head.headers["Content-Type"], head.content) == (200, "image/png", b"")
    missing = "/user_avatars/1/0123456789abcdef0123456789abcdef.png"  # well formed, but no upload has it
    for path in ("/user_avatars/default/x.png", "/user_avatars/default/1.jpg", "/user_avatars/1/..%2Fzuliprc",
                 missing, "/user_avatars/1/tornchat.sqlite3"):  # fmt: skip
        assert get_site(live, path).status_code == 404, path


def test_gravatar_when_the_server_allows_it(gravatar_live):
    live = gravatar_live
    alice = live.make_user(email="Alice@Example.com")
    set_visibility(live, alice.id, 1)
    # md5 of the lower-cased address
    gravatar = "https://secure.gravatar.com/avatar/c160f8cc69a4f0bf2b0362752353d060?v=1"
    assert own(alice)["avatar_url"] == gravatar
    assert redirect(alice, f"/avatar/{alice.id}/medium") == gravatar + "&s=500"
    url = assert_success(upload(alice, ("me.png", png_bytes(64, 48))))["avatar_url"]
    assert UPLOADED.fullmatch(url)
    # An uploaded avatar is no Gravatar: client_gravatar does not hide it.
    users = assert_success(live.owner.get("/users", {"client_gravatar": True}))["members"]
    assert {u["user_id"]: u["avatar_url"] for u in users}[alice.id] == url
    body = assert_success(alice.delete("/users/me/avatar"))
    assert body["avatar_url"] == gravatar.replace("v=1", "v=3")
