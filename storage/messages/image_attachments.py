"""Uploaded images: their image_attachments rows, the thumbnails made of them, and the messages
previewing them (Zulip's ImageAttachment, zerver/worker/thumbnail.py and serve_file's thumbnails).

An upload whose header decodes as an image gets a row when it is stored (create_attachment). tornchat
then makes its thumbnails off the event loop (storage/media/thumbnail.py, driven by
tornchat/thumbnailer.py) and records them here in one transaction that also rewrites every message
still showing the image's loading placeholder, telling each message's viewers with a rendering-only
update_message, as Zulip's thumbnail worker does. An image that fails to decode loses its row and its
previews the same way. The encoded-message cache learns of the rewrite through the messages trigger
(storage/cache/journal.py).
"""

from __future__ import annotations

from typing import Any

import msgspec

from storage.db.tx import Tx
from storage.fetch.message_access import message_viewers
from storage.media.thumbnail_formats import (
    StoredThumbnail,
    ThumbnailFormat,
    formats_for,
    parse_format_name,
)
from storage.messages.attachments import access_upload, can_read, file_not_found
from storage.messages.message_previews import ImagePreview, rewrite_previews
from storage.model import flags
from storage.model.channel import get_channel_by_id
from storage.model.user import User

_decode_stored = msgspec.json.Decoder(list[StoredThumbnail]).decode
_encode = msgspec.json.Encoder().encode
_IMAGE = (
    "SELECT a.id, a.owner_id, a.path_id, i.original_width, i.original_height, i.frames, i.content_type,"
    " i.thumbnails FROM attachments AS a JOIN image_attachments AS i ON i.attachment_id = a.id"
)


class ThumbnailJob(msgspec.Struct, frozen=True):
    """The thumbnails an image still lacks: what tornchat's thumbnailer makes off the event loop."""

    attachment_id: int
    path_id: str
    formats: list[ThumbnailFormat]


def _preview(row: Any) -> ImagePreview:
    return ImagePreview(
        row["path_id"], row["original_width"], row["original_height"], row["frames"], row["content_type"],
        thumbnailed=row["thumbnails"] != "[]",
    )  # fmt: skip


def get_image_preview(tx: Tx, sender: User | None, path_id: str) -> ImagePreview | None:
    """The preview of an uploaded image a message by `sender` may show; None if it is no image or
    not the sender's to share (storage/messages/attachments.py's rule for linking files)."""
    row = tx.one(_IMAGE + " WHERE a.path_id = ?", (path_id,))
    if row is None or (sender is not None and not can_read(tx, sender, row)):
        return None
    return _preview(row)


def list_waiting_images(tx: Tx) -> list[int]:
    """The attachment ids of images without thumbnails yet (left by a stop before they were made)."""
    return [row[0] for row in tx.all("SELECT attachment_id FROM image_attachments WHERE thumbnails = '[]'")]


def get_thumbnail_job(tx: Tx, attachment_id: int) -> ThumbnailJob | None:
    """The formats an image still lacks; None when it has them all or is no longer stored."""
    row = tx.one(_IMAGE + " WHERE a.id = ?", (attachment_id,))
    if row is None:
        return None
    made = {stored.name for stored in _decode_stored(row["thumbnails"])}
    missing = [fmt for fmt in formats_for(row["frames"]) if fmt.name not in made]
    return ThumbnailJob(attachment_id, row["path_id"], missing) if missing else None


def record_thumbnails(tx: Tx, attachment_id: int, made: list[StoredThumbnail] | None) -> bool:
    """Record the thumbnails made for an image (None: it failed to decode) and update its previews.

    Returns False when the image was deleted meanwhile (the caller deletes the files it made).
    """
    row = tx.one(_IMAGE + " WHERE a.id = ?", (attachment_id,))
    if row is None:
        return False
    stored = _decode_stored(row["thumbnails"])
    if made is None:
        if not stored:  # never thumbnailed: not a usable image after all (those made before stay served)
            tx.execute("DELETE FROM image_attachments WHERE attachment_id = ?", (attachment_id,))
            _rewrite_messages(tx, row, None)
        return True
    names = {thumbnail.name for thumbnail in made}
    stored = [thumbnail for thumbnail in stored if thumbnail.name not in names] + made
    tx.execute(
        "UPDATE image_attachments SET thumbnails = ? WHERE attachment_id = ?", (_encode(stored).decode(), attachment_id)
    )
    _rewrite_messages(tx, row, msgspec.structs.replace(_preview(row), thumbnailed=True))
    return True


