-- 0005: scheduled messages.

CREATE TABLE scheduled_messages (
    id INTEGER PRIMARY KEY,
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
-- The scheduler's next due time and each batch: scheduled_timestamp <= now, oldest first.
CREATE INDEX scheduled_messages_due ON scheduled_messages (scheduled_timestamp, id)
    WHERE delivered_message_id IS NULL AND NOT failed;
-- GET /scheduled_messages: a user's undelivered messages by delivery time.
CREATE INDEX scheduled_messages_by_sender ON scheduled_messages (sender_id, scheduled_timestamp)
    WHERE delivered_message_id IS NULL;
