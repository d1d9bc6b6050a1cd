-- 0002: channels (streams), channel folders, subscriptions, default channels.

CREATE TABLE channel_folders (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE COLLATE NOCASE,
    description TEXT NOT NULL DEFAULT '',
    rendered_description TEXT NOT NULL DEFAULT '',
    creator_id INTEGER REFERENCES users (id),
    date_created INTEGER NOT NULL,
    is_archived INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE channels (
    id INTEGER PRIMARY KEY,
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

-- A row per (user, channel) ever subscribed; unsubscribing clears `active` so that personal
-- settings (colour, muting) come back on resubscription. The primary key serves "my
-- subscriptions"; the second index serves "subscribers of channel C".
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
CREATE INDEX subscriptions_by_channel ON subscriptions (channel_id, user_id) WHERE active;

-- Channels new users are subscribed to.
CREATE TABLE default_channels (
    channel_id INTEGER PRIMARY KEY REFERENCES channels (id)
);
