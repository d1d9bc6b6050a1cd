"""Thumbnails of uploaded images (storage/media/thumbnail.py): probing a header, making WebP
thumbnails of stills and animations, and refusing corrupt files and decompression bombs."""

from __future__ import annotations

import os

import pytest
from PIL import Image

from storage.db import upload_files
from storage.media import thumbnail
from storage.media.thumbnail import ImageInfo, ThumbnailError
from storage.media.thumbnail_formats import (
    THUMBNAIL_OUTPUT_FORMATS,
    ThumbnailFormat,
    default_format,
    formats_for,
    parse_format_name,
    server_thumbnail_formats,
    thumbnail_path_id,
)
from tests.support.image_helpers import (
    bomb_png_bytes,
    gif_bytes,
    image_bytes,
    jpeg_bytes,
    png_bytes,
    truncated_jpeg_bytes,
)

STILL = ThumbnailFormat("webp", 840, 560, animated=False)
ANIMATED = ThumbnailFormat("webp", 840, 560, animated=True)


@pytest.fixture
def media_dir(tmp_path):
    """A fresh data directory; store() puts an upload in it."""
    return str(tmp_path)


def store(media_dir: str, name: str, data: bytes) -> str:
    path_id = f"1/abc/{name}"
    upload_files.install(media_dir, upload_files.stage(media_dir, data), path_id)
    return path_id


def probe(media_dir: str, path_id: str, content_type: str) -> ImageInfo | None:
    return thumbnail.probe_image(upload_files.local_path(media_dir, path_id), content_type)


def thumbnail_file(media_dir: str, path_id: str, name: str) -> Image.Image:
    image = Image.open(upload_files.local_path(media_dir, thumbnail_path_id(path_id, name)))
    image.load()
    return image


def thumbnails_on_disk(media_dir: str) -> list[str]:
    root = os.path.join(media_dir, "uploads", "thumbnail")
    return sorted(os.path.relpath(os.path.join(d, f), root) for d, _, names in os.walk(root) for f in names)


# -- formats ----------------------------------------------------------------------------------------


def test_server_thumbnail_formats_are_zulips() -> None:
    assert server_thumbnail_formats() == [
        {"name": "840x560-anim.webp", "max_width": 840, "max_height": 560, "format": "webp", "animated": True},
        {"name": "840x560.webp", "max_width": 840, "max_height": 560, "format": "webp", "animated": False},
    ]
    assert [fmt.name for fmt in THUMBNAIL_OUTPUT_FORMATS] == ["840x560-anim.webp", "840x560.webp"]


def test_format_names_parse_back() -> None:
    for fmt in THUMBNAIL_OUTPUT_FORMATS:
        assert parse_format_name(fmt.name) == fmt
    assert parse_format_name("100x200.jpg") == ThumbnailFormat("jpg", 100, 200, animated=False)
    for name in ("840x560", "x560.webp", "840x560.webp/..", "840x560-still.webp", "", "../840x560.webp"):
        assert parse_format_name(name) is None
    assert formats_for(1) == [STILL] and formats_for(2) == [ANIMATED, STILL]
    assert default_format(1) == STILL and default_format(12) == ANIMATED


# -- stills -----------------------------------------------------------------------------------------


def test_png_is_shrunk_into_the_box_as_webp(media_dir) -> None:
    path_id = store(media_dir, "wide.png", png_bytes(2000, 1000))
    info = probe(media_dir, path_id, "image/png")
    assert info == ImageInfo(2000, 1000, 1, "image/png")
    [made] = thumbnail.make_thumbnails(media_dir, path_id, formats_for(info.frames))
    assert (made.name, made.animated, made.content_type, made.width, made.height) == (
        "840x560.webp", False, "image/webp", 840, 420,
    )  # fmt: skip
    image = thumbnail_file(media_dir, path_id, "840x560.webp")
    assert (image.format, image.size, image.mode) == ("WEBP", (840, 420), "RGB")
    assert made.byte_size == os.path.getsize(upload_files.local_path(media_dir, thumbnail_path_id(path_id, made.name)))


def test_jpeg_is_shrunk_and_a_transparent_png_keeps_its_alpha(media_dir) -> None:
    jpeg = store(media_dir, "photo.jpg", jpeg_bytes(3000, 2000))
    assert probe(media_dir, jpeg, "image/jpeg") == ImageInfo(3000, 2000, 1, "image/jpeg")
    [made] = thumbnail.make_thumbnails(media_dir, jpeg, [STILL])
    assert (made.width, made.height) == (840, 560)
    assert thumbnail_file(media_dir, jpeg, made.name).size == (840, 560)
    clear = store(media_dir, "clear.png", png_bytes(50, 40, "RGBA"))
    [made] = thumbnail.make_thumbnails(media_dir, clear, [STILL])
    image = thumbnail_file(media_dir, clear, made.name)
    assert image.size == (50, 40) and image.mode == "RGBA"  # never enlarged


def test_exif_rotation_is_applied_to_dimensions_and_thumbnail(media_dir) -> None:
    path_id = store(media_dir, "turned.jpg", jpeg_bytes(300, 100, orientation=6))
    assert probe(media_dir, path_id, "image/jpeg") == ImageInfo(100, 300, 1, "image/jpeg")  # as shown
    [made] = thumbnail.make_thumbnails(media_dir, path_id, [STILL])
    assert (made.width, made.height) == (100, 300)


# -- animations -------------------------------------------------------------------------------------


