-- 0008: ids are never reused; topics match on a stored key instead of a custom collation.
--
-- Clients keep ids (a message, a draft, a channel...) and an id names one thing forever: every table
-- whose id a client keeps gets AUTOINCREMENT, so SQLite never hands out an id again after the newest
-- row is deleted (sqlite_sequence keeps the high-water mark). Copying the rows sets that mark to the
-- largest id present; ids of rows deleted before this migration cannot be known.
-- (devices, linkifiers, push_outbox and legacy_push_tokens already had it; reaction ids stay internal.)
--
-- Topics compare case-insensitively in every script through topic_key, Python's casefold() of the
-- topic, stored beside it; the TOPIC collation only tornchat registered is gone, so the sqlite3 shell
-- and other tools can check and query the file. casefold() here is a function the migration runner
-- registers for the length of a migration (storage/db.py).
--
-- Each table is rebuilt as SQLite's ALTER TABLE documentation prescribes (create new_X, copy, drop X,
-- rename new_X to X, recreate its indexes and triggers); the runner turns foreign keys off around the
-- transaction and runs PRAGMA foreign_key_check before committing. Row ids are kept, so the
-- messages_fts index (external content, keyed on messages.id) stays valid.

-- users
CREATE TABLE new_users (
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
);
INSERT INTO new_users (id, delivery_email, full_name, password_hash, api_key, role, is_active, is_bot,
    bot_type, bot_owner_id, timezone, date_joined, avatar_source, avatar_version, email_address_visibility,
    is_imported_stub, can_create_users, can_change_user_emails, enable_drafts_synchronization, last_active)
    SELECT id, delivery_email, full_name, password_hash, api_key, role, is_active, is_bot, bot_type,
        bot_owner_id, timezone, date_joined, avatar_source, avatar_version, email_address_visibility,
        is_imported_stub, can_create_users, can_change_user_emails, enable_drafts_synchronization,
        last_active FROM users;
DROP TABLE users;
ALTER TABLE new_users RENAME TO users;
CREATE INDEX users_by_full_name ON users (full_name COLLATE NOCASE) WHERE is_active;

-- channel_folders
CREATE TABLE new_channel_folders (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL UNIQUE COLLATE NOCASE,
    description TEXT NOT NULL DEFAULT '',
    rendered_description TEXT NOT NULL DEFAULT '',
    creator_id INTEGER REFERENCES users (id),
    date_created INTEGER NOT NULL,
    is_archived INTEGER NOT NULL DEFAULT 0
);
INSERT INTO new_channel_folders (id, name, description, rendered_description, creator_id, date_created,
    is_archived)
    SELECT id, name, description, rendered_description, creator_id, date_created, is_archived FROM
        channel_folders;
DROP TABLE channel_folders;
ALTER TABLE new_channel_folders RENAME TO channel_folders;

