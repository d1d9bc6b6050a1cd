-- 0004: drafts and saved snippets, each private to the user who made it.

-- A draft's addressee depends on its type: '' (unaddressed) has none; 'stream' has channel_id;
-- 'private' has to_user_ids, the JSON list (ascending) of the other participants, or [own id] for
-- a draft to oneself (the API's `to`, stored as shown). A private draft sent with no users is
-- stored as unaddressed, as Zulip does.
CREATE TABLE drafts (
    id INTEGER PRIMARY KEY,
    user_id INTEGER NOT NULL REFERENCES users (id),
    type TEXT NOT NULL CHECK (type IN ('', 'stream', 'private')),
    channel_id INTEGER REFERENCES channels (id),
    to_user_ids TEXT NOT NULL DEFAULT '[]',
    topic TEXT NOT NULL DEFAULT '',                 -- '' unless type is 'stream'
    content TEXT NOT NULL,
    last_edit_time INTEGER NOT NULL,                -- Unix seconds
    CHECK ((type = 'stream') = (channel_id IS NOT NULL))
);
-- GET /drafts: user_id = ? ORDER BY last_edit_time, id.
CREATE INDEX drafts_by_user ON drafts (user_id, last_edit_time, id);

CREATE TABLE saved_snippets (
    id INTEGER PRIMARY KEY,
    user_id INTEGER NOT NULL REFERENCES users (id),
    title TEXT NOT NULL,
    content TEXT NOT NULL,
    date_created INTEGER NOT NULL                   -- Unix seconds
);
-- GET /saved_snippets: user_id = ? ORDER BY id.
CREATE INDEX saved_snippets_by_user ON saved_snippets (user_id, id);