def test_animated_gif_gets_an_animated_and_a_still_thumbnail(media_dir) -> None:
    path_id = store(media_dir, "dance.gif", gif_bytes(1200, 600, frames=4, duration=70))
    info = probe(media_dir, path_id, "image/gif")
    assert info == ImageInfo(1200, 600, 4, "image/gif")
    made = thumbnail.make_thumbnails(media_dir, path_id, formats_for(info.frames))
    assert [(m.name, m.animated, m.width, m.height) for m in made] == [
        ("840x560-anim.webp", True, 840, 420), ("840x560.webp", False, 840, 420),
    ]  # fmt: skip
    animated = Image.open(upload_files.local_path(media_dir, thumbnail_path_id(path_id, "840x560-anim.webp")))
    with animated:
        assert (animated.format, animated.n_frames, animated.size) == ("WEBP", 4, (840, 420))
        animated.seek(1)
        animated.load()
        assert animated.info["duration"] == 70
    still = Image.open(upload_files.local_path(media_dir, thumbnail_path_id(path_id, "840x560.webp")))
    with still:
        assert getattr(still, "n_frames", 1) == 1


def test_an_animation_keeps_only_the_frames_its_pixel_budget_affords(media_dir, monkeypatch) -> None:
    path_id = store(media_dir, "long.gif", gif_bytes(30, 20, frames=5))
    monkeypatch.setattr(thumbnail, "IMAGE_MAX_ANIMATED_PIXELS", 30 * 20 * 3)
    assert probe(media_dir, path_id, "image/gif") == ImageInfo(30, 20, 5, "image/gif")
    thumbnail.make_thumbnails(media_dir, path_id, [ANIMATED])
    with Image.open(upload_files.local_path(media_dir, thumbnail_path_id(path_id, ANIMATED.name))) as image:
        assert image.n_frames == 3


def test_an_animation_over_the_animated_limit_is_refused(media_dir, monkeypatch) -> None:
    path_id = store(media_dir, "big.gif", gif_bytes(30, 20, frames=4))
    monkeypatch.setattr(thumbnail, "IMAGE_MAX_ANIMATED_PIXELS", 30 * 20 * 3 - 1)  # three frames must fit
    assert probe(media_dir, path_id, "image/gif") is None
    with pytest.raises(ThumbnailError, match="Image size exceeds limit."):
        thumbnail.make_thumbnails(media_dir, path_id, [ANIMATED, STILL])
    assert thumbnails_on_disk(media_dir) == []


# -- refused ----------------------------------------------------------------------------------------


def test_a_decompression_bomb_is_refused_from_its_header(media_dir) -> None:
    data = bomb_png_bytes()
    assert len(data) < 10_000  # kilobytes claiming 900 million pixels
    path_id = store(media_dir, "bomb.png", data)
    assert probe(media_dir, path_id, "image/png") is None
    with pytest.raises(ThumbnailError):
        thumbnail.make_thumbnails(media_dir, path_id, [STILL])
    assert thumbnails_on_disk(media_dir) == []


def test_the_pixel_limit_is_checked_before_any_pixel_is_decoded(media_dir, monkeypatch) -> None:
    path_id = store(media_dir, "plain.png", png_bytes(20, 10))
    monkeypatch.setattr(thumbnail, "IMAGE_BOMB_TOTAL_PIXELS", 199)
    assert probe(media_dir, path_id, "image/png") is None
    monkeypatch.setattr(Image.Image, "load", lambda self: pytest.fail("pixels decoded"))
    with pytest.raises(ThumbnailError, match="Image size exceeds limit."):
        thumbnail.make_thumbnails(media_dir, path_id, [STILL])
    monkeypatch.setattr(thumbnail, "IMAGE_BOMB_TOTAL_PIXELS", 200)
    assert probe(media_dir, path_id, "image/png") == ImageInfo(20, 10, 1, "image/png")


def test_a_corrupt_image_probes_but_fails_to_thumbnail_writing_nothing(media_dir) -> None:
    path_id = store(media_dir, "cut.jpg", truncated_jpeg_bytes())
    assert probe(media_dir, path_id, "image/jpeg") == ImageInfo(400, 300, 1, "image/jpeg")
    with pytest.raises(ThumbnailError, match="truncated"):
        thumbnail.make_thumbnails(media_dir, path_id, [STILL])
    assert thumbnails_on_disk(media_dir) == []


def test_only_accepted_types_and_their_decoders_are_tried(media_dir) -> None:
    png = store(media_dir, "a.png", png_bytes(10, 10))
    assert probe(media_dir, png, "text/plain") is None  # not offered as an image: never parsed
    assert probe(media_dir, png, "image/svg+xml") is None
    assert probe(media_dir, png, "image/gif") == ImageInfo(10, 10, 1, "image/gif")  # the bytes decide the decoder
    bmp = store(media_dir, "a.bmp", image_bytes(Image.new("RGB", (10, 10)), "BMP"))
    assert probe(media_dir, bmp, "image/png") is None  # BMP's decoder is never tried
    text = store(media_dir, "a.txt", b"not an image at all")
    assert probe(media_dir, text, "image/png") is None
    assert probe(media_dir, "1/abc/missing.png", "image/png") is None


def test_remove_thumbnails_deletes_the_files_and_their_folders(media_dir) -> None:
    path_id = store(media_dir, "dance.gif", gif_bytes(20, 20, frames=2))
    thumbnail.make_thumbnails(media_dir, path_id, formats_for(2))
    assert thumbnails_on_disk(media_dir) == ["1/abc/dance.gif/840x560-anim.webp", "1/abc/dance.gif/840x560.webp"]
    thumbnail.remove_thumbnails(media_dir, path_id)
    assert not os.path.exists(os.path.join(media_dir, "uploads", "thumbnail"))
    assert os.path.exists(upload_files.local_path(media_dir, path_id))  # the upload itself stays
    thumbnail.remove_thumbnails(media_dir, path_id)  # nothing left: no error