def _rewrite_messages(tx: Tx, image: Any, preview: ImagePreview | None) -> None:
    """Replace the image's placeholders in the messages linking it; tell each message's viewers."""
    rows = tx.all(
        "SELECT m.id, m.channel_id, m.content, m.rendered_content FROM attachment_messages AS am"
        " JOIN messages AS m ON m.id = am.message_id WHERE am.attachment_id = ? ORDER BY m.id",
        (image["id"],),
    )
    for row in rows:
        rendered = rewrite_previews(row["rendered_content"] or "", image["path_id"], preview)
        if rendered is None:
            continue  # rendered after the thumbnails were made, or the link is inside a quote
        tx.execute("UPDATE messages SET rendered_content = ? WHERE id = ?", (rendered, row["id"]))
        publish_rendering(tx, row, rendered)


def publish_rendering(tx: Tx, row: Any, rendered: str) -> None:
    """Zulip's rendering-only update_message (do_update_embedded_data): new HTML, no edit history."""
    event = {
        "type": "update_message", "user_id": None, "edit_timestamp": tx.timestamp, "message_id": row["id"],
        "message_ids": [row["id"]], "rendering_only": True, "content": row["content"], "rendered_content": rendered,
    }  # fmt: skip
    channel = get_channel_by_id(tx, row["channel_id"]) if row["channel_id"] is not None else None
    by_flags: dict[tuple[str, ...], list[int]] = {}
    for user_id, bits in message_viewers(tx, row, channel).items():
        names = ("read",) if bits is None else tuple(flags.flag_names(bits))
        by_flags.setdefault(names, []).append(user_id)
    for names, user_ids in sorted(by_flags.items()):
        tx.publish({**event, "flags": list(names)}, user_ids)


# -- serving thumbnails -----------------------------------------------------------------------------


class ThumbnailTarget(msgspec.Struct, frozen=True):
    """A thumbnail URL resolved: the image, and the stored thumbnail to send (None: make it first)."""

    attachment_id: int
    path_id: str
    thumbnail: StoredThumbnail | None


def _closest(requested: ThumbnailFormat, stored: list[StoredThumbnail]) -> StoredThumbnail:
    """Zulip's stand-in for a format not made: same animation, same type, nearest width, fewest bytes."""

    def grade(thumbnail: StoredThumbnail) -> tuple[bool, bool, int, int]:
        fmt = parse_format_name(thumbnail.name)
        assert fmt is not None
        return (
            fmt.animated != requested.animated, fmt.extension != requested.extension,
            abs(fmt.max_width - requested.max_width), thumbnail.byte_size,
        )  # fmt: skip

    return min(stored, key=grade)


def access_thumbnail(tx: Tx, user: User, path_id: str, name: str) -> ThumbnailTarget:
    """GET /user_uploads/thumbnail/{path_id}/{name}: what to send, for a user who may read the upload.

    Raises "File not found." (404) for an upload the user may not read, one that is no image, and a
    name that is no format or one never made of it.
    """
    access_upload(tx, user, path_id)
    row = tx.one(_IMAGE + " WHERE a.path_id = ?", (path_id,))
    requested = parse_format_name(name)
    if row is None or requested is None:
        raise file_not_found()
    stored = _decode_stored(row["thumbnails"])
    by_name = {thumbnail.name: thumbnail for thumbnail in stored}
    if requested in formats_for(row["frames"]):
        return ThumbnailTarget(row["id"], path_id, by_name.get(requested.name))
    if not stored:
        raise file_not_found()
    return ThumbnailTarget(row["id"], path_id, by_name.get(requested.name) or _closest(requested, stored))
