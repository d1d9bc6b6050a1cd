"""The thumbnail formats this server makes, as Zulip names them (zerver/lib/thumbnail.py).

A format's name is `{max_width}x{max_height}[-anim].{extension}`: the last part of a thumbnail URL,
/user_uploads/thumbnail/{path_id}/{name}, and what POST /register lists in server_thumbnail_formats.
The first still and the first animated format are the ones message HTML points at.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

_NAME = re.compile(r"(\d{1,5})x(\d{1,5})(-anim)?\.(\w{1,10})")
# Where a thumbnail is stored: DATA_DIR/uploads/thumbnail/{path_id}/{name}. No path_id starts with
# "thumbnail" (they start with the realm id), so the two never share a file.
THUMBNAIL_FOLDER = "thumbnail"


class ThumbnailFormat(msgspec.Struct, frozen=True):
    """A box an image is shrunk into (never enlarged), the file type, and whether it keeps the animation."""

    extension: str
    max_width: int
    max_height: int
    animated: bool

    @property
    def name(self) -> str:
        return f"{self.max_width}x{self.max_height}{'-anim' if self.animated else ''}.{self.extension}"

    @property
    def content_type(self) -> str:
        return "image/" + self.extension


class StoredThumbnail(msgspec.Struct, frozen=True):
    """A thumbnail made for one image: its format's name and what the file holds."""

    name: str
    animated: bool
    content_type: str
    width: int
    height: int
    byte_size: int


# Zulip's: large enough that a client which cannot pick a format (it shows the default) gets no
# blurry picture, and a lightbox can show it while the original loads.
THUMBNAIL_OUTPUT_FORMATS = (
    ThumbnailFormat("webp", 840, 560, animated=True),
    ThumbnailFormat("webp", 840, 560, animated=False),
)


def parse_format_name(name: str) -> ThumbnailFormat | None:
    """The format a name spells (in any size or extension), or None when it is no format name."""
    match = _NAME.fullmatch(name)
    if match is None:
        return None
    return ThumbnailFormat(match[4], int(match[1]), int(match[2]), animated=match[3] is not None)


def formats_for(frames: int) -> list[ThumbnailFormat]:
    """The formats made for an image of this many frames: animated ones only for an animation."""
    return [fmt for fmt in THUMBNAIL_OUTPUT_FORMATS if frames > 1 or not fmt.animated]


def default_format(frames: int) -> ThumbnailFormat:
    """The format message HTML shows: the first one matching whether the image is animated."""
    return next((fmt for fmt in THUMBNAIL_OUTPUT_FORMATS if fmt.animated == (frames > 1)), THUMBNAIL_OUTPUT_FORMATS[0])


def thumbnail_path_id(path_id: str, name: str) -> str:
    """Where under uploads/ the thumbnail of this name of an upload is stored."""
    return f"{THUMBNAIL_FOLDER}/{path_id}/{name}"


def server_thumbnail_formats() -> list[dict[str, Any]]:
    """POST /register's server_thumbnail_formats: every format a thumbnail URL may name."""
    return [
        {"name": fmt.name, "max_width": fmt.max_width, "max_height": fmt.max_height,
         "format": fmt.extension, "animated": fmt.animated}
        for fmt in THUMBNAIL_OUTPUT_FORMATS
    ]  # fmt: skip
