-- 0012: custom emoji images, and who may add custom emoji.
--
-- A custom emoji now has an image file (uploads/emoji/{file_name} in the data directory) and its
-- content type, checked from the file's first bytes. As in Zulip, removing an emoji deactivates it
-- (old messages and reactions keep showing it) and its name can then be used by a new emoji: the
-- table is rebuilt without UNIQUE (name), and one partial index keeps active names unique.

CREATE TABLE new_realm_emoji (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL,
    author_id INTEGER REFERENCES users (id),
    deactivated INTEGER NOT NULL DEFAULT 0,
    file_name TEXT,           -- NULL only for rows made before images (no image to serve)
    content_type TEXT,        -- image/png, image/gif, image/jpeg or image/webp
    date_created INTEGER      -- seconds
);
INSERT INTO new_realm_emoji (id, name, author_id, deactivated)
    SELECT id, name, author_id, deactivated FROM realm_emoji;
-- Ids are never reused (0008): carry the high-water mark over to the new table.
DELETE FROM sqlite_sequence WHERE name = 'new_realm_emoji';
INSERT INTO sqlite_sequence (name, seq)
    SELECT 'new_realm_emoji', seq FROM sqlite_sequence WHERE name = 'realm_emoji';
DROP TABLE realm_emoji;
ALTER TABLE new_realm_emoji RENAME TO realm_emoji;

-- Serves the lookups of an active emoji by name (reactions, `:name:` in messages, upload, delete)
-- and keeps at most one active emoji per name.
CREATE UNIQUE INDEX realm_emoji_active_name ON realm_emoji (name) WHERE NOT deactivated;
-- Serves GET /user_avatars/1/emoji/images/{file_name}: the image's row and content type.
CREATE UNIQUE INDEX realm_emoji_by_file_name ON realm_emoji (file_name) WHERE file_name IS NOT NULL;

-- Zulip's can_add_custom_emoji_group, by default role:members (members, moderators, admins, owners).
ALTER TABLE realm ADD COLUMN can_add_custom_emoji_group INTEGER REFERENCES user_groups (id);
UPDATE realm SET can_add_custom_emoji_group =
    (SELECT id FROM user_groups WHERE name = 'role:members' AND is_system_group);
