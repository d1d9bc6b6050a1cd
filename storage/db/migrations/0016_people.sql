-- 0016: user statuses, muted users, and the realm settings of read receipts and message reports.

-- A user's status (Zulip's UserStatus): a short text and an emoji, each "" when unset. A row exists
-- once the user has set a status; clearing both leaves the row, which POST /register then skips.
-- Served by its primary key: one user's status; the realm's (register) reads every row.
CREATE TABLE user_statuses (
    user_id INTEGER PRIMARY KEY REFERENCES users (id),
    status_text TEXT NOT NULL DEFAULT '',
    emoji_name TEXT NOT NULL DEFAULT '',
    emoji_code TEXT NOT NULL DEFAULT '',
    reaction_type TEXT NOT NULL DEFAULT 'unicode_emoji',
    timestamp INTEGER NOT NULL
);

-- Who muted whom, and when (Zulip's MutedUser). The primary key serves a user's own list and the
-- "already muted" check; muted_users_by_muted serves sending: the receivers who muted the sender.
CREATE TABLE muted_users (
    user_id INTEGER NOT NULL REFERENCES users (id),
    muted_user_id INTEGER NOT NULL REFERENCES users (id),
    date_muted INTEGER NOT NULL,
    PRIMARY KEY (user_id, muted_user_id)
) WITHOUT ROWID;
CREATE INDEX muted_users_by_muted ON muted_users (muted_user_id, user_id);

-- GET /messages/{id}/read_receipts answers only when this is on. Zulip turns it on for new
-- organizations that require invitations, as every tornchat organization does.
ALTER TABLE realm ADD COLUMN enable_read_receipts INTEGER NOT NULL DEFAULT 1;
-- The private channel message reports go to; NULL: reporting is off (the API's -1).
ALTER TABLE realm ADD COLUMN moderation_request_channel_id INTEGER REFERENCES channels (id);
