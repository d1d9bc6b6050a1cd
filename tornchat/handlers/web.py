"""The web client: GET / (index.html) and /static/<hash>/<path> (its modules, styles, emoji names).

No credentials are asked for here: the page signs in through the public API like any other client.
"""

from __future__ import annotations

import re

import tornado.web

from tornchat.base import BaseHandler
from tornchat.server import Server
from tornchat.web import HASH_LENGTH, WebAssets

# No inline script or style anywhere, the API on this origin only, and no framing (clickjacking).
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"
)
IMMUTABLE = "public, max-age=31536000, immutable"
_HASH = re.compile(f"[0-9a-f]{{{HASH_LENGTH}}}")


class WebHandler(BaseHandler):
    """What every web response carries, errors included (set_default_headers runs on each clear())."""

    requires_auth = False

    def initialize(self, server: Server, assets: WebAssets) -> None:  # type: ignore[override]
        super().initialize(server)
        self.assets = assets

    def set_default_headers(self) -> None:
        self.set_header("Content-Security-Policy", CONTENT_SECURITY_POLICY)
        self.set_header("X-Content-Type-Options", "nosniff")
        self.set_header("Referrer-Policy", "no-referrer")

    def compute_etag(self) -> str | None:
        # Unlike the API's answers, pages and files are revalidated by browsers: Tornado's body hash.
        return tornado.web.RequestHandler.compute_etag(self)


class IndexHandler(WebHandler):
    """The page: revalidated on every load (no-cache, with an ETag) so that it names the current hash."""

    def get(self) -> None:
        if self.assets.index is None:
            raise tornado.web.HTTPError(404)
        self.set_header("Content-Type", "text/html; charset=utf-8")
        self.set_header("Cache-Control", "no-cache")
        self.finish(self.assets.index)


class StaticHandler(WebHandler):
    """/static/<hash>/<path>: the current release's files for a year; an older hash is sent to the current one.

    A page loaded before a restart into a new release asks for the old hash: it is redirected (not
    cached) to the same file of the running release rather than failing; a reload brings it whole.
    """

    def get(self, location: str) -> None:
        hashed, _, path = location.partition("/")
        asset = self.assets.get(path)
        if asset is None:
            raise tornado.web.HTTPError(404)
        if hashed != self.assets.hash:
            if not _HASH.fullmatch(hashed):
                raise tornado.web.HTTPError(404)
            self.set_header("Cache-Control", "no-cache")
            self.redirect(self.assets.prefix + path)
            return
        self.set_header("Content-Type", asset.content_type)
        self.set_header("Cache-Control", IMMUTABLE)
        self.finish(asset.body)


def routes(server: Server) -> list[tuple[str, type[tornado.web.RequestHandler], dict[str, object]]]:
    """The web client's routes (outside /api/v1), with the static files read once for this app."""
    arguments = {"server": server, "assets": WebAssets()}
    return [
        (r"/", IndexHandler, arguments),
        (r"/static/(.*)", StaticHandler, arguments),
    ]
