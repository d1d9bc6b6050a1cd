"""The web client's files (package data in static/), read once at start and fingerprinted.

Every file is served from memory under /static/<hash>/<path>, where <hash> covers the contents of all
of them: a new release changes the hash, so browsers may cache each asset for a year and still never
mix two releases' modules. index.html names its assets /static/...; it is served at / with those
paths rewritten to the hashed folder. Only the files found here at start can be served, so no
request path reaches the file system (no traversal to guard against).
"""

from __future__ import annotations

import functools
import hashlib
import json
import mimetypes
import os
from dataclasses import dataclass

from storage.text import emoji

STATIC_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "static")
INDEX = "index.html"
# Built at start from storage/text/emoji_names.json for the emoji picker: every name Zulip accepts.
EMOJI_NAMES = "emoji-names.json"
HASH_LENGTH = 16
# Types the browser must get exactly (module scripts are refused under nosniff unless JavaScript).
CONTENT_TYPES = {
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".html": "text/html; charset=utf-8",
    ".json": "application/json",
    ".svg": "image/svg+xml",
    ".txt": "text/plain; charset=utf-8",
    ".webmanifest": "application/manifest+json",
    ".woff2": "font/woff2",
}


@dataclass(frozen=True)
class Asset:
    body: bytes
    content_type: str


def content_type(path: str) -> str:
    """The Content-Type of a static file by its extension (application/octet-stream when unknown)."""
    extension = os.path.splitext(path)[1].lower()
    if extension in CONTENT_TYPES:
        return CONTENT_TYPES[extension]
    guessed, _ = mimetypes.guess_type(path)
    return guessed or "application/octet-stream"


@functools.cache  # the same for the life of the process (every Server of a test run shares it)
def emoji_names_json() -> bytes:
    """{"name": "code", ...} for every Zulip emoji name and alias, sorted by name."""
    return json.dumps(dict(sorted(emoji.NAME_TO_CODE.items())), separators=(",", ":")).encode()


class WebAssets:
    """The static files of one release: their bytes, their types, the hash and the rewritten index."""

    def __init__(self, directory: str = STATIC_DIR) -> None:
        files: dict[str, bytes] = {}
        for root, dirs, names in os.walk(directory):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            for name in sorted(names):
                if name.startswith("."):
                    continue
                full = os.path.join(root, name)
                relative = os.path.relpath(full, directory).replace(os.sep, "/")
                with open(full, "rb") as handle:
                    files[relative] = handle.read()
        files[EMOJI_NAMES] = emoji_names_json()
        digest = hashlib.sha256()
        for path in sorted(files):
            digest.update(path.encode() + b"\0" + hashlib.sha256(files[path]).digest())
        self.hash = digest.hexdigest()[:HASH_LENGTH]
        self.prefix = f"/static/{self.hash}/"
        self.assets = {path: Asset(body, content_type(path)) for path, body in files.items() if path != INDEX}
        index = files.get(INDEX)
        # The only rewrite: attribute values starting /static/ (index.html's src= and href=).
        for quote in (b'"', b"'"):
            if index is not None:
                index = index.replace(quote + b"/static/", quote + self.prefix.encode())
        self.index = index

    def get(self, path: str) -> Asset | None:
        """The asset at a path relative to the static folder, or None."""
        return self.assets.get(path)
