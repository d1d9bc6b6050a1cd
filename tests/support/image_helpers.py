"""Images made with Pillow for the thumbnail tests: still, animated, rotated, corrupt and hostile ones."""

from __future__ import annotations

import io
import random
import struct
import zlib

from PIL import Image


def image_bytes(image: Image.Image, fmt: str, **options) -> bytes:
    out = io.BytesIO()
    image.save(out, fmt, **options)
    return out.getvalue()


def png_bytes(width: int, height: int, mode: str = "RGB") -> bytes:
    color = (200, 30, 30, 128) if mode == "RGBA" else (200, 30, 30)
    return image_bytes(Image.new(mode, (width, height), color), "PNG")


def jpeg_bytes(width: int, height: int, orientation: int | None = None) -> bytes:
    options = {}
    if orientation is not None:
        exif = Image.Exif()
        exif[0x0112] = orientation  # EXIF Orientation
        options["exif"] = exif
    return image_bytes(Image.new("RGB", (width, height), (20, 120, 220)), "JPEG", **options)


def gif_bytes(width: int, height: int, frames: int, duration: int = 80) -> bytes:
    """An animated GIF whose frames all differ (Pillow merges identical ones)."""
    images = [Image.new("RGB", (width, height), (i * 50 % 256, 255 - i * 50 % 256, 0)) for i in range(frames)]
    return image_bytes(images[0], "GIF", save_all=True, append_images=images[1:], duration=duration, loop=0)


def truncated_jpeg_bytes() -> bytes:
    """A JPEG whose header is whole but whose pixels stop halfway: it probes, then fails to decode."""
    rng = random.Random(7)
    noise = Image.frombytes("RGB", (400, 300), bytes(rng.getrandbits(8) for _ in range(400 * 300 * 3)))
    data = image_bytes(noise, "JPEG")
    return data[: len(data) // 2]


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def bomb_png_bytes(width: int = 30000, height: int = 30000) -> bytes:
    """A small PNG whose header claims width x height pixels: a decompression bomb to refuse unread.

    One IDAT of a compressed run of zeros: the file is kilobytes, the claimed image gigabytes.
    """
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    rows = zlib.compress(b"\x00" * 1_000_000, 9)
    return b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", header) + _chunk(b"IDAT", rows) + _chunk(b"IEND", b"")


def decoded(data: bytes) -> Image.Image:
    """The image a thumbnail's bytes decode to (loaded, so the bytes may go)."""
    image = Image.open(io.BytesIO(data))
    image.load()
    return image
