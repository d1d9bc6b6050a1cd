"""The files tornchat serves where Zulip serves them from its /static/: the realm icon, the :zulip:
emoji and the emoji names of server_emoji_data_url; all without credentials and without the internet."""

from __future__ import annotations

import io
import urllib.parse
from xml.etree import ElementTree

import requests
from PIL import Image

from storage.messages.message_previews import PLACEHOLDER_SRC
from storage.text import emoji
from tests.support.events_helpers import register
from tests.support.helpers import assert_success
from tests.support.send_helpers import send_ok
from tornchat.handlers.web import CONTENT_SECURITY_POLICY


def get_site(live, url, **headers):
    """GET a URL the server handed out (absolute, with the configured site, or relative) from the live server."""
    path = urllib.parse.urlsplit(url).path
    return requests.get(live.base_url + path, headers=headers, timeout=10)


def png_size(response):
    assert response.status_code == 200 and response.headers["Content-Type"] == "image/png", response.text
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    return Image.open(io.BytesIO(response.content)).size


def test_the_realm_icon_and_logos_are_served_here(live):
    state = register(live.owner, fetch_event_types=["realm"])
    icon = state["realm_icon_url"]
    assert icon == live.server.realm.url + "/static/images/logo/zulip-icon-128x128.png"
    assert state["realm_logo_url"] == state["realm_night_logo_url"] == icon
    assert assert_success(live.anonymous().get("/server_settings"))["realm_icon"] == icon
    assert png_size(get_site(live, icon)) == (128, 128)


def test_the_zulip_emoji_image(live):
    channel = "general"
    assert_success(live.owner.post("/users/me/subscriptions", {"subscriptions": [{"name": channel}]}))
    message_id = send_ok(live.owner, channel, "hi :zulip:")
    [message] = assert_success(live.owner.get("/messages", {"message_ids": [message_id]}))["messages"]
    assert f'src="{emoji.EXTRA_EMOJI_URL}"' in message["content"]
    assert png_size(get_site(live, emoji.EXTRA_EMOJI_URL)) == (64, 64)


def test_server_emoji_data(live):
    url = register(live.owner, fetch_event_types=["realm"])["server_emoji_data_url"]
    # Absolute: zulip-flutter requests it as it is, without resolving it against the realm.
    assert url == live.server.realm.url + "/static/generated/emoji/emoji_api.json"
    response = get_site(live, url)
    assert response.status_code == 200 and response.headers["Content-Type"] == "application/json"
    body = response.json()
    assert set(body) == {"code_to_names"}
    code_to_names = body["code_to_names"]
    assert set(code_to_names) == set(emoji.CODE_TO_NAME)
    assert all(names[0] == emoji.CODE_TO_NAME[code] for code, names in code_to_names.items()), "canonical first"
    assert {name: code for code, names in code_to_names.items() for name in names} == emoji.NAME_TO_CODE
    assert "+1" in code_to_names["1f44d"]
    # Revalidated with its ETag: unchanged, nothing is sent again.
    again = get_site(live, url, **{"If-None-Match": response.headers["ETag"]})
    assert again.status_code == 304 and again.content == b""


def test_the_web_client_may_show_served_avatars(live):
    """Avatar URLs are paths of this server, and the page's policy lets it load images from its own origin."""
    assert "img-src 'self'" in CONTENT_SECURITY_POLICY
    page = requests.get(live.base_url + "/", timeout=10)
    assert "img-src 'self'" in page.headers["Content-Security-Policy"]
    url = assert_success(live.owner.get("/users/me"))["avatar_url"]
    assert url.startswith("/user_avatars/") and png_size(get_site(live, url)) == (100, 100)


def test_the_inline_preview_placeholder_is_served(live):
    """Message HTML names Zulip's loading image until a thumbnail is made: it must load, as an SVG image."""
    response = get_site(live, PLACEHOLDER_SRC)
    assert response.status_code == 200, response.text
    assert response.headers["Content-Type"] == "image/svg+xml"
    assert response.headers["Content-Security-Policy"] == "default-src 'none'"
    root = ElementTree.fromstring(response.content)
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    assert "style" not in response.text
