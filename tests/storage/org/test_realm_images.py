"""The organization's icon and logos: POST and DELETE /realm/icon and /realm/logo, their events,
their files, and what POST /register and GET /server_settings say of them."""

from __future__ import annotations

import io
import os
import re
import urllib.parse

import pytest
import requests
from PIL import Image

from storage.org.realm_images import MAX_ICON_FILE_SIZE_MIB
from tests.support.events_helpers import register
from tests.support.helpers import assert_error, assert_success
from tests.support.image_helpers import bomb_png_bytes, png_bytes

UPLOADED = re.compile(r"http://127\.0\.0\.1:9991/user_avatars/1/realm/([0-9a-f]{32})\.png\?version=(\d+)")
DEFAULT_ICON = "http://127.0.0.1:9991/static/images/logo/zulip-icon-128x128.png"


def upload(client, path, *files, **params):
    """POST a multipart body with these (name, bytes) file parts and form fields."""
    parts = [("file", (name, data, "image/png")) for name, data in files]
    fields = {name: str(value).lower() if isinstance(value, bool) else value for name, value in params.items()}
    return client.session.post(client.base_url + "/api/v1" + path, files=parts or None, data=fields)


def fetched(live, url):
    """The image a URL names, from the live server (the realm's configured URL is not its address)."""
    response = requests.get(live.base_url + urllib.parse.urlsplit(url).path, timeout=10)
    assert response.status_code == 200 and response.headers["Content-Type"] == "image/png", response.text
    return Image.open(io.BytesIO(response.content))


def realm_state(client):
    state = register(client, fetch_event_types=["realm"])
    return {k: state[k] for k in state if re.fullmatch(r"realm_(night_)?(logo|icon)_(url|source)", k)}


def realm_events(live, count):
    return [(e, ids) for e, ids in live.events()[count:] if e["type"] == "realm"]


def image_files(live):
    folder = os.path.join(live.settings.data_dir, "uploads", "realm")
    return sorted(os.listdir(folder)) if os.path.isdir(folder) else []


def test_defaults_are_the_servers_icon(live):
    assert realm_state(live.owner) == {
        "realm_icon_url": DEFAULT_ICON, "realm_icon_source": "G",
        "realm_logo_url": DEFAULT_ICON, "realm_logo_source": "D",
        "realm_night_logo_url": DEFAULT_ICON, "realm_night_logo_source": "D",
    }  # fmt: skip
    assert fetched(live, DEFAULT_ICON).size == (128, 128)


def test_icon_upload_and_delete(live):
    member = live.make_user()
    count = len(live.events())
    url = assert_success(upload(live.owner, "/realm/icon", ("icon.png", png_bytes(300, 200))))["icon_url"]
    file_name, version = UPLOADED.fullmatch(url).groups()
    assert version == "2" and fetched(live, url).size == (100, 100)
    assert realm_state(member)["realm_icon_url"] == url and realm_state(member)["realm_icon_source"] == "U"
    assert assert_success(live.anonymous().get("/server_settings"))["realm_icon"] == url
    data = {"icon_url": url, "icon_source": "U"}
    event = {"type": "realm", "op": "update_dict", "property": "icon", "data": data}
    assert realm_events(live, count) == [(event, sorted([live.owner.id, member.id]))]
    second = assert_success(upload(live.owner, "/realm/icon", ("icon.png", png_bytes(64, 48))))["icon_url"]
    second_name, version = UPLOADED.fullmatch(second).groups()
    assert version == "3" and image_files(live) == [f"{second_name}.png"], "the replaced file is removed"
    body = assert_success(live.owner.delete("/realm/icon"))
    assert body["icon_url"] == DEFAULT_ICON and image_files(live) == []
    assert realm_state(member)["realm_icon_source"] == "G"
    assert realm_events(live, count)[-1][0]["data"] == {"icon_url": DEFAULT_ICON, "icon_source": "G"}
    assert file_name != second_name


