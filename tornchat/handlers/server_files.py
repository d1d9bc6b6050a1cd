"""The server's own files at the paths where Zulip serves them (its /static/), built at first use:
the default realm icon, the `:zulip:` emoji, the loading image of inline previews and the emoji
names POST /register's server_emoji_data_url names. No credentials: img tags and zulip-flutter
(fetchServerEmojiData sends none) load them as they are.

Registered before the web client's /static/(.*), which would take these paths otherwise.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import tornado.web

from storage.media import icons
from storage.messages.message_previews import PLACEHOLDER_SRC
from storage.org import realm_images
from storage.text import emoji
from tornchat.base import BaseHandler

REALM_ICON_PATH = realm_images.DEFAULT_ICON_PATH  # /static/images/logo/zulip-icon-128x128.png
EXTRA_EMOJI_PATH = emoji.EXTRA_EMOJI_URL  # /static/generated/emoji/images/emoji/unicode/zulip.png
EMOJI_DATA_PATH = "/static/generated/emoji/emoji_api.json"
# Unversioned paths whose content changes only with a new release: a day, then revalidated.
CACHE_CONTROL = "public, max-age=86400"


class ServerFileHandler(BaseHandler):
    requires_auth = False

    def initialize(self, server, build: Callable[[], bytes], content_type: str) -> None:  # type: ignore[no-untyped-def,override]
        super().initialize(server)
        self.build = build
        self.content_type = content_type

    def get(self) -> None:
        self.set_header("Content-Type", self.content_type)
        self.set_header("X-Content-Type-Options", "nosniff")
        self.set_header("Content-Security-Policy", "default-src 'none'")
        self.set_header("Cache-Control", CACHE_CONTROL)
        self.finish(self.build())

    def compute_etag(self) -> str | None:
        # Revalidated after a day: Tornado's hash of the body answers If-None-Match with 304.
        return tornado.web.RequestHandler.compute_etag(self)


# (path, the bytes, their type): each built once per process.
FILES: list[tuple[str, Callable[[], bytes], str]] = [
    (REALM_ICON_PATH, icons.realm_icon_png, "image/png"),
    (EXTRA_EMOJI_PATH, icons.extra_emoji_png, "image/png"),
    (PLACEHOLDER_SRC, icons.loading_svg, "image/svg+xml"),
    (EMOJI_DATA_PATH, functools.cache(emoji.server_emoji_data), "application/json"),
]
