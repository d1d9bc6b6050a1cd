-- 0011: uploaded files (POST /user_uploads) and the messages that link to them.

-- One row per stored file. The file lives at DATA_DIR/uploads/{path_id}; path_id is chosen by the
-- server ({realm_id}/{random}/{sanitized name}) and never taken from the client. file_name is the
-- name the client gave (shown to users, never used as a path). AUTOINCREMENT: an attachment id
-- names one file forever (DELETE /attachments/{id}).
CREATE TABLE attachments (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    owner_id INTEGER NOT NULL REFERENCES users (id),
    path_id TEXT NOT NULL UNIQUE,                   -- GET /user_uploads/{path_id}: the UNIQUE index serves it
    file_name TEXT NOT NULL,
    content_type TEXT NOT NULL,
    size INTEGER NOT NULL CHECK (size >= 0),        -- bytes
    create_time INTEGER NOT NULL                    -- Unix seconds
);
-- GET /attachments (owner_id = ? ORDER BY id) and the quota's SUM(size) WHERE owner_id = ?.
CREATE INDEX attachments_by_owner ON attachments (owner_id, id, size);

-- Which messages link to which attachment (Zulip's Attachment.messages). A deleted message or
-- attachment takes its links with it.
CREATE TABLE attachment_messages (
    attachment_id INTEGER NOT NULL REFERENCES attachments (id) ON DELETE CASCADE,
    message_id INTEGER NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
    PRIMARY KEY (attachment_id, message_id)
) WITHOUT ROWID;
-- Editing a message: message_id = ? (its current links); the cascade from messages uses it too.
CREATE INDEX attachment_messages_by_message ON attachment_messages (message_id, attachment_id);
