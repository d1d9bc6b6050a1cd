-- 0013: personal settings (Zulip's UserBaseSettings) and the realm's message-editing settings.

-- One row per setting a user changed from its default (storage/user_settings_definitions.py holds
-- the defaults): adding a setting needs no migration. value is JSON (true, 16, "dark"...).
-- Served by its primary key: every setting of one user (POST /register), one setting (PATCH /settings).
CREATE TABLE user_settings (
    user_id INTEGER NOT NULL REFERENCES users (id),
    name TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (user_id, name)
) WITHOUT ROWID;

-- Message editing (PATCH /realm), with Zulip's defaults. A NULL limit means no limit.
ALTER TABLE realm ADD COLUMN allow_message_editing INTEGER NOT NULL DEFAULT 1;
ALTER TABLE realm ADD COLUMN message_content_edit_limit_seconds INTEGER DEFAULT 600;
ALTER TABLE realm ADD COLUMN allow_edit_history INTEGER NOT NULL DEFAULT 1;
ALTER TABLE realm ADD COLUMN message_content_delete_limit_seconds INTEGER;
ALTER TABLE realm ADD COLUMN move_messages_within_stream_limit_seconds INTEGER DEFAULT 604800;
ALTER TABLE realm ADD COLUMN move_messages_between_streams_limit_seconds INTEGER DEFAULT 604800;
