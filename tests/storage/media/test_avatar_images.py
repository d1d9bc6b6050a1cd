"""Image work of storage/media/: uploaded avatars made into two square PNGs, refusals before decoding,
and the pictures the server draws (default avatars, the realm icon, the :zulip: emoji)."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from storage.media import avatars, icons
from storage.model.errors import ApiError
from tests.support.image_helpers import bomb_png_bytes, image_bytes


def decoded(data: bytes) -> Image.Image:
    image = Image.open(io.BytesIO(data))
    assert image.format == "PNG"
    image.load()
    return image


def refusal(data: bytes) -> ApiError:
    with pytest.raises(ApiError) as raised:
        avatars.avatar_pngs(data)
    return raised.value


def test_an_upload_becomes_two_centred_squares():
    # 300 x 100: red left third, green middle, blue right third. The centred square is the green.
    image = Image.new("RGB", (300, 100), (255, 0, 0))
    image.paste((0, 255, 0), (100, 0, 200, 100))
    image.paste((0, 0, 255), (200, 0, 300, 100))
    for fmt in ("PNG", "JPEG", "GIF", "WEBP"):
        small, medium = avatars.avatar_pngs(image_bytes(image, fmt))
        assert (decoded(small).size, decoded(medium).size) == ((100, 100), (500, 500)), fmt
        red, green, blue, alpha = decoded(medium).convert("RGBA").getpixel((250, 250))
        assert green > 200 and red < 60 and blue < 60 and alpha == 255, fmt


def test_exif_orientation_and_transparency_are_kept():
    tall = Image.new("RGBA", (100, 200), (0, 0, 0, 0))
    tall.paste((255, 255, 255, 255), (0, 0, 100, 100))  # top half white, bottom half transparent
    exif = Image.Exif()
    exif[0x0112] = 6  # "rotate 90 degrees clockwise to show": the top goes to the right
    small, _ = avatars.avatar_pngs(image_bytes(tall.convert("RGB"), "JPEG", exif=exif.tobytes()))
    shown = decoded(small).convert("RGB")
    assert shown.getpixel((95, 50))[0] > 200 and shown.getpixel((5, 50))[0] < 60
    small, _ = avatars.avatar_pngs(image_bytes(Image.new("RGBA", (40, 40), (0, 0, 0, 0)), "PNG"))
    assert decoded(small).convert("RGBA").getpixel((50, 50))[3] == 0


def test_an_animation_gives_its_first_frame():
    frames = [Image.new("RGB", (50, 50), colour) for colour in ((255, 0, 0), (0, 0, 255))]
    out = io.BytesIO()
    frames[0].save(out, format="GIF", save_all=True, append_images=frames[1:], duration=100, loop=0)
    small, _ = avatars.avatar_pngs(out.getvalue())
    red, _, blue = decoded(small).convert("RGB").getpixel((50, 50))
    assert red > 200 and blue < 60


@pytest.mark.parametrize("data", [b"", b"not an image at all", b"\x89PNG\r\n\x1a\n" + b"\0" * 40, b"GIF89a\x01"])
def test_what_is_no_image_is_refused(data):
    error = refusal(data)
    assert (error.code, error.status, error.msg) == (
        "BAD_IMAGE", 400, "Could not decode image; did you upload an image file?"
    )  # fmt: skip


@pytest.mark.parametrize("fmt", ["BMP", "TIFF", "PPM"])
def test_only_the_web_formats_are_decoded(fmt):
    """Pillow knows dozens of formats; untrusted bytes reach only the decoders of PNG, JPEG, GIF and WebP."""
    assert refusal(image_bytes(Image.new("RGB", (20, 20), (1, 2, 3)), fmt)).code == "BAD_IMAGE"


def test_a_truncated_image_is_refused():
    data = image_bytes(Image.new("RGB", (200, 200), (1, 2, 3)), "JPEG")
    assert refusal(data[: len(data) // 2]).code == "BAD_IMAGE"


@pytest.mark.parametrize(
    ("width", "height"),
    [(5001, 5000), (10_000, 10_000), (65_000, 65_000)],  # ours, then Pillow's warning, then its error
)
def test_too_many_pixels_are_refused_before_decoding(width, height):
    data = bomb_png_bytes(width, height)
    assert len(data) < 5000, "a few kilobytes claiming millions of pixels"
    error = refusal(data)
    assert (error.code, error.msg) == ("BAD_IMAGE", "Image size exceeds limit.")


def test_the_pixel_limit_itself_is_allowed():
    # 5000 x 5000 = MAX_PIXELS: decoded (one flat colour, so the file is small) and scaled down.
    data = image_bytes(Image.new("L", (5000, 5000), 128), "PNG")
    assert 5000 * 5000 == avatars.MAX_PIXELS
    small, _ = avatars.avatar_pngs(data)
    assert decoded(small).size == (100, 100)


def test_default_avatars_depend_on_the_id_alone():
    first = avatars.default_avatar_png(7, 100)
    avatars.default_avatar_png.cache_clear()
    assert avatars.default_avatar_png(7, 100) == first, "the same bytes on every run"
    assert decoded(avatars.default_avatar_png(7, 500)).size == (500, 500)
    images = {avatars.default_avatar_png(user_id, 100) for user_id in range(1, 41)}
    assert len(images) == 40, "different users, different pictures"
    pattern = decoded(first).convert("RGBA")
    colours = {pattern.getpixel((x, y)) for x in range(100) for y in range(100)}
    assert avatars.BACKGROUND in colours and len(colours) == 2, "a background and one colour"
    for y in range(100):  # mirrored about the middle column
        assert [pattern.getpixel((x, y)) for x in range(100)] == [pattern.getpixel((99 - x, y)) for x in range(100)]


def test_the_servers_own_pictures():
    icon = decoded(icons.realm_icon_png())
    assert (icon.size, icon.mode) == ((128, 128), "RGBA")
    assert icon.getpixel((0, 0))[3] == 0 and icon.getpixel((64, 40)) == icons.WHITE  # rounded corner, bubble
    emoji = decoded(icons.extra_emoji_png())
    assert emoji.size == (64, 64) and emoji.getpixel((32, 2))[:3] == icons.GREEN[:3]