-- channels
CREATE TABLE new_channels (
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
INSERT INTO new_channels (id, name, description, rendered_description, date_created, creator_id,
    invite_only, is_web_public, history_public_to_subscribers, message_retention_days, folder_id,
    topics_policy, is_archived, can_add_subscribers_group, can_administer_channel_group,
    can_create_topic_group, can_delete_any_message_group, can_delete_own_message_group,
    can_move_messages_out_of_channel_group, can_move_messages_within_channel_group,
    can_remove_subscribers_group, can_resolve_topics_group, can_send_message_group, can_subscribe_group)
    SELECT id, name, description, rendered_description, date_created, creator_id, invite_only,
        is_web_public, history_public_to_subscribers, message_retention_days, folder_id, topics_policy,
        is_archived, can_add_subscribers_group, can_administer_channel_group, can_create_topic_group,
        can_delete_any_message_group, can_delete_own_message_group, can_move_messages_out_of_channel_group,
        can_move_messages_within_channel_group, can_remove_subscribers_group, can_resolve_topics_group,
        can_send_message_group, can_subscribe_group FROM channels;
DROP TABLE channels;
ALTER TABLE new_channels RENAME TO channels;

-- user_groups
CREATE TABLE new_user_groups (
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
INSERT INTO new_user_groups (id, name, description, is_system_group, creator_id, date_created, deactivated,
    can_add_members_group, can_join_group, can_leave_group, can_manage_group, can_mention_group,
    can_remove_members_group)
    SELECT id, name, description, is_system_group, creator_id, date_created, deactivated,
        can_add_members_group, can_join_group, can_leave_group, can_manage_group, can_mention_group,
        can_remove_members_group FROM user_groups;
DROP TABLE user_groups;
ALTER TABLE new_user_groups RENAME TO user_groups;

-- custom_profile_fields
CREATE TABLE new_custom_profile_fields (
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
INSERT INTO new_custom_profile_fields (id, name, hint, field_type, field_data, "order",
    display_in_profile_summary, required, editable_by_user)
    SELECT id, name, hint, field_type, field_data, "order", display_in_profile_summary, required,
        editable_by_user FROM custom_profile_fields;
DROP TABLE custom_profile_fields;
ALTER TABLE new_custom_profile_fields RENAME TO custom_profile_fields;

-- realm_emoji
CREATE TABLE new_realm_emoji (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL UNIQUE,
    author_id INTEGER REFERENCES users (id),
    deactivated INTEGER NOT NULL DEFAULT 0
);
INSERT INTO new_realm_emoji (id, name, author_id, deactivated)
    SELECT id, name, author_id, deactivated FROM realm_emoji;
DROP TABLE realm_emoji;
ALTER TABLE new_realm_emoji RENAME TO realm_emoji;

-- messages
CREATE TABLE new_messages (
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
INSERT INTO new_messages (id, sender_id, recipient_id, channel_id, topic, topic_key, content,
    rendered_content, date_sent, client, is_me_message, has_link, has_image, has_attachment,
    last_edit_timestamp, last_moved_timestamp, edit_history)
    SELECT id, sender_id, recipient_id, channel_id, topic, casefold(topic), content, rendered_content,
        date_sent, client, is_me_message, has_link, has_image, has_attachment, last_edit_timestamp,
        last_moved_timestamp, edit_history FROM messages;
DROP TABLE messages;
ALTER TABLE new_messages RENAME TO messages;
CREATE INDEX messages_by_recipient ON messages (recipient_id, id);
-- Channel + topic narrows and topic lookups: recipient_id = ? AND topic_key = ? [AND id <op> ?] ORDER BY id.
CREATE INDEX messages_by_topic ON messages (recipient_id, topic_key, id);
CREATE INDEX messages_by_sender ON messages (sender_id, id);
CREATE INDEX messages_by_date ON messages (date_sent, id);
CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
    INSERT INTO messages_fts (rowid, topic, content) VALUES (new.id, new.topic, new.content);
END;
CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
    INSERT INTO messages_fts (messages_fts, rowid, topic, content) VALUES ('delete', old.id, old.topic, old.content);
END;
CREATE TRIGGER messages_fts_update AFTER UPDATE OF topic, content ON messages BEGIN
    INSERT INTO messages_fts (messages_fts, rowid, topic, content) VALUES ('delete', old.id, old.topic, old.content);
    INSERT INTO messages_fts (rowid, topic, content) VALUES (new.id, new.topic, new.content);
END;

-- drafts
CREATE TABLE new_drafts (
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
INSERT INTO new_drafts (id, user_id, type, channel_id, to_user_ids, topic, content, last_edit_time)
    SELECT id, user_id, type, channel_id, to_user_ids, topic, content, last_edit_time FROM drafts;
DROP TABLE drafts;
ALTER TABLE new_drafts RENAME TO drafts;
CREATE INDEX drafts_by_user ON drafts (user_id, last_edit_time, id);

-- saved_snippets
CREATE TABLE new_saved_snippets (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id INTEGER NOT NULL REFERENCES users (id),
    title TEXT NOT NULL,
    content TEXT NOT NULL,
    date_created INTEGER NOT NULL                   -- Unix seconds
);
INSERT INTO new_saved_snippets (id, user_id, title, content, date_created)
    SELECT id, user_id, title, content, date_created FROM saved_snippets;
DROP TABLE saved_snippets;
ALTER TABLE new_saved_snippets RENAME TO saved_snippets;
CREATE INDEX saved_snippets_by_user ON saved_snippets (user_id, id);

-- scheduled_messages
CREATE TABLE new_scheduled_messages (
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
INSERT INTO new_scheduled_messages (id, sender_id, type, channel_id, to_user_ids, topic, content,
    rendered_content, scheduled_timestamp, read_by_sender, client, failed, failure_message,
    delivered_message_id, date_created)
    SELECT id, sender_id, type, channel_id, to_user_ids, topic, content, rendered_content,
        scheduled_timestamp, read_by_sender, client, failed, failure_message, delivered_message_id,
        date_created FROM scheduled_messages;
DROP TABLE scheduled_messages;
ALTER TABLE new_scheduled_messages RENAME TO scheduled_messages;
CREATE INDEX scheduled_messages_due ON scheduled_messages (scheduled_timestamp, id)
    WHERE delivered_message_id IS NULL AND NOT failed;
CREATE INDEX scheduled_messages_by_sender ON scheduled_messages (sender_id, scheduled_timestamp)
    WHERE delivered_message_id IS NULL;

-- user_topics: keyed on topic_key; topic keeps the spelling last chosen, for events.
CREATE TABLE new_user_topics (
    user_id INTEGER NOT NULL REFERENCES users (id),
    channel_id INTEGER NOT NULL REFERENCES channels (id),
    topic TEXT NOT NULL,
    topic_key TEXT NOT NULL,                       -- topic.casefold()
    visibility_policy INTEGER NOT NULL,
    last_updated INTEGER NOT NULL,
    PRIMARY KEY (user_id, channel_id, topic_key)
) WITHOUT ROWID;
INSERT INTO new_user_topics (user_id, channel_id, topic, topic_key, visibility_policy, last_updated)
    SELECT user_id, channel_id, topic, casefold(topic), visibility_policy, last_updated FROM user_topics;
DROP TABLE user_topics;
ALTER TABLE new_user_topics RENAME TO user_topics;
