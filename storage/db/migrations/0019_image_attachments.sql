-- 0019: uploaded images that get inline previews and thumbnails (Zulip's ImageAttachment).

-- One row per upload whose header decoded as an image within the size limits (storage/media/thumbnail.py).
-- Dimensions are as shown, after EXIF rotation. thumbnails is a JSON array of the thumbnails made so far
-- (storage/media/thumbnail_formats.py StoredThumbnail); '[]' until the first are made, and while it is,
-- messages show a loading placeholder. A deleted attachment takes its row with it.
CREATE TABLE image_attachments (
    attachment_id INTEGER PRIMARY KEY REFERENCES attachments (id) ON DELETE CASCADE,
    original_width INTEGER NOT NULL CHECK (original_width > 0),
    original_height INTEGER NOT NULL CHECK (original_height > 0),
    frames INTEGER NOT NULL CHECK (frames > 0),
    content_type TEXT NOT NULL,
    thumbnails TEXT NOT NULL DEFAULT '[]'
);
-- At start, the images still waiting for thumbnails: WHERE thumbnails = '[]'.
CREATE INDEX image_attachments_waiting ON image_attachments (attachment_id) WHERE thumbnails = '[]';
