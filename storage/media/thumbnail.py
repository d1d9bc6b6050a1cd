"""Image thumbnails of uploaded files, made with Pillow (Zulip does this with libvips:
zerver/lib/thumbnail.py and zerver/worker/thumbnail.py).

Two steps, both plain functions that never touch the database, run by tornchat off the event loop:
- `probe_image` reads only an upload's header: its dimensions as shown (after EXIF rotation), its
  frame count. An upload of an accepted image type that passes it gets an image_attachments row
  and an inline preview in messages; anything else stays a plain file link.
- `make_thumbnails` decodes the image and writes one WebP per format (storage/media/thumbnail_formats.py)
  under DATA_DIR/uploads/thumbnail/{path_id}/.

Safety: only the decoders of the accepted types are tried, whatever the bytes claim to be; an image
over IMAGE_BOMB_TOTAL_PIXELS is refused from its header, before a pixel is decoded (Pillow's own
limit refuses far larger ones inside Image.open); a JPEG is decoded at the smallest scale the box
allows (Image.draft); an animation keeps only as many frames as fit in IMAGE_MAX_ANIMATED_PIXELS.
Anything Pillow raises on a corrupt or hostile file becomes ThumbnailError (or a None probe): the
upload is then served as a file only.
"""

from __future__ import annotations

import io
import logging
import os

import msgspec
from PIL import ExifTags, Image, ImageOps, ImageSequence

from storage.db import upload_files
from storage.media.thumbnail_formats import StoredThumbnail, ThumbnailFormat, thumbnail_path_id

log = logging.getLogger("tornchat.thumbnail")

# Zulip's limits: about a quarter of a gigabyte decoded at 3 bytes a pixel; an animation may spend
# a third of that on its frames, and must afford at least three of them.
IMAGE_BOMB_TOTAL_PIXELS = 90_000_000
IMAGE_MAX_ANIMATED_PIXELS = IMAGE_BOMB_TOTAL_PIXELS // 3
ANIMATED_FRAMES_CHECKED = 3
WEBP_QUALITY = 80
DEFAULT_FRAME_MS = 100
# The content types thumbnailed, and the only Pillow decoders ever tried on an upload. Zulip also
# takes HEIC, AVIF, TIFF and SVG (libvips decodes them); Pillow's wheels do not cover them all.
PLUGINS = {"image/gif": "GIF", "image/jpeg": "JPEG", "image/png": "PNG", "image/webp": "WEBP"}
# Every Pillow decoder untrusted bytes may reach, here and for avatars (storage/media/avatars.py).
DECODERS = list(PLUGINS.values())
# EXIF orientations 5 to 8 turn the image a quarter: shown width and height swap.
_QUARTER_TURNS = {5, 6, 7, 8}


class ThumbnailError(Exception):
    """The image could not be decoded or thumbnailed (corrupt, truncated, too large)."""


class ImageInfo(msgspec.Struct, frozen=True):
    """What an upload's header says: width and height as shown, frames, and the type it was given."""

    width: int
    height: int
    frames: int
    content_type: str


def _open(path: str) -> Image.Image:
    return Image.open(path, formats=DECODERS)


def _frame_count(image: Image.Image) -> int:
    return int(getattr(image, "n_frames", 1))


def _check_size(width: int, height: int, frames: int) -> None:
    if frames == 1 and width * height > IMAGE_BOMB_TOTAL_PIXELS:
        raise ThumbnailError("Image size exceeds limit.")
    if frames > 1 and width * height * min(ANIMATED_FRAMES_CHECKED, frames) > IMAGE_MAX_ANIMATED_PIXELS:
        raise ThumbnailError("Image size exceeds limit.")


def probe_image(path: str, content_type: str) -> ImageInfo | None:
    """The header's facts of an image upload that may be thumbnailed; None for anything else."""
    if content_type not in PLUGINS:
        return None  # not offered as an image: its bytes are never parsed
    try:
        with _open(path) as image:
            frames = _frame_count(image)
            width, height = image.size
            _check_size(width, height, frames)
            # From the header's EXIF only: getexif() without it would decode a PNG to look further.
            orientation = image.getexif().get(ExifTags.Base.Orientation, 1) if "exif" in image.info else 1
    except Exception as error:  # noqa: BLE001 - any decoder error on untrusted bytes means "not an image"
        log.info("not thumbnailing %s: %s", path, error)
        return None
    if orientation in _QUARTER_TURNS:
        width, height = height, width
    return ImageInfo(width, height, frames, content_type)


