"""Avatar images: an uploaded image made into Zulip's two square PNGs, and the generated default avatar.

Decoding untrusted bytes is bounded before any pixel is decoded: Pillow reads only the header on
open, and an image of more than MAX_PIXELS pixels (a decompression bomb: a few KiB of PNG can
declare 50,000 x 50,000 pixels) is refused there, as is anything Pillow cannot read. These functions
are slow (tens of milliseconds): tornchat runs them in a thread pool, off the event loop.
"""

from __future__ import annotations

import functools
import hashlib
import io

from PIL import Image, ImageDraw, ImageOps

from storage.media.thumbnail import DECODERS
from storage.model.avatars import DEFAULT_SIZE, MEDIUM_SIZE
from storage.model.errors import ApiError

# Pixels an uploaded image may have (width x height, of its largest frame): about 100 MB decoded as RGBA.
# Zulip refuses images past its IMAGE_BOMB_TOTAL_PIXELS (90 million); this server is smaller.
MAX_PIXELS = 25_000_000


def bad_image(msg: str = "Could not decode image; did you upload an image file?") -> ApiError:
    """Zulip's BadImageError: the upload is not an image this server can read."""
    return ApiError(msg, "BAD_IMAGE")


def open_image(data: bytes) -> Image.Image:
    """Return the image in data with only its header read; raise BAD_IMAGE for what cannot be read or is too large."""
    try:
        image = Image.open(io.BytesIO(data), formats=DECODERS)
    except (OSError, ValueError, SyntaxError):
        raise bad_image() from None
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        # Pillow's own check, past its limit (higher than ours): it warns (an error where warnings are
        # errors, as in the tests), and raises past twice that. Process-wide settings are left alone.
        raise bad_image("Image size exceeds limit.") from None
    width, height = image.size
    if width * height > MAX_PIXELS:
        raise bad_image("Image size exceeds limit.")
    if width < 1 or height < 1:
        raise bad_image()
    return image


def square_png(image: Image.Image, size: int) -> bytes:
    """The image cropped to its centred square and scaled to size x size, as PNG (Zulip's resize_avatar)."""
    fitted = ImageOps.fit(image, (size, size), Image.Resampling.LANCZOS)
    out = io.BytesIO()
    fitted.save(out, format="PNG", optimize=True)
    return out.getvalue()


def avatar_pngs(data: bytes) -> tuple[bytes, bytes]:
    """Return the (100x100, 500x500) PNGs of an uploaded image; raise BAD_IMAGE for a bad or too large one.

    The first frame of an animation; turned as its EXIF orientation says; transparency kept.
    """
    image = decoded_image(data)
    return square_png(image, DEFAULT_SIZE), square_png(image, MEDIUM_SIZE)


def decoded_image(data: bytes) -> Image.Image:
    """The first frame of the image in data, decoded as RGBA and turned as its EXIF orientation says.

    Raise BAD_IMAGE for what cannot be read or has more than MAX_PIXELS pixels (checked before decoding).
    """
    image = open_image(data)
    try:
        image.seek(0)
        image.load()
        return ImageOps.exif_transpose(image).convert("RGBA")
    except (OSError, ValueError, SyntaxError, EOFError, Image.DecompressionBombError):
        raise bad_image() from None


# -- the generated default -------------------------------------------------------------------------

GRID = 5  # cells across: a symmetric pattern of 5 x 5, mirrored about the middle column
BACKGROUND = (240, 240, 240, 255)


@functools.lru_cache(maxsize=1024)
def default_avatar_png(user_id: int, size: int) -> bytes:
    """The default avatar of a user, size x size PNG: a mirrored 5 x 5 pattern in a colour from the user id.

    A function of the id alone, the same on every server and every run (sha256 of the id).
    """
    digest = hashlib.sha256(f"tornchat-avatar:{user_id}".encode()).digest()
    hue = digest[0] * 360 // 256
    # Two colours: a palette image, small and quick to write (no optimize pass: ~1 ms at 500 px).
    image = Image.new("P", (size, size), 0)
    image.putpalette([*BACKGROUND[:3], *_hsl(hue, 0.55, 0.45)[:3]])
    draw = ImageDraw.Draw(image)
    margin, cell = size / 12, size * 10 / 12 / GRID
    bits = int.from_bytes(digest[1:5], "big")
    half = (GRID + 1) // 2
    for column in range(half):
        for row in range(GRID):
            if bits >> (column * GRID + row) & 1:
                for x in {column, GRID - 1 - column}:
                    left, top = margin + x * cell, margin + row * cell
                    draw.rectangle((round(left), round(top), round(left + cell) - 1, round(top + cell) - 1), 1)
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def _hsl(hue: int, saturation: float, lightness: float) -> tuple[int, int, int, int]:
    """An opaque RGBA colour from hue (degrees), saturation and lightness (0 to 1)."""
    chroma = (1 - abs(2 * lightness - 1)) * saturation
    x = chroma * (1 - abs((hue / 60) % 2 - 1))
    red, green, blue = [(chroma, x, 0), (x, chroma, 0), (0, chroma, x), (0, x, chroma), (x, 0, chroma), (chroma, 0, x)][
        hue // 60 % 6
    ]
    m = lightness - chroma / 2
    return round((red + m) * 255), round((green + m) * 255), round((blue + m) * 255), 255
