-- The whole schema, as the migrations in storage/db/migrations/ build it. Generated: do not edit.

CREATE TABLE alert_words (
    id INTEGER PRIMARY KEY,
    user_id INTEGER NOT NULL REFERENCES users (id),
    word TEXT NOT NULL,
    word_key TEXT NOT NULL
);

CREATE TABLE attachment_messages (
    attachment_id INTEGER NOT NULL REFERENCES attachments (id) ON DELETE CASCADE,
    message_id INTEGER NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
    PRIMARY KEY (attachment_id, message_id)
) WITHOUT ROWID;

CREATE TABLE attachments (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    owner_id INTEGER NOT NULL REFERENCES users (id),
    path_id TEXT NOT NULL UNIQUE,                   -- GET /user_uploads/{path_id}: the UNIQUE index serves it
    file_name TEXT NOT NULL,
    content_type TEXT NOT NULL,
    size INTEGER NOT NULL CHECK (size >= 0),        -- bytes
    create_time INTEGER NOT NULL                    -- Unix seconds
);

CREATE TABLE "channel_folders" (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL UNIQUE COLLATE NOCASE,
    description TEXT NOT NULL DEFAULT '',
    rendered_description TEXT NOT NULL DEFAULT '',
    creator_id INTEGER REFERENCES users (id),
    date_created INTEGER NOT NULL,
    is_archived INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE "channels" (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL UNIQUE COLLATE NOCASE,     -- names are unique case-insensitively
    description TEXT NOT NULL DEFAULT '',
    rendered_description TEXT NOT NULL DEFAULT '',
    date_created INTEGER NOT NULL,
    creator_id INTEGER REFERENCES users (id),
    invite_only INTEGER NOT NULL DEFAULT 0,
    is_web_public INTEGER NOT NULL DEFAULT 0,
    history_public_to_subscribers INTEGER NOT NULL DEFAULT 1,
    message_retention_days INTEGER,                -- NULL: realm default; -1: forever
    folder_id INTEGER REFERENCES channel_folders (id),
    topics_policy TEXT NOT NULL DEFAULT 'inherit',
    is_archived INTEGER NOT NULL DEFAULT 0,
    can_add_subscribers_group INTEGER NOT NULL REFERENCES user_groups (id),
    can_administer_channel_group INTEGER NOT NULL REFERENCES user_groups (id),
    can_create_topic_group INTEGER NOT NULL REFERENCES user_groups (id),
    can_delete_any_message_group INTEGER NOT NULL REFERENCES user_groups (id),
    can_delete_own_message_group INTEGER NOT NULL REFERENCES user_groups (id),
    can_move_messages_out_of_channel_group INTEGER NOT NULL REFERENCES user_groups (id),
    can_move_messages_within_channel_group INTEGER NOT NULL REFERENCES user_groups (id),
    can_remove_subscribers_group INTEGER NOT NULL REFERENCES user_groups (id),
    can_resolve_topics_group INTEGER NOT NULL REFERENCES user_groups (id),
    can_send_message_group INTEGER NOT NULL REFERENCES user_groups (id),
    can_subscribe_group INTEGER NOT NULL REFERENCES user_groups (id)
);

CREATE TABLE custom_profile_field_values (
    user_id INTEGER NOT NULL REFERENCES users (id),
    field_id INTEGER NOT NULL REFERENCES custom_profile_fields (id),
    value TEXT NOT NULL,                 -- users fields: JSON list of user ids
    rendered_value TEXT,                 -- HTML for Markdown-capable fields
    PRIMARY KEY (user_id, field_id)
) WITHOUT ROWID;

CREATE TABLE "custom_profile_fields" (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL UNIQUE COLLATE NOCASE,
    hint TEXT NOT NULL DEFAULT '',
    field_type INTEGER NOT NULL,
    field_data TEXT NOT NULL DEFAULT '',  -- JSON: select options, or '' when the type has none
    "order" INTEGER NOT NULL,
    display_in_profile_summary INTEGER NOT NULL DEFAULT 0,
    required INTEGER NOT NULL DEFAULT 0,
    editable_by_user INTEGER NOT NULL DEFAULT 1
);

CREATE TABLE default_channels (
    channel_id INTEGER PRIMARY KEY REFERENCES channels (id)
);

CREATE TABLE devices (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id INTEGER NOT NULL REFERENCES users (id),
    date_created INTEGER NOT NULL,                  -- Unix seconds
    push_key BLOB,
    push_key_id INTEGER CHECK (push_key_id BETWEEN 0 AND 4294967295),
    push_token_kind TEXT CHECK (push_token_kind IN ('fcm', 'apns')),
    push_token_id TEXT,
    pending_push_token_kind TEXT CHECK (pending_push_token_kind IN ('fcm', 'apns')),
    pending_push_token_id TEXT,
    push_token_last_updated_timestamp INTEGER,      -- Unix seconds of the last token registration
    push_registration_error_code TEXT
);

CREATE TABLE direct_message_group_members (
    group_id INTEGER NOT NULL REFERENCES direct_message_groups (id),
    user_id INTEGER NOT NULL REFERENCES users (id),
    PRIMARY KEY (group_id, user_id)
) WITHOUT ROWID;

CREATE TABLE direct_message_groups (
    id INTEGER PRIMARY KEY,
    member_key TEXT NOT NULL UNIQUE       -- the sorted member ids, comma-separated
);

CREATE TABLE "drafts" (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id INTEGER NOT NULL REFERENCES users (id),
    type TEXT NOT NULL CHECK (type IN ('', 'stream', 'private')),
    channel_id INTEGER REFERENCES channels (id),
    to_user_ids TEXT NOT NULL DEFAULT '[]',
    topic TEXT NOT NULL DEFAULT '',                 -- '' unless type is 'stream'
    content TEXT NOT NULL,
    last_edit_time INTEGER NOT NULL,                -- Unix seconds
    CHECK ((type = 'stream') = (channel_id IS NOT NULL))
);

CREATE TABLE image_attachments (
    attachment_id INTEGER PRIMARY KEY REFERENCES attachments (id) ON DELETE CASCADE,
    original_width INTEGER NOT NULL CHECK (original_width > 0),
    original_height INTEGER NOT NULL CHECK (original_height > 0),
    frames INTEGER NOT NULL CHECK (frames > 0),
    content_type TEXT NOT NULL,
    thumbnails TEXT NOT NULL DEFAULT '[]'
);

CREATE TABLE legacy_push_tokens (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id INTEGER NOT NULL REFERENCES users (id),
    kind TEXT NOT NULL CHECK (kind IN ('fcm', 'apns')),
    token TEXT NOT NULL,
    ios_app_id TEXT,
    date_created INTEGER NOT NULL,
    UNIQUE (user_id, kind, token)
);

CREATE TABLE linkifier_state (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    token TEXT NOT NULL,
    version INTEGER NOT NULL
);

CREATE TABLE linkifiers (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    pattern TEXT NOT NULL UNIQUE,
    url_template TEXT NOT NULL,                            -- RFC 6570, one variable per named group
    example_input TEXT,
    reverse_template TEXT,
    alternative_url_templates TEXT NOT NULL DEFAULT '[]',  -- JSON list of RFC 6570 templates
    sort_order INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE "messages" (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    sender_id INTEGER NOT NULL REFERENCES users (id),
    recipient_id INTEGER NOT NULL REFERENCES recipients (id),
    channel_id INTEGER REFERENCES channels (id),  -- NULL for direct messages
    topic TEXT NOT NULL DEFAULT '',                -- '' for direct messages and the empty topic
    topic_key TEXT NOT NULL,                       -- topic.casefold(), computed in Python: what topics match on
    content TEXT NOT NULL,
    rendered_content TEXT NOT NULL,
    date_sent INTEGER NOT NULL,
    client TEXT NOT NULL,
    is_me_message INTEGER NOT NULL DEFAULT 0,
    has_link INTEGER NOT NULL DEFAULT 0,
    has_image INTEGER NOT NULL DEFAULT 0,
    has_attachment INTEGER NOT NULL DEFAULT 0,
    last_edit_timestamp INTEGER,
    last_moved_timestamp INTEGER,
    edit_history TEXT                              -- JSON list, newest first; NULL if never edited
);

CREATE VIRTUAL TABLE messages_fts USING fts5 (
    topic, content, content = 'messages', content_rowid = 'id', tokenize = 'porter unicode61'
);

CREATE TABLE 'messages_fts_config'(k PRIMARY KEY, v) WITHOUT ROWID;

CREATE TABLE 'messages_fts_data'(id INTEGER PRIMARY KEY, block BLOB);

CREATE TABLE 'messages_fts_docsize'(id INTEGER PRIMARY KEY, sz BLOB);

CREATE TABLE 'messages_fts_idx'(segid, term, pgno, PRIMARY KEY(segid, term)) WITHOUT ROWID;

CREATE TABLE migrations ( id INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL);

CREATE TABLE muted_users (
    user_id INTEGER NOT NULL REFERENCES users (id),
    muted_user_id INTEGER NOT NULL REFERENCES users (id),
    date_muted INTEGER NOT NULL,
    PRIMARY KEY (user_id, muted_user_id)
) WITHOUT ROWID;

CREATE TABLE presence_sequence (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    last_update_id INTEGER NOT NULL
);

CREATE TABLE push_outbox (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    device_id INTEGER NOT NULL REFERENCES devices (id) ON DELETE CASCADE,
    kind TEXT NOT NULL CHECK (kind IN ('register', 'notify')),
    user_id INTEGER,
    message_id INTEGER,
    body TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_at REAL NOT NULL,                  -- Unix seconds: not sent before this
    created INTEGER NOT NULL
);

CREATE TABLE reactions (
    id INTEGER PRIMARY KEY,                          -- reactions are listed oldest first
    message_id INTEGER NOT NULL REFERENCES messages (id),
    user_id INTEGER NOT NULL REFERENCES users (id),
    emoji_name TEXT NOT NULL,
    emoji_code TEXT NOT NULL,
    reaction_type TEXT NOT NULL,
    UNIQUE (message_id, user_id, reaction_type, emoji_code)
);

CREATE TABLE realm (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    name TEXT NOT NULL,
    url TEXT NOT NULL,
    email_host TEXT NOT NULL,            -- host of dummy API emails: user{id}@{email_host}
    date_created INTEGER NOT NULL,
    default_email_address_visibility INTEGER NOT NULL DEFAULT 1,
    enable_spectator_access INTEGER NOT NULL DEFAULT 0,
    topics_policy TEXT NOT NULL DEFAULT 'allow_empty_topic',
    message_retention_days INTEGER,     -- NULL: keep forever
    waiting_period_threshold INTEGER NOT NULL DEFAULT 0,
    can_access_all_users_group INTEGER REFERENCES user_groups (id),
    can_add_subscribers_group INTEGER REFERENCES user_groups (id),
    can_create_groups INTEGER REFERENCES user_groups (id),
    can_create_private_channel_group INTEGER REFERENCES user_groups (id),
    can_create_public_channel_group INTEGER REFERENCES user_groups (id),
    can_create_web_public_channel_group INTEGER REFERENCES user_groups (id),
    can_delete_any_message_group INTEGER REFERENCES user_groups (id),
    can_delete_own_message_group INTEGER REFERENCES user_groups (id),
    can_manage_all_groups INTEGER REFERENCES user_groups (id),
    can_set_delete_message_policy_group INTEGER REFERENCES user_groups (id),
    can_set_topics_policy_group INTEGER REFERENCES user_groups (id)
, can_add_custom_emoji_group INTEGER REFERENCES user_groups (id), allow_message_editing INTEGER NOT NULL DEFAULT 1, message_content_edit_limit_seconds INTEGER DEFAULT 600, allow_edit_history INTEGER NOT NULL DEFAULT 1, message_content_delete_limit_seconds INTEGER, move_messages_within_stream_limit_seconds INTEGER DEFAULT 604800, move_messages_between_streams_limit_seconds INTEGER DEFAULT 604800, enable_read_receipts INTEGER NOT NULL DEFAULT 1, moderation_request_channel_id INTEGER REFERENCES channels (id), enable_gravatar INTEGER NOT NULL DEFAULT 0, icon_file TEXT, icon_version INTEGER NOT NULL DEFAULT 1, logo_file TEXT, logo_version INTEGER NOT NULL DEFAULT 1, night_logo_file TEXT, night_logo_version INTEGER NOT NULL DEFAULT 1, uuid TEXT, uuid_owner_secret TEXT);

CREATE TABLE "realm_emoji" (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL,
    author_id INTEGER REFERENCES users (id),
    deactivated INTEGER NOT NULL DEFAULT 0,
    file_name TEXT,           -- NULL only for rows made before images (no image to serve)
    content_type TEXT,        -- image/png, image/gif, image/jpeg or image/webp
    date_created INTEGER      -- seconds
);

CREATE TABLE recipients (
    id INTEGER PRIMARY KEY,
    type INTEGER NOT NULL CHECK (type IN (2, 3)),
    type_id INTEGER NOT NULL,
    UNIQUE (type, type_id)
);

CREATE TABLE "saved_snippets" (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id INTEGER NOT NULL REFERENCES users (id),
    title TEXT NOT NULL,
    content TEXT NOT NULL,
    date_created INTEGER NOT NULL                   -- Unix seconds
);

CREATE TABLE "scheduled_messages" (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    sender_id INTEGER NOT NULL REFERENCES users (id),
    type TEXT NOT NULL CHECK (type IN ('stream', 'private')),
    channel_id INTEGER REFERENCES channels (id),   -- channel messages
    to_user_ids TEXT,                              -- direct messages: JSON list of user ids
    topic TEXT NOT NULL DEFAULT '',
    content TEXT NOT NULL,
    rendered_content TEXT NOT NULL,
    scheduled_timestamp INTEGER NOT NULL,
    read_by_sender INTEGER,                        -- NULL: decided at delivery by the heuristic
    client TEXT NOT NULL,
    failed INTEGER NOT NULL DEFAULT 0,
    failure_message TEXT,
    delivered_message_id INTEGER REFERENCES messages (id),  -- set in the same transaction as the message
    date_created INTEGER NOT NULL
);

CREATE TABLE submessages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,           -- clients order a widget's events by it
    message_id INTEGER NOT NULL REFERENCES messages (id),
    sender_id INTEGER NOT NULL REFERENCES users (id),
    msg_type TEXT NOT NULL,
    content TEXT NOT NULL                           -- a JSON text, stored as the client sent it
);

CREATE TABLE subscriptions (
    user_id INTEGER NOT NULL REFERENCES users (id),
    channel_id INTEGER NOT NULL REFERENCES channels (id),
    active INTEGER NOT NULL DEFAULT 1,
    color TEXT NOT NULL,
    is_muted INTEGER NOT NULL DEFAULT 0,
    pin_to_top INTEGER NOT NULL DEFAULT 0,
    desktop_notifications INTEGER,                 -- NULL: inherit the user's default
    audible_notifications INTEGER,
    push_notifications INTEGER,
    email_notifications INTEGER,
    wildcard_mentions_notify INTEGER,
    PRIMARY KEY (user_id, channel_id)
) WITHOUT ROWID;

CREATE TABLE user_group_members (
    group_id INTEGER NOT NULL REFERENCES user_groups (id),
    user_id INTEGER NOT NULL REFERENCES users (id),
    PRIMARY KEY (group_id, user_id)
) WITHOUT ROWID;

CREATE TABLE user_group_subgroups (
    supergroup_id INTEGER NOT NULL REFERENCES user_groups (id),
    subgroup_id INTEGER NOT NULL REFERENCES user_groups (id),
    PRIMARY KEY (supergroup_id, subgroup_id)
) WITHOUT ROWID;

CREATE TABLE "user_groups" (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT UNIQUE COLLATE NOCASE,
    description TEXT NOT NULL DEFAULT '',
    is_system_group INTEGER NOT NULL DEFAULT 0,
    creator_id INTEGER REFERENCES users (id),
    date_created INTEGER,
    deactivated INTEGER NOT NULL DEFAULT 0,
    can_add_members_group INTEGER REFERENCES user_groups (id) DEFERRABLE INITIALLY DEFERRED,
    can_join_group INTEGER REFERENCES user_groups (id) DEFERRABLE INITIALLY DEFERRED,
    can_leave_group INTEGER REFERENCES user_groups (id) DEFERRABLE INITIALLY DEFERRED,
    can_manage_group INTEGER REFERENCES user_groups (id) DEFERRABLE INITIALLY DEFERRED,
    can_mention_group INTEGER REFERENCES user_groups (id) DEFERRABLE INITIALLY DEFERRED,
    can_remove_members_group INTEGER REFERENCES user_groups (id) DEFERRABLE INITIALLY DEFERRED
);

CREATE TABLE user_messages (
    user_id INTEGER NOT NULL REFERENCES users (id),
    message_id INTEGER NOT NULL REFERENCES messages (id),
    flags INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (user_id, message_id)
) WITHOUT ROWID;

CREATE TABLE user_presences (
    user_id INTEGER PRIMARY KEY REFERENCES users (id),
    last_connected_time INTEGER NOT NULL,
    last_active_time INTEGER,
    last_update_id INTEGER NOT NULL
);

CREATE TABLE user_settings (
    user_id INTEGER NOT NULL REFERENCES users (id),
    name TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (user_id, name)
) WITHOUT ROWID;

CREATE TABLE user_statuses (
    user_id INTEGER PRIMARY KEY REFERENCES users (id),
    status_text TEXT NOT NULL DEFAULT '',
    emoji_name TEXT NOT NULL DEFAULT '',
    emoji_code TEXT NOT NULL DEFAULT '',
    reaction_type TEXT NOT NULL DEFAULT 'unicode_emoji',
    timestamp INTEGER NOT NULL
);

CREATE TABLE "user_topics" (
    user_id INTEGER NOT NULL REFERENCES users (id),
    channel_id INTEGER NOT NULL REFERENCES channels (id),
    topic TEXT NOT NULL,
    topic_key TEXT NOT NULL,                       -- topic.casefold()
    visibility_policy INTEGER NOT NULL,
    last_updated INTEGER NOT NULL,
    PRIMARY KEY (user_id, channel_id, topic_key)
) WITHOUT ROWID;

CREATE TABLE "users" (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    delivery_email TEXT NOT NULL COLLATE NOCASE UNIQUE,  -- also serves the login/auth lookup by email
    full_name TEXT NOT NULL,
    password_hash TEXT,                  -- scrypt$n$r$p$salt_hex$hash_hex; NULL: no usable password
    api_key TEXT NOT NULL UNIQUE,
    role INTEGER NOT NULL CHECK (role IN (100, 200, 300, 400, 600)),
    is_active INTEGER NOT NULL DEFAULT 1,
    is_bot INTEGER NOT NULL DEFAULT 0,
    bot_type INTEGER,
    bot_owner_id INTEGER REFERENCES users (id),
    timezone TEXT NOT NULL DEFAULT '',
    date_joined INTEGER NOT NULL,
    avatar_source TEXT NOT NULL DEFAULT 'G',  -- 'G': gravatar, 'U': uploaded
    avatar_version INTEGER NOT NULL DEFAULT 1,
    email_address_visibility INTEGER NOT NULL DEFAULT 1,
    is_imported_stub INTEGER NOT NULL DEFAULT 0,
    can_create_users INTEGER NOT NULL DEFAULT 0,
    can_change_user_emails INTEGER NOT NULL DEFAULT 0,
    enable_drafts_synchronization INTEGER NOT NULL DEFAULT 1,
    last_active INTEGER                  -- unix seconds of the last authenticated request
, avatar_file TEXT);

CREATE UNIQUE INDEX alert_words_by_user ON alert_words (user_id, word_key);

CREATE INDEX attachment_messages_by_message ON attachment_messages (message_id, attachment_id);

CREATE INDEX attachments_by_owner ON attachments (owner_id, id, size);

CREATE INDEX devices_by_user ON devices (user_id, id);

CREATE INDEX direct_message_group_members_by_user ON direct_message_group_members (user_id, group_id);

CREATE INDEX drafts_by_user ON drafts (user_id, last_edit_time, id);

CREATE INDEX image_attachments_waiting ON image_attachments (attachment_id) WHERE thumbnails = '[]';

CREATE INDEX linkifiers_by_order ON linkifiers (sort_order, id);

CREATE TRIGGER linkifiers_version_delete AFTER DELETE ON linkifiers
BEGIN UPDATE linkifier_state SET version = version + 1; END;

CREATE TRIGGER linkifiers_version_insert AFTER INSERT ON linkifiers
BEGIN UPDATE linkifier_state SET version = version + 1; END;

CREATE TRIGGER linkifiers_version_update AFTER UPDATE ON linkifiers
BEGIN UPDATE linkifier_state SET version = version + 1; END;

CREATE INDEX messages_by_date ON messages (date_sent, id);

CREATE INDEX messages_by_recipient ON messages (recipient_id, id);

CREATE INDEX messages_by_sender ON messages (sender_id, id);

CREATE INDEX messages_by_topic ON messages (recipient_id, topic_key, id);

CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
    INSERT INTO messages_fts (messages_fts, rowid, topic, content) VALUES ('delete', old.id, old.topic, old.content);
END;

CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
    INSERT INTO messages_fts (rowid, topic, content) VALUES (new.id, new.topic, new.content);
END;

CREATE TRIGGER messages_fts_update AFTER UPDATE OF topic, content ON messages BEGIN
    INSERT INTO messages_fts (messages_fts, rowid, topic, content) VALUES ('delete', old.id, old.topic, old.content);
    INSERT INTO messages_fts (rowid, topic, content) VALUES (new.id, new.topic, new.content);
END;

CREATE INDEX muted_users_by_muted ON muted_users (muted_user_id, user_id);

CREATE INDEX push_outbox_by_message ON push_outbox (message_id, user_id) WHERE message_id IS NOT NULL;

CREATE INDEX push_outbox_due ON push_outbox (next_attempt_at);

CREATE INDEX reactions_by_message ON reactions (message_id, id);

CREATE UNIQUE INDEX realm_emoji_active_name ON realm_emoji (name) WHERE NOT deactivated;

CREATE UNIQUE INDEX realm_emoji_by_file_name ON realm_emoji (file_name) WHERE file_name IS NOT NULL;

CREATE INDEX saved_snippets_by_user ON saved_snippets (user_id, id);

CREATE INDEX scheduled_messages_by_sender ON scheduled_messages (sender_id, scheduled_timestamp)
    WHERE delivered_message_id IS NULL;

CREATE INDEX scheduled_messages_due ON scheduled_messages (scheduled_timestamp, id)
    WHERE delivered_message_id IS NULL AND NOT failed;

CREATE INDEX submessages_by_message ON submessages (message_id, id);

CREATE INDEX subscriptions_by_channel ON subscriptions (channel_id, user_id) WHERE active;

CREATE INDEX user_group_members_by_user ON user_group_members (user_id, group_id);

CREATE INDEX user_group_subgroups_by_subgroup ON user_group_subgroups (subgroup_id, supergroup_id);

CREATE INDEX user_messages_alerted ON user_messages (user_id, message_id) WHERE (flags & 128) != 0;

CREATE INDEX user_messages_by_message ON user_messages (message_id, user_id);

CREATE INDEX user_messages_mentioned ON user_messages (user_id, message_id) WHERE (flags & 120) != 0;

CREATE INDEX user_messages_private ON user_messages (user_id, message_id) WHERE (flags & 512) != 0;

CREATE INDEX user_messages_starred ON user_messages (user_id, message_id) WHERE (flags & 2) != 0;

CREATE INDEX user_messages_unread ON user_messages (user_id, message_id) WHERE (flags & 1) = 0;

CREATE INDEX user_presences_by_update ON user_presences (last_update_id);

CREATE INDEX users_by_full_name ON users (full_name COLLATE NOCASE) WHERE is_active;