@pytest.mark.parametrize("night", [False, True])
def test_logo_upload_and_delete(live, night):
    key = "night_logo" if night else "logo"
    count = len(live.events())
    assert_success(upload(live.owner, "/realm/logo", ("logo.png", png_bytes(2000, 500)), night=night))
    state = realm_state(live.owner)
    url = state[f"realm_{key}_url"]
    assert UPLOADED.fullmatch(url) and state[f"realm_{key}_source"] == "U"
    assert fetched(live, url).size == (400, 100), "scaled to fit 800 x 100"
    other = "logo" if night else "night_logo"
    assert state[f"realm_{other}_url"] == DEFAULT_ICON, "the other logo is untouched"
    data = {f"{key}_url": url, f"{key}_source": "U"}
    assert realm_events(live, count) == [
        ({"type": "realm", "op": "update_dict", "property": key, "data": data}, [live.owner.id])
    ]
    small = assert_success(upload(live.owner, "/realm/logo", ("small.png", png_bytes(40, 20)), night=night))
    assert set(small) == {"result", "msg"}
    assert fetched(live, realm_state(live.owner)[f"realm_{key}_url"]).size == (40, 20), "never scaled up"
    assert_success(live.owner.delete("/realm/logo", {"night": night}))
    assert realm_state(live.owner)[f"realm_{key}_source"] == "D" and image_files(live) == []


def test_only_administrators(live):
    member = live.make_user()
    before, count = realm_state(live.owner), len(live.events())
    for response in (
        upload(member, "/realm/icon", ("icon.png", png_bytes(64, 48))),
        member.delete("/realm/icon"),
        upload(member, "/realm/logo", ("logo.png", png_bytes(64, 48)), night=False),
        member.delete("/realm/logo", {"night": False}),
    ):
        assert_error(response, "Must be an organization administrator", "UNAUTHORIZED_PRINCIPAL")
    assert realm_state(live.owner) == before and len(live.events()) == count and image_files(live) == []
    admin = live.make_user("admin")
    assert_success(upload(admin, "/realm/icon", ("icon.png", png_bytes(64, 48))))


def bad_uploads():
    big = b"\x89PNG\r\n\x1a\n" + b"\0" * (MAX_ICON_FILE_SIZE_MIB * 1024 * 1024)
    too_large = f"Uploaded file is larger than the allowed limit of {MAX_ICON_FILE_SIZE_MIB} MiB"
    not_image = "Could not decode image; did you upload an image file?"
    return [
        ("/realm/icon", [], {}, "BAD_REQUEST", "You must upload exactly one icon."),
        ("/realm/icon", [("a.png", png_bytes(64, 48)), ("b.png", png_bytes(64, 48))], {}, "BAD_REQUEST",
         "You must upload exactly one icon."),
        ("/realm/icon", [("big.png", big)], {}, "BAD_REQUEST", too_large),
        ("/realm/icon", [("x.txt", b"hello")], {}, "BAD_IMAGE", not_image),
        ("/realm/logo", [("bomb.png", bomb_png_bytes(6000, 6000))], {"night": True}, "BAD_IMAGE",
         "Image size exceeds limit."),
        ("/realm/logo", [], {"night": False}, "BAD_REQUEST", "You must upload exactly one logo."),
        ("/realm/logo", [("logo.png", png_bytes(64, 48))], {}, "REQUEST_VARIABLE_MISSING", "Missing 'night' argument"),
        ("/realm/logo", [("logo.png", png_bytes(64, 48))], {"night": "1"}, "BAD_REQUEST", "night is not a boolean"),
    ]  # fmt: skip


@pytest.mark.parametrize(("path", "files", "params", "code", "msg"), bad_uploads())
def test_bad_uploads_change_nothing(live, path, files, params, code, msg):
    before, count = realm_state(live.owner), len(live.events())
    assert_error(upload(live.owner, path, *files, **params), msg, code)
    assert realm_state(live.owner) == before and len(live.events()) == count and image_files(live) == []


def test_only_uploaded_files_are_served(live):
    for path in ("/user_avatars/1/realm/0123456789abcdef0123456789abcdef.png", "/user_avatars/1/realm/x.png"):
        assert requests.get(live.base_url + path, timeout=10).status_code == 404
