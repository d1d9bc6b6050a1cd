"""The server's own pictures, drawn at first use: the default realm icon and the `:zulip:` emoji.

Drawn here (shapes, no fonts, no copied art) so the server needs no image files and no internet. Each
is a pure function of its size, kept once drawn.
"""

from __future__ import annotations

import functools
import io

from PIL import Image, ImageDraw

from storage.media.avatars import decoded_image, square_png

REALM_ICON_SIZE = 128  # /static/images/logo/zulip-icon-128x128.png
UPLOADED_ICON_SIZE = 100  # Zulip's DEFAULT_AVATAR_SIZE: an uploaded icon is an avatar-sized square
LOGO_BOX = (800, 100)  # Zulip's resize_logo: within 8 x 1 avatar sizes, proportions kept
EXTRA_EMOJI_SIZE = 64  # /static/generated/emoji/images/emoji/unicode/zulip.png
BLUE = (76, 110, 245, 255)
GREEN = (42, 157, 98, 255)
WHITE = (255, 255, 255, 255)
SUPERSAMPLE = 4  # drawn this much larger, then scaled down: smooth edges


def _png(image: Image.Image, size: int) -> bytes:
    out = io.BytesIO()
    image.resize((size, size), Image.Resampling.LANCZOS).save(out, format="PNG", optimize=True)
    return out.getvalue()


@functools.cache
def realm_icon_png(size: int = REALM_ICON_SIZE) -> bytes:
    """The default organization icon: a white speech bubble on a blue rounded square, size x size PNG."""
    big = size * SUPERSAMPLE
    image = Image.new("RGBA", (big, big), (0, 0, 0, 0))
    draw = ImageDraw.Draw(image)
    draw.rounded_rectangle((0, 0, big - 1, big - 1), radius=big // 5, fill=BLUE)
    u = big / 16  # a sixteenth of the side
    draw.rounded_rectangle((3 * u, 3.5 * u, 13 * u, 10.5 * u), radius=2 * u, fill=WHITE)
    draw.polygon([(5 * u, 10 * u), (8 * u, 10 * u), (4.5 * u, 13 * u)], fill=WHITE)  # the bubble's tail
    for x in (5.5, 8, 10.5):  # three dots: someone is typing
        draw.ellipse(((x - 0.8) * u, 6.2 * u, (x + 0.8) * u, 7.8 * u), fill=BLUE)
    return _png(image, size)


@functools.cache
def extra_emoji_png(size: int = EXTRA_EMOJI_SIZE) -> bytes:
    """The `:zulip:` emoji (Zulip's one extra emoji): a white Z on a green disc, size x size PNG."""
    big = size * SUPERSAMPLE
    image = Image.new("RGBA", (big, big), (0, 0, 0, 0))
    draw = ImageDraw.Draw(image)
    draw.ellipse((0, 0, big - 1, big - 1), fill=GREEN)
    u = big / 16
    # The Z: a top bar, a diagonal and a bottom bar, as one polygon.
    draw.polygon(
        [
            (4.5 * u, 4 * u), (11.5 * u, 4 * u), (11.5 * u, 5.8 * u), (7 * u, 10.2 * u), (11.5 * u, 10.2 * u),
            (11.5 * u, 12 * u), (4.5 * u, 12 * u), (4.5 * u, 10.2 * u), (9 * u, 5.8 * u), (4.5 * u, 5.8 * u),
        ],
        fill=WHITE,
    )  # fmt: skip
    return _png(image, size)


def uploaded_icon_png(data: bytes) -> bytes:
    """An uploaded realm icon as Zulip keeps it: the centred square, 100 x 100 PNG; BAD_IMAGE as avatars."""
    return square_png(decoded_image(data), UPLOADED_ICON_SIZE)


def uploaded_logo_png(data: bytes) -> bytes:
    """An uploaded realm logo as Zulip keeps it: scaled down (never up) to fit 800 x 100, as PNG."""
    image = decoded_image(data)
    image.thumbnail(LOGO_BOX, Image.Resampling.LANCZOS)
    out = io.BytesIO()
    image.save(out, format="PNG", optimize=True)
    return out.getvalue()


def loading_svg() -> bytes:
    """The image an inline preview shows until its thumbnail is made: a ring with a turning arc,
    drawn with attributes only (the file is served under `default-src 'none'`, which refuses styles)."""
    return (
        b'<svg xmlns="http://www.w3.org/2000/svg" width="40" height="40" viewBox="0 0 40 40">'
        b'<circle cx="20" cy="20" r="16" fill="none" stroke="#000" stroke-opacity="0.2" stroke-width="4"/>'
        b'<path d="M20 4a16 16 0 0 1 16 16" fill="none" stroke="#000" stroke-width="4" stroke-linecap="round">'
        b'<animateTransform attributeName="transform" type="rotate" from="0 20 20" to="360 20 20" dur="1s"'
        b' repeatCount="indefinite"/></path></svg>'
    )