def _flatten(frame: Image.Image) -> Image.Image:
    """The frame in RGBA when it has transparency, RGB otherwise (what WebP stores)."""
    transparent = frame.mode in ("RGBA", "LA", "PA") or (frame.mode == "P" and "transparency" in frame.info)
    return frame.convert("RGBA" if transparent else "RGB")


def _still(image: Image.Image, fmt: ThumbnailFormat) -> Image.Image:
    image.seek(0)
    # A JPEG decodes at 1/2, 1/4 or 1/8 scale when that still covers the box: memory follows the box.
    image.draft("RGB", (fmt.max_width, fmt.max_height))
    frame = _flatten(ImageOps.exif_transpose(image))
    frame.thumbnail((fmt.max_width, fmt.max_height))
    return frame


def _animation(image: Image.Image, fmt: ThumbnailFormat) -> tuple[list[Image.Image], list[int]]:
    """The frames (at most what IMAGE_MAX_ANIMATED_PIXELS affords), shrunk, and their durations."""
    limit = max(1, IMAGE_MAX_ANIMATED_PIXELS // (image.width * image.height))
    frames: list[Image.Image] = []
    durations: list[int] = []
    for index, frame in enumerate(ImageSequence.Iterator(image)):
        if index >= limit:
            break
        durations.append(int(frame.info.get("duration") or DEFAULT_FRAME_MS))
        small = frame.convert("RGBA")
        small.thumbnail((fmt.max_width, fmt.max_height))
        frames.append(small)
    return frames, durations


def encode_thumbnail(image: Image.Image, fmt: ThumbnailFormat) -> tuple[bytes, int, int]:
    """One format of an open image: the WebP bytes, width and height."""
    out = io.BytesIO()
    if fmt.animated:
        frames, durations = _animation(image, fmt)
        loop = int(image.info.get("loop", 0))
        frames[0].save(out, "WEBP", save_all=True, append_images=frames[1:], duration=durations, loop=loop,
                       quality=WEBP_QUALITY)  # fmt: skip
        width, height = frames[0].size
    else:
        frame = _still(image, fmt)
        frame.save(out, "WEBP", quality=WEBP_QUALITY)
        width, height = frame.size
    return out.getvalue(), width, height


def make_thumbnails(data_dir: str, path_id: str, formats: list[ThumbnailFormat]) -> list[StoredThumbnail]:
    """Decode an upload and write a thumbnail in each format; return what was written.

    Raises ThumbnailError, having written nothing, when the image cannot be decoded or is over the limits.
    """
    made: list[tuple[ThumbnailFormat, bytes, int, int]] = []
    try:
        for fmt in formats:
            # Opened again per format: draft() and seek() change what an open image decodes.
            with _open(upload_files.local_path(data_dir, path_id)) as image:
                _check_size(image.width, image.height, _frame_count(image))
                made.append((fmt, *encode_thumbnail(image, fmt)))
    except ThumbnailError:
        raise
    except Exception as error:  # noqa: BLE001 - a corrupt or hostile file: no thumbnail, the upload stays
        raise ThumbnailError(f"{type(error).__name__}: {error}") from error
    stored = []
    for fmt, data, width, height in made:
        staged = upload_files.stage(data_dir, data)
        upload_files.install(data_dir, staged, thumbnail_path_id(path_id, fmt.name))
        stored.append(StoredThumbnail(fmt.name, fmt.animated, fmt.content_type, width, height, len(data)))
    return stored


def remove_thumbnails(data_dir: str, path_id: str) -> None:
    """Delete every thumbnail file of an upload (and their folders once empty)."""
    folder = upload_files.local_path(data_dir, thumbnail_path_id(path_id, "x"))[: -len("/x")]
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return
    for name in names:
        upload_files.remove(data_dir, thumbnail_path_id(path_id, name))
