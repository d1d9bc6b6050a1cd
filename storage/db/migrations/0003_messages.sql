-- 0003: messages, their recipients, per-user message rows, reactions, custom emoji, search.

-- Who a message goes to. type 2: a channel; 3: a direct-message conversation. Every direct-message
-- conversation (with oneself, one-to-one or a group) is a direct-message group with its own
-- recipient, so a conversation narrow is one range scan on messages_by_recipient (Zulip addresses
-- one-to-one messages to the receiver's personal recipient, which takes two ranges and a sort).
CREATE TABLE recipients (
    id INTEGER PRIMARY KEY,
    type INTEGER NOT NULL CHECK (type IN (2, 3)),
    type_id INTEGER NOT NULL,
    UNIQUE (type, type_id)
);

CREATE TABLE direct_message_groups (
    id INTEGER PRIMARY KEY,
    member_key TEXT NOT NULL UNIQUE       -- the sorted member ids, comma-separated
);

CREATE TABLE direct_message_group_members (
    group_id INTEGER NOT NULL REFERENCES direct_message_groups (id),
    user_id INTEGER NOT NULL REFERENCES users (id),
    PRIMARY KEY (group_id, user_id)
) WITHOUT ROWID;
-- dm-including / group-pm-with: the groups a user is in.
CREATE INDEX direct_message_group_members_by_user ON direct_message_group_members (user_id, group_id);

CREATE TABLE messages (
    id INTEGER PRIMARY KEY,
    sender_id INTEGER NOT NULL REFERENCES users (id),
    recipient_id INTEGER NOT NULL REFERENCES recipients (id),
    channel_id INTEGER REFERENCES channels (id),  -- NULL for direct messages
    topic TEXT NOT NULL DEFAULT '',                -- '' for direct messages and the empty topic
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
-- Channel and direct-message narrows: recipient_id = ? AND id <op> anchor ORDER BY id.
CREATE INDEX messages_by_recipient ON messages (recipient_id, id);
-- Channel + topic narrows (topics compare case-insensitively, storage/db.py's TOPIC collation):
-- recipient_id = ? AND topic = ? COLLATE TOPIC.
CREATE INDEX messages_by_topic ON messages (recipient_id, topic COLLATE TOPIC, id);
-- sender narrows: sender_id = ? AND id <op> anchor ORDER BY id.
CREATE INDEX messages_by_sender ON messages (sender_id, id);
-- anchor=date: the first message sent on or after a moment.
CREATE INDEX messages_by_date ON messages (date_sent, id);

-- One row per (user, message) the user received or interacted with; flags is a bit set
-- (storage/flags.py). The primary key makes a user's history one range scan from any anchor.
CREATE TABLE user_messages (
    user_id INTEGER NOT NULL REFERENCES users (id),
    message_id INTEGER NOT NULL REFERENCES messages (id),
    flags INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (user_id, message_id)
) WITHOUT ROWID;
-- Partial indexes, each serving `is:<flag>` narrows and first_unread: user_id = ? AND message_id <op> ?.
CREATE INDEX user_messages_unread ON user_messages (user_id, message_id) WHERE (flags & 1) = 0;
CREATE INDEX user_messages_starred ON user_messages (user_id, message_id) WHERE (flags & 2) != 0;
CREATE INDEX user_messages_mentioned ON user_messages (user_id, message_id) WHERE (flags & 120) != 0;
CREATE INDEX user_messages_alerted ON user_messages (user_id, message_id) WHERE (flags & 128) != 0;
CREATE INDEX user_messages_private ON user_messages (user_id, message_id) WHERE (flags & 512) != 0;
-- Which users have a row for a message (reaction and edit events, read receipts).
CREATE INDEX user_messages_by_message ON user_messages (message_id, user_id);

-- Mentions @**Full Name** look users up by name.
CREATE INDEX users_by_full_name ON users (full_name COLLATE NOCASE) WHERE is_active;

CREATE TABLE realm_emoji (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    author_id INTEGER REFERENCES users (id),
    deactivated INTEGER NOT NULL DEFAULT 0
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
-- has:reaction and the reactions of a page of messages.
CREATE INDEX reactions_by_message ON reactions (message_id, id);

-- Full-text search over topic and content, kept in step with messages by triggers.
CREATE VIRTUAL TABLE messages_fts USING fts5 (
    topic, content, content = 'messages', content_rowid = 'id', tokenize = 'porter unicode61'
);
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

-- Personal topic settings: visibility_policy 1 muted, 2 unmuted, 3 followed.
CREATE TABLE user_topics (
    user_id INTEGER NOT NULL REFERENCES users (id),
    channel_id INTEGER NOT NULL REFERENCES channels (id),
    topic TEXT NOT NULL COLLATE TOPIC,
    visibility_policy INTEGER NOT NULL,
    last_updated INTEGER NOT NULL,
    PRIMARY KEY (user_id, channel_id, topic)
) WITHOUT ROWID;
